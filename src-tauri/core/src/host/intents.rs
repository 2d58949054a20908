//! Host requests about intents, the trace ledger and links.

use super::{err, Host};
use crate::orchestration::intents::{intent_from_draft, IntentError, IntentsDoc};
use crate::orchestration::trace;
use crate::protocol::{
    CommandCheck, Event, IntentDraft, IntentStatus, IpcError, IpcErrorCode, Reply,
};

fn intent_error(e: IntentError) -> IpcError {
    let code = match e {
        IntentError::NotFound(_) => IpcErrorCode::NotFound,
        IntentError::Io { .. } => IpcErrorCode::Io,
        IntentError::Rejected(_) => IpcErrorCode::Conflict,
        IntentError::Parse { .. } | IntentError::Invalid { .. } => IpcErrorCode::InvalidInput,
    };
    err(code, e.to_string())
}

impl Host {
    /// Runs blocking work (the intents file, the ledger) off the async workers.
    pub(super) async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> Result<T, IpcError> + Send + 'static,
    ) -> Result<T, IpcError> {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
    }

    /// Changes the intents file; the window hears of the new intents.
    async fn change_intents(
        &self,
        change: impl FnOnce(&mut IntentsDoc) -> Result<(), IntentError> + Send + 'static,
    ) -> Result<Reply, IpcError> {
        let gov = self.governance().clone();
        let snapshot =
            Self::blocking(move || gov.intents.update(change).map_err(intent_error)).await?;
        let view = snapshot.view();
        self.sink.emit(Event::IntentsChanged {
            intents: view.clone(),
        });
        Ok(Reply::Intents { intents: view })
    }

    pub(super) async fn list_intents(&self) -> Result<Reply, IpcError> {
        let gov = self.governance().clone();
        Self::blocking(move || {
            Ok(Reply::Intents {
                intents: gov.intents.snapshot().view(),
            })
        })
        .await
    }

    pub(super) async fn save_intent(
        &self,
        original_id: Option<String>,
        intent: IntentDraft,
    ) -> Result<Reply, IpcError> {
        self.change_intents(move |doc| {
            let new_id = intent.id.trim().to_string();
            let position = match &original_id {
                Some(orig) => Some(
                    doc.intents
                        .iter()
                        .position(|i| &i.id == orig)
                        .ok_or_else(|| IntentError::NotFound(orig.clone()))?,
                ),
                None => None,
            };
            if doc
                .intents
                .iter()
                .enumerate()
                .any(|(n, i)| i.id == new_id && Some(n) != position)
            {
                return Err(IntentError::Rejected(format!(
                    "an intent with id `{new_id}` already exists"
                )));
            }
            let extra = position
                .map(|p| doc.intents[p].extra.clone())
                .unwrap_or_default();
            let built = intent_from_draft(intent, extra)?;
            match position {
                Some(p) => doc.intents[p] = built,
                None => doc.intents.push(built),
            }
            Ok(())
        })
        .await
    }

    pub(super) async fn delete_intent(&self, id: String) -> Result<Reply, IpcError> {
        self.change_intents(move |doc| {
            let before = doc.intents.len();
            doc.intents.retain(|i| i.id != id);
            if doc.intents.len() == before {
                return Err(IntentError::NotFound(id));
            }
            Ok(())
        })
        .await
    }

    pub(super) async fn reorder_intents(&self, ids: Vec<String>) -> Result<Reply, IpcError> {
        self.change_intents(move |doc| {
            let mut current: Vec<&str> = doc.intents.iter().map(|i| i.id.as_str()).collect();
            let mut wanted: Vec<&str> = ids.iter().map(String::as_str).collect();
            current.sort_unstable();
            wanted.sort_unstable();
            if current != wanted {
                return Err(IntentError::Rejected(
                    "the new order must list every intent exactly once (the file changed meanwhile?)".into(),
                ));
            }
            let mut by_id: std::collections::HashMap<String, _> = std::mem::take(&mut doc.intents)
                .into_iter()
                .map(|i| (i.id.clone(), i))
                .collect();
            doc.intents = ids.iter().filter_map(|id| by_id.remove(id)).collect();
            Ok(())
        })
        .await
    }

    pub(super) async fn set_intent_status(
        &self,
        id: String,
        status: IntentStatus,
    ) -> Result<Reply, IpcError> {
        self.change_intents(move |doc| {
            let intent = doc
                .intents
                .iter_mut()
                .find(|i| i.id == id)
                .ok_or_else(|| IntentError::NotFound(id.clone()))?;
            intent.status = status;
            Ok(())
        })
        .await
    }

    pub(super) async fn preview_scope(&self, globs: Vec<String>) -> Result<Reply, IpcError> {
        let root = self.governance().root().to_path_buf();
        Self::blocking(move || preview_scope(&root, &globs)).await
    }

    pub(super) async fn intent_trace(&self, intent_id: String) -> Result<Reply, IpcError> {
        let root = self.governance().root().to_path_buf();
        Self::blocking(move || {
            trace::intent_changes(&root, &intent_id)
                .map(|changes| Reply::IntentTrace { changes })
                .map_err(|e| {
                    err(
                        IpcErrorCode::Io,
                        format!("cannot read the trace ledger: {e}"),
                    )
                })
        })
        .await
    }

    pub(super) async fn blame(&self, path: String) -> Result<Reply, IpcError> {
        let resolved = self
            .governance()
            .workspace
            .resolve(&path)
            .map_err(|e| err(IpcErrorCode::InvalidInput, e.to_string()))?;
        let root = self.governance().root().to_path_buf();
        Self::blocking(move || {
            trace::blame(&root, &resolved.rel)
                .map(|blame| Reply::Blame { blame })
                .map_err(|e| {
                    err(
                        IpcErrorCode::NotFound,
                        format!("cannot blame {}: {e}", resolved.rel),
                    )
                })
        })
        .await
    }

    pub(super) async fn verify_trace(&self) -> Result<Reply, IpcError> {
        let root = self.governance().root().to_path_buf();
        Self::blocking(move || {
            trace::verify(&root)
                .map(|report| Reply::Verify { report })
                .map_err(|e| {
                    err(
                        IpcErrorCode::Io,
                        format!("cannot read the trace ledger: {e}"),
                    )
                })
        })
        .await
    }

    pub(super) async fn change_diff(
        &self,
        record_id: String,
        path: String,
    ) -> Result<Reply, IpcError> {
        let root = self.governance().root().to_path_buf();
        Self::blocking(move || {
            trace::change_diff(&root, &record_id, &path)
                .map(|diff| Reply::Diff { diff })
                .map_err(|e| err(IpcErrorCode::Io, e.to_string()))
        })
        .await
    }

    pub(super) async fn check_command(&self, command: String) -> Result<Reply, IpcError> {
        let gov = self.governance().clone();
        Self::blocking(move || {
            let file = format!(
                "{}/{}",
                crate::orchestration::DIR,
                crate::hooks::command_policy::CommandPolicy::FILE_NAME
            );
            let source = if gov.root().join(&file).exists() {
                file
            } else {
                "built-in".to_string()
            };
            let check = match gov.policy() {
                Err(error) => CommandCheck {
                    source,
                    error: Some(error.to_string()),
                    destructive: None,
                    reasons: Vec::new(),
                },
                Ok(_) if command.trim().is_empty() => CommandCheck {
                    source,
                    error: None,
                    destructive: None,
                    reasons: Vec::new(),
                },
                Ok(policy) => {
                    let verdict = policy.classify(&command);
                    CommandCheck {
                        source,
                        error: None,
                        destructive: Some(
                            verdict.class
                                == crate::hooks::command_policy::CommandClass::Destructive,
                        ),
                        reasons: verdict.reasons,
                    }
                }
            };
            Ok(Reply::CommandCheck { check })
        })
        .await
    }

    pub(super) async fn select_intent(
        &self,
        task_id: &str,
        intent_id: Option<String>,
    ) -> Result<(), IpcError> {
        let task = self.task(task_id)?;
        match &intent_id {
            Some(id) => {
                let snapshot = self.governance().intents.snapshot();
                task.select_intent(&snapshot, id).map_err(|e| {
                    let code = match e {
                        crate::agent::SelectError::Unknown { .. } => IpcErrorCode::NotFound,
                        _ => IpcErrorCode::InvalidInput,
                    };
                    err(code, e.to_string())
                })?;
            }
            None => task.clear_intent(),
        }
        task.checkpoint(self.sink.as_ref()).await;
        self.sink.emit(Event::TaskUpdated {
            task: task.summary(),
        });
        Ok(())
    }
}

/// Which workspace files each glob matches (the first 50 of each).
fn preview_scope(root: &std::path::Path, globs: &[String]) -> Result<Reply, IpcError> {
    if globs.len() > 100 {
        return Err(err(IpcErrorCode::InvalidInput, "at most 100 globs at once"));
    }
    Ok(Reply::ScopePreview {
        globs: crate::tools::walk::glob_previews(root, globs),
    })
}

/// Only http(s) links leave the app, to the system browser, and `mailto:` links, to the mail
/// client with the address alone.
pub(super) fn open_external(url: &str) -> Result<(), IpcError> {
    let parsed = reqwest::Url::parse(url.trim())
        .map_err(|_| err(IpcErrorCode::InvalidInput, format!("`{url}` is not a link")))?;
    let target = match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => parsed.as_str().to_string(),
        "mailto" => mail_address(parsed.path())
            .map(|a| format!("mailto:{a}"))
            .ok_or_else(|| {
                err(
                    IpcErrorCode::InvalidInput,
                    format!("`{url}` is not one plain email address"),
                )
            })?,
        other => {
            return Err(err(
                IpcErrorCode::InvalidInput,
                format!("only http, https and mailto links are opened, not `{other}:`"),
            ))
        }
    };
    // MANDATE_OPENER lets tests observe the call instead of starting a browser.
    let opener = std::env::var("MANDATE_OPENER").unwrap_or_else(|_| "xdg-open".into());
    std::process::Command::new(opener)
        .arg(&target)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|mut child| {
            // Reap the opener when it exits so it does not linger as a zombie.
            std::thread::spawn(move || child.wait());
        })
        .map_err(|e| err(IpcErrorCode::Io, format!("could not open the browser: {e}")))
}

/// One address, `local@domain`, in plain characters. A subject, a body, more recipients and above
/// all attachments (`?attach=…`, which some mail clients honour) are never passed on.
fn mail_address(path: &str) -> Option<&str> {
    let (local, domain) = path.split_once('@')?;
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with(['.', '-'])
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    let domain_ok = domain.contains('.')
        && domain.len() <= 253
        && !domain.starts_with(['.', '-'])
        && domain
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b));
    (local_ok && domain_ok).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::mail_address;

    #[test]
    fn a_mailto_link_opens_with_the_address_alone() {
        let address = |url: &str| {
            reqwest::Url::parse(url)
                .ok()
                .and_then(|u| mail_address(u.path()).map(str::to_string))
        };
        assert_eq!(
            address("mailto:dev@example.org").as_deref(),
            Some("dev@example.org")
        );
        assert_eq!(
            address("mailto:dev@example.org?attach=/home/u/.ssh/id_rsa").as_deref(),
            Some("dev@example.org"),
            "the query is dropped"
        );
        for bad in [
            "mailto:a@b.c,evil@x.y",
            "mailto:?to=a@b.c",
            "mailto:a%40b@c.d",
            "mailto:-oProxyCommand@x.y",
            "mailto:a@-x.y",
            "mailto:a@localhost",
            "mailto:a b@c.d",
            "mailto:@c.d",
        ] {
            assert_eq!(address(bad), None, "{bad}");
        }
    }
}

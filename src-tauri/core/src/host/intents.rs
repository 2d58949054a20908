//! Host requests about intents, the trace ledger and links.

use std::sync::Arc;

use super::{err, Host};
use crate::orchestration::intents::{compile_glob, intent_from_draft, IntentError};
use crate::orchestration::trace;
use crate::protocol::{
    CommandCheck, Event, GlobPreview, IntentStatus, IpcError, IpcErrorCode, Reply, Request,
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
    pub(super) async fn handle_intents_and_trace(
        self: &Arc<Self>,
        request: Request,
    ) -> Result<Reply, IpcError> {
        let gov = self.governance();
        let root = gov.root().to_path_buf();
        let blocking = |f: Box<dyn FnOnce() -> Result<Reply, IpcError> + Send>| async move {
            tokio::task::spawn_blocking(f)
                .await
                .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
        };
        let changed = |snapshot: crate::orchestration::intents::IntentsSnapshot| {
            let view = snapshot.view();
            self.sink.emit(Event::IntentsChanged {
                intents: view.clone(),
            });
            Ok(Reply::Intents { intents: view })
        };
        match request {
            Request::ListIntents => Ok(Reply::Intents {
                intents: gov.intents.snapshot().view(),
            }),
            Request::SaveIntent {
                original_id,
                intent,
            } => {
                let snapshot = gov
                    .intents
                    .update(move |doc| {
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
                    .map_err(intent_error)?;
                changed(snapshot)
            }
            Request::DeleteIntent { id } => {
                let snapshot = gov
                    .intents
                    .update(|doc| {
                        let before = doc.intents.len();
                        doc.intents.retain(|i| i.id != id);
                        if doc.intents.len() == before {
                            return Err(IntentError::NotFound(id.clone()));
                        }
                        Ok(())
                    })
                    .map_err(intent_error)?;
                changed(snapshot)
            }
            Request::ReorderIntents { ids } => {
                let snapshot = gov
                    .intents
                    .update(|doc| {
                        let mut current: Vec<&str> = doc.intents.iter().map(|i| i.id.as_str()).collect();
                        let mut wanted: Vec<&str> = ids.iter().map(String::as_str).collect();
                        current.sort_unstable();
                        wanted.sort_unstable();
                        if current != wanted {
                            return Err(IntentError::Rejected(
                                "the new order must list every intent exactly once (the file changed meanwhile?)".into(),
                            ));
                        }
                        let mut reordered = Vec::with_capacity(ids.len());
                        for id in &ids {
                            if let Some(p) = doc.intents.iter().position(|i| &i.id == id) {
                                reordered.push(doc.intents.remove(p));
                            }
                        }
                        doc.intents = reordered;
                        Ok(())
                    })
                    .map_err(intent_error)?;
                changed(snapshot)
            }
            Request::SetIntentStatus { id, status } => {
                let snapshot = gov.intents.set_status(&id, status).map_err(intent_error)?;
                changed(snapshot)
            }
            Request::PreviewScope { globs } => {
                blocking(Box::new(move || preview_scope(&root, &globs))).await
            }
            Request::IntentTrace { intent_id } => {
                blocking(Box::new(move || {
                    trace::intent_changes(&root, &intent_id)
                        .map(|changes| Reply::IntentTrace { changes })
                        .map_err(|e| {
                            err(
                                IpcErrorCode::Io,
                                format!("cannot read the trace ledger: {e}"),
                            )
                        })
                }))
                .await
            }
            Request::Blame { path } => {
                let resolved = gov
                    .workspace
                    .resolve(&path)
                    .map_err(|e| err(IpcErrorCode::InvalidInput, e.to_string()))?;
                blocking(Box::new(move || {
                    trace::blame(&root, &resolved.rel)
                        .map(|blame| Reply::Blame { blame })
                        .map_err(|e| {
                            err(
                                IpcErrorCode::NotFound,
                                format!("cannot blame {}: {e}", resolved.rel),
                            )
                        })
                }))
                .await
            }
            Request::VerifyTrace => {
                blocking(Box::new(move || {
                    trace::verify(&root)
                        .map(|report| Reply::Verify { report })
                        .map_err(|e| {
                            err(
                                IpcErrorCode::Io,
                                format!("cannot read the trace ledger: {e}"),
                            )
                        })
                }))
                .await
            }
            Request::ChangeDiff { record_id, path } => {
                blocking(Box::new(move || {
                    trace::change_diff(&root, &record_id, &path)
                        .map(|diff| Reply::Diff { diff })
                        .map_err(|e| err(IpcErrorCode::Io, e.to_string()))
                }))
                .await
            }
            Request::CheckCommand { command } => {
                let file = format!(
                    ".orchestration/{}",
                    crate::hooks::command_policy::CommandPolicy::FILE_NAME
                );
                let source = if root.join(&file).exists() {
                    file
                } else {
                    "built-in".to_string()
                };
                let check = match gov.policy() {
                    Err(error) => CommandCheck {
                        source,
                        error: Some(error),
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
            }
            Request::OpenExternal { url } => {
                open_external(&url)?;
                Ok(Reply::Ok)
            }
            other => Err(err(
                IpcErrorCode::Internal,
                format!("request {other:?} reached the wrong handler"),
            )),
        }
    }

    pub(super) fn select_intent(
        &self,
        task_id: &str,
        intent_id: Option<String>,
    ) -> Result<(), IpcError> {
        let task = self.task(task_id)?;
        if let Some(id) = &intent_id {
            let snapshot = self.governance().intents.snapshot();
            match snapshot.doc.get(id) {
                None => {
                    return Err(err(
                        IpcErrorCode::NotFound,
                        format!("there is no intent `{id}`"),
                    ))
                }
                Some(i) if i.status == IntentStatus::Done => {
                    return Err(err(
                        IpcErrorCode::InvalidInput,
                        format!("intent `{id}` is DONE"),
                    ))
                }
                Some(_) => {}
            }
        }
        task.update(|r| {
            r.governance.selected_intent = intent_id.clone();
            r.summary.intent_id = intent_id.clone();
        });
        task.checkpoint(self.sink.as_ref());
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
    let ws =
        crate::workspace::Workspace::new(root).map_err(|e| err(IpcErrorCode::Io, e.to_string()))?;
    let all = ws
        .resolve(".")
        .ok()
        .and_then(|r| crate::tools::walk::list(&r, true, 200_000).ok())
        .map(|(files, _)| files)
        .unwrap_or_default();
    let previews = globs
        .iter()
        .map(|g| match compile_glob(g) {
            Err(e) => GlobPreview {
                glob: g.clone(),
                error: Some(e),
                matches: Vec::new(),
                total: 0,
            },
            Ok(glob) => {
                let m = glob.compile_matcher();
                let hits: Vec<&String> = all.iter().filter(|f| m.is_match(f.as_str())).collect();
                GlobPreview {
                    glob: g.clone(),
                    error: None,
                    total: hits.len() as u32,
                    matches: hits.into_iter().take(50).cloned().collect(),
                }
            }
        })
        .collect();
    Ok(Reply::ScopePreview { globs: previews })
}

/// Only http(s) links leave the app, to the system browser, and `mailto:` links, to the mail
/// client with the address alone.
fn open_external(url: &str) -> Result<(), IpcError> {
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

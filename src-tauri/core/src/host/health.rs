//! Broken governance files said out loud: the trace ledger is checked again whenever it changes,
//! and the window hears what is wrong (file, line, what) so it can keep a banner up in every view.
//! The intents file's own error travels with the intents (`IntentsView::error`).

use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use super::Host;
use crate::orchestration::ledger::LEDGER_FILE;
use crate::protocol::Event;

/// The ledger as last checked: its stamp (size, modification time) and what was wrong with it.
#[derive(Default)]
pub(super) struct LedgerHealth {
    last: Mutex<Option<Checked>>,
}

#[derive(Clone, PartialEq)]
struct Checked {
    root: std::path::PathBuf,
    stamp: Option<(u64, Option<SystemTime>)>,
    problem: Option<String>,
}

fn stamp(root: &Path) -> Option<(u64, Option<SystemTime>)> {
    let meta = std::fs::metadata(root.join(LEDGER_FILE)).ok()?;
    Some((meta.len(), meta.modified().ok()))
}

impl Host {
    /// What was wrong with the open workspace's ledger at the last check (None before the
    /// first): the window's first state must not wait for a check of a large ledger; the
    /// watcher's first check follows at once and tells the window.
    pub(super) fn known_ledger_problem(&self) -> Option<String> {
        let root = self.governance().root().to_path_buf();
        self.ledger_health
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|c| c.root == root)
            .and_then(|c| c.problem.clone())
    }

    /// What is wrong with the open workspace's ledger now, checked again only when the file
    /// changed since the last check; `Some(new)` when the answer changed.
    pub(super) async fn check_ledger(&self) -> (Option<String>, bool) {
        let root = self.governance().root().to_path_buf();
        let previous = self
            .ledger_health
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let now = {
            let root = root.clone();
            tokio::task::spawn_blocking(move || stamp(&root))
                .await
                .unwrap_or(None)
        };
        if let Some(p) = &previous {
            if p.root == root && p.stamp == now {
                return (p.problem.clone(), false);
            }
        }
        let checked = {
            let root = root.clone();
            let ledger = self.governance().ledger.clone();
            tokio::task::spawn_blocking(move || {
                // Read the stamp before the check: a change during it is checked next time.
                let stamp = stamp(&root);
                let problem = ledger.problem();
                Checked {
                    root,
                    stamp,
                    problem,
                }
            })
            .await
        };
        let Ok(checked) = checked else {
            return (previous.and_then(|p| p.problem), false);
        };
        let changed = previous.as_ref().map(|p| &p.problem) != Some(&checked.problem);
        let problem = checked.problem.clone();
        *self
            .ledger_health
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(checked);
        (problem, changed)
    }

    /// Checks the ledger and tells the window when what is wrong with it changed.
    pub(super) async fn watch_ledger(&self) {
        let (problem, changed) = self.check_ledger().await;
        if changed {
            self.sink.emit(Event::LedgerChecked { problem });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::orchestration::ledger::Ledger;

    #[test]
    fn a_damaged_ledger_is_named_with_its_line() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let ledger = Ledger::with_data_dir(tmp.path(), &tmp.path().join("data"));
        assert_eq!(ledger.problem(), None, "no ledger is no problem");
        let file = tmp.path().join(super::LEDGER_FILE);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, "not a record\n").expect("write");
        let problem = ledger.problem().expect("a problem");
        assert!(
            problem.contains(".orchestration/agent_trace.jsonl") && problem.contains("line 1"),
            "{problem}"
        );
    }
}

//! The task history, searched and exported. The store keeps one JSON file per task; a search
//! reads each file once and keeps what it needs (the title, the person's messages, the agent's
//! answers, the tools' targets) until the file's stamp changes, so a search over hundreds of
//! tasks asks the disk only for the directory and the stamps.

mod export;
mod matching;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::agent::TaskStore;
use crate::protocol::{HistoryField, HistoryHit, HistoryQuery, HistoryResults, TaskSummary};

pub use export::{export_file_name, save_export, to_markdown, ExportError, EXPORTS_DIR};
pub use matching::QueryError;

/// The most hits a search returns (the total is still counted).
pub const MAX_HITS: usize = 200;
/// What one task may give the search, in bytes of text; the rest of a huge task is not searched.
const MAX_TEXT_PER_TASK: usize = 4 << 20;

/// What the search keeps of every task file, by the file's stamp.
#[derive(Default)]
pub struct HistoryIndex {
    tasks: Mutex<HashMap<String, Kept>>,
}

struct Kept {
    stamp: Stamp,
    /// None: the file could not be read as a task (it is not read again until it changes).
    doc: Option<Arc<TaskDoc>>,
}

/// What tells a file changed: a rewrite (always a new file, renamed over) changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: meta.ino(),
        })
    }
}

/// One task as the search sees it.
#[derive(Debug)]
pub(crate) struct TaskDoc {
    pub summary: TaskSummary,
    /// The searchable texts, in the order a snippet is preferred from.
    pub fields: Vec<(HistoryField, String)>,
}

/// The parts of a task file the search reads; the rest is skipped.
#[derive(Deserialize)]
struct Stored {
    summary: TaskSummary,
    #[serde(default)]
    messages: Vec<Shown>,
    #[serde(default)]
    conversation: Vec<Sent>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shown {
    User {
        text: String,
    },
    Tool {
        call: CallTarget,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct CallTarget {
    #[serde(default)]
    target: String,
}

#[derive(Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum Sent {
    Assistant {
        #[serde(default)]
        text: String,
    },
    #[serde(other)]
    Other,
}

impl TaskDoc {
    fn read(path: &Path) -> Option<TaskDoc> {
        let bytes = std::fs::read(path).ok()?;
        let stored: Stored = serde_json::from_slice(&bytes).ok()?;
        Some(TaskDoc::from_parts(
            stored.summary,
            stored.messages.into_iter().filter_map(|m| match m {
                Shown::User { text } => Some((HistoryField::Person, text)),
                Shown::Tool { call } => Some((HistoryField::Tool, call.target)),
                Shown::Other => None,
            }),
            stored.conversation.into_iter().filter_map(|m| match m {
                Sent::Assistant { text } => Some((HistoryField::Agent, text)),
                Sent::Other => None,
            }),
        ))
    }

    /// Title first, then the person's messages, the agent's answers and the tools' targets;
    /// empty texts are left out and the whole is bounded.
    pub(crate) fn from_parts(
        summary: TaskSummary,
        shown: impl Iterator<Item = (HistoryField, String)>,
        sent: impl Iterator<Item = (HistoryField, String)>,
    ) -> TaskDoc {
        let (person, tools): (Vec<_>, Vec<_>) =
            shown.partition(|(field, _)| *field == HistoryField::Person);
        let mut fields = vec![(HistoryField::Title, summary.title.clone())];
        let mut budget = MAX_TEXT_PER_TASK;
        for (field, text) in person.into_iter().chain(sent).chain(tools) {
            if text.trim().is_empty() || budget == 0 {
                continue;
            }
            let kept = crate::text::prefix(&text, budget);
            budget -= kept.len();
            fields.push((field, kept.to_string()));
        }
        TaskDoc { summary, fields }
    }
}

impl HistoryIndex {
    /// Brings the kept copy up to date with the store: files gone are dropped, files whose
    /// stamp changed (or new ones) are read again, the others are not touched.
    fn refresh(&self, store: &TaskStore) -> Vec<Arc<TaskDoc>> {
        let files = store.files();
        let present: std::collections::HashSet<&str> =
            files.iter().map(|(id, _)| id.as_str()).collect();
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|id, _| present.contains(id.as_str()));
        let mut docs = Vec::with_capacity(files.len());
        for (id, path) in files {
            let Some(stamp) = Stamp::of(&path) else {
                tasks.remove(&id);
                continue;
            };
            let kept = match tasks.get(&id) {
                Some(kept) if kept.stamp == stamp => kept,
                _ => {
                    let doc = TaskDoc::read(&path).map(Arc::new);
                    tasks.entry(id).insert_entry(Kept { stamp, doc }).into_mut()
                }
            };
            docs.extend(kept.doc.clone());
        }
        docs
    }

    /// The tasks of `store` that match `query`, newest first. `intent_names` gives each
    /// intent's name (from the intents file); `live` the summaries of tasks in memory, which
    /// are fresher than their files.
    pub fn search(
        &self,
        store: &TaskStore,
        query: &HistoryQuery,
        intent_names: &HashMap<String, String>,
        live: &dyn Fn(&str) -> Option<TaskSummary>,
    ) -> Result<HistoryResults, QueryError> {
        let matcher = matching::Matcher::new(query)?;
        let docs = self.refresh(store);
        let searched = docs.len() as u64;
        let mut hits: Vec<HistoryHit> = docs
            .iter()
            .filter_map(|doc| {
                let name = doc
                    .summary
                    .intent_id
                    .as_ref()
                    .and_then(|id| intent_names.get(id));
                let snippet = matcher.matches(doc, name.map(String::as_str))?;
                let task = live(&doc.summary.id).unwrap_or_else(|| doc.summary.clone());
                Some(HistoryHit {
                    task,
                    intent_name: name.cloned(),
                    snippet,
                })
            })
            .collect();
        hits.sort_by(|a, b| b.task.updated_at.cmp(&a.task.updated_at));
        let total = hits.len() as u64;
        hits.truncate(MAX_HITS);
        Ok(HistoryResults {
            hits,
            total,
            searched,
        })
    }
}

#[cfg(test)]
mod export_tests;
#[cfg(test)]
mod history_tests;

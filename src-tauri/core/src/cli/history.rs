//! `mandate history search …` and `mandate history export TASK`: the window's task history,
//! from a terminal.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::inspect::print_json;
use super::{EXIT_ERROR, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::agent::{StoreError, TaskStore};
use crate::history::HistoryIndex;
use crate::orchestration::intents::{IntentsDoc, INTENTS_FILE};
use crate::protocol::{HistoryField, HistoryHit, HistoryQuery};
use crate::settings::AppDirs;

#[derive(Debug, Subcommand)]
pub enum HistoryAction {
    /// Find tasks by the words of their conversation (the person's messages, the agent's
    /// answers, the tools' targets), their intent, dates and cost; newest first. Exit 1 when
    /// no task matches.
    Search {
        /// Words that must all appear, in any case; taken literally.
        words: Vec<String>,
        /// An intent's id, or words of its name.
        #[arg(long)]
        intent: Option<String>,
        /// Tasks active on or after this day (YYYY-MM-DD, UTC) or moment (RFC 3339).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Tasks started on or before this day or moment.
        #[arg(long, value_name = "DATE")]
        until: Option<String>,
        /// Tasks that cost at least this many US dollars (a task of unknown cost does not).
        #[arg(long, value_name = "USD")]
        min_cost: Option<f64>,
        /// Tasks that cost at most this many US dollars.
        #[arg(long, value_name = "USD")]
        max_cost: Option<f64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a task (its id, or the start of it) as Markdown to FILE, or to standard output.
    Export {
        task: String,
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

pub fn history(root: &Path, action: HistoryAction) -> i32 {
    let root = match root.canonicalize() {
        Ok(root) => root,
        Err(e) => {
            eprintln!("mandate history: cannot open {}: {e}", root.display());
            return EXIT_USAGE;
        }
    };
    let store = TaskStore::new(&AppDirs::from_env().data, &root);
    let names = intent_names(&root);
    match action {
        HistoryAction::Search {
            words,
            intent,
            since,
            until,
            min_cost,
            max_cost,
            json,
        } => {
            let query = HistoryQuery {
                text: words.join(" "),
                intent,
                since,
                until,
                min_cost_usd: min_cost,
                max_cost_usd: max_cost,
            };
            search(&store, &query, &names, json)
        }
        HistoryAction::Export { task, output } => export(&store, &task, output, &names),
    }
}

/// Each intent's name, when the intents file reads (a search without names still works).
fn intent_names(root: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(root.join(INTENTS_FILE))
        .ok()
        .and_then(|text| IntentsDoc::parse(&text, INTENTS_FILE).ok())
        .map(|doc| doc.intents.into_iter().map(|i| (i.id, i.name)).collect())
        .unwrap_or_default()
}

fn search(
    store: &TaskStore,
    query: &HistoryQuery,
    names: &HashMap<String, String>,
    json: bool,
) -> i32 {
    let results = match HistoryIndex::default().search(store, query, names, &|_| None) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mandate history search: {e}");
            return EXIT_USAGE;
        }
    };
    if json {
        print_json(&results);
    } else {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for hit in &results.hits {
            if writeln!(out, "{}", hit_lines(hit)).is_err() {
                return EXIT_ERROR;
            }
        }
        if results.total > results.hits.len() as u64 {
            let _ = writeln!(
                out,
                "… and {} more; narrow the search.",
                results.total - results.hits.len() as u64
            );
        }
    }
    if results.total == 0 {
        if !json {
            eprintln!("No task matches (of {} searched).", results.searched);
        }
        return EXIT_FAILED;
    }
    EXIT_OK
}

/// `ID  DAY  INTENT  COST  TITLE`, then where the words were found.
fn hit_lines(hit: &HistoryHit) -> String {
    let task = &hit.task;
    let cost = task
        .usage
        .cost_usd
        .map(|c| format!("${c:.2}"))
        .unwrap_or_else(|| "$?".into());
    let day: String = task.updated_at.chars().take(10).collect();
    let intent = task.intent_id.as_deref().unwrap_or("-");
    let mut line = format!("{}  {day}  {intent:<10} {cost:>7}  {}", task.id, task.title);
    if let Some(s) = &hit.snippet {
        let field = match s.field {
            HistoryField::Title => "title",
            HistoryField::Person => "you",
            HistoryField::Agent => "agent",
            HistoryField::Tool => "tool",
            HistoryField::Intent => "intent",
        };
        line.push_str(&format!(
            "\n    {field}: {}[{}]{}",
            s.before, s.matched, s.after
        ));
    }
    line
}

fn export(
    store: &TaskStore,
    task: &str,
    output: Option<PathBuf>,
    names: &HashMap<String, String>,
) -> i32 {
    let id = match resolve_id(store, task) {
        Ok(id) => id,
        Err(why) => {
            eprintln!("mandate history export: {why}");
            return EXIT_USAGE;
        }
    };
    let record = match store.load(&id) {
        Ok(r) => r,
        Err(e @ StoreError::NotFound(_)) => {
            eprintln!("mandate history export: {e}");
            return EXIT_USAGE;
        }
        Err(e) => {
            eprintln!("mandate history export: {e}");
            return EXIT_ERROR;
        }
    };
    let name = record
        .summary
        .intent_id
        .as_ref()
        .and_then(|i| names.get(i))
        .map(String::as_str);
    let markdown = crate::history::to_markdown(&record, name);
    match output {
        Some(path) => match crate::fsutil::write_atomic(&path, markdown.as_bytes()) {
            Ok(()) => {
                println!("Exported task {id} to {}.", path.display());
                EXIT_OK
            }
            Err(e) => {
                eprintln!(
                    "mandate history export: cannot write {}: {e}",
                    path.display()
                );
                EXIT_ERROR
            }
        },
        None => match std::io::stdout().lock().write_all(markdown.as_bytes()) {
            Ok(()) => EXIT_OK,
            Err(_) => EXIT_ERROR,
        },
    }
}

#[derive(Debug, thiserror::Error)]
enum IdError {
    #[error("there is no task `{0}` in this workspace's history")]
    Unknown(String),
    #[error("`{0}` starts {1} tasks' ids; give more of it")]
    Ambiguous(String, usize),
}

/// A task's whole id, from the id or the start of exactly one.
fn resolve_id(store: &TaskStore, given: &str) -> Result<String, IdError> {
    let ids: Vec<String> = store.files().into_iter().map(|(id, _)| id).collect();
    if ids.iter().any(|id| id == given) {
        return Ok(given.to_string());
    }
    let starting: Vec<&String> = if given.is_empty() {
        Vec::new()
    } else {
        ids.iter().filter(|id| id.starts_with(given)).collect()
    };
    match starting.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(IdError::Unknown(given.to_string())),
        many => Err(IdError::Ambiguous(given.to_string(), many.len())),
    }
}

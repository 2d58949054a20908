//! `mandate intents …` and `mandate trace …`.

use std::io::Write as _;
use std::path::Path;

use super::{IntentsAction, EXIT_ERROR, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::orchestration::intent_map::INTENT_MAP_FILE;
use crate::orchestration::intents::{status_str, IntentError, IntentsDoc, INTENTS_FILE};
use crate::orchestration::trace;

pub(super) fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("mandate: {e}"),
    }
}

/// Why the intents file could not be loaded.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error(transparent)]
    Invalid(#[from] IntentError),
    #[error("cannot read {INTENTS_FILE}: {0}")]
    Read(std::io::Error),
}

fn load(root: &Path) -> Result<Option<IntentsDoc>, LoadError> {
    match std::fs::read_to_string(root.join(INTENTS_FILE)) {
        Ok(text) => Ok(Some(IntentsDoc::parse(&text, INTENTS_FILE)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LoadError::Read(e)),
    }
}

pub fn intents(root: &Path, action: IntentsAction, json: bool) -> i32 {
    let doc = match load(root) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("mandate: {e}");
            return EXIT_FAILED;
        }
    };
    match action {
        IntentsAction::List => {
            let doc = doc.unwrap_or_default();
            if json {
                let views: Vec<_> = doc.intents.iter().map(|i| i.view()).collect();
                print_json(&views);
            } else if doc.intents.is_empty() {
                println!("No intents in {INTENTS_FILE}.");
            } else {
                // One buffered writer: a line-buffered stdout would make a write per intent.
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                for i in &doc.intents {
                    let line = writeln!(
                        out,
                        "{:<12} {:<12} {}  [{}]",
                        i.id,
                        status_str(i.status),
                        i.name,
                        i.owned_scope.join(", ")
                    );
                    if line.is_err() {
                        // The reader went away (`mandate intents list | head`).
                        break;
                    }
                }
                let _ = out.flush();
            }
            EXIT_OK
        }
        IntentsAction::Map => {
            let doc = doc.unwrap_or_default();
            match crate::orchestration::intent_map::regenerate(root, &doc) {
                Ok(()) => {
                    if json {
                        print_json(&serde_json::json!({"file": INTENT_MAP_FILE}));
                    } else {
                        println!("rebuilt {INTENT_MAP_FILE}");
                    }
                    EXIT_OK
                }
                Err(e) => {
                    eprintln!("mandate: cannot rebuild {INTENT_MAP_FILE}: {e}");
                    EXIT_ERROR
                }
            }
        }
        IntentsAction::Show { id } => {
            let doc = doc.unwrap_or_default();
            let Some(intent) = doc.get(&id) else {
                eprintln!("mandate: there is no intent `{id}` in {INTENTS_FILE}");
                return EXIT_USAGE;
            };
            let changes = trace::intent_changes(root, &id).unwrap_or_default();
            if json {
                print_json(&serde_json::json!({"intent": intent.view(), "changes": changes}));
            } else {
                println!("{}", crate::tools::intent_context(intent, &changes));
            }
            EXIT_OK
        }
        IntentsAction::Validate => {
            let mut problems = Vec::new();
            let count = doc.as_ref().map(|d| d.intents.len()).unwrap_or(0);
            if doc.is_none() {
                problems.push(format!("{INTENTS_FILE} does not exist"));
            }
            if let Err(e) = crate::hooks::command_policy::CommandPolicy::load(root) {
                problems.push(e.to_string());
            }
            if let Err(e) = crate::hooks::ignore_list::IntentIgnore::load(root) {
                problems.push(e.to_string());
            }
            if json {
                print_json(
                    &serde_json::json!({"valid": problems.is_empty(), "intents": count, "problems": problems}),
                );
            } else if problems.is_empty() {
                println!("valid: {count} intents, the command policy and .intentignore load");
            } else {
                for p in &problems {
                    eprintln!("invalid: {p}");
                }
            }
            if problems.is_empty() {
                EXIT_OK
            } else {
                EXIT_FAILED
            }
        }
    }
}

/// `mandate trace blame FILE[:LINE]`.
pub fn blame(root: &Path, target: String, json: bool) -> i32 {
    let (file, line) = match target.rsplit_once(':') {
        Some((f, l)) if l.parse::<u32>().is_ok() => (f.to_string(), l.parse::<u32>().ok()),
        _ => (target.clone(), None),
    };
    let ws = match crate::workspace::Workspace::new(root) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("mandate: {e}");
            return EXIT_USAGE;
        }
    };
    let rel = match ws.resolve(&file) {
        Ok(r) => r.rel,
        Err(e) => {
            eprintln!("mandate: {e}");
            return EXIT_USAGE;
        }
    };
    let blame = match trace::blame(ws.root(), &rel) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("mandate: there is no file {rel} in the workspace");
            return EXIT_USAGE;
        }
        Err(e) => {
            eprintln!("mandate: cannot blame {rel}: {e}");
            return EXIT_ERROR;
        }
    };
    let lines: Vec<_> = match line {
        Some(n) => {
            let Some(l) = blame.lines.iter().find(|l| l.line == n) else {
                eprintln!(
                    "mandate: {rel} has {} lines; there is no line {n}",
                    blame.lines.len()
                );
                return EXIT_USAGE;
            };
            vec![l.clone()]
        }
        None => blame.lines.clone(),
    };
    if json {
        print_json(&serde_json::json!({"path": rel, "lines": lines}));
    } else {
        for l in &lines {
            match &l.origin {
                Some(o) => println!(
                    "{:>5} {:<10} {:<24} task {} ({}; approved by {}) | {}",
                    l.line,
                    o.intent_id,
                    o.model,
                    &o.task_id[..o.task_id.len().min(8)],
                    o.contributor,
                    o.approval,
                    l.text
                ),
                None => println!(
                    "{:>5} {:<10} {:<24} {:<47} | {}",
                    l.line, "-", "-", "(not recorded)", l.text
                ),
            }
        }
    }
    EXIT_OK
}

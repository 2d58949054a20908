//! `mandate init`: what it set up, one line per step.

use std::path::{Path, PathBuf};

use super::inspect::print_json;
use super::{EXIT_FAILED, EXIT_OK};
use crate::orchestration::init::{self, Outcome};

pub fn init(root: &Path, hook: bool, json: bool) -> i32 {
    // Git runs the merge driver and the hook with this binary, wherever it is installed.
    let me = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .unwrap_or_else(|| PathBuf::from("mandate"));
    let steps = match init::init(root, &me, hook) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mandate: {e}");
            return EXIT_FAILED;
        }
    };
    if json {
        print_json(&serde_json::json!({"schema": "mandate.init/1", "steps": steps}));
        return EXIT_OK;
    }
    for s in &steps {
        let what = match s.outcome {
            Outcome::Created => "created",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "already there",
            Outcome::Skipped => "skipped",
        };
        println!("{what:>13}  {}", s.what);
        if let Some(note) = &s.note {
            for line in note.lines() {
                println!("{:>13}  {line}", "");
            }
        }
    }
    EXIT_OK
}

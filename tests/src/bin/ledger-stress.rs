//! A helper process for the concurrency and crash tests: appends trace records to a workspace's
//! ledger, or rewrites its intents file, as fast as it can.
//!
//! `ledger-stress append WORKSPACE TAG COUNT` / `ledger-stress intents WORKSPACE COUNT`

use mandate_core::orchestration::intents::IntentStore;
use mandate_core::orchestration::ledger::{
    content_hash, ApprovalRecord, FileChange, HashedRange, Ledger, TraceEntry,
};
use mandate_core::protocol::IntentStatus;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(args.get(2).map(String::as_str).unwrap_or("."));
    match args.get(1).map(String::as_str) {
        Some("append") => {
            let tag = args.get(3).cloned().unwrap_or_default();
            let count: usize = args.get(4).and_then(|c| c.parse().ok()).unwrap_or(100);
            let path = format!("stress/{tag}.txt");
            let lines: Vec<String> = (1..=5).map(|i| format!("line {i} of {tag}")).collect();
            std::fs::create_dir_all(root.join("stress")).expect("mkdir");
            std::fs::write(root.join(&path), lines.join("\n") + "\n").expect("write");
            let ledger = Ledger::new(&root);
            for i in 0..count {
                let entry = TraceEntry {
                    task_id: format!("task-{tag}"),
                    intent_id: "INT-STRESS".into(),
                    model_id: "test/stress".into(),
                    tool: "write_to_file".into(),
                    tool_call_id: format!("{tag}-{i}"),
                    contributor: "ai".into(),
                    mutation_declared: "INTENT_EVOLUTION".into(),
                    mutation_computed: "INTENT_EVOLUTION".into(),
                    approval: ApprovalRecord {
                        by: "policy".into(),
                        at: "2026-01-01T00:00:00Z".into(),
                        accepted_hunks: vec![],
                        rejected_hunks: vec![],
                        edited: false,
                        user_hooks: vec![],
                    },
                    files: vec![FileChange {
                        path: path.clone(),
                        ranges: vec![HashedRange {
                            start_line: 2,
                            end_line: 3,
                            content_hash: content_hash(&lines[1..3]),
                        }],
                    }],
                    extra: Default::default(),
                };
                ledger.append(&entry).expect("append");
            }
        }
        Some("intents") => {
            let count: usize = args.get(3).and_then(|c| c.parse().ok()).unwrap_or(100);
            let store = IntentStore::new(&root);
            for i in 0..count {
                let status = if i % 2 == 0 {
                    IntentStatus::InProgress
                } else {
                    IntentStatus::Blocked
                };
                store.set_status("INT-1", status).expect("set status");
            }
        }
        _ => {
            eprintln!("usage: ledger-stress append WORKSPACE TAG COUNT | intents WORKSPACE COUNT");
            std::process::exit(2);
        }
    }
}

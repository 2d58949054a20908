//! A helper process for the ledger's tests: appends trace records to a workspace's ledger
//! through `Ledger` (as an agent's governed write does), or rewrites its intents file.
//!
//! - `ledger-stress append WORKSPACE TAG COUNT`: COUNT records, as fast as it can;
//! - `ledger-stress intents WORKSPACE COUNT`: rewrites the intents file COUNT times;
//! - `ledger-stress record WORKSPACE INTENT PATH START END [MODEL] [REVERT_OF]`: one record for
//!   lines START..END of PATH as they are now (an agent's write); prints the record's id;
//! - `ledger-stress fill WORKSPACE`: appends until an append fails (a full disk), then prints
//!   the error and exits 0;
//! - `ledger-stress forge-acceptance WORKSPACE`: appends a record saying a person accepted the
//!   ledger as broken, with a correct chain and digest, as a forger with the code could.
//!
//! The heads go to `MANDATE_DATA_DIR`, as for the `mandate` binary.

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
                    contributor: mandate_core::protocol::Contributor::Ai,
                    mutation_declared: Some(mandate_core::protocol::MutationClass::IntentEvolution),
                    mutation_computed: Some(mandate_core::protocol::MutationClass::IntentEvolution),
                    approval: ApprovalRecord {
                        by: mandate_core::protocol::Approver::Policy,
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
        Some("record") => {
            let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
            let (intent, path) = (arg(3), arg(4));
            let start: u32 = arg(5).parse().expect("START");
            let end: u32 = arg(6).parse().expect("END");
            let model = args.get(7).cloned().unwrap_or_else(|| "test/agent".into());
            let text = std::fs::read_to_string(root.join(&path)).expect("read PATH");
            let lines: Vec<&str> = text.lines().collect();
            let mut extra = serde_json::Map::new();
            if let Some(reverted) = args.get(8) {
                extra.insert("revert_of".into(), serde_json::json!(reverted));
            }
            let entry = TraceEntry {
                task_id: format!("task-{intent}"),
                intent_id: intent.clone(),
                model_id: model,
                tool: "write_to_file".into(),
                tool_call_id: format!("call-{path}-{start}"),
                contributor: mandate_core::protocol::Contributor::Ai,
                mutation_declared: Some(mandate_core::protocol::MutationClass::IntentEvolution),
                mutation_computed: Some(mandate_core::protocol::MutationClass::IntentEvolution),
                approval: ApprovalRecord {
                    by: mandate_core::protocol::Approver::User,
                    at: "2026-01-01T00:00:00Z".into(),
                    accepted_hunks: vec![0],
                    rejected_hunks: vec![],
                    edited: false,
                    user_hooks: vec![],
                },
                files: vec![FileChange {
                    path: path.clone(),
                    ranges: vec![HashedRange {
                        start_line: start,
                        end_line: end,
                        content_hash: content_hash(&lines[start as usize - 1..end as usize]),
                    }],
                }],
                extra,
            };
            let record = Ledger::new(&root).append(&entry).expect("append");
            println!("{}", record["id"].as_str().unwrap_or_default());
        }
        Some("fill") => {
            let ledger = Ledger::new(&root);
            let filler = "x".repeat(3000);
            for i in 0.. {
                let mut extra = serde_json::Map::new();
                extra.insert("filler".into(), serde_json::json!(filler));
                let entry = TraceEntry {
                    task_id: "fill".into(),
                    intent_id: "INT-FILL".into(),
                    model_id: "test/fill".into(),
                    tool: "write_to_file".into(),
                    tool_call_id: format!("fill-{i}"),
                    contributor: mandate_core::protocol::Contributor::Ai,
                    mutation_declared: Some(mandate_core::protocol::MutationClass::IntentEvolution),
                    mutation_computed: Some(mandate_core::protocol::MutationClass::IntentEvolution),
                    approval: ApprovalRecord {
                        by: mandate_core::protocol::Approver::Policy,
                        at: "2026-01-01T00:00:00Z".into(),
                        accepted_hunks: vec![],
                        rejected_hunks: vec![],
                        edited: false,
                        user_hooks: vec![],
                    },
                    files: vec![FileChange {
                        path: "fill.txt".into(),
                        ranges: vec![],
                    }],
                    extra,
                };
                if let Err(e) = ledger.append(&entry) {
                    println!("{i} records, then: {e}");
                    return;
                }
            }
        }
        Some("forge-acceptance") => {
            let record = serde_json::json!({
                "version": "0.1",
                "id": "forged-acceptance",
                "timestamp": "2026-01-01T00:00:00Z",
                "tool": {"name": "mandate", "version": "0"},
                "files": [],
                "metadata": {"dev.mandate": {"accepted_break": {"line": 1, "reason": "forged"}}},
            });
            Ledger::new(&root).append_record(record).expect("append");
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
            eprintln!("usage: ledger-stress append WORKSPACE TAG COUNT | intents WORKSPACE COUNT | record WORKSPACE INTENT PATH START END [MODEL] [REVERT_OF] | fill WORKSPACE | forge-acceptance WORKSPACE");
            std::process::exit(2);
        }
    }
}

//! A helper process for the lost-update and crash tests: governed writes through the journal, as
//! fast as it can, each on the bytes it has just read (the pattern that loses updates when the
//! check and the write are not one step).
//!
//! `journal-stress WORKSPACE DATA_DIR TAG COUNT MAX_BYTES [FILES]`: COUNT writes spread over
//! FILES files `hammer/N.txt` (default 3); each write appends a line, or, with MAX_BYTES above
//! the file's size, rewrites the file with up to MAX_BYTES of text derived from TAG.

use std::sync::Arc;

use mandate_core::checkpoint::CheckpointStore;
use mandate_core::journal::{FileWrite, Journal};
use mandate_core::orchestration::ledger::{ApprovalRecord, Ledger, TraceEntry};
use mandate_core::workspace::Workspace;

fn entry(tag: &str, n: usize) -> TraceEntry {
    TraceEntry {
        task_id: format!("task-{tag}"),
        intent_id: "INT-1".into(),
        model_id: "test/stress".into(),
        tool: "write_to_file".into(),
        tool_call_id: format!("{tag}-{n}"),
        contributor: mandate_core::protocol::Contributor::Ai,
        mutation_declared: Some(mandate_core::protocol::MutationClass::IntentEvolution),
        mutation_computed: None,
        approval: ApprovalRecord {
            by: mandate_core::protocol::Approver::Policy,
            at: "2026-01-01T00:00:00Z".into(),
            accepted_hunks: vec![],
            rejected_hunks: vec![],
            edited: false,
            user_hooks: vec![],
        },
        files: vec![],
        extra: Default::default(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!("usage: journal-stress WORKSPACE DATA_DIR TAG COUNT MAX_BYTES [FILES]");
        std::process::exit(2);
    }
    let ws = Workspace::new(std::path::Path::new(&args[1])).expect("workspace");
    let data = std::path::PathBuf::from(&args[2]);
    let tag = args[3].clone();
    let count: usize = args[4].parse().expect("count");
    let max_bytes: usize = args[5].parse().expect("max bytes");
    let files: usize = args.get(6).and_then(|f| f.parse().ok()).unwrap_or(3);
    let ledger = Arc::new(Ledger::with_data_dir(ws.root(), &data));
    let journal = Journal::new(ws.root(), Arc::new(CheckpointStore::new(&data, ws.root())));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut accepted = 0;
    for n in 0..count {
        let rel = format!("hammer/{}.txt", n % files);
        let path = ws.resolve(&rel).expect("resolve");
        let base = std::fs::read(&path.abs).ok();
        let mut new = base.clone().unwrap_or_default();
        if max_bytes > new.len() + 64 {
            let line = format!("{tag} {n} {}\n", "x".repeat(60));
            while new.len() + line.len() < max_bytes {
                new.extend_from_slice(line.as_bytes());
            }
        } else {
            new.extend_from_slice(format!("{tag} {n}\n").as_bytes());
        }
        let write = FileWrite::new(path, base, new, entry(&tag, n));
        if rt
            .block_on(journal.write(ledger.clone(), write, |_| None))
            .is_ok()
        {
            accepted += 1;
        }
    }
    println!("{accepted}");
}

//! Checkpoints and undo: what keeping the before- and after-images adds to a governed 10 KB
//! write, and the preview of undoing an intent with 1,000 records over 200 files.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mandate_core::checkpoint::CheckpointStore;
use mandate_core::journal::{FileWrite, Journal};
use mandate_core::orchestration::ledger::{ApprovalRecord, Ledger, TraceEntry};
use mandate_core::undo::{plan, Selection};
use mandate_core::workspace::Workspace;

use super::{median, ms, time, Row};

fn entry(call: String) -> TraceEntry {
    TraceEntry {
        task_id: "bench".into(),
        intent_id: "INT-1".into(),
        model_id: "bench/none".into(),
        tool: "write_to_file".into(),
        tool_call_id: call,
        contributor: mandate_core::protocol::Contributor::Ai,
        mutation_declared: Some(mandate_core::protocol::MutationClass::IntentEvolution),
        mutation_computed: None,
        approval: ApprovalRecord {
            by: mandate_core::protocol::Approver::Policy,
            at: "2026-01-01T00:00:00Z".into(),
            accepted_hunks: vec![],
            rejected_hunks: vec![],
            edited: false,
            user_hooks: Vec::new(),
        },
        files: vec![],
        extra: Default::default(),
    }
}

pub fn figures(root: &Path) -> Vec<Row> {
    let dir = root.join("undo");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("ws/src")).expect("mkdir");
    let ws = Workspace::new(&dir.join("ws")).expect("ws");
    let store = Arc::new(CheckpointStore::new(&dir.join("data"), ws.root()));
    let journal = Journal::new(ws.root(), store.clone());
    let ledger = Arc::new(Ledger::new(ws.root()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let line = |n: usize, v: usize| {
        format!(
            "line {n:04} of the file, version {v:04} {}\n",
            "x".repeat(20)
        )
    };
    // 1,000 governed writes of ~10 KB over 200 files, timing the images' part of each: both
    // images stored anew each time (the before image is usually stored already, by the write
    // that produced it), in a store that exists, as the workspace's does after its first write.
    let probe = CheckpointStore::new(&dir.join("probe"), ws.root());
    let objects = dir
        .join("probe/checkpoints")
        .join(mandate_core::settings::workspace_key(ws.root()))
        .join("objects");
    let (mut whole, mut images) = (Vec::new(), Vec::new());
    for n in 0..1000 {
        let rel = format!("src/f{:03}.txt", n % 200);
        let path = ws.resolve(&rel).expect("resolve");
        let base = std::fs::read(&path.abs).ok();
        let new: String = (0..170)
            .map(|l| line(l, if l == n % 170 { n } else { 0 }))
            .collect();
        let new = new.into_bytes();
        // What checkpointing costs in this write: storing the before and the after image.
        let (t_images, stored) = time(|| {
            let before = base.as_deref().map(|b| probe.put(b).expect("put"));
            (before, probe.put(&new).expect("put"))
        });
        let write = FileWrite::new(path, base, new, entry(format!("c{n}")));
        let (t, done) = time(|| rt.block_on(journal.write(ledger.clone(), write, |_| None)));
        done.expect("write");
        whole.push(t);
        images.push(t_images);
        for hash in stored.0.iter().chain([&stored.1]) {
            let _ = std::fs::remove_file(objects.join(&hash[..2]).join(hash));
        }
    }
    let (w, i) = (
        median(whole[100..].to_vec()),
        median(images[100..].to_vec()),
    );
    let added = i.as_secs_f64() / (w.as_secs_f64() - i.as_secs_f64()).max(1e-9);
    let selection = Selection {
        intent_id: Some("INT-1".into()),
        ..Selection::default()
    };
    let mut previews: Vec<Duration> = Vec::new();
    for _ in 0..5 {
        let (t, p) = time(|| plan(ws.root(), &store, &selection).expect("plan"));
        assert_eq!(p.records.len(), 1000);
        assert_eq!(p.files.len(), 200);
        previews.push(t);
    }
    let preview = median(previews);
    vec![
        Row {
            figure: "checkpoint images in a governed 10 KB write",
            measured: format!("+{} per write", ms(i)),
            reference: format!("the write without them {}", ms(w - i)),
            ratio: format!("+{:.1}%", added * 100.0),
            budget: "<= +10%",
            ok: added <= 0.10,
        },
        Row {
            figure: "undo preview of an intent (1,000 records, 200 files)",
            measured: ms(preview),
            reference: String::new(),
            ratio: String::new(),
            budget: "<= 300 ms",
            ok: preview <= Duration::from_millis(300),
        },
    ]
}

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
    // The runtime the window and `mandate run` use.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let line = |n: usize, v: usize| {
        format!(
            "line {n:04} of the file, version {v:04} {}\n",
            "x".repeat(20)
        )
    };
    // 1,000 governed writes of ~10 KB over 200 files, in pairs: one whose before- and
    // after-images are both stored anew (the before image is usually stored already, by the
    // write that produced it), one whose images are both kept already (only looked for). What
    // the images add is the difference of the two medians, as the write pays it: it stores them
    // while the disk works on its journal entry and its bytes. Apart, what storing both takes
    // alone, outside a write.
    let objects = dir
        .join("data/checkpoints")
        .join(mandate_core::settings::workspace_key(ws.root()))
        .join("objects");
    let object = |hash: &str| objects.join(&hash[..2]).join(hash);
    let (mut anew, mut kept, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..1000 {
        let rel = format!("src/f{:03}.txt", n % 200);
        let path = ws.resolve(&rel).expect("resolve");
        let base = std::fs::read(&path.abs).ok();
        let new: String = (0..170)
            .map(|l| line(l, if l == n % 170 { n } else { 0 }))
            .collect();
        let new = new.into_bytes();
        let hashes = (
            base.as_deref().map(mandate_core::fsutil::sha256_hex),
            mandate_core::fsutil::sha256_hex(&new),
        );
        let images = [
            (hashes.0.as_deref(), base.as_deref()),
            (Some(hashes.1.as_str()), Some(&new[..])),
        ];
        let stored_anew = n % 2 == 0;
        for (hash, bytes) in images {
            let (Some(hash), Some(bytes)) = (hash, bytes) else {
                continue;
            };
            let _ = std::fs::remove_file(object(hash));
            if !stored_anew {
                // Kept already; timed alone first, as the figure of storing them outside a write.
                let (t, stored) = time(|| store.put_hashed(hash, bytes));
                stored.expect("put");
                alone.push(t);
            }
        }
        let write = FileWrite::new(path, base, new, entry(format!("c{n}")));
        let (t, done) = time(|| rt.block_on(journal.write(ledger.clone(), write, |_| None)));
        done.expect("write");
        if stored_anew {
            anew.push(t)
        } else {
            kept.push(t)
        }
    }
    let (with, without) = (median(anew[50..].to_vec()), median(kept[50..].to_vec()));
    // Signed: storing them can cost nothing visible (it overlaps the disk's wait), and then
    // the difference of the two medians is noise either way; a negative figure says so.
    let w = without;
    let added_s = with.as_secs_f64() - without.as_secs_f64();
    let added = added_s / w.as_secs_f64().max(1e-9);
    println!(
        "    checkpoint images: a write storing both {}, one finding both kept {}; storing one alone {}",
        ms(with),
        ms(without),
        ms(median(alone))
    );
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
            measured: format!("{:+.2} ms per write", added_s * 1e3),
            reference: format!("the write with both kept already {}", ms(w)),
            ratio: format!("{:+.1}%", added * 100.0),
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

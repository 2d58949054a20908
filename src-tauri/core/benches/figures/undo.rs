//! Checkpoints and undo: what keeping the before- and after-images adds to a governed 10 KB
//! write, and the preview of undoing an intent with 1,000 records over 200 files.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;

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

/// A workspace of its own, with its store, journal and ledger.
struct Bench {
    ws: Workspace,
    store: Arc<CheckpointStore>,
    journal: Journal,
    ledger: Arc<Ledger>,
}

impl Bench {
    fn new(dir: &Path) -> Self {
        std::fs::create_dir_all(dir.join("ws/src")).expect("mkdir");
        let ws = Workspace::new(&dir.join("ws")).expect("ws");
        let store = Arc::new(CheckpointStore::new(&dir.join("data"), ws.root()));
        Self {
            journal: Journal::new(ws.root(), store.clone()),
            ledger: Arc::new(Ledger::new(ws.root())),
            ws,
            store,
        }
    }

    /// One governed write of `new` over the file's `base`, timed.
    fn write(&self, rt: &Runtime, n: usize, rel: &str, base: Vec<u8>, new: Vec<u8>) -> Duration {
        let path = self.ws.resolve(rel).expect("resolve");
        let base = Some(base).filter(|_| path.abs.exists());
        let write = FileWrite::new(path, base, new, entry(format!("c{n}")));
        let ledger = self.ledger.clone();
        let (t, done) = time(|| rt.block_on(self.journal.write(ledger, write, |_| None)));
        done.expect("write");
        t
    }
}

/// The file's 170 lines of ~50 bytes with line `at` set to `text`.
fn lines(at: usize, text: &str, others: &[String]) -> Vec<u8> {
    let mut out = String::new();
    for (l, line) in others.iter().enumerate() {
        out.push_str(if l == at { text } else { line });
        out.push('\n');
    }
    out.into_bytes()
}

pub fn figures(root: &Path) -> Vec<Row> {
    // A directory of its own for each run, the earlier runs' removed only once this one is
    // measured. On an ext4 without a journal (this machine's), the kernel does not give a new
    // file an inode freed in the last minutes: each creation steps over every such inode of its
    // block group (`recently_deleted`, a third of all samples under `perf` when the images were
    // made among thousands of just-removed files). Removing files just before measuring would
    // time that, not the images.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = root.join(format!("undo-{stamp}"));
    // The runtime the window and `mandate run` use.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let line = |l: usize, v: &str| format!("line {l:04} of the file, {v:>16} {}", "x".repeat(20));
    let first: Vec<String> = (0..170).map(|l| line(l, "version 0000")).collect();

    // 1,000 governed writes of ~10 KB over 200 files, in pairs: one whose before- and
    // after-images are both stored anew, one whose images are both kept already (only looked
    // for). Before each, one line of the file is changed outside Mandate (as the person edits
    // between the agent's changes), so its before-image is one no write stored; the agent's
    // write changes another line. What the images add is the difference of the two medians,
    // as the write pays it: it stores them while the disk works on its journal entry and its
    // bytes. Apart, what storing one takes alone, outside a write.
    let images = Bench::new(&dir.join("images"));
    let mut files = vec![first.clone(); 200];
    for f in 0..200 {
        let abs = images.ws.root().join(format!("src/f{f:03}.txt"));
        std::fs::write(abs, lines(usize::MAX, "", &first)).expect("a file of the workspace");
    }
    let (mut anew, mut kept, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..1000 {
        let (rel, file) = (format!("src/f{:03}.txt", n % 200), &mut files[n % 200]);
        let base = lines(
            (n + 85) % 170,
            &line((n + 85) % 170, &format!("by hand {n:04}")),
            file,
        );
        std::fs::write(images.ws.root().join(&rel), &base).expect("edit by hand");
        file[(n + 85) % 170] = line((n + 85) % 170, &format!("by hand {n:04}"));
        let new = lines(n % 170, &line(n % 170, &format!("version {n:04}")), file);
        file[n % 170] = line(n % 170, &format!("version {n:04}"));
        let stored_anew = n % 2 == 0;
        if !stored_anew {
            // Kept already; timed alone first, as the figure of storing them outside a write.
            for bytes in [&base, &new] {
                let hash = mandate_core::fsutil::sha256_hex(bytes);
                let (t, stored) = time(|| images.store.put_hashed(&hash, bytes));
                stored.expect("put");
                alone.push(t);
            }
        }
        let t = images.write(&rt, n, &rel, base, new);
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

    // The preview: an intent's 1,000 writes over 200 files, each write over the one before.
    let undo = Bench::new(&dir.join("undo"));
    let mut files = vec![first; 200];
    for n in 0..1000 {
        let file = &mut files[n % 200];
        let base = lines(usize::MAX, "", file);
        file[n % 170] = line(n % 170, &format!("version {n:04}"));
        let new = lines(usize::MAX, "", file);
        undo.write(&rt, n, &format!("src/f{:03}.txt", n % 200), base, new);
    }
    let selection = Selection {
        intent_id: Some("INT-1".into()),
        ..Selection::default()
    };
    let mut previews: Vec<Duration> = Vec::new();
    for _ in 0..5 {
        let (t, p) = time(|| plan(undo.ws.root(), &undo.store, &selection).expect("plan"));
        assert_eq!(p.records.len(), 1000);
        assert_eq!(p.files.len(), 200);
        previews.push(t);
    }
    let preview = median(previews);
    for old in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = old.file_name().to_string_lossy().into_owned();
        if (name == "undo" || name.starts_with("undo-")) && old.path() != dir {
            let _ = std::fs::remove_dir_all(old.path());
        }
    }
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

//! What a write changes, line by line: the mutation class, the changed ranges with their
//! content hashes, and the unified diff the record keeps. Worked out from the bytes alone, so
//! for a large file it runs on another thread (from when the write was planned, see
//! [`Foreseen`], or from when it reaches the journal) while the write takes its lock, reads the
//! file and stages the new bytes; the write uses it only once the file is known to hold the
//! bytes it was computed from.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::fsutil::Background;
use crate::mutation::Classified;
use crate::orchestration::ledger::{hashed_ranges, HashedRange};

use super::FileWrite;

/// Below this many bytes (old and new together) the analysis costs less than handing it to
/// another thread.
const IN_BACKGROUND_FROM: usize = 4096;

pub(super) struct Analysis {
    pub computed: Classified,
    /// Changed line ranges of the new content (1-based, inclusive).
    pub ranges: Vec<(u32, u32)>,
    /// The ranges the record claims, with their content hashes.
    pub hashed: Vec<HashedRange>,
    pub unified: String,
}

/// The analysis of `base` → `new` at `rel`.
pub(super) fn analyze(
    base: Option<&[u8]>,
    new: Option<&[u8]>,
    rel: &str,
    claim_lines: bool,
) -> Analysis {
    let new_text = new.map(String::from_utf8_lossy).unwrap_or_default();
    analyze_text(base, &new_text, rel, claim_lines)
}

/// [`analyze`] of new bytes known to be text (a removal: empty).
fn analyze_text(base: Option<&[u8]>, new_text: &str, rel: &str, claim_lines: bool) -> Analysis {
    let old_text = base.map(String::from_utf8_lossy);
    let computed = crate::mutation::classify(old_text.as_deref(), new_text);
    let changes = crate::diff::analyze(old_text.as_deref().unwrap_or(""), new_text, rel);
    let hashed = if claim_lines {
        hashed_ranges(&changes.ranges, new_text)
    } else {
        Vec::new()
    };
    Analysis {
        computed,
        ranges: changes.ranges,
        hashed,
        unified: changes.unified,
    }
}

/// Analyses started when a write was planned, before its approval and its turn at the journal;
/// a write uses one only when its path and both its old and new bytes are those the analysis
/// was started on. The last few are kept (a write refused after it was planned leaves one).
#[derive(Default)]
pub(crate) struct Foreseen(Mutex<VecDeque<Foresight>>);

struct Foresight {
    rel: String,
    base: Option<Arc<[u8]>>,
    new: Arc<str>,
    running: Background<Analysis>,
}

/// How many foreseen analyses are kept.
const FORESEEN: usize = 4;

/// Larger writes (old and new together) are not foreseen: the copies they keep would cost more
/// memory than their analysis saves time.
const FORESEEN_UP_TO: usize = 8 << 20;

impl Foreseen {
    /// Starts the analysis of a planned write of `new` over `base` at `rel` (one that claims its
    /// lines) when it is large enough to gain.
    pub(crate) fn start(&self, rel: &str, base: Option<&[u8]>, new: &str) {
        let size = base.map_or(0, <[u8]>::len) + new.len();
        if !(IN_BACKGROUND_FROM..=FORESEEN_UP_TO).contains(&size) {
            return;
        }
        let (base, new): (Option<Arc<[u8]>>, Arc<str>) = (base.map(Arc::from), Arc::from(new));
        let (b, n, r) = (base.clone(), new.clone(), rel.to_string());
        let running = Background::start(move || analyze_text(b.as_deref(), &n, &r, true));
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|f| f.rel != rel);
        if kept.len() == FORESEEN {
            kept.pop_front();
        }
        kept.push_back(Foresight {
            rel: rel.to_string(),
            base,
            new,
            running,
        });
    }

    /// The analysis started for exactly `w`, if any.
    fn take(&self, w: &FileWrite) -> Option<Background<Analysis>> {
        let new = w.new.as_deref().filter(|_| w.claim_lines)?;
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let at = kept.iter().position(|f| {
            f.rel == w.path.rel && f.new.as_bytes() == new && f.base.as_deref() == w.base.as_deref()
        })?;
        kept.remove(at).map(|f| f.running)
    }
}

/// The analysis of a write, under way on another thread or not yet started.
pub(super) struct Analyzing(Option<Background<Analysis>>);

impl Analyzing {
    /// The analysis of `w` foreseen when it was planned, or started now on another thread when
    /// the write is large enough to gain.
    pub(super) fn start(w: &FileWrite, foreseen: &Foreseen) -> Self {
        if let Some(running) = foreseen.take(w) {
            return Self(Some(running));
        }
        let size = w.base.as_ref().map_or(0, Vec::len) + w.new.as_ref().map_or(0, Vec::len);
        if size < IN_BACKGROUND_FROM {
            return Self(None);
        }
        let (base, new) = (w.base.clone(), w.new.clone());
        let (rel, claim) = (w.path.rel.clone(), w.claim_lines);
        Self(Some(Background::start(move || {
            analyze(base.as_deref(), new.as_deref(), &rel, claim)
        })))
    }

    /// The analysis of `w` (which must be the write it was started for); worked out here when
    /// no thread could run it.
    pub(super) fn finish(self, w: &FileWrite) -> Analysis {
        let here = || {
            analyze(
                w.base.as_deref(),
                w.new.as_deref(),
                &w.path.rel,
                w.claim_lines,
            )
        };
        match self.0 {
            Some(running) => running.wait().unwrap_or_else(|_| here()),
            None => here(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::checkpoint::CheckpointStore;
    use crate::journal::{Journal, WriteError};
    use crate::orchestration::ledger::{Ledger, LEDGER_FILE};
    use crate::workspace::Workspace;

    /// A text of about `kib` KiB whose lines are numbered.
    fn text(kib: usize, changed: &[usize]) -> String {
        (0..kib * 1024 / 24)
            .map(|n| {
                let word = if changed.contains(&n) {
                    "CHANGED"
                } else {
                    "line"
                };
                format!("    let {word}_{n:05} = {n};\n")
            })
            .collect()
    }

    fn fixture() -> (tempfile::TempDir, Workspace, Arc<Ledger>, Journal) {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(tmp.path().join("ws/src")).expect("mkdir");
        let ws = Workspace::new(&tmp.path().join("ws")).expect("ws");
        let data = tmp.path().join("data");
        let ledger = Arc::new(Ledger::with_data_dir(ws.root(), &data));
        let journal = Journal::new(ws.root(), Arc::new(CheckpointStore::new(&data, ws.root())));
        (tmp, ws, ledger, journal)
    }

    fn write(ws: &Workspace, base: &str, new: &str) -> FileWrite {
        let mut entry = crate::journal::tests::entry();
        entry.tool_call_id = "big".into();
        FileWrite::new(
            ws.resolve("src/big.rs").expect("resolve"),
            Some(base.as_bytes().to_vec()),
            new.as_bytes().to_vec(),
            entry,
        )
    }

    #[test]
    fn a_large_write_whose_file_moved_is_refused_though_its_analysis_was_under_way() {
        let (_tmp, ws, ledger, journal) = fixture();
        let (planned_on, theirs) = (text(64, &[]), text(64, &[7]));
        std::fs::write(ws.root().join("src/big.rs"), &theirs).expect("write");
        let err = crate::journal::tests::rt()
            .block_on(journal.write(ledger, write(&ws, &planned_on, &text(64, &[3])), |_| None))
            .expect_err("moved");
        assert!(matches!(err, WriteError::Moved { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(ws.root().join("src/big.rs")).expect("read"),
            theirs
        );
        assert!(!ws.root().join(LEDGER_FILE).exists());
    }

    #[test]
    fn a_large_write_records_what_the_analysis_here_would_record() {
        let (tmp, ws, ledger, journal) = fixture();
        let (base, new) = (text(64, &[]), text(64, &[3, 4, 900, 2000]));
        std::fs::write(ws.root().join("src/big.rs"), &base).expect("write");
        let w = write(&ws, &base, &new);
        let here = analyze(w.base.as_deref(), w.new.as_deref(), "src/big.rs", true);
        assert_eq!(here.ranges, [(4, 5), (901, 901), (2001, 2001)]);
        let written = crate::journal::tests::rt()
            .block_on(journal.write(ledger, w, |_| None))
            .expect("write");
        assert_eq!(written.ranges, here.ranges);
        assert_eq!(written.computed, here.computed);
        let file = &written.record["files"][0];
        let ranges = file["conversations"][0]["ranges"]
            .as_array()
            .expect("ranges");
        assert_eq!(ranges.len(), 3, "{file}");
        for (recorded, hashed) in ranges.iter().zip(&here.hashed) {
            assert_eq!(recorded["content_hash"], hashed.content_hash.as_str());
        }
        let store =
            crate::orchestration::heads::HeadStore::new(&tmp.path().join("data"), ws.root());
        let report = crate::orchestration::trace::verify_with(ws.root(), &store)
            .expect("verify")
            .report;
        assert_eq!(
            (report.records, report.intact, report.tampered),
            (1, 3, 0),
            "{report:?}"
        );
    }

    #[test]
    fn the_analysis_is_the_same_on_another_thread_with_or_without_a_runtime_and_when_small() {
        let (_tmp, ws, _ledger, _journal) = fixture();
        for (base, new) in [
            (text(64, &[]), text(64, &[10, 11])),
            (text(1, &[]), text(1, &[2])),
        ] {
            let w = write(&ws, &base, &new);
            let here = analyze(w.base.as_deref(), w.new.as_deref(), "src/big.rs", true);
            let apart = Analyzing::start(&w, &Foreseen::default()).finish(&w);
            let on_runtime = crate::journal::tests::rt()
                .block_on(async { Analyzing::start(&w, &Foreseen::default()).finish(&w) });
            for other in [apart, on_runtime] {
                assert_eq!(other.ranges, here.ranges);
                assert_eq!(other.hashed, here.hashed);
                assert_eq!(other.computed, here.computed);
                assert_eq!(other.unified, here.unified);
            }
        }
    }

    #[test]
    fn an_analysis_foreseen_when_planned_is_not_used_when_the_person_edited_the_change() {
        // The model's change was planned, then edited in the approval card: the record says
        // what was written, not what was planned.
        let (_tmp, ws, ledger, journal) = fixture();
        let base = text(64, &[]);
        let (planned, edited) = (text(64, &[3]), text(64, &[3, 1500]));
        std::fs::write(ws.root().join("src/big.rs"), &base).expect("write");
        journal.foresee("src/big.rs", Some(base.as_bytes()), &planned);
        let w = write(&ws, &base, &edited);
        let here = analyze(w.base.as_deref(), w.new.as_deref(), "src/big.rs", true);
        assert_eq!(here.ranges, [(4, 4), (1501, 1501)]);
        let written = crate::journal::tests::rt()
            .block_on(journal.write(ledger, w, |_| None))
            .expect("write");
        assert_eq!(written.ranges, here.ranges);
        assert_eq!(
            written.new_hash.as_deref(),
            Some(crate::fsutil::sha256_hex(edited.as_bytes()).as_str())
        );
        let ranges = written.record["files"][0]["conversations"][0]["ranges"]
            .as_array()
            .expect("ranges")
            .clone();
        let recorded: Vec<&str> = ranges
            .iter()
            .map(|r| r["content_hash"].as_str().expect("hash"))
            .collect();
        let expected: Vec<&str> = here
            .hashed
            .iter()
            .map(|h| h.content_hash.as_str())
            .collect();
        assert_eq!(recorded, expected);
    }

    #[test]
    fn a_foreseen_analysis_is_taken_once_by_the_write_of_its_exact_bytes_and_few_are_kept() {
        let (_tmp, ws, _ledger, _journal) = fixture();
        let foreseen = Foreseen::default();
        let (base, new) = (text(8, &[]), text(8, &[1]));
        foreseen.start("src/big.rs", Some(base.as_bytes()), &new);
        // The file as planned was other bytes, or the write claims no lines (an undo).
        assert!(foreseen.take(&write(&ws, &text(8, &[2]), &new)).is_none());
        let mut undo = write(&ws, &base, &new);
        undo.claim_lines = false;
        assert!(foreseen.take(&undo).is_none());
        let exact = write(&ws, &base, &new);
        let running = foreseen.take(&exact).expect("foreseen");
        let here = analyze(
            exact.base.as_deref(),
            exact.new.as_deref(),
            "src/big.rs",
            true,
        );
        let ran = running.wait().expect("ran");
        assert_eq!((ran.ranges, ran.hashed), (here.ranges, here.hashed));
        assert_eq!((ran.computed, ran.unified), (here.computed, here.unified));
        assert!(foreseen.take(&exact).is_none(), "taken once");
        // Planned writes that never came are not all kept, and small ones are not foreseen.
        for n in 0..10 {
            foreseen.start(&format!("src/{n}.rs"), Some(base.as_bytes()), &new);
        }
        // Small ones gain nothing; huge ones would keep their copies.
        foreseen.start("src/small.rs", Some(b"a\n"), "b\n");
        foreseen.start("src/huge.rs", None, &"x".repeat(FORESEEN_UP_TO + 1));
        let kept = foreseen.0.lock().expect("lock");
        assert_eq!(kept.len(), FORESEEN);
        assert!(kept
            .iter()
            .all(|f| f.rel != "src/small.rs" && f.rel != "src/huge.rs"));
    }
}

//! What a write changes, line by line: the mutation class, the changed ranges with their
//! content hashes, and the unified diff the record keeps. Worked out from the bytes alone, so
//! for a large file it runs on another thread while the write takes its lock, reads the file
//! and stages the new bytes; the write uses it only once the file is known to hold the bytes
//! it was computed from.

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
    let old_text = base.map(String::from_utf8_lossy);
    let new_text = new.map(String::from_utf8_lossy).unwrap_or_default();
    let computed = crate::mutation::classify(old_text.as_deref(), &new_text);
    let changes = crate::diff::analyze(old_text.as_deref().unwrap_or(""), &new_text, rel);
    let hashed = if claim_lines {
        hashed_ranges(&changes.ranges, &new_text)
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

/// The analysis of a write, under way on another thread or not yet started.
pub(super) struct Analyzing(Option<Background<Analysis>>);

impl Analyzing {
    /// Starts the analysis of `w` on another thread when the write is large enough to gain.
    pub(super) fn start(w: &FileWrite) -> Self {
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
            let apart = Analyzing::start(&w).finish(&w);
            let on_runtime =
                crate::journal::tests::rt().block_on(async { Analyzing::start(&w).finish(&w) });
            for other in [apart, on_runtime] {
                assert_eq!(other.ranges, here.ranges);
                assert_eq!(other.hashed, here.hashed);
                assert_eq!(other.computed, here.computed);
                assert_eq!(other.unified, here.unified);
            }
        }
    }
}

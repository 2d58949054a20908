use std::path::{Path, PathBuf};

use super::*;
use crate::orchestration::chain::{links_of, split_lines, Chain};
use crate::orchestration::ledger::tests::entry;
use crate::orchestration::ledger::{Ledger, LEDGER_FILE};
use pretty_assertions::assert_eq;

/// A workspace whose ledger starts as `start` and gets `n` records for `tag`.
fn grow(tmp: &Path, name: &str, start: &[u8], tag: &str, n: u32) -> Vec<u8> {
    let ws: PathBuf = tmp.join(name);
    std::fs::create_dir_all(ws.join(".orchestration")).expect("mkdir");
    std::fs::write(ws.join(LEDGER_FILE), start).expect("write");
    let ledger = Ledger::with_data_dir(&ws, &tmp.join(format!("{name}-data")));
    for i in 0..n {
        let mut e = entry(&format!("{tag}.rs"), &[(i + 1, i + 1, &["x"])]);
        e.intent_id = tag.into();
        ledger.append(&e).expect("append");
    }
    std::fs::read(ws.join(LEDGER_FILE)).expect("read")
}

fn assert_valid_chain(bytes: &[u8]) {
    let lines = split_lines(bytes);
    let links = links_of(&lines);
    assert!(links.iter().all(|l| l.prev.is_some() && l.digest_ok));
    assert_eq!(Chain::check(&links).breaks, vec![]);
}

fn lines_of(bytes: &[u8]) -> Vec<&[u8]> {
    split_lines(bytes)
}

#[test]
fn merging_in_either_order_gives_the_same_ledger_holding_both_sides_intact() {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = grow(tmp.path(), "base", b"", "BASE", 3);
    let ours = grow(tmp.path(), "a", &base, "A", 4);
    let theirs = grow(tmp.path(), "b", &base, "B", 2);
    let ab = merge(&ours, &theirs).expect("merge");
    let ba = merge(&theirs, &ours).expect("merge");
    assert_eq!(ab.bytes, ba.bytes, "the order of the sides does not matter");
    assert_eq!((ab.common, ab.from_ours, ab.from_theirs), (3, 4, 2));
    assert_eq!((ba.from_ours, ba.from_theirs), (2, 4));
    assert_valid_chain(&ab.bytes);
    let merged = lines_of(&ab.bytes);
    assert_eq!(merged.len(), 3 + 4 + 2 + 1);
    for line in lines_of(&ours).into_iter().chain(lines_of(&theirs)) {
        assert!(
            merged.contains(&line),
            "every record of each side, byte for byte"
        );
    }
    let last: Value = serde_json::from_slice(merged[9]).expect("json");
    assert_eq!(last["files"], json!([]));
    assert_eq!(last["metadata"][VENDOR_KEY]["kind"], "merge");
    assert_eq!(
        ab.merge_tip.as_deref(),
        Some(hex::encode(chain::link_hash(merged[9])).as_str())
    );

    // Each side goes on, and the two merges merge again cleanly.
    let ours2 = grow(tmp.path(), "a2", &ab.bytes, "A", 1);
    let theirs2 = grow(tmp.path(), "b2", &ba.bytes, "B", 1);
    let again = merge(&ours2, &theirs2).expect("merge");
    assert_valid_chain(&again.bytes);
    assert_eq!(again.common, 10);
}

#[test]
fn a_side_that_holds_the_other_wins_without_a_merge_record() {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = grow(tmp.path(), "base", b"", "BASE", 2);
    let ahead = grow(tmp.path(), "a", &base, "A", 3);
    let out = merge(&base, &ahead).expect("merge");
    assert_eq!(out.bytes, ahead);
    assert_eq!(out.merge_tip, None);
    assert_eq!(merge(&ahead, &base).expect("merge").bytes, ahead);
    assert_eq!(merge(&ahead, &ahead).expect("merge").bytes, ahead);
    // Both began empty (the ledger was created on each branch).
    let a = grow(tmp.path(), "c", b"", "C", 2);
    let b = grow(tmp.path(), "d", b"", "D", 2);
    let out = merge(&a, &b).expect("merge");
    assert_eq!(out.common, 0);
    assert_valid_chain(&out.bytes);
}

#[test]
fn a_replayed_side_is_not_duplicated() {
    // A rebase: main moved on (m), the feature's first record was already replayed onto it and
    // merged; now the feature's second record comes.
    let tmp = tempfile::tempdir().expect("tmp");
    let base = grow(tmp.path(), "base", b"", "BASE", 1);
    let feature1 = grow(tmp.path(), "f1", &base, "F", 1);
    let feature2 = grow(tmp.path(), "f2", &feature1, "F", 1);
    let main = grow(tmp.path(), "m", &base, "M", 2);
    let replayed = merge(&main, &feature1).expect("first pick").bytes;
    let out = merge(&replayed, &feature2).expect("second pick");
    assert_valid_chain(&out.bytes);
    let merged = lines_of(&out.bytes);
    let f1 = lines_of(&feature1)[1];
    assert_eq!(merged.iter().filter(|l| **l == f1).count(), 1);
    assert!(merged.contains(&lines_of(&feature2)[2]));
}

#[test]
fn a_broken_side_is_refused_with_its_line() {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = grow(tmp.path(), "base", b"", "BASE", 2);
    let ours = grow(tmp.path(), "a", &base, "A", 2);
    let theirs = grow(tmp.path(), "b", &base, "B", 3);
    let text = String::from_utf8(theirs.clone()).expect("utf8");
    let lines: Vec<&str> = text.lines().collect();
    // Theirs lost its third line (the first new one).
    let cut = format!("{}\n{}\n{}\n{}\n", lines[0], lines[1], lines[3], lines[4]);
    let err = merge(&ours, cut.as_bytes()).expect_err("refused");
    assert!(
        matches!(
            err,
            MergeError::Broken {
                side: "theirs",
                line: 3,
                ..
            }
        ),
        "{err}"
    );
    let torn = format!("{text}{{\"files\":[");
    let err = merge(torn.as_bytes(), &ours).expect_err("refused");
    assert!(
        matches!(err, MergeError::Broken { side: "ours", .. }),
        "{err}"
    );
    let garbage = format!("{text}not a record\n");
    let err = merge(&ours, garbage.as_bytes()).expect_err("refused");
    assert!(
        err.to_string().contains("not a Mandate trace record"),
        "{err}"
    );
}

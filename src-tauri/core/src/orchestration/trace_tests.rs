use super::super::ledger::{Ledger, LEDGER_FILE};
use super::*;
use crate::protocol::FindingKind;

fn entry(
    path: &str,
    intent: &str,
    ranges: &[(u32, u32, &[&str])],
) -> super::super::ledger::TraceEntry {
    let mut e = super::super::ledger::tests::entry(path, ranges);
    e.intent_id = intent.into();
    e
}

fn setup() -> (tempfile::TempDir, Ledger) {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::write(tmp.path().join("a.rs"), "one\ntwo\nthree\nfour\n").expect("write");
    let ledger = Ledger::new(tmp.path());
    ledger
        .append(&entry("a.rs", "INT-1", &[(1, 2, &["one", "two"])]))
        .expect("append");
    ledger
        .append(&entry("a.rs", "INT-2", &[(4, 4, &["four"])]))
        .expect("append");
    (tmp, ledger)
}

#[test]
fn intact_ledger_verifies() {
    let (tmp, _) = setup();
    let r = verify(tmp.path()).expect("verify");
    assert!(r.chain_ok);
    assert_eq!((r.records, r.ranges, r.intact), (2, 2, 2));
    assert!(r.findings.is_empty(), "{:?}", r.findings);
}

#[test]
fn blame_attributes_lines_and_follows_moved_blocks() {
    let (tmp, _) = setup();
    let b = blame(tmp.path(), "a.rs").expect("blame");
    let ids: Vec<Option<&str>> = b
        .lines
        .iter()
        .map(|l| l.origin.as_ref().map(|o| o.intent_id.as_str()))
        .collect();
    assert_eq!(ids, vec![Some("INT-1"), Some("INT-1"), None, Some("INT-2")]);
    assert_eq!(
        b.lines[0].origin.as_ref().map(|o| o.model.as_str()),
        Some("openai/gpt-test")
    );

    std::fs::write(tmp.path().join("a.rs"), "zero\nthree\none\ntwo\nfour\n").expect("move");
    let b = blame(tmp.path(), "a.rs").expect("blame");
    assert_eq!(
        b.lines[2].origin.as_ref().map(|o| o.intent_id.as_str()),
        Some("INT-1")
    );
    assert!(b.lines[0].origin.is_none());
    let r = verify(tmp.path()).expect("verify");
    assert_eq!(r.moved, 2);
    assert!(r.chain_ok);
}

#[test]
fn human_edits_and_deleted_files_are_reported() {
    let (tmp, _) = setup();
    std::fs::write(tmp.path().join("a.rs"), "one\nTWO\nthree\nfour\n").expect("edit");
    let r = verify(tmp.path()).expect("verify");
    assert_eq!(r.changed, 1);
    assert!(r.chain_ok, "edits by people are not tampering");
    assert_eq!(r.findings[0].kind, FindingKind::Changed);
    std::fs::remove_file(tmp.path().join("a.rs")).expect("rm");
    let r = verify(tmp.path()).expect("verify");
    assert_eq!(r.missing, 2);
}

#[test]
fn editing_or_removing_records_is_tampering() {
    let (tmp, ledger) = setup();
    ledger
        .append(&entry("a.rs", "INT-3", &[(3, 3, &["three"])]))
        .expect("append");
    let path = tmp.path().join(LEDGER_FILE);
    let text = std::fs::read_to_string(&path).expect("read");
    // Edit the last record: caught by its digest even though no record follows it.
    let edited = text.replacen("\"intent_id\":\"INT-3\"", "\"intent_id\":\"INT-9\"", 1);
    std::fs::write(&path, &edited).expect("write");
    let r = verify(tmp.path()).expect("verify");
    assert!(!r.chain_ok);
    assert_eq!(r.tampered, 1);
    // Remove the middle record: the chain breaks at the next one.
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&path, format!("{}\n{}\n", lines[0], lines[2])).expect("write");
    let r = verify(tmp.path()).expect("verify");
    assert_eq!(r.tampered, 1);
    assert_eq!(
        r.findings
            .iter()
            .find(|f| f.kind == FindingKind::Tampered)
            .map(|f| f.ledger_line),
        Some(2)
    );
}

#[test]
fn per_intent_history_and_stored_diffs() {
    let (tmp, ledger) = setup();
    let mut e = entry("a.rs", "INT-1", &[(3, 3, &["three"])]);
    e.extra.insert(
        "diffs".into(),
        serde_json::json!({"a.rs": crate::diff::unified("one\n", "one\nthree\n", "a.rs")}),
    );
    let rec = ledger.append(&e).expect("append");
    let changes = intent_changes(tmp.path(), "INT-1").expect("changes");
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[1].ranges[0].start_line, 3);
    let id = rec["id"].as_str().expect("id");
    let d = change_diff(tmp.path(), id, "a.rs").expect("diff");
    assert!(d.available);
    assert_eq!(d.hunks.len(), 1);
}

#[test]
fn lines_that_are_not_trace_records_are_skipped_by_blame_and_reported_by_verify() {
    let (tmp, _) = setup();
    let path = tmp.path().join(LEDGER_FILE);
    let text = std::fs::read_to_string(&path).expect("read");
    let first = text.lines().next().expect("a record");
    // A record whose intent is null, and a line that is not JSON, both naming `a.rs`.
    let hostile = first.replace("\"intent_id\":\"INT-1\"", "\"intent_id\":null");
    let appended = format!("{text}{hostile}\n{{\"path\":\"a.rs\" torn\n");
    std::fs::write(&path, appended).expect("write");
    let b = blame(tmp.path(), "a.rs").expect("blame");
    let intents: Vec<Option<&str>> = b
        .lines
        .iter()
        .map(|l| l.origin.as_ref().map(|o| o.intent_id.as_str()))
        .collect();
    assert_eq!(intents, [Some("INT-1"), Some("INT-1"), None, Some("INT-2")]);
    let r = verify(tmp.path()).expect("verify");
    assert!(!r.findings.is_empty(), "the damaged lines are reported");
}

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use super::super::ledger_write::Fault;
use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

pub(crate) fn entry(path: &str, ranges: &[(u32, u32, &[&str])]) -> TraceEntry {
    TraceEntry {
        task_id: "task-1".into(),
        intent_id: "INT-001".into(),
        model_id: "openai/gpt-test".into(),
        tool: "write_to_file".into(),
        tool_call_id: "call_1".into(),
        contributor: crate::protocol::Contributor::Ai,
        mutation_declared: Some(crate::protocol::MutationClass::IntentEvolution),
        mutation_computed: Some(crate::protocol::MutationClass::IntentEvolution),
        approval: ApprovalRecord {
            by: crate::protocol::Approver::User,
            at: "2026-01-01T00:00:00Z".into(),
            accepted_hunks: vec![0],
            rejected_hunks: vec![],
            edited: false,
            user_hooks: Vec::new(),
        },
        files: vec![FileChange {
            path: path.into(),
            ranges: ranges
                .iter()
                .map(|(s, e, lines)| HashedRange {
                    start_line: *s,
                    end_line: *e,
                    content_hash: content_hash(lines),
                })
                .collect(),
        }],
        extra: Map::new(),
    }
}

#[test]
fn content_hash_is_lf_normalized_and_prefixed() {
    assert_eq!(content_hash(&["a\r", "b"]), content_hash(&["a", "b"]));
    assert_eq!(
        content_hash::<&str>(&[]),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(split_lines("a\r\nb\n"), vec!["a", "b"]);
}

#[test]
fn records_chain_and_carry_the_required_fields() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = Ledger::new(tmp.path());
    let first = ledger
        .append(&entry("src/a.rs", &[(1, 1, &["x"])]))
        .expect("append");
    let second = ledger
        .append(&entry("src/a.rs", &[(2, 2, &["y"])]))
        .expect("append");
    let lines = read_lines(ledger.path()).expect("read");
    assert_eq!(lines.len(), 2);
    assert_eq!(first["metadata"][VENDOR_KEY]["prev"], GENESIS);
    assert_eq!(
        second["metadata"][VENDOR_KEY]["prev"],
        Value::String(sha256_hex(lines[0].raw.as_bytes()))
    );
    assert_eq!(second["version"], "0.1");
    assert_eq!(second["tool"]["name"], "mandate");
    assert_eq!(
        second["files"][0]["conversations"][0]["related"][0]["url"],
        "mandate://intent/INT-001"
    );
    assert_eq!(lines[1].raw, canonical_json(&second), "written canonically");
    assert!(
        lines[1].raw.starts_with("{\"files\":["),
        "keys sorted: {}",
        lines[1].raw
    );
    assert_eq!(
        record_digest(&second),
        second["metadata"][VENDOR_KEY]["digest"]
    );
}

#[test]
fn concurrent_appends_in_one_process_neither_tear_nor_break_the_chain() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = std::sync::Arc::new(Ledger::new(tmp.path()));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let ledger = ledger.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    ledger
                        .append(&entry(&format!("f{t}.rs"), &[(1, 1, &[&format!("{i}")])]))
                        .expect("append");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    let report = super::super::trace::verify(tmp.path()).expect("verify");
    assert_eq!(report.records, 400);
    assert!(report.chain_ok, "{:?}", report.findings.first());
}

/// A workspace and a ledger whose heads live in a private data directory.
pub(crate) fn ledger_in(tmp: &Path) -> Ledger {
    std::fs::create_dir_all(tmp.join("ws")).expect("mkdir");
    Ledger::with_data_dir(&tmp.join("ws"), &tmp.join("data"))
}

fn verify_in(tmp: &Path) -> crate::protocol::VerifyReport {
    let store = super::super::heads::HeadStore::new(&tmp.join("data"), &tmp.join("ws"));
    super::super::trace::verify_with(&tmp.join("ws"), &store)
        .expect("verify")
        .report
}

fn broken_line(result: Result<Value, LedgerError>) -> u64 {
    match result {
        Err(LedgerError::Broken { line, .. }) => line,
        other => panic!("expected a broken ledger, got {other:?}"),
    }
}

#[test]
fn a_torn_last_line_is_refused_until_a_person_accepts_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = ledger_in(tmp.path());
    ledger.append(&entry("a.rs", &[])).expect("append");
    let mut f = OpenOptions::new()
        .append(true)
        .open(ledger.path())
        .expect("open");
    f.write_all(b"{\"version\":\"0.1\",\"id\":\"tor")
        .expect("tear");
    drop(f);
    let err = ledger.append(&entry("a.rs", &[])).expect_err("refused");
    assert!(
        err.to_string().contains("line 2") && err.to_string().contains("torn write"),
        "{err}"
    );
    assert_eq!(
        ledger.health().expect("health"),
        LedgerHealth::Broken {
            line: 2,
            reason: "this line is not a Mandate trace record (a torn write or a hand edit)".into()
        }
    );
    let accepted = ledger.accept_broken().expect("accept");
    assert!(matches!(accepted, LedgerHealth::Broken { line: 2, .. }));
    ledger
        .append(&entry("a.rs", &[]))
        .expect("append after acceptance");
    let lines = read_lines(ledger.path()).expect("read");
    assert_eq!(lines.len(), 4, "record, torn line, acceptance, record");
    assert!(lines[1].record.is_none());
    assert_eq!(
        lines[2].record.as_ref().expect("acceptance")["metadata"][VENDOR_KEY]["accepted_break"]
            ["line"],
        2
    );
    assert!(ledger.health().expect("health").is_ok(), "accepted");
    // A fresh process sees the acceptance too, and verify still reports the break.
    let again = ledger_in(tmp.path());
    again
        .append(&entry("a.rs", &[]))
        .expect("another process appends");
    let report = verify_in(tmp.path());
    assert_eq!(report.malformed, 1);
    assert_eq!(report.tampered, 1, "{:?}", report.findings);
    assert!(report
        .findings
        .iter()
        .any(|f| f.ledger_line == 3 && f.detail.contains("a person accepted appending")));
}

#[test]
fn a_failed_write_or_fsync_leaves_no_partial_line() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = ledger_in(tmp.path());
    ledger
        .append(&entry("a.rs", &[(1, 1, &["x"])]))
        .expect("append");
    let before = std::fs::read(ledger.path()).expect("read");
    for fault in [Fault::WriteFailsAfter(37), Fault::SyncFails] {
        *ledger.fault.lock().expect("lock") = Some(fault);
        let err = ledger
            .append(&entry("a.rs", &[(2, 2, &["y"])]))
            .expect_err("full disk");
        assert!(
            matches!(
                err,
                LedgerError::AppendFailed {
                    rolled_back: true,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("nothing partial remains"), "{err}");
        assert_eq!(
            std::fs::read(ledger.path()).expect("read"),
            before,
            "{fault:?}"
        );
    }
    *ledger.fault.lock().expect("lock") = None;
    ledger
        .append(&entry("a.rs", &[(2, 2, &["y"])]))
        .expect("append");
    let report = verify_in(tmp.path());
    assert!(report.chain_ok, "{:?}", report.findings);
    assert_eq!(report.records, 2);
}

#[test]
fn a_head_that_cannot_be_kept_undoes_the_append() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = ledger_in(tmp.path());
    *ledger.fault.lock().expect("lock") = Some(Fault::HeadFails);
    let err = ledger.append(&entry("a.rs", &[])).expect_err("no head");
    assert!(
        matches!(
            err,
            LedgerError::Head {
                rolled_back: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("nothing partial remains"), "{err}");
    assert_eq!(std::fs::read(ledger.path()).expect("read").len(), 0);
}

#[test]
fn edited_truncated_deleted_and_forged_ledgers_are_refused_with_the_line() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = ledger_in(tmp.path());
    for i in 0..4 {
        ledger
            .append(&entry("a.rs", &[(i + 1, i + 1, &["x"])]))
            .expect("append");
    }
    let path = ledger.path().to_path_buf();
    let original = std::fs::read_to_string(&path).expect("read");
    let lines: Vec<&str> = original.lines().collect();

    // A record edited in the middle, keeping the file's length: the cheap check on the write
    // path looks only at the end; the full check at task start finds it.
    std::fs::write(&path, original.replacen("INT-001", "INT-009", 2)).expect("edit");
    assert!(matches!(
        ledger.health().expect("health"),
        LedgerHealth::Broken { line: 1, .. }
    ));
    assert_eq!(
        broken_line(ledger_in(tmp.path()).append(&entry("a.rs", &[]))),
        1
    );

    // The last record deleted: the head names it.
    std::fs::write(&path, format!("{}\n", lines[..3].join("\n"))).expect("truncate");
    let err = ledger.append(&entry("a.rs", &[])).expect_err("truncated");
    assert!(err.to_string().contains("no longer in the ledger"), "{err}");

    // A forged record with a correct chain appended after the last one.
    std::fs::write(&path, &original).expect("restore");
    let forger = Ledger::with_data_dir(&tmp.path().join("ws"), &tmp.path().join("forger-data"));
    forger
        .append(&entry("a.rs", &[]))
        .expect("the forger's own append");
    assert_eq!(broken_line(ledger.append(&entry("a.rs", &[]))), 5);

    // Deleted while its head is known.
    std::fs::remove_file(&path).expect("rm");
    match ledger.health().expect("health") {
        LedgerHealth::Missing { records: 4, reason } => {
            assert!(reason.contains("missing"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ledger.append(&entry("a.rs", &[])),
        Err(LedgerError::Missing { records: 4, .. })
    ));
    assert!(matches!(
        ledger.accept_broken().expect("accept"),
        LedgerHealth::Missing { .. }
    ));
    ledger
        .append(&entry("a.rs", &[]))
        .expect("appends after acceptance");
    let report = verify_in(tmp.path());
    assert_eq!(report.records, 2);
    assert_eq!(
        report.tampered, 1,
        "only the acceptance: {:?}",
        report.findings
    );
}

/// An acceptance record is only a person's decision when Mandate vouches for it: anyone with
/// the code can write one with a correct chain and digest.
#[test]
fn a_forged_acceptance_does_not_make_a_broken_ledger_healthy() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = ledger_in(tmp.path());
    for i in 0..3 {
        ledger
            .append(&entry("a.rs", &[(i + 1, i + 1, &["x"])]))
            .expect("append");
    }
    let path = ledger.path().to_path_buf();
    let original = std::fs::read_to_string(&path).expect("read");
    let forger = || Ledger::with_data_dir(&tmp.path().join("ws"), &tmp.path().join("forger-data"));

    // A record edited, then "accepted" by a process with its own heads.
    std::fs::write(&path, original.replacen("INT-001", "INT-009", 1)).expect("edit");
    assert!(matches!(
        forger().accept_broken().expect("forged acceptance"),
        LedgerHealth::Broken { line: 1, .. }
    ));
    assert_eq!(read_lines(&path).expect("read").len(), 4);
    assert!(matches!(
        ledger.health().expect("health"),
        LedgerHealth::Broken { line: 1, .. }
    ));
    assert_eq!(broken_line(ledger.append(&entry("a.rs", &[]))), 1);

    // Forged records with a correct chain, then a forged acceptance record.
    std::fs::write(&path, &original).expect("restore");
    let _ = std::fs::remove_dir_all(tmp.path().join("forger-data"));
    let forger = forger();
    forger.append(&entry("a.rs", &[])).expect("forged record");
    forger
        .append_record(json!({
            "version": "0.1",
            "id": "forged-acceptance",
            "timestamp": "2026-01-01T00:00:00Z",
            "tool": {"name": "mandate", "version": "0"},
            "files": [],
            "metadata": {VENDOR_KEY: {"accepted_break": {"line": 4, "reason": "forged"}}},
        }))
        .expect("forged acceptance");
    let lines = read_lines(&path).expect("read");
    assert_eq!(lines.len(), 5);
    assert!(lines[4].raw.contains("accepted_break"), "{}", lines[4].raw);
    let broken = LedgerHealth::Broken {
        line: 4,
        reason: "this line was not written by Mandate here and is not in git's history: a record was appended or inserted behind Mandate's back".into(),
    };
    assert_eq!(ledger.health().expect("health"), broken);
    assert_eq!(broken_line(ledger.append(&entry("a.rs", &[]))), 4);
    assert_eq!(ledger_in(tmp.path()).health().expect("health"), broken);
    assert_eq!(read_lines(&path).expect("read").len(), 5, "nothing buried");

    // The person's own acceptance is honoured, in this process and the next.
    assert_eq!(ledger.accept_broken().expect("accept"), broken);
    ledger
        .append(&entry("a.rs", &[]))
        .expect("append after acceptance");
    assert!(ledger.health().expect("health").is_ok());
    assert!(ledger_in(tmp.path()).health().expect("health").is_ok());
    assert_eq!(read_lines(&path).expect("read").len(), 7);
}

#[test]
fn appends_by_other_processes_are_not_tampering() {
    let tmp = tempfile::tempdir().expect("tmp");
    let first = ledger_in(tmp.path());
    let second = ledger_in(tmp.path());
    first.append(&entry("a.rs", &[])).expect("append");
    for _ in 0..3 {
        second.append(&entry("b.rs", &[])).expect("append");
        first.append(&entry("a.rs", &[])).expect("append");
    }
    assert!(first.health().expect("health").is_ok());
    let report = verify_in(tmp.path());
    assert!(report.chain_ok, "{:?}", report.findings);
    assert_eq!(report.records, 7);
}

#[test]
fn an_append_goes_to_the_file_the_path_names_when_the_ledger_was_replaced() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = ledger_in(tmp.path());
    ledger.append(&entry("a.rs", &[])).expect("append");
    // Replaced by a copy of itself (as a checkout writes a file): a new file at the path.
    let path = ledger.path().to_path_buf();
    let copy = path.with_extension("copy");
    std::fs::copy(&path, &copy).expect("copy");
    std::fs::rename(&copy, &path).expect("mv");
    ledger.append(&entry("b.rs", &[])).expect("append");
    assert_eq!(read_lines(&path).expect("read").len(), 2);
    // Removed: made again, and the append refused (the head names records it lost).
    std::fs::remove_file(&path).expect("rm");
    assert!(matches!(
        ledger.append(&entry("c.rs", &[])),
        Err(LedgerError::Missing { records: 2, .. })
    ));
    assert!(path.exists());
}

#[test]
fn a_prepared_append_holds_the_heads_until_it_is_written_or_dropped() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = ledger_in(tmp.path());
    ledger.append(&entry("a.rs", &[])).expect("append");
    let prepared = ledger
        .prepare_append(build_record(&entry("b.rs", &[]), None))
        .expect("prepare");
    // Another process noting a merge waits for the heads' lock.
    let other =
        super::super::heads::HeadStore::new(&tmp.path().join("data"), &tmp.path().join("ws"));
    let (tx, rx) = std::sync::mpsc::channel();
    let merger = std::thread::spawn(move || {
        other.record_merge(&"c".repeat(64)).expect("merge");
        let _ = tx.send(());
    });
    let waited = std::time::Duration::from_millis(150);
    assert!(
        rx.recv_timeout(waited).is_err(),
        "the heads changed under a prepared append"
    );
    drop(prepared);
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the merge goes ahead once the append is dropped");
    merger.join().expect("merger");
    let heads = ledger.heads().read().expect("heads");
    assert_eq!(heads.merges, vec!["c".repeat(64)]);
    assert_eq!(
        heads
            .branches
            .values()
            .map(|h| h.records)
            .collect::<Vec<_>>(),
        [1]
    );
    assert_eq!(read_lines(ledger.path()).expect("read").len(), 1);
    ledger.append(&entry("b.rs", &[])).expect("append");
    assert_eq!(
        ledger
            .heads()
            .read()
            .expect("heads")
            .branches
            .values()
            .map(|h| h.records)
            .collect::<Vec<_>>(),
        [2]
    );
}

#[test]
fn contains_record_finds_ids_from_the_end() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = ledger_in(tmp.path());
    assert!(!ledger.contains_record("nope").expect("empty"));
    let mut e = entry("a.rs", &[]);
    e.extra
        .insert("command".into(), json!({"id": "not-a-record-id"}));
    let first = ledger.append(&e).expect("append");
    for _ in 0..20 {
        ledger.append(&entry("a.rs", &[])).expect("append");
    }
    let id = first["id"].as_str().expect("id");
    assert!(ledger.contains_record(id).expect("scan"));
    assert!(!ledger.contains_record("not-a-record-id").expect("scan"));
    assert!(!ledger.contains_record("\"").expect("scan"));
}

#[test]
fn unhex_accepts_exactly_64_hex_digits() {
    let h = "0123456789abcdefABCDEF".repeat(3);
    let h = &h[..64];
    let bytes = unhex32(h.as_bytes()).expect("hex");
    assert_eq!(hex::encode(bytes), h.to_ascii_lowercase());
    for bad in [
        "g".repeat(64),
        "0".repeat(63),
        format!("{}:", "0".repeat(63)),
        format!("{} ", "f".repeat(63)),
    ] {
        assert_eq!(unhex32(bad.as_bytes()), None, "{bad}");
    }
}

#[test]
fn a_block_hashed_in_one_piece_matches_as_its_lines_do() {
    let texts = [
        "a\nb\nc\n",
        "a\nb\nc",
        "a\r\nb\r\nc\r\n",
        "a\nb\r\nc\n",
        "a\r\r\nb\rx\nc\n\n\n",
        "\n\nx\n\n",
        "only",
        "ünï\ncödé\n",
    ];
    let bytes = |hash: String| content_hash_bytes(&hash).unwrap_or_default();
    for text in texts {
        let file = TextLines::new(text);
        let n_lines = file.lines.len();
        for s in 0..=n_lines {
            for n in 0..=n_lines + 1 {
                let Some(block) = file.lines.get(s..s + n) else {
                    assert!(!file.block_matches(s, n, &bytes(content_hash(&["x"]))));
                    continue;
                };
                let right = content_hash(block);
                assert!(content_hash_matches(block, &right));
                assert!(file.block_matches(s, n, &bytes(right)), "{text:?} {s} {n}");
                let wrong = content_hash(&[format!("{}!", block.join("\n"))]);
                assert!(!file.block_matches(s, n, &bytes(wrong)), "{text:?} {s} {n}");
            }
        }
    }
    assert_eq!(content_hash_bytes("sha256:zz"), None);
    assert_eq!(content_hash_bytes(&"0".repeat(64)), None);
}

use super::*;
use pretty_assertions::assert_eq;

pub(crate) fn entry(path: &str, ranges: &[(u32, u32, &[&str])]) -> TraceEntry {
    TraceEntry {
        task_id: "task-1".into(),
        intent_id: "INT-001".into(),
        model_id: "openai/gpt-test".into(),
        tool: "write_to_file".into(),
        tool_call_id: "call_1".into(),
        contributor: "ai".into(),
        mutation_declared: "INTENT_EVOLUTION".into(),
        mutation_computed: "INTENT_EVOLUTION".into(),
        approval: ApprovalRecord {
            by: "user".into(),
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

#[test]
fn a_torn_last_line_is_isolated_and_appends_continue() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = Ledger::new(tmp.path());
    ledger.append(&entry("a.rs", &[])).expect("append");
    let mut f = OpenOptions::new()
        .append(true)
        .open(ledger.path())
        .expect("open");
    f.write_all(b"{\"version\":\"0.1\",\"id\":\"tor")
        .expect("tear");
    drop(f);
    ledger
        .append(&entry("a.rs", &[]))
        .expect("append after tear");
    let lines = read_lines(ledger.path()).expect("read");
    assert_eq!(lines.len(), 3);
    assert!(lines[1].record.is_none());
    assert!(lines[2].record.is_some());
    let report = super::super::trace::verify(tmp.path()).expect("verify");
    assert_eq!(report.malformed, 1);
    assert_eq!(report.tampered, 0, "{:?}", report.findings);
}

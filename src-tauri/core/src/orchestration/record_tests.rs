use serde_json::{json, Map, Value};

use super::super::ledger::tests::entry;
use super::super::ledger::{
    canonical_json, intent_url, record_digest, task_url, FileChange, HashedRange, TraceEntry,
    SPEC_VERSION, VENDOR_KEY,
};
use super::*;
use crate::protocol::{Approver, Contributor, MutationClass};
use pretty_assertions::assert_eq;

/// The builder as it was before the record became a type (JSON built by hand), kept to prove
/// the typed one writes the same bytes.
fn old_build_record(
    entry: &TraceEntry,
    revision: Option<String>,
    id: &str,
    timestamp: &str,
) -> Value {
    let conversation = |ranges: &[HashedRange]| {
        json!({
            "url": task_url(&entry.task_id),
            "contributor": {"type": entry.contributor, "model_id": crate::text::first_chars(&entry.model_id, 250)},
            "ranges": ranges.iter().map(|r| json!({
                "start_line": r.start_line, "end_line": r.end_line, "content_hash": r.content_hash
            })).collect::<Vec<_>>(),
            "related": [{"type": "intent", "url": intent_url(&entry.intent_id)}],
        })
    };
    let files: Vec<Value> = entry
        .files
        .iter()
        .map(|f| json!({"path": f.path, "conversations": [conversation(&f.ranges)]}))
        .collect();
    let mut vendor = Map::new();
    vendor.insert("intent_id".into(), json!(entry.intent_id));
    vendor.insert("task_id".into(), json!(entry.task_id));
    vendor.insert(
        "mutation_class".into(),
        json!({
            "declared": entry.mutation_declared.as_ref().map_or("", MutationClass::as_str),
            "computed": entry.mutation_computed.as_ref().map_or("", MutationClass::as_str),
        }),
    );
    vendor.insert("tool".into(), json!(entry.tool));
    vendor.insert("tool_call_id".into(), json!(entry.tool_call_id));
    vendor.insert(
        "approval".into(),
        json!({
            "by": entry.approval.by, "at": entry.approval.at,
            "accepted_hunks": entry.approval.accepted_hunks,
            "rejected_hunks": entry.approval.rejected_hunks,
            "edited": entry.approval.edited,
        }),
    );
    if !entry.approval.user_hooks.is_empty() {
        vendor.insert("user_hooks".into(), json!(entry.approval.user_hooks));
    }
    for (k, v) in &entry.extra {
        vendor.insert(k.clone(), v.clone());
    }
    let mut record = json!({
        "version": SPEC_VERSION,
        "id": id,
        "timestamp": timestamp,
        "tool": {"name": "mandate", "version": env!("CARGO_PKG_VERSION")},
        "files": files,
        "metadata": {VENDOR_KEY: Value::Object(vendor)},
    });
    if let Some(revision) = revision {
        record["vcs"] = json!({"type": "git", "revision": revision});
    }
    record
}

const ID: &str = "0b7e3c1e-8f3a-4b7e-9c2d-1a2b3c4d5e6f";
const AT: &str = "2026-02-03T04:05:06Z";

fn extra(pairs: Value) -> Map<String, Value> {
    match pairs {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn write_entry() -> TraceEntry {
    let mut e = entry("src/a.rs", &[(1, 2, &["fn a() {}", "// é \"quoted\""])]);
    e.approval.user_hooks = vec!["lint".into(), "guard".into()];
    e.approval.edited = true;
    e.approval.rejected_hunks = vec![1, 3];
    e.contributor = Contributor::Mixed;
    e.model_id = "m".repeat(300);
    e.extra = extra(json!({
        "mutation_reason": "new behaviour",
        "diffs": {"src/a.rs": "@@ -0,0 +1,2 @@\n+fn a() {}\n"},
        "images": {"src/a.rs": {"before": null, "after": "sha256:ab", "after_mode": 420}},
    }));
    e
}

fn command_entry() -> TraceEntry {
    let mut e = entry("build/out.txt", &[(1, 1, &["done"])]);
    e.tool = "execute_command".into();
    e.mutation_declared = None;
    e.approval.by = Approver::Policy;
    e.files.push(FileChange {
        path: "build/gone.txt".into(),
        ranges: Vec::new(),
    });
    e.extra = extra(json!({
        "command": {"line": "make", "exit_code": 0, "network": false},
        "images": {"build/out.txt": {"before": null, "after": "sha256:cd"}},
        "diffs": {},
    }));
    e
}

fn undo_entry() -> TraceEntry {
    let mut e = entry("src/a.rs", &[]);
    e.tool = "undo".into();
    e.model_id = String::new();
    e.contributor = Contributor::Human;
    e.mutation_declared = None;
    e.mutation_computed = None;
    e.approval.by = Approver::Headless;
    e.extra = extra(json!({
        "revert_of": ["rec-1", "rec-2"],
        "undo": {"id": "undo-1", "scope": "task", "partial": false},
    }));
    e
}

fn intent_change_entry() -> TraceEntry {
    let mut e = entry(".orchestration/active_intents.yaml", &[]);
    e.tool = "select_active_intent".into();
    e.extra = extra(json!({
        "intent_change": {"kind": "widen", "added_scope": ["src/**"]},
    }));
    e
}

fn unknown_keys_entry() -> TraceEntry {
    let mut e = entry("src/b.rs", &[(3, 3, &["x"])]);
    e.approval.by = Approver::Other("a-bot".into());
    e.contributor = Contributor::Other("robot".into());
    e.mutation_computed = Some(MutationClass::Other("FUTURE_CLASS".into()));
    e.extra = extra(json!({
        "future_field": {"nested": [1, 2.5, null, true, "s"]},
        "big": 18446744073709551615u64,
        "negative": -7,
        // An extra key that is also a typed field wins, as it always did.
        "intent_id": "INT-OVERRIDE",
    }));
    e
}

fn sealed_digest(mut record: Value) -> String {
    record["metadata"][VENDOR_KEY]["prev"] = json!(super::super::ledger::GENESIS);
    record_digest(&record)
}

#[test]
fn the_typed_builder_writes_the_bytes_and_digest_of_the_old_one() {
    let cases = [
        ("write", write_entry(), Some("a".repeat(40))),
        ("command", command_entry(), None),
        ("undo", undo_entry(), Some("b".repeat(40))),
        ("intent change", intent_change_entry(), None),
        ("unknown keys", unknown_keys_entry(), Some("c".repeat(40))),
    ];
    for (name, e, revision) in cases {
        let old = old_build_record(&e, revision.clone(), ID, AT);
        let new = TraceRecord::from_entry(&e, revision, ID.into(), AT.into()).to_value();
        assert_eq!(canonical_json(&new), canonical_json(&old), "{name}");
        assert_eq!(sealed_digest(new), sealed_digest(old), "{name}");
    }
}

#[test]
fn a_record_read_and_written_again_is_the_same_bytes() {
    let foreign = json!({
        "version": "0.1.0", "id": ID, "timestamp": AT, "x-top": {"a": 1},
        "tool": {"name": "other", "build": 7},
        "vcs": {"type": "jj", "revision": "r", "dirty": true},
        "files": [{"path": "p", "mode": "x", "conversations": [{
            "ranges": [{"start_line": 1, "end_line": 2, "contributor": {"type": "ai"}}],
            "contributor": {"type": "unknown", "seat": 3},
            "note": "n",
        }]}],
        "metadata": {"com.other": {"k": [1]}, VENDOR_KEY: {"kind": "merge", "prev": "00", "digest": "ff", "revert_of": "one-id"}},
    });
    let sealed = {
        let mut r =
            TraceRecord::from_entry(&unknown_keys_entry(), None, ID.into(), AT.into()).to_value();
        r["metadata"][VENDOR_KEY]["prev"] = json!("11");
        r["metadata"][VENDOR_KEY]["digest"] = json!("22");
        r["metadata"]["com.other"] = json!({"kept": true});
        r
    };
    for record in [
        foreign,
        sealed,
        json!({"version": "0.1", "id": ID, "timestamp": AT, "files": []}),
    ] {
        let line = canonical_json(&record);
        let typed = TraceRecord::from_line(line.as_bytes()).expect("parses");
        assert_eq!(canonical_json(&typed.to_value()), line);
    }
}

#[test]
fn typed_fields_read_back_as_written() {
    let line = canonical_json(&build_sealed(&undo_entry()));
    let r = TraceRecord::from_line(line.as_bytes()).expect("parses");
    let m = r.mandate().expect("mandate block");
    assert_eq!(r.revert_of(), &["rec-1".to_string(), "rec-2".into()][..]);
    assert!(matches!(m.revert_of, Some(RevertOf::Many(_))));
    assert_eq!(
        m.mutation_class.as_ref().map(|c| &c.declared),
        Some(&MutationClass::Other(String::new()))
    );
    assert_eq!(r.approval().map(|a| &a.by), Some(&Approver::Headless));
    assert_eq!(
        r.files[0].conversations[0].contributor_kind(),
        Contributor::Human
    );
    assert!(m.prev.is_some() && m.extra.contains_key("undo"));
}

fn build_sealed(e: &TraceEntry) -> Value {
    let mut r = TraceRecord::from_entry(e, None, ID.into(), AT.into()).to_value();
    r["metadata"][VENDOR_KEY]["prev"] = json!(super::super::ledger::GENESIS);
    r
}

#[test]
fn lines_that_are_not_trace_records_do_not_parse() {
    let ok = canonical_json(&build_sealed(&write_entry()));
    let hostile = [
        String::new(),
        "not json".into(),
        "[]".into(),
        "{\"version\":\"0.1\"}".into(),
        ok.replace("\"start_line\":1", "\"start_line\":-1"),
        ok.replace("\"start_line\":1", "\"start_line\":99999999999"),
        ok.replace("\"intent_id\":\"INT-001\"", "\"intent_id\":null"),
        ok.replace("\"edited\":true", "\"edited\":\"yes\""),
        ok.replace("\"files\":[", "\"files\":{\"a\":")
            .replace("]}],\"id\"", "]}},\"id\""),
        ok[..ok.len() / 2].to_string(),
    ];
    assert!(TraceRecord::from_line(ok.as_bytes()).is_some());
    for line in hostile {
        assert!(TraceRecord::from_line(line.as_bytes()).is_none(), "{line}");
    }
}

#[test]
fn a_missing_hash_reads_as_none() {
    let e = entry("a", &[(1, 1, &["x"])]);
    let mut r = build_sealed(&e);
    r["files"][0]["conversations"][0]["ranges"][0]
        .as_object_mut()
        .map(|m| m.remove("content_hash"));
    let typed = TraceRecord::from_line(canonical_json(&r).as_bytes()).expect("parses");
    assert_eq!(typed.files[0].conversations[0].ranges[0].content_hash, None);
}

/// The canonical form as it was first written (every key and scalar through `to_string`).
fn canonical_as_first_written(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String(k.clone()),
                        canonical_as_first_written(&map[k])
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(canonical_as_first_written)
                .collect::<Vec<_>>()
                .join(",")
        ),
        scalar => scalar.to_string(),
    }
}

#[test]
fn the_canonical_form_is_byte_for_byte_what_it_always_was() {
    // Ledgers written by every earlier version verify only if this never changes.
    let value = serde_json::json!({
        "z": [true, null, -0.5, 12, 1e300, u64::MAX, i64::MIN, "tab\tquote\"back\\slash\u{1}é✓😀\u{7f}"],
        "a": {"y": "", "b": {}, "x": [[], {"k\n": 0}]},
        "é": "\u{2028}",
    });
    assert_eq!(canonical_json(&value), canonical_as_first_written(&value));
    assert!(canonical_json(&value).starts_with(
        "{\"a\":{\"b\":{},\"x\":[[],{\"k\\n\":0}],\"y\":\"\"},\"z\":[true,null,-0.5,12,1e+300,"
    ));
}

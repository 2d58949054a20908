use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn minimal() -> Value {
    json!({
        "version": "0.1.0",
        "id": "550e8400-e29b-41d4-a716-446655440000",
        "timestamp": "2026-01-25T10:00:00Z",
        "files": [{"path": "src/app.ts", "conversations": [
            {"contributor": {"type": "ai"}, "ranges": [{"start_line": 1, "end_line": 50}]}
        ]}]
    })
}

fn one(record: &Value, strict: bool) -> Validation {
    validate("t.jsonl", record.to_string().as_bytes(), strict)
}

fn messages(v: &Validation) -> Vec<(String, Severity)> {
    v.issues
        .iter()
        .map(|i| (format!("{} {}", i.pointer, i.message), i.severity))
        .collect()
}

#[test]
fn the_specifications_minimal_record_and_both_version_forms_are_valid() {
    assert_eq!(messages(&one(&minimal(), true)), vec![]);
    let mut r = minimal();
    r["version"] = json!("0.1");
    r["tool"] = json!({"name": "mandate", "version": "0.1.0"});
    assert_eq!(messages(&one(&r, true)), vec![]);
    r["version"] = json!("1.0");
    let v = one(&r, true);
    assert!(v.ok(), "another version is a warning: {:?}", v.issues);
    assert_eq!(v.warnings, 1);
    for bad in ["0", "0.1.0.0", "v0.1", "0.x"] {
        r["version"] = json!(bad);
        assert!(!one(&r, false).ok(), "{bad}");
    }
}

#[test]
fn each_constraint_is_named_with_its_place() {
    let mut r = minimal();
    r.as_object_mut().expect("object").remove("timestamp");
    r["id"] = json!("not-a-uuid");
    r["files"][0]["conversations"][0]["ranges"][0]["start_line"] = json!(0);
    r["files"][0]["conversations"][0]["contributor"]["type"] = json!("robot");
    r["files"][0]["conversations"][0]["url"] = json!("no scheme here");
    r["vcs"] = json!({"type": "cvs", "revision": "1"});
    let v = one(&r, false);
    let found = messages(&v);
    for want in [
        " `timestamp` is required",
        "/id `not-a-uuid` is not a UUID (8-4-4-4-12 hex digits)",
        "/files/0/conversations/0/ranges/0/start_line 0 is less than 1",
        "/files/0/conversations/0/contributor/type \"robot\" is not one of \"human\", \"ai\", \"mixed\", \"unknown\"",
        "/files/0/conversations/0/url `no scheme here` is not a URI (scheme:rest)",
        "/vcs/type \"cvs\" is not one of \"git\", \"jj\", \"hg\", \"svn\"",
    ] {
        assert!(
            found.iter().any(|(m, s)| m == want && *s == Severity::Error),
            "missing {want:?} in {found:#?}"
        );
    }
    assert_eq!(v.errors, 6);
}

#[test]
fn unknown_keys_are_warnings_unless_strict() {
    let mut r = minimal();
    r["extra"] = json!(1);
    r["metadata"] = json!({"dev.example": {"anything": true}});
    r["tool"] = json!({"name": "x"});
    let lenient = one(&r, false);
    assert!(lenient.ok());
    assert_eq!(lenient.warnings, 2, "{:?}", lenient.issues);
    let strict = one(&r, true);
    assert_eq!(strict.errors, 2, "{:?}", strict.issues);
}

#[test]
fn lines_are_numbered_blank_lines_skipped_and_duplicates_noted() {
    let r = minimal().to_string();
    let text = format!("{r}\n\n{{not json\n{r}\n");
    let v = validate("t.jsonl", text.as_bytes(), false);
    assert_eq!((v.records, v.valid, v.errors, v.warnings), (3, 2, 1, 1));
    assert_eq!(v.issues[0].line, 3);
    assert!(v.issues[0].message.starts_with("not JSON"));
    assert_eq!(v.issues[1].line, 4);
    assert!(v.issues[1].message.contains("used by an earlier record"));
}

#[test]
fn mandate_records_are_valid_even_strictly() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger =
        crate::orchestration::ledger::Ledger::with_data_dir(tmp.path(), &tmp.path().join("d"));
    ledger
        .append(&crate::orchestration::ledger::tests::entry(
            "a.rs",
            &[(1, 2, &["x", "y"])],
        ))
        .expect("append");
    let bytes = std::fs::read(ledger.path()).expect("read");
    let v = validate("ledger", &bytes, true);
    assert!(v.ok() && v.warnings == 0, "{:?}", v.issues);
}

use super::*;
use pretty_assertions::assert_eq;

const CANONICAL: &str = r#"
active_intents:
  - id: INT-001
    name: JWT auth
    status: IN_PROGRESS
    owned_scope: ["src/auth/**", "src/middleware/jwt.rs", "docs/"]
    constraints: ["Keep the public API"]
    acceptance_criteria: ["tests pass"]
    owner: alice
  - id: INT-002
    name: Docs
    status: NOT_STARTED
    owned_scope: ["*.md"]
schema_version: 3
"#;

#[test]
fn loads_canonical_file_with_compiled_scope() {
    let doc = IntentsDoc::parse(CANONICAL, "f").expect("parses");
    assert_eq!(doc.intents.len(), 2);
    let a = &doc.intents[0];
    assert!(a.owns("src/auth/login.rs"));
    assert!(a.owns("src/auth/deep/x.rs"));
    assert!(a.owns("docs/guide/a.md"));
    assert!(!a.owns("src/db.rs"));
    assert!(!a.owns("src/middleware/other.rs"));
    let b = &doc.intents[1];
    assert!(b.owns("README.md"));
    assert!(!b.owns("docs/README.md"), "* does not cross /");
    assert_eq!(a.extra.get("owner"), Some(&Value::from("alice")));
}

#[test]
fn reads_the_intents_and_scope_paths_variant() {
    let text = r#"
active_intent_id: INT-9
intents:
  - id: INT-9
    title: Variant
    status: in-progress
    scope:
      paths: ["lib/**"]
      note: kept
"#;
    let doc = IntentsDoc::parse(text, "f").expect("parses");
    let i = &doc.intents[0];
    assert_eq!(i.name, "Variant");
    assert_eq!(i.status, IntentStatus::InProgress);
    assert!(i.owns("lib/a/b.rs"));
    let out = doc.to_yaml().expect("yaml");
    assert!(out.contains("active_intents:"));
    assert!(
        out.contains("active_intent_id: INT-9"),
        "unknown top-level key kept"
    );
    assert!(out.contains("note: kept"), "unknown nested key kept");
    let again = IntentsDoc::parse(&out, "f").expect("round trip");
    assert_eq!(again.intents[0].owned_scope, vec!["lib/**".to_string()]);
}

#[test]
fn errors_name_the_intent_and_line() {
    let bad_glob = "active_intents:\n  - id: A\n    owned_scope: [\"src/**\"]\n  - id: B\n    owned_scope: [\"src/[a\"]\n";
    let err = IntentsDoc::parse(bad_glob, "f").expect_err("bad glob");
    assert_eq!(
        err.to_string(),
        "f: intent `B` (line 4): owned_scope entry `src/[a` is not a valid glob: unclosed character class; missing ']'"
    );
    let dup = "active_intents:\n  - id: A\n  - id: A\n";
    let err = IntentsDoc::parse(dup, "f").expect_err("duplicate");
    assert!(err.to_string().contains("intent `A` (line 3)"), "{err}");
    let yaml = "active_intents:\n  - id: A\n   name: x\n";
    let err = IntentsDoc::parse(yaml, "f").expect_err("bad yaml");
    assert!(err.to_string().contains("line 3"), "{err}");
    let escape = "active_intents:\n  - id: A\n    owned_scope: [\"../x\"]\n";
    assert!(IntentsDoc::parse(escape, "f").is_err());
    let status = "active_intents:\n  - id: A\n    status: MAYBE\n";
    assert!(IntentsDoc::parse(status, "f")
        .expect_err("status")
        .to_string()
        .contains("MAYBE"));
}

#[test]
fn store_keeps_last_good_version_and_never_overwrites_a_broken_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = IntentStore::new(tmp.path());
    std::fs::create_dir_all(tmp.path().join(".orchestration")).expect("mkdir");
    std::fs::write(store.path(), CANONICAL).expect("write");
    let (snap, changed) = store.refresh();
    assert!(changed);
    assert_eq!(snap.doc.intents.len(), 2);
    let (_, changed) = store.refresh();
    assert!(!changed);

    std::fs::write(store.path(), "active_intents: [\n").expect("break it");
    let (snap, changed) = store.refresh();
    assert!(changed);
    assert_eq!(snap.doc.intents.len(), 2, "last good version in use");
    assert!(snap
        .error
        .as_deref()
        .unwrap_or("")
        .contains("last good version"));

    let err = store
        .set_status("INT-001", IntentStatus::Done)
        .expect_err("refused");
    assert!(err.to_string().contains("does not overwrite"));
    assert_eq!(
        std::fs::read_to_string(store.path()).expect("read"),
        "active_intents: [\n"
    );
}

#[test]
fn updates_are_canonical_and_keep_unknown_keys() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = IntentStore::new(tmp.path());
    std::fs::create_dir_all(tmp.path().join(".orchestration")).expect("mkdir");
    std::fs::write(store.path(), CANONICAL).expect("write");
    store
        .set_status("INT-002", IntentStatus::InProgress)
        .expect("update");
    let text = std::fs::read_to_string(store.path()).expect("read");
    let doc = IntentsDoc::parse(&text, "f").expect("parses");
    assert_eq!(doc.intents[1].status, IntentStatus::InProgress);
    assert!(text.contains("owner: alice"));
    assert!(text.contains("schema_version: 3"));
    assert!(matches!(
        store.set_status("NOPE", IntentStatus::Done),
        Err(IntentError::NotFound(_))
    ));
}

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

/// `n` well-formed intents, then `tail` (YAML lines at the list's indentation).
fn many(n: usize, tail: &str) -> String {
    let mut text = String::from("# many intents\nactive_intents:\n");
    for i in 0..n {
        text.push_str(&format!(
            "  - id: INT-{i}\n    name: Intent {i}\n    owned_scope: [\"src/m{i}/**\", \"docs/m{i}.md\"]\n    constraints: [\"keep the API\"]\n"
        ));
    }
    text.push_str(tail);
    text
}

#[test]
fn a_large_file_names_the_line_of_a_problem_at_its_end() {
    let n = 20_000;
    // 2 header lines, 4 lines per intent: the bad intent's `id:` is on line 2 + 4n + 1.
    let text = many(n, "  - id: LAST\n    owned_scope: [\"src/[z\"]\n");
    let err = IntentsDoc::parse(&text, "f").expect_err("bad glob at the end");
    assert_eq!(
        err,
        IntentError::Invalid {
            file: "f".into(),
            id: "LAST".into(),
            line: 2 + 4 * n + 1,
            message: "owned_scope entry `src/[z` is not a valid glob: unclosed character class; missing ']'".into(),
        }
    );
    let ok = IntentsDoc::parse(&many(n, ""), "f").expect("parses");
    assert_eq!(ok.intents.len(), n);
    assert_eq!(
        ok.get("INT-19999").map(|i| i.name.as_str()),
        Some("Intent 19999")
    );
    assert!(ok.get("INT-123").is_some_and(|i| i.owns("src/m123/a/b.rs")));
    assert!(!ok.get("INT-123").is_some_and(|i| i.owns("src/m124/a.rs")));
}

#[test]
fn duplicate_ids_name_both_lines() {
    let n = 20_000;
    let text = many(n, "  - id: \"INT-7\"  # copied by hand\n    name: again\n");
    let err = IntentsDoc::parse(&text, "f").expect_err("duplicate");
    assert_eq!(
        err.to_string(),
        format!(
            "f: intent `INT-7` (line {}): this id is also used by the intent at line {}; ids must be unique",
            2 + 4 * n + 1,
            2 + 4 * 7 + 1
        )
    );
    let flow = "active_intents:\n  - {id: A, name: one}\n  - name: two\n    id: A\n";
    assert_eq!(
        IntentsDoc::parse(flow, "f")
            .expect_err("duplicate")
            .to_string(),
        "f: intent `A` (line 4): this id is also used by the intent at line 2; ids must be unique"
    );
}

#[test]
fn an_invalid_intent_is_placed_at_its_own_line_not_an_earlier_namesake() {
    // The id check comes first, so a bad second `A` is reported as a duplicate at its line.
    let text = "active_intents:\n  - id: A\n  - id: A\n    status: MAYBE\n";
    let err = IntentsDoc::parse(text, "f").expect_err("duplicate");
    assert!(
        err.to_string()
            .starts_with("f: intent `A` (line 3): this id is also used by the intent at line 2"),
        "{err}"
    );
}

#[test]
fn overlong_globs_are_refused_at_load_and_unknown_keys_keep_their_order() {
    let long = "a".repeat(1025);
    let text = format!("active_intents:\n  - id: A\n    owned_scope: [\"{long}\"]\n");
    let err = IntentsDoc::parse(&text, "f").expect_err("too long");
    assert!(
        err.to_string()
            .ends_with("an owned_scope entry is longer than 1024 characters"),
        "{err}"
    );

    let text = "active_intents:\n  - id: A\n    zeta: 1\n    name: n\n    alpha: 2\n    status: DONE\n    mid: 3\n";
    let doc = IntentsDoc::parse(text, "f").expect("parses");
    let keys: Vec<&str> = doc.intents[0]
        .extra
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(keys, ["zeta", "alpha", "mid"]);
}

#[test]
fn the_quick_glob_check_agrees_with_building_the_glob() {
    for pattern in [
        "src/**",
        "docs/",
        "./a/b.rs",
        "*.md",
        "a?b",
        "",
        "  ",
        "/etc/passwd",
        "a/../b",
        "..",
        "a\\b",
        "src/[a-f]*.png",
        "src/[a",
        "src/{a,b}",
        "src/{a",
        "src/a}",
        "x]",
        "**/x/**",
    ] {
        assert_eq!(
            check_glob(pattern),
            compile_glob(pattern).map(drop),
            "{pattern:?}"
        );
    }
}

#[test]
fn a_budget_from_the_editor_is_kept_as_the_budget_key_and_cleared_with_it() {
    let doc = IntentsDoc::parse(CANONICAL, "f").expect("parses");
    let original = doc.intents[0].clone();
    let draft = |budget| IntentDraft {
        id: original.id.clone(),
        name: original.name.clone(),
        status: original.status,
        owned_scope: original.owned_scope.clone(),
        constraints: original.constraints.clone(),
        acceptance_criteria: original.acceptance_criteria.clone(),
        budget,
    };
    let capped = Budget {
        max_cost_usd: Some(2.5),
        max_tokens: Some(10_000),
    };
    let with = intent_from_draft(draft(Some(capped)), original.extra.clone()).expect("valid");
    assert_eq!(with.view().budget, Some(capped));
    let yaml = IntentsDoc {
        intents: vec![with.clone()],
        ..IntentsDoc::default()
    }
    .to_yaml()
    .expect("yaml");
    assert!(
        yaml.contains("max_cost_usd: 2.5") && yaml.contains("max_tokens: 10000"),
        "{yaml}"
    );
    assert!(yaml.contains("owner: alice"), "other keys kept: {yaml}");
    let again = IntentsDoc::parse(&yaml, "f").expect("parses");
    assert_eq!(again.intents[0].view().budget, Some(capped));

    let cleared = intent_from_draft(draft(None), with.extra.clone()).expect("valid");
    assert_eq!(cleared.view().budget, None);
    assert!(!cleared.extra.contains_key("budget"));

    let bad = Budget {
        max_cost_usd: Some(-1.0),
        max_tokens: None,
    };
    assert!(intent_from_draft(draft(Some(bad)), original.extra.clone()).is_err());
    // A budget written by hand that does not read is not dropped by a save without one.
    let mut odd = original.extra.clone();
    odd.insert(Value::String("budget".into()), Value::String("lots".into()));
    let kept = intent_from_draft(draft(None), odd).expect("valid");
    assert!(kept.extra.contains_key("budget"));
}

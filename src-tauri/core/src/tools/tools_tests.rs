use super::*;
use crate::orchestration::intents::IntentStore;
use serde_json::json;

fn setup() -> (tempfile::TempDir, Workspace, IntentsSnapshot) {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: INT-1\n    name: A\n    owned_scope: [\"**\"]\n  - id: INT-2\n    name: B\n    status: DONE\n",
    )
    .expect("write");
    std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").expect("write");
    std::fs::write(root.join("crlf.txt"), "one\r\ntwo\r\n").expect("write");
    std::fs::write(root.join("bin.dat"), b"\x00\x01\x02").expect("write");
    let ws = Workspace::new(root).expect("ws");
    let snap = IntentStore::new(ws.root()).snapshot();
    (tmp, ws, snap)
}

fn plan(name: &str, args: serde_json::Value) -> Result<Planned, ToolError> {
    let (_tmp, ws, snap) = setup();
    let gov = TaskGovernance::default();
    let tools = registry();
    let tool = tools.iter().find(|t| t.name() == name).expect("tool");
    tool.plan(
        args,
        &ToolCx {
            workspace: &ws,
            intents: &snap,
            task: &gov,
        },
    )
}

#[test]
fn every_tool_has_a_schema_with_the_documented_arguments() {
    let expected: &[(&str, &[&str])] = &[
        ("read_file", &["end_line", "path", "start_line"]),
        ("read_tool_output", &["call_id", "end_line", "start_line"]),
        ("list_files", &["path", "recursive"]),
        ("search_files", &["file_pattern", "path", "regex"]),
        ("list_code_definitions", &["path"]),
        ("codebase_search", &["path", "query"]),
        (
            "write_to_file",
            &["content", "intent_id", "mutation_class", "path"],
        ),
        (
            "apply_diff",
            &["diff", "intent_id", "mutation_class", "path"],
        ),
        (
            "execute_command",
            &["background", "command", "cwd", "timeout_seconds"],
        ),
        (
            "read_process_output",
            &["process_id", "since", "wait_seconds"],
        ),
        ("stop_process", &["process_id"]),
        ("request_scope_expansion", &["globs", "intent_id", "reason"]),
        (
            "propose_intent",
            &[
                "acceptance_criteria",
                "constraints",
                "id",
                "name",
                "owned_scope",
                "reason",
            ],
        ),
        ("select_active_intent", &["intent_id"]),
        ("ask_followup_question", &["options", "question"]),
        ("switch_mode", &["mode_slug", "reason"]),
        ("update_todo_list", &["todos"]),
        ("new_task", &["intent_id", "message", "mode", "todos"]),
        ("skill", &["name"]),
        ("run_slash_command", &["args", "command"]),
        ("attempt_completion", &["result"]),
        ("record_lesson", &["lesson"]),
    ];
    let tools = registry();
    assert_eq!(tools.len(), expected.len());
    for (name, args) in expected {
        let tool = tools
            .iter()
            .find(|t| t.name() == *name)
            .unwrap_or_else(|| panic!("{name}"));
        let spec = tool.spec();
        let mut props: Vec<String> = spec.parameters["properties"]
            .as_object()
            .expect("props")
            .keys()
            .cloned()
            .collect();
        props.sort();
        assert_eq!(
            props,
            args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "{name}"
        );
        assert_eq!(
            spec.parameters["additionalProperties"],
            json!(false),
            "{name}"
        );
        assert!(!spec.description.is_empty());
    }
}

#[test]
fn invalid_arguments_say_what_is_expected() {
    let err = plan("read_file", json!({"file": "a.txt"})).expect_err("bad");
    let ToolError::InvalidArguments(m) = err else {
        panic!("kind")
    };
    assert!(
        m.contains("read_file") && m.contains("path") && m.contains("start_line?"),
        "{m}"
    );
    assert!(matches!(
        plan(
            "write_to_file",
            json!({"path": "a.txt", "content": "x", "intent_id": "INT-1", "mutation_class": "BIG"})
        ),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(
        plan("read_file", json!({"path": "a.txt", "start_line": 0})),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(
        plan("search_files", json!({"path": ".", "regex": "("})),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(
        plan("execute_command", json!({"command": "  "})),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(
        plan("read_file", json!({"path": "../etc/passwd"})),
        Err(ToolError::Failed(_))
    ));
}

#[test]
fn select_active_intent_lists_valid_ids_for_unknown_or_done() {
    let ToolError::Failed(m) =
        plan("select_active_intent", json!({"intent_id": "INT-9"})).expect_err("unknown")
    else {
        panic!()
    };
    assert!(m.contains("Valid ids: INT-1."), "{m}");
    let ToolError::Failed(m) =
        plan("select_active_intent", json!({"intent_id": "INT-2"})).expect_err("done")
    else {
        panic!()
    };
    assert!(m.contains("DONE"), "{m}");
    assert!(plan("select_active_intent", json!({"intent_id": "INT-1"})).is_ok());
}

#[test]
fn write_plans_keep_the_files_conventions() {
    let p = plan("write_to_file", json!({"path": "crlf.txt", "content": "a\nb", "intent_id": "INT-1", "mutation_class": "intent_evolution"})).expect("plan");
    let Action::Write(w) = p.action else {
        panic!("write")
    };
    assert_eq!(w.new_content, "a\r\nb\r\n");
    assert_eq!(
        w.mutation_class,
        crate::protocol::MutationClass::IntentEvolution
    );
    let p = plan("apply_diff", json!({"path": "a.txt", "diff": "<<<<<<< SEARCH\ntwo\n=======\nTWO\n>>>>>>> REPLACE", "intent_id": "INT-1", "mutation_class": "AST_REFACTOR"})).expect("plan");
    let Action::Write(w) = p.action else {
        panic!("write")
    };
    assert_eq!(w.new_content, "one\nTWO\nthree\n");
    let ToolError::Failed(m) = plan("apply_diff", json!({"path": "a.txt", "diff": "<<<<<<< SEARCH\ntwwo\n=======\nx\n>>>>>>> REPLACE", "intent_id": "INT-1", "mutation_class": "AST_REFACTOR"})).expect_err("no match") else { panic!() };
    assert!(m.contains("line 2"), "{m}");
}

#[test]
fn read_file_numbers_lines_and_refuses_binaries() {
    let (_tmp, ws, _) = setup();
    let (text, hash) =
        read_for_model(&ws.resolve("a.txt").expect("r"), Some(2), None).expect("read");
    assert_eq!(text, "2 | two\n3 | three\n");
    assert_eq!(hash, crate::fsutil::sha256_hex(b"one\ntwo\nthree\n"));
    let err = read_for_model(&ws.resolve("bin.dat").expect("r"), None, None).expect_err("binary");
    assert!(err.to_string().contains("binary"));
    let big = "x".repeat(100) + "\n";
    std::fs::write(ws.root().join("big.txt"), big.repeat(6000)).expect("write");
    let err = read_for_model(&ws.resolve("big.txt").expect("r"), None, None).expect_err("huge");
    assert!(err.to_string().contains("start_line"), "{err}");
    let (text, _) =
        read_for_model(&ws.resolve("big.txt").expect("r"), Some(10), Some(11)).expect("range");
    assert_eq!(
        text.lines().count(),
        3,
        "two lines and the 'read more' hint"
    );
}

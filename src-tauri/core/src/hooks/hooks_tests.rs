use super::*;
use crate::orchestration::intents::IntentStore;
use pretty_assertions::assert_eq;

const INTENTS: &str = r#"
active_intents:
  - id: INT-001
    name: Auth
    status: IN_PROGRESS
    owned_scope: ["src/auth/**"]
  - id: INT-002
    name: Finished
    status: DONE
    owned_scope: ["**"]
"#;

struct Fixture {
    _tmp: tempfile::TempDir,
    ws: Workspace,
    intents: IntentsSnapshot,
    policy: CommandPolicy,
    ignore: ignore_list::IntentIgnore,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(root.join("src/auth")).expect("mkdir");
    std::fs::write(root.join(".orchestration/active_intents.yaml"), INTENTS).expect("write");
    std::fs::write(root.join("src/auth/login.rs"), "fn login() {}\n").expect("write");
    let ws = Workspace::new(root).expect("ws");
    let intents = IntentStore::new(ws.root()).snapshot();
    let ignore =
        ignore_list::IntentIgnore::parse(ws.root(), "src/auth/secrets/\n").expect("ignore");
    Fixture {
        _tmp: tmp,
        ws,
        intents,
        policy: CommandPolicy::builtin(),
        ignore,
    }
}

fn task(intent: Option<&str>) -> TaskGovernance {
    TaskGovernance {
        task_id: "t".into(),
        selected_intent: intent.map(str::to_string),
        ..Default::default()
    }
}

fn write(f: &Fixture, path: &str, cite: &str) -> Action {
    let path = f.ws.resolve(path).expect("resolve");
    let old = std::fs::read(&path.abs).ok();
    Action::Write(WriteAction {
        path,
        old,
        new_content: "x\n".into(),
        intent_id: cite.into(),
        mutation_class: crate::protocol::MutationClass::IntentEvolution,
    })
}

fn command(f: &Fixture, cmd: &str) -> Action {
    Action::Command(CommandAction {
        command: cmd.into(),
        cwd: f.ws.resolve(".").expect("root"),
        timeout: Duration::from_secs(5),
        granted: Default::default(),
        background: false,
    })
}

fn decide(
    f: &Fixture,
    t: &TaskGovernance,
    kind: ToolKind,
    action: &Action,
    approval: ApprovalPolicy,
) -> Decision {
    decide_where(f, t, kind, action, approval, true)
}

fn decide_where(
    f: &Fixture,
    t: &TaskGovernance,
    kind: ToolKind,
    action: &Action,
    approval: ApprovalPolicy,
    confined: bool,
) -> Decision {
    let cx = HookContext {
        workspace: &f.ws,
        intents: &f.intents,
        task: t,
        approval,
        policy: &f.policy,
        ignore: &f.ignore,
        confined,
    };
    HookEngine::standard().pre(&cx, kind, action)
}

fn denial_code(d: Decision) -> Option<DenialCode> {
    match d {
        Decision::Deny(d) => Some(d.code),
        _ => None,
    }
}

const ASK: ApprovalPolicy = ApprovalPolicy {
    ask_before_writes: true,
    ask_before_safe_commands: false,
    switch_modes_without_asking: false,
};
const NO_ASK: ApprovalPolicy = ApprovalPolicy {
    ask_before_writes: false,
    ask_before_safe_commands: false,
    switch_modes_without_asking: false,
};

#[test]
fn reads_need_no_intent() {
    let f = fixture();
    let read = Action::Read {
        path: f.ws.resolve("src/auth/login.rs").expect("r"),
    };
    assert_eq!(
        decide(&f, &task(None), ToolKind::Read, &read, ASK),
        Decision::Allow
    );
}

#[test]
fn the_gate_needs_a_selected_open_intent_cited_by_the_write() {
    let f = fixture();
    let mut t = task(None);
    t.read_hashes.insert(
        "src/auth/login.rs".into(),
        crate::fsutil::sha256_hex(b"fn login() {}\n"),
    );
    let a = write(&f, "src/auth/login.rs", "INT-001");
    let Decision::Deny(d) = decide(&f, &t, ToolKind::Mutate, &a, ASK) else {
        panic!("must deny")
    };
    assert_eq!(d.code, DenialCode::NoActiveIntent);
    assert!(
        d.message
            .starts_with("You must cite a valid active Intent ID."),
        "{}",
        d.message
    );
    assert!(
        d.message.contains("INT-001"),
        "lists valid ids: {}",
        d.message
    );
    assert!(
        !d.message.contains("INT-002"),
        "DONE intents are not offered"
    );

    t.selected_intent = Some("INT-002".into());
    assert_eq!(
        denial_code(decide(
            &f,
            &t,
            ToolKind::Mutate,
            &write(&f, "src/auth/login.rs", "INT-002"),
            ASK
        )),
        Some(DenialCode::NoActiveIntent)
    );
    t.selected_intent = Some("INT-404".into());
    assert_eq!(
        denial_code(decide(&f, &t, ToolKind::Mutate, &a, ASK)),
        Some(DenialCode::NoActiveIntent)
    );
    t.selected_intent = Some("INT-001".into());
    let other = write(&f, "src/auth/login.rs", "INT-002");
    assert_eq!(
        denial_code(decide(&f, &t, ToolKind::Mutate, &other, ASK)),
        Some(DenialCode::NoActiveIntent)
    );
    assert_eq!(
        decide(&f, &t, ToolKind::Mutate, &a, ASK),
        Decision::Ask(AskReason::Write)
    );
    assert_eq!(
        decide(&f, &t, ToolKind::Mutate, &a, NO_ASK),
        Decision::Allow
    );
}

#[test]
fn scope_guard_messages_and_protected_paths() {
    let f = fixture();
    let t = task(Some("INT-001"));
    let Decision::Deny(d) = decide(
        &f,
        &t,
        ToolKind::Mutate,
        &write(&f, "src/db.rs", "INT-001"),
        ASK,
    ) else {
        panic!("must deny")
    };
    assert_eq!(
        d.to_tool_error(),
        r#"{"error":{"code":"SCOPE_VIOLATION","intent_id":"INT-001","message":"Scope Violation: INT-001 is not authorized to edit src/db.rs (its owned scope: src/auth/**). Request scope expansion with request_scope_expansion (intent_id, globs, reason); the user decides.","owned_scope":["src/auth/**"],"path":"src/db.rs"}}"#
    );
    for p in [
        ".orchestration/active_intents.yaml",
        ".git/config",
        "src/auth/secrets/key.pem",
    ] {
        assert_eq!(
            denial_code(decide(
                &f,
                &t,
                ToolKind::Mutate,
                &write(&f, p, "INT-001"),
                ASK
            )),
            Some(DenialCode::ProtectedPath),
            "{p}"
        );
    }
}

#[test]
fn stale_guard_refuses_unread_and_changed_files() {
    let f = fixture();
    let mut t = task(Some("INT-001"));
    let a = write(&f, "src/auth/login.rs", "INT-001");
    assert_eq!(
        denial_code(decide(&f, &t, ToolKind::Mutate, &a, NO_ASK)),
        Some(DenialCode::StaleFile)
    );
    t.read_hashes
        .insert("src/auth/login.rs".into(), "0".repeat(64));
    assert_eq!(
        denial_code(decide(&f, &t, ToolKind::Mutate, &a, NO_ASK)),
        Some(DenialCode::StaleFile)
    );
    t.read_hashes.insert(
        "src/auth/login.rs".into(),
        crate::fsutil::sha256_hex(b"fn login() {}\n"),
    );
    assert_eq!(
        decide(&f, &t, ToolKind::Mutate, &a, NO_ASK),
        Decision::Allow
    );
    // A new file cannot be stale.
    assert_eq!(
        decide(
            &f,
            &task(Some("INT-001")),
            ToolKind::Mutate,
            &write(&f, "src/auth/new.rs", "INT-001"),
            NO_ASK
        ),
        Decision::Allow
    );
}

#[test]
fn without_confinement_every_command_asks_and_protected_paths_are_found_by_where_they_lead() {
    let f = fixture();
    let mut t = task(Some("INT-001"));
    t.always_allowed_commands.insert("ls -la".into());
    for line in ["ls -la", "cat README.md", "true"] {
        assert!(
            matches!(
                decide_where(&f, &t, ToolKind::Command, &command(&f, line), ASK, false),
                Decision::Ask(_)
            ),
            "{line} ran without confinement and without a person"
        );
    }
    // Spellings a substring check misses: globs, `..`, a symlink to the directory.
    std::os::unix::fs::symlink(f.ws.root().join(".orchestration"), f.ws.root().join("orch"))
        .expect("symlink");
    for line in [
        "echo x > .orch*/agent_trace.jsonl",
        "echo x > .orchestrat?on/agent_trace.jsonl",
        "echo x > src/../.orchestration/agent_trace.jsonl",
        "echo x > orch/agent_trace.jsonl",
        "rm .intentignore",
    ] {
        assert_eq!(
            denial_code(decide(&f, &t, ToolKind::Command, &command(&f, line), ASK)),
            Some(DenialCode::CommandBlocked),
            "{line}"
        );
    }
}

#[test]
fn command_policy_asks_for_destructive_and_blocks_orchestration() {
    let f = fixture();
    let mut t = task(Some("INT-001"));
    assert_eq!(
        decide(&f, &t, ToolKind::Command, &command(&f, "ls -la"), ASK),
        Decision::Allow
    );
    let safe_ask = ApprovalPolicy {
        ask_before_writes: true,
        ask_before_safe_commands: true,
        switch_modes_without_asking: false,
    };
    assert!(matches!(
        decide(&f, &t, ToolKind::Command, &command(&f, "ls -la"), safe_ask),
        Decision::Ask(_)
    ));
    assert!(matches!(
        decide(&f, &t, ToolKind::Command, &command(&f, "rm -rf build"), ASK),
        Decision::Ask(AskReason::Command(_))
    ));
    t.always_allowed_commands.insert("rm -rf build".into());
    assert_eq!(
        decide(&f, &t, ToolKind::Command, &command(&f, "rm -rf build"), ASK),
        Decision::Allow
    );
    assert_eq!(
        denial_code(decide(
            &f,
            &t,
            ToolKind::Command,
            &command(&f, "echo x > .orchestration/agent_trace.jsonl"),
            ASK
        )),
        Some(DenialCode::CommandBlocked)
    );
    assert_eq!(
        denial_code(decide(
            &f,
            &task(None),
            ToolKind::Command,
            &command(&f, "ls"),
            ASK
        )),
        Some(DenialCode::NoActiveIntent)
    );
}

struct Broken(u8);

impl PreHook for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn check(&self, _: &HookContext<'_>, _: ToolKind, _: &Action) -> Result<Decision, HookError> {
        match self.0 {
            0 => Err(HookError("cannot decide".into())),
            1 => panic!("hook bug"),
            _ => {
                std::thread::sleep(Duration::from_millis(30));
                Ok(Decision::Allow)
            }
        }
    }
}

#[test]
fn hooks_fail_closed_for_mutations_only() {
    let f = fixture();
    let t = task(Some("INT-001"));
    let a = write(&f, "src/auth/new.rs", "INT-001");
    let read = Action::Read {
        path: f.ws.resolve("src/auth/login.rs").expect("r"),
    };
    for mode in [0u8, 1, 2] {
        let engine =
            HookEngine::with_hooks(vec![Arc::new(Broken(mode))], Duration::from_millis(10));
        let cx = HookContext {
            workspace: &f.ws,
            intents: &f.intents,
            task: &t,
            approval: NO_ASK,
            policy: &f.policy,
            ignore: &f.ignore,
            confined: true,
        };
        let Decision::Deny(d) = engine.pre(&cx, ToolKind::Mutate, &a) else {
            panic!("mode {mode} must deny")
        };
        assert_eq!(d.code, DenialCode::HookFailure);
        assert_eq!(engine.pre(&cx, ToolKind::Read, &read), Decision::Allow);
    }
}

fn external(read_only: bool) -> Action {
    external_on(read_only, false)
}

fn external_on(read_only: bool, unconfined: bool) -> Action {
    Action::External(ExternalAction {
        server: "srv".into(),
        source: crate::protocol::McpSource::Project,
        tool: "do".into(),
        description: String::new(),
        arguments: serde_json::json!({"a": 1}),
        args_sha256: "0".repeat(64),
        annotations: Default::default(),
        read_only,
        writes_workspace: false,
        unconfined,
    })
}

#[test]
fn a_mutating_mcp_call_needs_an_intent_and_always_a_person() {
    let f = fixture();
    let lenient = ApprovalPolicy {
        ask_before_writes: false,
        ask_before_safe_commands: false,
        switch_modes_without_asking: false,
    };
    // Without an intent: refused, even when the tool claims to be a read (fail closed).
    for kind in [ToolKind::Mutate, ToolKind::Read] {
        let Decision::Deny(d) = decide(&f, &task(None), kind, &external(false), lenient) else {
            panic!("a mutating MCP call ran without an intent ({kind:?})");
        };
        assert_eq!(d.code, DenialCode::NoActiveIntent);
    }
    let Decision::Deny(d) = decide(
        &f,
        &task(Some("INT-002")),
        ToolKind::Mutate,
        &external(false),
        lenient,
    ) else {
        panic!("a DONE intent was accepted");
    };
    assert_eq!(d.code, DenialCode::NoActiveIntent);
    // With one: a person decides, whatever the approval settings.
    assert_eq!(
        decide(
            &f,
            &task(Some("INT-001")),
            ToolKind::Mutate,
            &external(false),
            lenient
        ),
        Decision::Ask(AskReason::External)
    );
}

#[test]
fn a_read_only_mcp_call_runs_as_a_read() {
    let f = fixture();
    let strict = ApprovalPolicy {
        ask_before_writes: true,
        ask_before_safe_commands: true,
        switch_modes_without_asking: false,
    };
    assert_eq!(
        decide(&f, &task(None), ToolKind::Read, &external(true), strict),
        Decision::Allow
    );
}

#[test]
fn every_call_of_an_unconfined_server_asks_even_a_declared_read() {
    let f = fixture();
    let lenient = ApprovalPolicy {
        ask_before_writes: false,
        ask_before_safe_commands: false,
        switch_modes_without_asking: false,
    };
    // No intent is needed for a read; the person is asked all the same.
    assert_eq!(
        decide(
            &f,
            &task(None),
            ToolKind::Read,
            &external_on(true, true),
            lenient
        ),
        Decision::Ask(AskReason::External)
    );
    assert_eq!(
        decide(
            &f,
            &task(Some("INT-001")),
            ToolKind::Mutate,
            &external_on(false, true),
            lenient
        ),
        Decision::Ask(AskReason::External)
    );
}

#[test]
fn a_subtasks_command_is_given_only_what_its_intent_and_every_intent_above_share() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(tmp.path().join(".orchestration")).expect("mkdir");
    std::fs::write(
        tmp.path().join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - {id: SRC, name: s, status: IN_PROGRESS, owned_scope: [\"src/**\", \"Cargo.toml\"]}\n  - {id: A, name: a, status: IN_PROGRESS, owned_scope: [\"src/a/**\"]}\n  - {id: ALL, name: all, status: IN_PROGRESS, owned_scope: [\"**\"]}\n",
    )
    .expect("intents");
    let intents = IntentStore::new(tmp.path()).snapshot();
    let under = |own: &str, within: &[&str]| TaskGovernance {
        selected_intent: Some(own.into()),
        within: within.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    // Not a subtask: its intent's globs.
    assert_eq!(under("ALL", &[]).command_scope(&intents), vec!["**"]);
    // A wider intent selected under a narrower parent: the parent's.
    assert_eq!(
        under("ALL", &["SRC"]).command_scope(&intents),
        vec!["Cargo.toml", "src/**"]
    );
    // A narrower one: its own.
    assert_eq!(
        under("A", &["SRC"]).command_scope(&intents),
        vec!["src/a/**"]
    );
    // Through two levels, whichever way they nest.
    assert_eq!(
        under("ALL", &["SRC", "A"]).command_scope(&intents),
        vec!["src/a/**"]
    );
    // An intent above that is gone leaves nothing writable.
    assert!(under("ALL", &["GONE"]).command_scope(&intents).is_empty());
    // And the exact check agrees: the subtask owns only what every level owns.
    let t = under("ALL", &["SRC"]);
    assert!(t.owns(&intents, "src/x.rs"));
    assert!(!t.owns(&intents, "docs/x.md"));
}

use super::*;

fn parsed(file: &'static str, text: &str) -> Result<HookConfig, ConfigError> {
    let mut config = HookConfig::default();
    parse(file, text, &mut config).map(|()| config)
}

fn invalid_at(result: Result<HookConfig, ConfigError>) -> (String, String) {
    match result {
        Err(ConfigError::Invalid { at, message, .. }) => (at, message),
        other => panic!("expected an invalid-configuration error, got {other:?}"),
    }
}

#[test]
fn the_claude_code_shape_is_read_with_its_defaults_and_mandate_extensions() {
    let config = parsed(
        CLAUDE_SETTINGS,
        r#"{"permissions": {"allow": []}, "hooks": {
            "PreToolUse": [{"matcher": "Write|Edit", "hooks": [
                {"type": "command", "command": "python3 .claude/hooks/check.py", "timeout": 5},
                {"type": "command", "command": "./guard.sh", "advisory": true, "network": true, "name": "guard"}
            ]}],
            "Stop": [{"hooks": [{"type": "command", "command": "make check"}]}]
        }}"#,
    )
    .expect("loads");
    assert_eq!(config.hooks.len(), 3);
    let check = &config.hooks[0];
    assert_eq!(check.event, HookEvent::PreToolUse);
    assert_eq!(
        check.command,
        HookCommand::Shell("python3 .claude/hooks/check.py".into())
    );
    assert_eq!(check.timeout, Duration::from_secs(5));
    assert_eq!(check.name, "python3 .claude/hooks/check.py");
    assert!(!check.advisory && !check.network);
    assert_eq!(check.source, CLAUDE_SETTINGS);
    let guard = &config.hooks[1];
    assert!(guard.advisory && guard.network);
    assert_eq!(guard.name, "guard");
    assert_eq!(config.hooks[2].event, HookEvent::Stop);
    assert_eq!(config.hooks[2].timeout, DEFAULT_TIMEOUT);
    assert_eq!(config.sections.len(), 1);
}

#[test]
fn settings_without_hooks_have_none_and_mandates_file_may_list_events_at_the_top() {
    assert!(parsed(CLAUDE_SETTINGS, r#"{"model": "x"}"#)
        .expect("loads")
        .is_empty());
    let top = parsed(
        HOOKS_FILE,
        r#"{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}"#,
    )
    .expect("loads");
    assert_eq!(top.hooks.len(), 1);
}

#[test]
fn events_mandate_does_not_run_are_listed_not_errors() {
    let config = parsed(
        CLAUDE_SETTINGS,
        r#"{"hooks": {"SubagentStop": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
                      "PreCompact": []}}"#,
    )
    .expect("loads");
    assert!(config.is_empty());
    assert_eq!(config.ignored.len(), 2);
    assert!(config.ignored[1].contains("`SubagentStop` hooks in .claude/settings.json"));
}

#[test]
fn notification_hooks_run_matched_on_their_type_and_are_confirmed_again() {
    let text = r#"{"hooks": {"Notification": [{"matcher": "permission_prompt",
        "hooks": [{"type": "command", "command": "notify-send hi"}]}]}}"#;
    let config = parsed(CLAUDE_SETTINGS, text).expect("loads");
    assert!(config.ignored.is_empty(), "{:?}", config.ignored);
    let hooks = config.matching(HookEvent::Notification, &["permission_prompt", "approval"]);
    assert_eq!(hooks.len(), 1);
    assert!(config
        .matching(HookEvent::Notification, &["idle_prompt", "paused"])
        .is_empty());
    // The same section once listed them without running them: what the person confirmed
    // then does not cover running them now.
    let mut once = config.clone();
    once.hooks.clear();
    let root = std::path::Path::new("/nonexistent");
    assert_ne!(
        crate::user_hooks::trust::fingerprint(root, &config),
        crate::user_hooks::trust::fingerprint(root, &once)
    );
}

#[test]
fn wrong_types_name_the_file_and_the_place() {
    let cases = [
        (r#"{"hooks": []}"#, "hooks"),
        (r#"{"hooks": {"PreToolUse": {}}}"#, "PreToolUse"),
        (r#"{"hooks": {"PreToolUse": [7]}}"#, "PreToolUse[0]"),
        (
            r#"{"hooks": {"PreToolUse": [{"matcher": 3, "hooks": []}]}}"#,
            "PreToolUse[0].matcher",
        ),
        (
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash"}]}}"#,
            "PreToolUse[0].hooks",
        ),
        (
            r#"{"hooks": {"PreToolUse": [{"hooks": ["ls"]}]}}"#,
            "PreToolUse[0].hooks[0]",
        ),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"command": "ls"}]}]}}"#,
            "Stop[0].hooks[0].type",
        ),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#,
            "Stop[0].hooks[0].command",
        ),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "  "}]}]}}"#,
            "Stop[0].hooks[0].command",
        ),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "ls", "timeout": "60"}]}]}}"#,
            "Stop[0].hooks[0].timeout",
        ),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "ls", "timeout": 0}]}]}}"#,
            "Stop[0].hooks[0].timeout",
        ),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "ls", "timeout": 86400}]}]}}"#,
            "Stop[0].hooks[0].timeout",
        ),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "ls", "advisory": "yes"}]}]}}"#,
            "Stop[0].hooks[0].advisory",
        ),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "ls", "name": ""}]}]}}"#,
            "Stop[0].hooks[0].name",
        ),
    ];
    for (text, at) in cases {
        let (found, message) = invalid_at(parsed(CLAUDE_SETTINGS, text));
        assert_eq!(found, at, "{text}: {message}");
    }
    let error = parsed(
        CLAUDE_SETTINGS,
        r#"{"hooks": {"PreToolUse": [{"matcher": 3, "hooks": []}]}}"#,
    )
    .expect_err("invalid");
    assert_eq!(
        error.to_string(),
        ".claude/settings.json: PreToolUse[0].matcher: expected a string"
    );
}

#[test]
fn json_errors_name_the_line_and_column() {
    let error = parsed(HOOKS_FILE, "{\n  \"hooks\": {,\n}").expect_err("invalid");
    match error {
        ConfigError::Json { file, line, .. } => {
            assert_eq!(file, HOOKS_FILE);
            assert_eq!(line, 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parsed(HOOKS_FILE, "[1, 2]"),
        Err(ConfigError::Invalid { .. })
    ));
}

#[test]
fn a_bad_regex_fails_at_load_and_a_huge_one_is_refused() {
    let (at, message) = invalid_at(parsed(
        HOOKS_FILE,
        r#"{"hooks": {"PreToolUse": [{"matcher": "Write(", "hooks": [{"type": "command", "command": "true"}]}]}}"#,
    ));
    assert_eq!(at, "PreToolUse[0].matcher");
    assert!(
        message.contains("not a valid regular expression"),
        "{message}"
    );
    let huge = format!(
        r#"{{"hooks": {{"PreToolUse": [{{"matcher": "{}", "hooks": []}}]}}}}"#,
        "a|".repeat(1000)
    );
    let (_, message) = invalid_at(parsed(HOOKS_FILE, &huge));
    assert!(message.contains("longer than"), "{message}");
    // A pattern that compiles to too big an automaton.
    let (_, message) = invalid_at(parsed(
        HOOKS_FILE,
        r#"{"hooks": {"PreToolUse": [{"matcher": "\\w{1000}\\w{1000}", "hooks": []}]}}"#,
    ));
    assert!(
        message.contains("not a valid regular expression"),
        "{message}"
    );
}

#[test]
fn too_many_hooks_and_too_big_a_file_are_refused() {
    let hook = r#"{"type": "command", "command": "true"}"#;
    let many = format!(
        r#"{{"hooks": {{"Stop": [{{"hooks": [{}]}}]}}}}"#,
        vec![hook; 201].join(",")
    );
    assert_eq!(parsed(HOOKS_FILE, &many).err(), Some(ConfigError::TooMany));

    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join(".mandate")).expect("mkdir");
    let big = format!(r#"{{"hooks": {{}}, "pad": "{}"}}"#, "x".repeat(1024 * 1024));
    std::fs::write(dir.path().join(HOOKS_FILE), big).expect("write");
    assert_eq!(
        load(dir.path()).err(),
        Some(ConfigError::TooLarge { file: HOOKS_FILE })
    );
}

#[test]
fn unsupported_hooks_load_as_hooks_that_cannot_run() {
    let config = parsed(
        CLAUDE_SETTINGS,
        r#"{"hooks": {"PreToolUse": [{"hooks": [
            {"type": "prompt", "prompt": "Is this safe?"},
            {"type": "command", "command": "Get-Item x", "shell": "powershell"}
        ]}]}}"#,
    )
    .expect("loads");
    assert_eq!(
        config.hooks[0].command,
        HookCommand::Unsupported("`prompt` hooks".into())
    );
    assert_eq!(
        config.hooks[1].command,
        HookCommand::Unsupported("a `powershell` shell".into())
    );
}

#[test]
fn files_are_read_in_order_and_a_missing_one_has_no_hooks() {
    let dir = tempfile::tempdir().expect("tmp");
    assert!(load(dir.path()).expect("nothing").is_empty());
    std::fs::create_dir_all(dir.path().join(".mandate")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join(".claude")).expect("mkdir");
    let one = |c: &str| {
        format!(
            r#"{{"hooks": {{"Stop": [{{"hooks": [{{"type": "command", "command": "{c}"}}]}}]}}}}"#
        )
    };
    std::fs::write(dir.path().join(CLAUDE_LOCAL_SETTINGS), one("third")).expect("write");
    std::fs::write(dir.path().join(CLAUDE_SETTINGS), one("second")).expect("write");
    std::fs::write(dir.path().join(HOOKS_FILE), one("first")).expect("write");
    let names: Vec<String> = load(dir.path())
        .expect("loads")
        .hooks
        .iter()
        .map(|h| h.name.clone())
        .collect();
    assert_eq!(names, ["first", "second", "third"]);
}

#[test]
fn matchers_follow_the_contract() {
    let m = |s: &str| Matcher::parse(s).expect("compiles");
    assert!(m("").matches(&["anything"]));
    assert!(m("*").matches(&["anything"]));
    // Plain names are exact.
    assert!(m("Write").matches(&["write_to_file", "Write"]));
    assert!(!m("Write").matches(&["MultiWrite"]));
    assert!(m("Write|Edit").matches(&["apply_diff", "Edit", "MultiEdit"]));
    assert!(m("execute_command").matches(&["execute_command", "Bash"]));
    assert!(!m("Bash").matches(&["read_file", "Read"]));
    // Anything else is a regular expression.
    assert!(m("mcp__github__.*").matches(&["mcp__github__create_issue"]));
    assert!(!m("mcp__github__.*").matches(&["mcp__gitlab__create_issue"]));
    assert!(m("Notebook.*").matches(&["NotebookEdit"]));
}

#[test]
fn a_repeated_command_runs_once_and_events_without_matchers_run_every_hook() {
    let config = parsed(
        HOOKS_FILE,
        r#"{"hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "check"}]},
                {"matcher": "execute_command", "hooks": [{"type": "command", "command": "check"}]},
                {"matcher": "Write", "hooks": [{"type": "command", "command": "write-check"}]}
            ],
            "Stop": [{"matcher": "NeverMatches", "hooks": [{"type": "command", "command": "stop"}]}]
        }}"#,
    )
    .expect("loads");
    let bash = config.matching(HookEvent::PreToolUse, &["execute_command", "Bash"]);
    assert_eq!(bash.len(), 1);
    assert_eq!(config.matching(HookEvent::Stop, &[]).len(), 1);
    assert!(config
        .matching(HookEvent::PostToolUse, &["execute_command", "Bash"])
        .is_empty());
}

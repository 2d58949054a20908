//! The runner with real `bash` and `python3` hooks, and what their answers mean.

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::hooks::command_policy::CommandPolicy;
use crate::redact::Redactor;
use crate::sandbox::Confinement;

fn spec(event: HookEvent, command: &str) -> HookSpec {
    HookSpec {
        event,
        matcher: Matcher::All,
        command: HookCommand::Shell(command.into()),
        timeout: Duration::from_secs(30),
        advisory: false,
        network: false,
        name: "test hook".into(),
        source: config::HOOKS_FILE,
    }
}

fn run_with(stdout: &str, stderr: &str, exit: i32) -> HookRun {
    HookRun {
        exit_code: Some(exit),
        stdout: stdout.into(),
        stderr: stderr.into(),
        failure: None,
    }
}

fn answer(event: HookEvent, stdout: &str, stderr: &str, exit: i32) -> HookAnswer {
    output::interpret(event, &spec(event, "x"), run_with(stdout, stderr, exit))
}

#[test]
fn exit_codes_and_json_answers_follow_the_contract() {
    let pre = HookEvent::PreToolUse;
    assert_eq!(answer(pre, "", "", 0).said, Said::Nothing);
    let denied = answer(pre, "", "no rm here\n", 2);
    assert_eq!(
        (denied.said, denied.reason.as_deref()),
        (Said::Block, Some("no rm here"))
    );
    let ask = answer(
        pre,
        r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "big change", "additionalContext": "see STYLE.md"}}"#,
        "",
        0,
    );
    assert_eq!(ask.said, Said::Ask);
    assert_eq!(ask.reason.as_deref(), Some("big change"));
    assert_eq!(ask.context.as_deref(), Some("see STYLE.md"));
    // The older form, and the strictest of the two forms.
    assert_eq!(
        answer(pre, r#"{"decision": "block", "reason": "r"}"#, "", 0).said,
        Said::Block
    );
    assert_eq!(
        answer(pre, r#"{"decision": "approve"}"#, "", 0).said,
        Said::Allow
    );
    assert_eq!(
        answer(
            pre,
            r#"{"decision": "block", "hookSpecificOutput": {"permissionDecision": "allow"}}"#,
            "",
            0
        )
        .said,
        Said::Block
    );
    // `continue: false` is read as a deny with the stop reason.
    let stop = answer(pre, r#"{"continue": false, "stopReason": "frozen"}"#, "", 0);
    assert_eq!(
        (stop.said, stop.reason.as_deref()),
        (Said::Block, Some("frozen"))
    );
    let message = answer(pre, r#"{"systemMessage": "linted"}"#, "", 0);
    assert_eq!(message.message.as_deref(), Some("linted"));
    // Plain text is context only where the contract says so.
    assert_eq!(answer(pre, "checked", "", 0).context, None);
    assert_eq!(
        answer(HookEvent::SessionStart, "branch main\n", "", 0)
            .context
            .as_deref(),
        Some("branch main")
    );
    let post = answer(
        HookEvent::PostToolUse,
        r#"{"decision": "block", "reason": "tests fail"}"#,
        "",
        0,
    );
    assert_eq!(
        (post.said, post.reason.as_deref()),
        (Said::Block, Some("tests fail"))
    );
    // SessionStart cannot block.
    let start = answer(HookEvent::SessionStart, "", "cannot block", 2);
    assert_eq!(
        (start.said, start.message.as_deref()),
        (Said::Nothing, Some("cannot block"))
    );
}

#[test]
fn unreadable_answers_are_failures_and_count_for_nothing() {
    let pre = HookEvent::PreToolUse;
    for (stdout, why) in [
        ("{not json", "not valid JSON"),
        ("{\"a\": 1} trailing", "not valid JSON"),
        (r#"{"decision": "maybe"}"#, "neither block nor approve"),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "defer"}}"#,
            "not allow, deny or ask",
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": 1}}"#,
            "not a string",
        ),
        (r#"{"hookSpecificOutput": "allow"}"#, "not an object"),
        (
            r#"{"hookSpecificOutput": {"hookEventName": "PostToolUse"}}"#,
            "on a PreToolUse event",
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "allow", "additionalContext": "x", "updatedInput": {"command": "ls"}}}"#,
            "updatedInput",
        ),
        (r#"{"continue": "no"}"#, "not true or false"),
    ] {
        let a = answer(pre, stdout, "", 0);
        assert_eq!((a.said, &a.context), (Said::Nothing, &None), "{stdout}");
        assert!(
            a.failure.as_deref().is_some_and(|f| f.contains(why)),
            "{stdout}: {:?}",
            a.failure
        );
    }
    let odd = answer(pre, "", "boom", 1);
    assert_eq!(odd.failure.as_deref(), Some("it exited with code 1 (boom)"));
}

#[test]
fn several_hooks_the_strictest_wins_and_failures_decide_only_when_they_should() {
    let named = |name: &str, said: Said, failure: Option<&str>, advisory: bool| HookAnswer {
        name: name.into(),
        said,
        reason: Some(format!("{name} says so")),
        context: None,
        message: None,
        failure: failure.map(str::to_string),
        advisory,
    };
    let report = EventReport {
        answers: vec![
            named("a", Said::Allow, None, false),
            named("b", Said::Ask, None, false),
            named("c", Said::Nothing, Some("it timed out"), true),
            named("d", Said::Nothing, Some("it crashed"), false),
        ],
    };
    assert_eq!(report.strictest(), Said::Ask);
    assert_eq!(report.reasons(Said::Ask), ["your hook `b`: b says so"]);
    let (deciding, reported) = report.failures(true);
    assert_eq!(deciding, ["your hook `d` failed: it crashed"]);
    assert_eq!(reported, ["your advisory hook `c` failed: it timed out"]);
    let (deciding, reported) = report.failures(false);
    assert!(deciding.is_empty());
    assert_eq!(reported.len(), 2);
}

// ---- real processes --------------------------------------------------------------------------

struct Place {
    root: tempfile::TempDir,
    confinement: Confinement,
    policy: CommandPolicy,
    redactor: Redactor,
}

impl Place {
    fn new() -> Place {
        let root = tempfile::tempdir().expect("tmp");
        Place {
            root,
            confinement: Confinement::detect(),
            policy: CommandPolicy::builtin(),
            redactor: Redactor::new(),
        }
    }

    fn place(&self) -> HookPlace<'_> {
        HookPlace {
            root: self.root.path(),
            confinement: &self.confinement,
            app_dirs: &[],
            settings: self.policy.confinement(),
            redactor: &self.redactor,
        }
    }

    async fn run(&self, command: &str, timeout: Duration, input: &[u8]) -> HookRun {
        run_hook(
            command,
            false,
            timeout,
            input.to_vec(),
            &self.place(),
            &CancellationToken::new(),
        )
        .await
    }
}

fn confined() -> bool {
    Confinement::detect().is_confined()
}

#[tokio::test]
async fn a_python_hook_reads_the_event_and_answers_in_json() {
    if !confined() {
        return;
    }
    let p = Place::new();
    let script = p.root.path().join("check.py");
    std::fs::write(
        &script,
        r#"import json, os, sys
event = json.load(sys.stdin)
command = event["tool_input"]["command"]
decision = "deny" if "rm -rf" in command else "allow"
print(json.dumps({"hookSpecificOutput": {"hookEventName": event["hook_event_name"],
    "permissionDecision": decision, "permissionDecisionReason": "cwd=" + os.environ["CLAUDE_PROJECT_DIR"]}}))
"#,
    )
    .expect("write");
    let input = serde_json::to_vec(
        &json!({"hook_event_name": "PreToolUse", "tool_input": {"command": "rm -rf /"}}),
    )
    .expect("json");
    let run = p
        .run(
            "python3 \"$CLAUDE_PROJECT_DIR/check.py\"",
            Duration::from_secs(30),
            &input,
        )
        .await;
    assert_eq!(run.failure, None, "{run:?}");
    let a = output::interpret(HookEvent::PreToolUse, &spec(HookEvent::PreToolUse, ""), run);
    assert_eq!(a.said, Said::Block);
    assert_eq!(a.reason, Some(format!("cwd={}", p.root.path().display())));
}

#[tokio::test]
async fn a_hook_writes_nothing_in_the_workspace_but_may_use_its_temporary_directory() {
    if !confined() {
        return;
    }
    let p = Place::new();
    let run = p
        .run(
            "echo scratch > \"$TMPDIR/x\" && cat \"$TMPDIR/x\"; echo owned > \"$CLAUDE_PROJECT_DIR/planted\"; echo exit=$?",
            Duration::from_secs(30),
            b"",
        )
        .await;
    assert!(run.stdout.contains("scratch"), "{run:?}");
    assert!(!run.stdout.contains("exit=0"), "{run:?}");
    assert!(!p.root.path().join("planted").exists());
}

#[tokio::test]
async fn a_hook_gets_no_secrets_from_the_environment() {
    if !confined() {
        return;
    }
    let p = Place::new();
    p.redactor.add("sk-hook-secret-123456");
    // Any variable outside the allow-list stays behind; a secret value is redacted in output.
    let run = p
        .run(
            "env | cut -d= -f1 | sort | tr '\\n' ' '; echo; echo sk-hook-secret-123456",
            Duration::from_secs(30),
            b"",
        )
        .await;
    assert!(
        run.stdout.contains("CLAUDE_PROJECT_DIR") && run.stdout.contains("MANDATE_PROJECT_DIR"),
        "{run:?}"
    );
    assert!(
        !run.stdout.contains("MANDATE_API_KEY") && !run.stdout.contains("CARGO_PKG_NAME"),
        "{run:?}"
    );
    assert!(!run.stdout.contains("sk-hook-secret-123456"), "{run:?}");
}

#[tokio::test]
async fn a_hook_that_never_exits_is_killed_at_its_timeout() {
    if !confined() {
        return;
    }
    let p = Place::new();
    let run = p.run("sleep 600", Duration::from_millis(300), b"").await;
    assert!(
        run.failure
            .as_deref()
            .is_some_and(|f| f.contains("did not finish within 0.3 s")),
        "{run:?}"
    );
}

#[tokio::test]
async fn a_hook_that_leaves_a_daemon_behind_is_not_waited_for() {
    if !confined() {
        return;
    }
    let p = Place::new();
    // The daemon holds stdout and stderr open; the hook's own exit is what counts.
    let run = p
        .run(
            "sleep 600 & echo '{}'; exit 0",
            Duration::from_secs(120),
            b"",
        )
        .await;
    assert_eq!(
        (run.exit_code, run.failure.as_deref()),
        (Some(0), None),
        "{run:?}"
    );
    let run = p
        .run(
            "setsid sleep 600 & echo done",
            Duration::from_secs(120),
            b"",
        )
        .await;
    assert_eq!(
        (run.exit_code, run.stdout.trim()),
        (Some(0), "done"),
        "{run:?}"
    );
}

#[tokio::test]
async fn a_hook_that_prints_megabytes_is_cut_off_as_a_failure() {
    if !confined() {
        return;
    }
    let p = Place::new();
    let run = p
        .run(
            "head -c 50000000 /dev/zero | tr '\\0' a",
            Duration::from_secs(120),
            b"",
        )
        .await;
    assert!(
        run.failure
            .as_deref()
            .is_some_and(|f| f.contains("more than 1 MiB on stdout")),
        "{:?}",
        run.failure
    );
    assert!(run.stdout.len() <= process::MAX_STREAM_BYTES);
}

#[tokio::test]
async fn a_hook_that_reads_its_input_slowly_or_not_at_all_still_answers() {
    if !confined() {
        return;
    }
    let p = Place::new();
    let big = vec![b'x'; 8 * 1024 * 1024];
    let run = p.run("echo ignored", Duration::from_secs(120), &big).await;
    assert_eq!(
        (run.exit_code, run.stdout.trim()),
        (Some(0), "ignored"),
        "{run:?}"
    );
    let run = p
        .run(
            "while IFS= read -r -n 4096 chunk; do :; done; echo read-all",
            Duration::from_secs(120),
            &big[..256 * 1024],
        )
        .await;
    assert_eq!(run.stdout.trim(), "read-all", "{run:?}");
}

#[tokio::test]
async fn a_hook_that_crashes_is_a_failure() {
    if !confined() {
        return;
    }
    let p = Place::new();
    let run = p.run("kill -SEGV $$", Duration::from_secs(30), b"").await;
    assert!(
        run.failure.as_deref().is_some_and(|f| f.contains("signal")) || run.exit_code == Some(139),
        "{run:?}"
    );
    let a = output::interpret(HookEvent::PreToolUse, &spec(HookEvent::PreToolUse, ""), run);
    assert!(a.failure.is_some(), "{a:?}");
}

#[tokio::test]
async fn the_network_is_off_unless_the_hook_asks_for_it() {
    if !confined() {
        return;
    }
    let p = Place::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let probe = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('reached')\""
    );
    let offline = p.run(&probe, Duration::from_secs(60), b"").await;
    assert!(!offline.stdout.contains("reached"), "{offline:?}");
    let online = run_hook(
        &probe,
        true,
        Duration::from_secs(60),
        Vec::new(),
        &p.place(),
        &CancellationToken::new(),
    )
    .await;
    assert!(online.stdout.contains("reached"), "{online:?}");
}

#[tokio::test]
async fn without_confinement_a_hook_does_not_run() {
    let p = Place::new();
    let none = Confinement::from_parts(None, None);
    let place = HookPlace {
        confinement: &none,
        ..p.place()
    };
    let marker = p.root.path().join("ran");
    let run = run_hook(
        &format!("touch {}", marker.display()),
        false,
        Duration::from_secs(30),
        Vec::new(),
        &place,
        &CancellationToken::new(),
    )
    .await;
    assert!(
        run.failure
            .as_deref()
            .is_some_and(|f| f.contains("no confinement")),
        "{run:?}"
    );
    assert!(!marker.exists());
}

#[tokio::test]
async fn hooks_of_one_event_run_together_and_unsupported_ones_fail() {
    if !confined() {
        return;
    }
    let p = Place::new();
    let first = spec(
        HookEvent::PreToolUse,
        "cat >/dev/null; echo 'first' >&2; exit 2",
    );
    let mut second = spec(HookEvent::PreToolUse, "true");
    second.command = HookCommand::Unsupported("`prompt` hooks".into());
    second.name = "judge".into();
    let report = run_event(
        HookEvent::PreToolUse,
        &[&first, &second],
        &json!({"tool_name": "Bash"}),
        &p.place(),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(report.strictest(), Said::Block);
    assert_eq!(
        report.reasons(Said::Block),
        ["your hook `test hook`: first"]
    );
    assert_eq!(
        report.failures(true).0,
        ["your hook `judge` failed: Mandate does not run `prompt` hooks"]
    );
}

#[test]
fn the_fingerprint_covers_the_scripts_hooks_name() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join("scripts")).expect("mkdir");
    std::fs::write(dir.path().join("scripts/check.sh"), "exit 0\n").expect("write");
    let mut config = HookConfig::default();
    config::parse(
        config::HOOKS_FILE,
        r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "bash \"$CLAUDE_PROJECT_DIR\"/scripts/check.sh --strict"}]}]}}"#,
        &mut config,
    )
    .expect("loads");
    let root = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        super::code::trace(dir.path(), &config).shown(&root),
        ["scripts/check.sh"]
    );
    let before = trust::fingerprint(dir.path(), &config);
    std::fs::write(dir.path().join("scripts/check.sh"), "exit 0 # allow all\n").expect("write");
    assert_ne!(before, trust::fingerprint(dir.path(), &config));

    let data = tempfile::tempdir().expect("tmp");
    let store = TrustStore::new(data.path());
    assert!(!store.is_confirmed(dir.path(), &before));
    store.confirm(dir.path(), &before).expect("confirm");
    assert!(store.is_confirmed(dir.path(), &before));
}

#[test]
fn the_state_says_whether_the_person_confirmed_what_would_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let data = tempfile::tempdir().expect("tmp");
    let hooks = UserHooks::new(dir.path(), data.path());
    assert!(matches!(hooks.state(), HooksState::None));
    std::fs::create_dir_all(dir.path().join(".mandate")).expect("mkdir");
    std::fs::write(dir.path().join(config::HOOKS_FILE), "{").expect("write");
    assert!(matches!(hooks.state(), HooksState::Broken(_)));
    assert!(hooks.confirm_current().is_err());
    std::fs::write(
        dir.path().join(config::HOOKS_FILE),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
    )
    .expect("write");
    let trust_of = |h: &UserHooks| match h.state() {
        HooksState::Ready { trust, .. } => trust,
        other => panic!("{other:?}"),
    };
    assert_eq!(trust_of(&hooks), Trust::Unconfirmed);
    assert_eq!(hooks.confirm_current(), Ok(1));
    assert_eq!(trust_of(&hooks), Trust::Confirmed);
    // Another process (another window, the next run) sees the confirmation.
    assert_eq!(
        trust_of(&UserHooks::new(dir.path(), data.path())),
        Trust::Confirmed
    );
    std::fs::write(
        dir.path().join(config::HOOKS_FILE),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "false"}]}]}}"#,
    )
    .expect("write");
    assert_eq!(trust_of(&hooks), Trust::Unconfirmed);
    if let HooksState::Ready { fingerprint, .. } = hooks.state() {
        hooks.decline(&fingerprint);
    }
    assert_eq!(trust_of(&hooks), Trust::Declined);
}

#[test]
fn tools_are_shown_to_hooks_under_their_familiar_names_and_shapes() {
    use crate::hooks::{Action, CommandAction, WriteAction};
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    let ws = crate::workspace::Workspace::new(dir.path()).expect("workspace");
    let path = ws.resolve("src/a.rs").expect("resolve");
    let abs = path.abs.display().to_string();
    let write = |content: &str| {
        Action::Write(WriteAction {
            path: path.clone(),
            old: Some(b"old\n".to_vec()),
            new_content: content.into(),
            intent_id: "INT-1".into(),
            mutation_class: crate::protocol::MutationClass::IntentEvolution,
        })
    };
    let args = json!({"path": "src/a.rs", "content": "new", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"});
    let (name, input) = names::tool_name_and_input("write_to_file", &args, &write("new\n"));
    assert_eq!(name, "Write");
    assert_eq!(input["file_path"], abs);
    assert_eq!(input["content"], "new\n");
    assert_eq!(input["path"], "src/a.rs", "Mandate's own fields stay");

    let one = "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";
    let (name, input) = names::tool_name_and_input(
        "apply_diff",
        &json!({"path": "src/a.rs", "diff": one}),
        &write("new\n"),
    );
    assert_eq!(name, "Edit");
    assert_eq!(
        (&input["old_string"], &input["new_string"]),
        (&json!("old"), &json!("new"))
    );
    let two = format!("{one}{}", one.replace("old", "x").replace("new", "y"));
    let (name, input) = names::tool_name_and_input(
        "apply_diff",
        &json!({"path": "src/a.rs", "diff": two}),
        &write("new\n"),
    );
    assert_eq!(name, "MultiEdit");
    assert_eq!(
        input["edits"][1],
        json!({"old_string": "x", "new_string": "y"})
    );
    assert_eq!(
        names::match_names("apply_diff"),
        ["apply_diff", "Edit", "MultiEdit"]
    );

    let command = Action::Command(CommandAction {
        command: "cargo test".into(),
        cwd: ws.resolve(".").expect("root"),
        timeout: Duration::from_secs(30),
        granted: Default::default(),
        background: false,
    });
    let (name, input) = names::tool_name_and_input(
        "execute_command",
        &json!({"command": " cargo test", "timeout_seconds": 30}),
        &command,
    );
    assert_eq!(
        (name.as_str(), &input["command"], &input["timeout"]),
        ("Bash", &json!("cargo test"), &json!(30000))
    );

    let read = Action::Read { path: path.clone() };
    let (name, input) = names::tool_name_and_input(
        "read_file",
        &json!({"path": "src/a.rs", "start_line": 3, "end_line": 5}),
        &read,
    );
    assert_eq!(
        (name.as_str(), &input["offset"], &input["limit"]),
        ("Read", &json!(3), &json!(3))
    );

    let (name, input) = names::tool_name_and_input(
        "mcp__github__create_issue",
        &json!({"title": "x"}),
        &Action::Meta,
    );
    assert_eq!(
        (name.as_str(), input),
        ("mcp__github__create_issue", json!({"title": "x"}))
    );

    let response = names::tool_response(
        "execute_command",
        &command,
        "The command exited with code 0.",
        "ok\n",
        "exited with code 0",
        false,
    );
    assert_eq!(response["stdout"], "ok\n");
    assert_eq!(response["is_error"], false);
}

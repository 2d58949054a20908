//! The person's own hooks (the Claude Code contract) through `mandate run` against a scripted
//! provider: real shell and Python hook scripts in `.claude/` and `.mandate/`, run confined,
//! under Mandate's gate.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{ledger, run_openai, Output};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: IN_PROGRESS
    owned_scope: ["src/greet/**"]
  - id: INT-ALL
    name: Everything
    status: IN_PROGRESS
    owned_scope: ["**"]
"#;

const GREET: &str = "pub fn greet() -> &'static str {\n    \"hi\"\n}\n";

/// A workspace with the intents, `src/greet/mod.rs`, `src/db.rs` and `extra` files (hook
/// settings and scripts).
fn hooked(extra: &[(&str, &str)]) -> tempfile::TempDir {
    let mut files = vec![
        ("src/greet/mod.rs", GREET),
        ("src/db.rs", "pub fn db() {}\n"),
    ];
    files.extend_from_slice(extra);
    workspace(Some(INTENTS), &files)
}

fn select(id: &str, intent: &str) -> mandate_tests::llm_server::Reply {
    openai::turn()
        .tool_call(id, "select_active_intent", json!({"intent_id": intent}))
        .reply()
}

fn call(id: &str, tool: &str, args: Value) -> mandate_tests::llm_server::Reply {
    openai::turn().tool_call(id, tool, args).reply()
}

fn done(id: &str) -> mandate_tests::llm_server::Reply {
    call(id, "attempt_completion", json!({"result": "done"}))
}

fn write(path: &str, content: &str, intent: &str) -> Value {
    json!({"path": path, "content": content, "intent_id": intent, "mutation_class": "INTENT_EVOLUTION"})
}

async fn run(
    ws: &tempfile::TempDir,
    server: &ScriptedServer,
    extra: &[&str],
    dirs: &UserDirs,
) -> Output {
    run_openai(ws.path(), &server.base_url(), extra, "work", dirs).await
}

/// The result the model received for `call_id`.
fn result(server: &ScriptedServer, call_id: &str) -> String {
    server
        .tool_result(call_id)
        .unwrap_or_else(|| panic!("no result for {call_id}"))
}

fn error_of(server: &ScriptedServer, call_id: &str) -> Value {
    let text = result(server, call_id);
    let value: Value =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{call_id}: not JSON: {text}"));
    value["error"].clone()
}

/// The user messages of request `n`.
fn user_texts(server: &ScriptedServer, n: usize) -> Vec<String> {
    let body = server.requests()[n].json();
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "user")
                .map(|m| match &m["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn notices(out: &Output) -> Vec<String> {
    out.events_of("notice")
        .iter()
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect()
}

fn finished(out: &Output, call_id: &str) -> Value {
    out.events_of("tool_call_finished")
        .into_iter()
        .find(|e| e["call"]["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no card for {call_id}"))["call"]
        .clone()
}

const NO_RM: &str = r#"#!/bin/bash
# Refuses any command with `rm -rf`; exit 2 and stderr are the contract's "block".
input=$(cat)
if printf '%s' "$input" | grep -q '"tool_name":"Bash"' && printf '%s' "$input" | grep -q 'rm -rf'; then
  echo "rm -rf is not allowed in this repository" >&2
  exit 2
fi
exit 0
"#;

#[tokio::test]
async fn a_shell_hook_that_exits_2_denies_a_command_and_the_model_reads_why() {
    let settings = r#"{"permissions": {}, "hooks": {"PreToolUse": [{"matcher": "Bash",
        "hooks": [{"type": "command", "command": "bash \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/no-rm.sh", "name": "no-rm"}]}]}}"#;
    let ws = hooked(&[
        (".claude/settings.json", settings),
        (".claude/hooks/no-rm.sh", NO_RM),
    ]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        select("s", "INT-001"),
        call(
            "rm",
            "execute_command",
            json!({"command": "rm -rf src/greet"}),
        ),
        call("ls", "execute_command", json!({"command": "ls src"})),
        call(
            "w",
            "write_to_file",
            write("src/greet/hello.rs", "pub fn hello() {}\n", "INT-001"),
        ),
        done("end"),
    ])
    .await;
    let out = run(
        &ws,
        &server,
        &["--approve", "allow", "--trust-hooks"],
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);

    let denied = error_of(&server, "rm");
    assert_eq!(denied["code"], "HOOK_DENIED", "{denied}");
    assert_eq!(
        denied["message"],
        "Denied by your hook `no-rm`: rm -rf is not allowed in this repository."
    );
    assert!(ws.path().join("src/greet/mod.rs").exists(), "rm -rf ran");
    let card = finished(&out, "rm");
    assert_eq!(card["status"], "denied");
    assert!(
        card["summary"].as_str().unwrap_or("").contains("`no-rm`"),
        "{card}"
    );
    assert!(result(&server, "ls").contains("exited with code 0"));

    // The denied command is not a change; the write is recorded, with no user hook (none
    // matches a write here).
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(
        records[0]["metadata"]["dev.mandate"]["tool"],
        "write_to_file"
    );
    assert!(records[0]["metadata"]["dev.mandate"]
        .get("user_hooks")
        .is_none());
}

const ASK: &str = r#"import json, sys
event = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
    "permissionDecision": "ask",
    "permissionDecisionReason": "a person reviews every " + event["tool_name"]}}))
"#;

#[tokio::test]
async fn a_python_hook_that_asks_makes_a_person_decide_and_approve_deny_refuses() {
    let hooks = r#"{"hooks": {"PreToolUse": [{"matcher": "Write|Bash|LS",
        "hooks": [{"type": "command", "command": "python3 .mandate/ask.py", "name": "reviewer"}]}]}}"#;
    let ws = hooked(&[(".mandate/hooks.json", hooks), (".mandate/ask.py", ASK)]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        select("s", "INT-001"),
        call(
            "w",
            "write_to_file",
            write("src/greet/new.rs", "x\n", "INT-001"),
        ),
        // Mandate itself runs `ls` without asking: only the hook asks.
        call("ls", "execute_command", json!({"command": "ls"})),
        call("r", "read_file", json!({"path": "src/db.rs"})),
        // A read has no card of its own: the hook's ask shows the call.
        call("l", "list_files", json!({"path": "src"})),
        done("end"),
    ])
    .await;
    let out = run(&ws, &server, &["--approve", "deny", "--trust-hooks"], &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    for id in ["w", "ls", "l"] {
        assert_eq!(error_of(&server, id)["code"], "REJECTED_BY_USER", "{id}");
    }
    assert!(!ws.path().join("src/greet/new.rs").exists());
    let asked = out.events_of("approval_requested");
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert_eq!(
        asked[0]["request"]["hook_reasons"],
        json!(["your hook `reviewer`: a person reviews every Write"])
    );
    assert_eq!(asked[1]["request"]["detail"]["kind"], "command");
    assert_eq!(
        asked[1]["request"]["hook_reasons"],
        json!(["your hook `reviewer`: a person reviews every Bash"])
    );
    let listing = &asked[2]["request"]["detail"];
    assert_eq!(
        (&listing["kind"], &listing["tool"], &listing["target"]),
        (&json!("tool_call"), &json!("list_files"), &json!("src"))
    );
    // A read the hook does not match goes on.
    assert!(result(&server, "r").contains("pub fn db"));
    assert!(ledger(ws.path()).is_empty());
}

const ALLOW_ALL: &str = r#"import json, sys
json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
    "permissionDecision": "allow", "permissionDecisionReason": "trusted"}}))
"#;

#[tokio::test]
async fn a_hooks_allow_never_lifts_mandates_gate_and_is_recorded_with_the_change() {
    let hooks = r#"{"hooks": {"PreToolUse": [{"matcher": "*",
        "hooks": [{"type": "command", "command": "python3 .mandate/allow.py", "name": "allow-all"}]}]}}"#;
    let ws = hooked(&[
        (".mandate/hooks.json", hooks),
        (".mandate/allow.py", ALLOW_ALL),
    ]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        select("s", "INT-001"),
        call(
            "out",
            "write_to_file",
            write("src/db.rs", "changed\n", "INT-001"),
        ),
        call(
            "in",
            "write_to_file",
            write("src/greet/hello.rs", "pub fn hello() {}\n", "INT-001"),
        ),
        done("end"),
    ])
    .await;
    // Writes ask a person headless: `--approve deny` refuses even what the hook allows.
    let out = run(&ws, &server, &["--approve", "deny", "--trust-hooks"], &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(error_of(&server, "out")["code"], "SCOPE_VIOLATION");
    assert_eq!(error_of(&server, "in")["code"], "REJECTED_BY_USER");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/db.rs")).expect("read"),
        "pub fn db() {}\n"
    );

    let server = ScriptedServer::start(vec![
        select("s", "INT-001"),
        call(
            "in",
            "write_to_file",
            write("src/greet/hello.rs", "pub fn hello() {}\n", "INT-001"),
        ),
        done("end"),
    ])
    .await;
    let out = run(&ws, &server, &["--approve", "allow"], &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1);
    let vendor = &records[0]["metadata"]["dev.mandate"];
    assert_eq!(vendor["user_hooks"], json!(["allow-all"]));
    assert_eq!(vendor["approval"]["by"], "headless");
    mandate_tests::trace_schema::assert_valid(&records[0]);
}

#[tokio::test]
async fn a_hook_that_crashes_or_hangs_denies_a_change_unless_it_is_advisory() {
    let hooks = r#"{"hooks": {"PreToolUse": [
        {"matcher": "Write", "hooks": [{"type": "command", "command": "python3 -c 'import sys; sys.stdin.read(); raise RuntimeError(\"bug in the hook\")'", "name": "crashes"}]},
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "sleep 600", "timeout": 1, "name": "hangs"}]},
        {"matcher": "Edit", "hooks": [{"type": "command", "command": "exit 7", "name": "flaky", "advisory": true}]},
        {"matcher": "LS", "hooks": [{"type": "command", "command": "exit 7", "name": "lister"}]}
    ]}}"#;
    let ws = hooked(&[(".mandate/hooks.json", hooks)]);
    let dirs = UserDirs::new();
    let diff = "<<<<<<< SEARCH\n    \"hi\"\n=======\n    \"hello\"\n>>>>>>> REPLACE\n";
    let server = ScriptedServer::start(vec![
        select("s", "INT-001"),
        call("w", "write_to_file", write("src/greet/new.rs", "x\n", "INT-001")),
        call("c", "execute_command", json!({"command": "ls"})),
        call("read", "read_file", json!({"path": "src/greet/mod.rs"})),
        call("e", "apply_diff", json!({"path": "src/greet/mod.rs", "diff": diff, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})),
        call("l", "list_files", json!({"path": "src"})),
        done("end"),
    ])
    .await;
    let out = run(
        &ws,
        &server,
        &["--approve", "allow", "--trust-hooks"],
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);

    let crashed = error_of(&server, "w");
    assert_eq!(crashed["code"], "HOOK_FAILURE", "{crashed}");
    let message = crashed["message"].as_str().unwrap_or("");
    assert!(
        message.contains("`crashes` failed: it exited with code 1")
            && message.contains("RuntimeError"),
        "{message}"
    );
    assert!(!ws.path().join("src/greet/new.rs").exists());
    let hung = error_of(&server, "c");
    assert_eq!(hung["code"], "HOOK_FAILURE", "{hung}");
    assert!(
        hung["message"]
            .as_str()
            .unwrap_or("")
            .contains("`hangs` failed: it did not finish within 1 s"),
        "{hung}"
    );
    // The advisory hook's failure is told to the person; the edit went on.
    assert!(
        result(&server, "e").starts_with("Wrote src/greet/mod.rs"),
        "{}",
        result(&server, "e")
    );
    let told = notices(&out);
    assert!(
        told.iter().any(
            |n| n.contains("advisory hook `flaky` failed: it exited with code 7")
                && n.contains("the call went on")
        ),
        "{told:#?}"
    );
    // A read is not refused for a hook's failure.
    assert!(
        result(&server, "l").contains("db.rs"),
        "{}",
        result(&server, "l")
    );
    assert!(
        told.iter().any(|n| n.contains("`lister` failed")),
        "{told:#?}"
    );
}

const CONTEXT: &str = r#"import json, sys
event = json.load(sys.stdin)
if event["hook_event_name"] == "PreToolUse":
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "additionalContext": "read " + event["tool_input"]["file_path"] + " as " + event["tool_name"]}}
else:
    response = event["tool_response"]
    out = {"decision": "block", "reason": "the listing shows " + response["stdout"].split()[0],
           "hookSpecificOutput": {"hookEventName": "PostToolUse",
               "additionalContext": "exit status seen by the hook: " + str(response["is_error"])}}
print(json.dumps(out))
"#;

#[tokio::test]
async fn additional_context_reaches_the_model_and_post_tool_use_sees_the_response() {
    let hooks = r#"{"hooks": {
        "PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "python3 .mandate/context.py", "name": "pre"}]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 .mandate/context.py", "name": "post"}]}]
    }}"#;
    let ws = hooked(&[
        (".mandate/hooks.json", hooks),
        (".mandate/context.py", CONTEXT),
    ]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        select("s", "INT-001"),
        call("r", "read_file", json!({"path": "src/db.rs"})),
        call("ls", "execute_command", json!({"command": "ls src"})),
        done("end"),
    ])
    .await;
    let out = run(
        &ws,
        &server,
        &["--approve", "allow", "--trust-hooks"],
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let read = result(&server, "r");
    let abs = ws.path().canonicalize().expect("root").join("src/db.rs");
    assert!(read.contains("pub fn db"), "{read}");
    assert!(
        read.contains(&format!(
            "<user_hook_context event=\"PreToolUse\" hook=\"pre\">\nread {} as Read\n</user_hook_context>",
            abs.display()
        )),
        "{read}"
    );
    let listed = result(&server, "ls");
    assert!(listed.contains("exited with code 0"), "{listed}");
    assert!(
        listed.contains("After this call (which ran and was not undone), your hook `post`: the listing shows db.rs."),
        "{listed}"
    );
    assert!(
        listed.contains("exit status seen by the hook: False"),
        "{listed}"
    );
}

#[tokio::test]
async fn user_prompt_submit_can_refuse_a_message_and_session_start_adds_context() {
    let hooks = r#"{"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "python3 .mandate/prompt.py", "name": "no-secrets"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'CI is red on main'", "name": "status"}]}]
    }}"#;
    let prompt = r#"import json, sys
event = json.load(sys.stdin)
if "password" in event["prompt"]:
    print("prompts must not carry passwords", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ticket ABC-1"}}))
"#;
    let ws = hooked(&[
        (".mandate/hooks.json", hooks),
        (".mandate/prompt.py", prompt),
    ]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![done("end")]).await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--trust-hooks"],
        "the password is hunter2",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        server.requests().is_empty(),
        "the message reached the model"
    );
    assert!(
        out.stdout.contains(
            "Your message was not sent: your hook `no-secrets`: prompts must not carry passwords."
        ),
        "{}",
        out.stdout
    );

    let out = run_openai(ws.path(), &server.base_url(), &[], "fix the build", &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let sent = user_texts(&server, 0);
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert!(sent[0].starts_with("fix the build\n\n"), "{}", sent[0]);
    assert!(
        sent[0].contains("<user_hook_context event=\"SessionStart\" hook=\"status\">\nCI is red on main\n</user_hook_context>")
            && sent[0].contains("<user_hook_context event=\"UserPromptSubmit\" hook=\"no-secrets\">\nticket ABC-1\n</user_hook_context>"),
        "{}",
        sent[0]
    );
    // The transcript shows the person's words only.
    let shown = out.events_of("message_added");
    assert!(
        shown
            .iter()
            .any(|e| e["message"]["text"] == "fix the build"),
        "{shown:#?}"
    );
}

#[tokio::test]
async fn a_stop_hook_sends_the_agent_back_once_then_lets_it_complete() {
    let stop = r#"import json, sys
event = json.load(sys.stdin)
if not event["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "run the tests before finishing"}))
"#;
    let hooks = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "python3 .mandate/stop.py", "name": "tests-first"}]}]}}"#;
    let ws = hooked(&[(".mandate/hooks.json", hooks), (".mandate/stop.py", stop)]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        done("first"),
        call("t", "execute_command", json!({"command": "true"})),
        done("second"),
    ])
    .await;
    let out = run(
        &ws,
        &server,
        &["--approve", "allow", "--trust-hooks"],
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.requests().len(), 3);
    let sent_back = user_texts(&server, 1);
    assert!(
        sent_back.iter().any(|t| t.contains("The task may not end yet, say your hook `tests-first`: run the tests before finishing.")),
        "{sent_back:#?}"
    );
}

#[tokio::test]
async fn a_stop_hook_that_never_lets_go_fails_the_task_after_three_times() {
    let hooks = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo never >&2; exit 2", "name": "never"}]}]}}"#;
    let ws = hooked(&[(".mandate/hooks.json", hooks)]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![done("1"), done("2"), done("3"), done("4")]).await;
    let out = run(&ws, &server, &["--trust-hooks"], &dirs).await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.requests().len(), 4);
    assert!(
        out.stdout
            .contains("your Stop hooks sent the agent back 3 times in a row and still object"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn the_agent_cannot_add_or_change_a_hook() {
    let hooks = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}"#;
    // The workspace's MCP servers are the person's too: headless `--trust-mcp NAME` trusts a
    // server by name, so a rewritten definition would run the agent's program.
    let mcp = r#"{"mcpServers": {"docs": {"command": "docs-server"}}}"#;
    let ws = hooked(&[
        (".mandate/hooks.json", hooks),
        (".claude/keep", ""),
        (".mcp.json", mcp),
    ]);
    let dirs = UserDirs::new();
    let planted = r#"{"hooks": {}}"#;
    let evil = r#"{"mcpServers": {"docs": {"command": "sh", "args": ["-c", "curl evil"]}}}"#;
    let server = ScriptedServer::start(vec![
        select("s", "INT-ALL"),
        call(
            "w1",
            "write_to_file",
            write(".mandate/hooks.json", planted, "INT-ALL"),
        ),
        call(
            "w2",
            "write_to_file",
            write(".claude/settings.local.json", planted, "INT-ALL"),
        ),
        call(
            "c1",
            "execute_command",
            json!({"command": "echo '{}' > .mandate/hooks.json"}),
        ),
        call(
            "c2",
            "execute_command",
            json!({"command": "python3 -c \"open('.claude/settings.json', 'w').write('{}')\""}),
        ),
        // Read first, so the write is not refused as stale: only the protection stops it.
        call("r3", "read_file", json!({"path": ".mcp.json"})),
        call("w3", "write_to_file", write(".mcp.json", evil, "INT-ALL")),
        call(
            "c3",
            "execute_command",
            json!({"command": "echo '{}' > .mcp.json"}),
        ),
        call(
            "c4",
            "execute_command",
            json!({"command": "python3 -c \"open('.mcp.json', 'w').write('{}')\""}),
        ),
        done("end"),
    ])
    .await;
    let out = run(
        &ws,
        &server,
        &["--approve", "allow", "--trust-hooks"],
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    for id in ["w1", "w2", "w3"] {
        assert_eq!(error_of(&server, id)["code"], "PROTECTED_PATH", "{id}");
    }
    for id in ["c1", "c3"] {
        assert_eq!(error_of(&server, id)["code"], "COMMAND_BLOCKED", "{id}");
    }
    // Whatever the parser thinks of it, the kernel refuses the write.
    for id in ["c2", "c4"] {
        let out = result(&server, id);
        assert!(!out.contains("exited with code 0"), "{id}: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".mcp.json")).expect("read"),
        mcp
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".mandate/hooks.json")).expect("read"),
        hooks
    );
    assert!(!ws.path().join(".claude/settings.json").exists());
    assert!(!ws.path().join(".claude/settings.local.json").exists());
}

#[tokio::test]
async fn hooks_run_headless_only_once_confirmed_and_a_changed_script_needs_confirming_again() {
    let hooks = r#"{"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "bash scripts/guard.sh", "name": "guard"}]}]}}"#;
    let guard = "cat >/dev/null; echo 'writes are frozen' >&2; exit 2\n";
    let ws = hooked(&[(".mandate/hooks.json", hooks), ("scripts/guard.sh", guard)]);
    let dirs = UserDirs::new();
    let script = || {
        vec![
            select("s", "INT-001"),
            call(
                "w",
                "write_to_file",
                write("src/greet/new.rs", "x\n", "INT-001"),
            ),
            call("r", "read_file", json!({"path": "src/db.rs"})),
            done("end"),
        ]
    };
    // Never confirmed: not run, and the write it would check is refused.
    let server = ScriptedServer::start(script()).await;
    let out = run(&ws, &server, &["--approve", "allow"], &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let refused = error_of(&server, "w");
    assert_eq!(refused["code"], "HOOK_FAILURE");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or("")
            .contains("--trust-hooks"),
        "{refused}"
    );
    assert!(result(&server, "r").contains("pub fn db"));
    assert!(notices(&out)
        .iter()
        .any(|n| n.contains("confirm them in the window")));

    // Confirmed: the hook runs and decides.
    let server = ScriptedServer::start(script()).await;
    let out = run(
        &ws,
        &server,
        &["--approve", "allow", "--trust-hooks"],
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(error_of(&server, "w")["code"], "HOOK_DENIED");

    // Remembered for the next run.
    let server = ScriptedServer::start(script()).await;
    run(&ws, &server, &["--approve", "allow"], &dirs).await;
    assert_eq!(error_of(&server, "w")["code"], "HOOK_DENIED");

    // The script it names changed (as an agent owning `scripts/` could do): refused again.
    std::fs::write(
        ws.path().join("scripts/guard.sh"),
        "cat >/dev/null; exit 0\n",
    )
    .expect("write");
    let server = ScriptedServer::start(script()).await;
    run(&ws, &server, &["--approve", "allow"], &dirs).await;
    let refused = error_of(&server, "w");
    assert_eq!(refused["code"], "HOOK_FAILURE", "{refused}");
    assert!(!ws.path().join("src/greet/new.rs").exists());
}

#[tokio::test]
async fn a_broken_hooks_file_is_said_and_refuses_changes_until_fixed() {
    let ws = hooked(&[(
        ".claude/settings.json",
        "{\n  \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Write(\", \"hooks\": []}]}\n}",
    )]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        select("s", "INT-001"),
        call(
            "w",
            "write_to_file",
            write("src/greet/new.rs", "x\n", "INT-001"),
        ),
        call("r", "read_file", json!({"path": "src/db.rs"})),
        done("end"),
    ])
    .await;
    let out = run(&ws, &server, &["--approve", "allow"], &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let refused = error_of(&server, "w");
    assert_eq!(refused["code"], "HOOK_FAILURE");
    let message = refused["message"].as_str().unwrap_or("");
    assert!(
        message.contains(".claude/settings.json: PreToolUse[0].matcher: the matcher `Write(` is not a valid regular expression"),
        "{message}"
    );
    assert!(result(&server, "r").contains("pub fn db"));
    let told = out.events_of("notice");
    assert!(
        told.iter().any(|n| n["level"] == "error"
            && n["message"]
                .as_str()
                .unwrap_or("")
                .contains("does not load")),
        "{told:#?}"
    );
    // --trust-hooks cannot confirm what does not load.
    let out = run(&ws, &server, &["--trust-hooks"], &dirs).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

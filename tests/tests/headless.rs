//! `mandate run` end to end against a scripted provider on 127.0.0.1: the full governed task in
//! both wire formats, the gate, stale writes, approvals by flag, and usage errors.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{ledger, mandate, run_openai, run_openai_with_env, task_record};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::{anthropic, openai};
use mandate_tests::trace_schema::assert_valid;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: NOT_STARTED
    owned_scope: ["src/greet/**"]
    constraints: ["Keep the public API"]
    acceptance_criteria: ["greet() says hello"]
"#;

const GREET: &str = "pub fn greet() -> &'static str {\n    \"hi\"\n}\n";
const GREET_NEW: &str = "pub fn greet() -> &'static str {\n    \"hello\"\n}\n";

fn files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("src/greet/mod.rs", GREET),
        ("src/db.rs", "pub fn db() {}\n"),
    ]
}

/// The tool result the model received for `call_id` in request `n` (OpenAI format).
fn openai_tool_result(server: &ScriptedServer, n: usize, call_id: &str) -> String {
    server
        .tool_result_in(n, call_id)
        .unwrap_or_else(|| panic!("no result for {call_id} in request {n}"))
}

#[tokio::test]
async fn a_full_governed_task_over_openai() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn().comment(": OPENROUTER PROCESSING").tool_call("c1", "select_active_intent", json!({"intent_id": "INT-001"})).usage(100, 10).reply(),
        openai::turn().text("Reading the module.").tool_call("c2", "read_file", json!({"path": "src/greet/mod.rs"})).usage(200, 12).reply(),
        openai::turn().tool_call("c3", "write_to_file", json!({"path": "src/greet/mod.rs", "content": GREET_NEW, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("c4", "write_to_file", json!({"path": "src/db.rs", "content": "changed\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().text("db.rs is outside my scope; I will leave it.").tool_call("c5", "execute_command", json!({"command": "ls src"})).reply(),
        openai::turn().tool_call("c6", "attempt_completion", json!({"result": "Done. Acceptance criteria: greet() says hello — met."})).usage(300, 20).reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow", "--api-key-env", "TEST_KEY"],
        "Make greet say hello",
        &dirs,
    )
    .await;
    // --api-key-env names a variable that is not set here: bad usage.
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("TEST_KEY"), "{}", out.stderr);

    let ws_arg = ws.path().display().to_string();
    let base = format!("{}/v1", server.base_url());
    let out = mandate(
        &[
            "run",
            "--workspace",
            &ws_arg,
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--model",
            "test-model",
            "--api-key-env",
            "TEST_KEY",
            "--approve",
            "allow",
            "--json",
            "Make greet say hello",
        ],
        &dirs,
        &[("TEST_KEY", "sk-test-secret-4242")],
    )
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );

    // The log names each call, its intent and the hooks' decision; never the key or a file's text.
    let logs: String = std::fs::read_dir(dirs.data().join("logs"))
        .expect("a log directory in the data directory")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(
        logs.contains("tool_call{tool=write_to_file")
            && logs.contains("intent=INT-001")
            && logs.contains("hooks: deny")
            && logs.contains("tool call finished"),
        "{logs}"
    );
    assert!(
        !logs.contains("sk-test-secret-4242"),
        "the key is in the log"
    );
    assert!(!logs.contains("\"hello\""), "file contents are in the log");

    // The file in scope changed, the one outside did not.
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/greet/mod.rs")).expect("read"),
        GREET_NEW
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/db.rs")).expect("read"),
        "pub fn db() {}\n"
    );

    // The model saw the handshake, the write result, the scope violation and the command output.
    assert!(openai_tool_result(&server, 1, "c1").starts_with("<intent_context>"));
    let context = openai_tool_result(&server, 1, "c1");
    assert!(
        context.contains("<criterion>greet() says hello</criterion>")
            && context.contains("<path>src/greet/**</path>"),
        "{context}"
    );
    assert!(openai_tool_result(&server, 3, "c3").starts_with("Wrote src/greet/mod.rs"));
    let violation: Value =
        serde_json::from_str(&openai_tool_result(&server, 4, "c4")).expect("json error");
    assert_eq!(
        violation,
        json!({"error": {"code": "SCOPE_VIOLATION", "message": "Scope Violation: INT-001 is not authorized to edit src/db.rs (its owned scope: src/greet/**). Request scope expansion with request_scope_expansion (intent_id, globs, reason); the user decides.", "intent_id": "INT-001", "path": "src/db.rs", "owned_scope": ["src/greet/**"]}})
    );
    let ls = openai_tool_result(&server, 5, "c5");
    assert!(
        ls.contains("exited with code 0") && ls.contains("greet"),
        "{ls}"
    );

    // What the client sent: the key as a bearer token, the tool catalog, streaming with usage.
    let first = &server.requests()[0];
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(
        first.header("authorization"),
        Some("Bearer sk-test-secret-4242")
    );
    let body = first.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(22));
    let system = body["messages"][0]["content"]
        .as_str()
        .expect("system prompt");
    assert!(system
        .contains("You cannot write code or run commands before you call select_active_intent"));

    // The key is never printed.
    assert!(
        !out.stdout.contains("sk-test-secret-4242") && !out.stderr.contains("sk-test-secret-4242")
    );

    // One ledger record for the accepted write, valid Agent Trace, tied to the intent.
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1, "{records:#?}");
    let r = &records[0];
    assert_valid(r);
    assert_eq!(r["files"][0]["path"], "src/greet/mod.rs");
    let conv = &r["files"][0]["conversations"][0];
    assert_eq!(
        conv["contributor"],
        json!({"type": "ai", "model_id": "openai/test-model"})
    );
    assert_eq!(
        conv["ranges"],
        json!([{"start_line": 2, "end_line": 2, "content_hash": format!("sha256:{}", sha256("    \"hello\""))}])
    );
    assert_eq!(conv["related"][0]["url"], "mandate://intent/INT-001");
    let vendor = &r["metadata"]["dev.mandate"];
    assert_eq!(vendor["approval"]["by"], "headless");
    assert_eq!(vendor["mutation_class"]["declared"], "INTENT_EVOLUTION");

    // The intent moved to IN_PROGRESS on the first change, then DONE with its criterion reported.
    let intents = std::fs::read_to_string(ws.path().join(".orchestration/active_intents.yaml"))
        .expect("read");
    assert!(intents.contains("status: DONE"), "{intents}");
    let map = std::fs::read_to_string(ws.path().join(".orchestration/intent_map.md"))
        .expect("intent map");
    assert!(map.contains("`src/greet/mod.rs`: lines 2"), "{map}");

    // --json printed the host events, the same the UI receives.
    assert!(!out.events_of("tool_call_finished").is_empty());
    assert!(
        out.events_of("approval_requested").len() == 1,
        "only the in-scope write asked"
    );
    let task_id = out.task_id().expect("task id");
    let record = task_record(&dirs, &task_id);
    assert_eq!(record["summary"]["status"], "completed");
    assert_eq!(record["summary"]["usage"]["input_tokens"], 600);
    assert_eq!(record["governance"]["selected_intent"], "INT-001");
}

fn sha256(text: &str) -> String {
    mandate_core::fsutil::sha256_hex(text.as_bytes())
}

#[tokio::test]
async fn a_full_governed_task_over_anthropic() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        anthropic::turn().text("I will select the intent.").ping().tool_use("t1", "select_active_intent", json!({"intent_id": "INT-001"})).usage(50, 5).reply(),
        anthropic::turn().tool_use("t2", "read_file", json!({"path": "src/greet/mod.rs"})).reply(),
        anthropic::turn().tool_use("t3", "apply_diff", json!({"path": "src/greet/mod.rs", "diff": "<<<<<<< SEARCH\n    \"hi\"\n=======\n    \"hello\"\n>>>>>>> REPLACE", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        anthropic::turn().tool_use("t4", "attempt_completion", json!({"result": "greet() says hello"})).usage(80, 9).reply(),
    ])
    .await;
    let ws_arg = ws.path().display().to_string();
    let out = mandate(
        &[
            "run",
            "--workspace",
            &ws_arg,
            "--provider",
            "anthropic",
            "--base-url",
            &server.base_url(),
            "--model",
            "claude-test",
            "--approve",
            "allow",
            "--json",
            "Make greet say hello",
        ],
        &dirs,
        &[("MANDATE_API_KEY", "sk-ant-test")],
    )
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/greet/mod.rs")).expect("read"),
        GREET_NEW
    );
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    let body = requests[3].json();
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    // The apply_diff result went back as a tool_result block in the next user message.
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("messages");
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "t3");
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1);
    assert_valid(&records[0]);
    assert_eq!(
        records[0]["files"][0]["conversations"][0]["contributor"]["model_id"],
        "anthropic/claude-test"
    );
    assert_eq!(records[0]["metadata"]["dev.mandate"]["tool"], "apply_diff");
}

#[tokio::test]
async fn a_write_before_any_intent_is_refused_and_the_model_recovers() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("w1", "write_to_file", json!({"path": "src/greet/new.rs", "content": "x\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("s1", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("w2", "write_to_file", json!({"path": "src/greet/new.rs", "content": "x\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("done", "attempt_completion", json!({"result": "created new.rs"})).reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "create new.rs",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let denied: Value = serde_json::from_str(&openai_tool_result(&server, 1, "w1")).expect("json");
    assert_eq!(denied["error"]["code"], "NO_ACTIVE_INTENT");
    assert!(denied["error"]["message"]
        .as_str()
        .unwrap_or("")
        .starts_with("You must cite a valid active Intent ID."));
    assert!(openai_tool_result(&server, 3, "w2").starts_with("Wrote src/greet/new.rs"));
    assert_eq!(ledger(ws.path()).len(), 1);
}

#[tokio::test]
async fn a_stale_write_after_the_file_changed_underneath_is_refused() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let server = std::sync::Arc::new(ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("r", "read_file", json!({"path": "src/greet/mod.rs"})).reply(),
        // The write arrives slowly; meanwhile the user edits the file.
        openai::turn().delay_ms(400).tool_call("w", "write_to_file", json!({"path": "src/greet/mod.rs", "content": GREET_NEW, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("r2", "read_file", json!({"path": "src/greet/mod.rs"})).reply(),
        openai::turn().tool_call("done", "attempt_completion", json!({"result": "stopped: the user is editing"})).reply(),
    ])
    .await);
    let path = ws.path().join("src/greet/mod.rs");
    let edit = {
        let path = path.clone();
        let server_requests = server.clone();
        tokio::spawn(async move {
            server_requests
                .wait_for_requests(3, std::time::Duration::from_secs(30))
                .await
                .expect("third request");
            std::fs::write(&path, "pub fn greet() -> &'static str { \"user edit\" }\n")
                .expect("user edit");
        })
    };
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "say hello",
        &dirs,
    )
    .await;
    edit.await.expect("edit task");
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let stale: Value = serde_json::from_str(&openai_tool_result(&server, 3, "w")).expect("json");
    assert_eq!(stale["error"]["code"], "STALE_FILE", "{stale}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "pub fn greet() -> &'static str { \"user edit\" }\n",
        "the user's edit survives"
    );
    assert!(ledger(ws.path()).is_empty());
}

#[tokio::test]
async fn approve_deny_rejects_writes_and_destructive_commands() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("w", "write_to_file", json!({"path": "src/greet/new.rs", "content": "x\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("c", "execute_command", json!({"command": "rm -rf src"})).reply(),
        openai::turn().tool_call("done", "attempt_completion", json!({"result": "nothing was allowed"})).reply(),
    ])
    .await;
    let out = run_openai(ws.path(), &server.base_url(), &[], "try things", &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    for (n, id) in [(2, "w"), (3, "c")] {
        let r: Value = serde_json::from_str(&openai_tool_result(&server, n, id)).expect("json");
        assert_eq!(r["error"]["code"], "REJECTED_BY_USER", "{r}");
        assert!(r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("--approve deny"));
    }
    assert!(!ws.path().join("src/greet/new.rs").exists());
    assert!(ws.path().join("src/db.rs").exists(), "rm -rf did not run");
    assert_eq!(out.events_of("approval_requested").len(), 2);
}

#[tokio::test]
async fn repeated_identical_calls_end_the_task_when_approvals_are_denied() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let same = || {
        openai::turn()
            .tool_call("x", "read_file", json!({"path": "src/nope.rs"}))
            .reply()
    };
    let server = ScriptedServer::start(vec![same(), same(), same(), same()]).await;
    let out = run_openai(ws.path(), &server.base_url(), &[], "loop", &dirs).await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        server.requests().len(),
        3,
        "stopped after the third identical call"
    );
    let asked = out.events_of("approval_requested");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["request"]["detail"]["kind"], "continue");
}

#[tokio::test]
async fn max_turns_and_bad_usage_have_their_exit_codes() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("a", "list_files", json!({"path": "."}))
            .reply(),
        openai::turn()
            .tool_call("b", "list_files", json!({"path": "src"}))
            .reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--max-turns", "2"],
        "explore",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.contains("limit of 2 turns"), "{}", out.stdout);

    let ws_arg = ws.path().display().to_string();
    for args in [
        vec![
            "run",
            "--workspace",
            &ws_arg,
            "--provider",
            "openai",
            "--model",
            "m",
            "x",
        ],
        vec![
            "run",
            "--workspace",
            &ws_arg,
            "--provider",
            "gemini",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "x",
        ],
        vec![
            "run",
            "--workspace",
            &ws_arg,
            "--provider",
            "openai",
            "--base-url",
            "file:///etc",
            "--model",
            "m",
            "x",
        ],
        vec![
            "run",
            "--workspace",
            &ws_arg,
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
        ],
        vec![
            "run",
            "--workspace",
            "/definitely/not/here",
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "x",
        ],
    ] {
        let out = mandate(&args, &dirs, &[]).await;
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.is_empty());
    }
}

#[tokio::test]
async fn commands_that_change_files_outside_the_scope_are_reported_and_failures_become_lessons() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .tool_call(
                "c1",
                "execute_command",
                json!({"command": "echo hacked > src/db.rs; echo ok > src/greet/gen.txt"}),
            )
            .reply(),
        openai::turn()
            .tool_call(
                "c2",
                "execute_command",
                json!({"command": "ls no-such-dir", "cwd": "src"}),
            )
            .reply(),
        openai::turn()
            .tool_call(
                "l",
                "record_lesson",
                json!({"lesson": "Run the greeting tests with `cargo test -p greet`."}),
            )
            .reply(),
        openai::turn()
            .tool_call(
                "c3",
                "execute_command",
                json!({"command": "cat ../../etc/passwd", "cwd": "../.."}),
            )
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "generate",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);

    // The kernel refused the write outside the scope; the one inside is recorded with its lines.
    let c1 = openai_tool_result(&server, 2, "c1");
    assert!(
        c1.contains(
            "Files it changed (recorded in the trace ledger under INT-001): src/greet/gen.txt"
        ),
        "{c1}"
    );
    assert!(
        c1.contains("src/db.rs: Read-only file system")
            || c1.contains("src/db.rs: Permission denied"),
        "{c1}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/db.rs")).expect("read"),
        "pub fn db() {}\n"
    );
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1, "one record for the command's changes");
    assert_valid(&records[0]);
    let vendor = &records[0]["metadata"]["dev.mandate"];
    assert_eq!(
        vendor["command"]["changed_in_scope"],
        json!(["src/greet/gen.txt"])
    );
    assert_eq!(vendor["command"]["changed_out_of_scope"], json!([]));
    assert_eq!(records[0]["files"][0]["path"], "src/greet/gen.txt");
    assert_eq!(
        records[0]["files"][0]["conversations"][0]["ranges"][0]["start_line"],
        1
    );
    assert!(vendor["images"]["src/greet/gen.txt"]["after"]
        .as_str()
        .is_some_and(|h| h.starts_with("sha256:")));
    assert_eq!(vendor["images"]["src/greet/gen.txt"]["before"], json!(null));

    // A failed command and a recorded lesson end up in AGENT.md; a cwd outside is refused.
    let c2 = openai_tool_result(&server, 3, "c2");
    assert!(c2.contains("exited with code 2"), "{c2}");
    let lessons =
        std::fs::read_to_string(ws.path().join(".orchestration/AGENT.md")).expect("lessons");
    assert!(
        lessons.contains("`ls no-such-dir` (in `src`, intent INT-001) exited with status 2"),
        "{lessons}"
    );
    assert!(lessons.contains("cargo test -p greet"), "{lessons}");
    let c3 = openai_tool_result(&server, 5, "c3");
    assert!(c3.contains("outside the workspace"), "{c3}");
    // The next prompt carries the lessons.
    let system = server.requests().last().cloned().expect("req").json()["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(system.contains("SHARED LESSONS") && system.contains("cargo test -p greet"));
}

#[tokio::test]
async fn two_tasks_run_at_once_in_one_workspace_under_their_own_intents() {
    const TWO: &str = "active_intents:\n  - id: INT-A\n    name: A\n    owned_scope: [\"a/**\"]\n  - id: INT-B\n    name: B\n    owned_scope: [\"b/**\"]\n";
    let ws = workspace(Some(TWO), &[]);
    let dirs = UserDirs::new();
    let script = |intent: &str, dir: &str| {
        let mut replies = vec![openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": intent}))
            .reply()];
        for n in 0..5 {
            replies.push(
                openai::turn()
                    .delay_ms(10)
                    .tool_call(&format!("w{n}"), "write_to_file", json!({"path": format!("{dir}/f{n}.txt"), "content": format!("{n}\n"), "intent_id": intent, "mutation_class": "INTENT_EVOLUTION"}))
                    .reply(),
            );
        }
        replies.push(
            openai::turn()
                .tool_call("d", "attempt_completion", json!({"result": "done"}))
                .reply(),
        );
        replies
    };
    let (server_a, server_b) = (
        ScriptedServer::start(script("INT-A", "a")).await,
        ScriptedServer::start(script("INT-B", "b")).await,
    );
    let (base_a, base_b) = (server_a.base_url(), server_b.base_url());
    let (out_a, out_b) = tokio::join!(
        run_openai(
            ws.path(),
            &base_a,
            &["--approve", "allow"],
            "write a",
            &dirs
        ),
        run_openai(
            ws.path(),
            &base_b,
            &["--approve", "allow"],
            "write b",
            &dirs
        ),
    );
    assert_eq!(out_a.code, Some(0), "{}\n{}", out_a.stdout, out_a.stderr);
    assert_eq!(out_b.code, Some(0), "{}\n{}", out_b.stdout, out_b.stderr);
    let records = ledger(ws.path());
    assert_eq!(records.len(), 10);
    for r in &records {
        assert_valid(r);
        let path = r["files"][0]["path"].as_str().unwrap_or("");
        let intent = r["metadata"]["dev.mandate"]["intent_id"]
            .as_str()
            .unwrap_or("");
        assert_eq!(
            &path[..1],
            if intent == "INT-A" { "a" } else { "b" },
            "each write under its own task's intent"
        );
    }
    let verify = mandate(
        &[
            "trace",
            "verify",
            "--workspace",
            &ws.path().display().to_string(),
            "--json",
        ],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(verify.code, Some(0), "{}", verify.stdout);
}

#[tokio::test]
async fn a_broken_intents_file_is_said_out_loud_not_taken_for_no_intents() {
    // Line 4 is indented under a scalar: the file does not parse.
    let broken = "active_intents:\n  - id: INT-001\n    name: Greeting module\n      owned_scope: [\"src/greet/**\"]\n";
    let ws = workspace(Some(broken), &files());
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s1", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("w1", "write_to_file", json!({"path": "src/greet/mod.rs", "content": GREET_NEW, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("done", "attempt_completion", json!({"result": "Asked the user to fix the intents file."})).reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "greet",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let selected = openai_tool_result(&server, 1, "s1");
    assert!(
        selected.contains("The intents file is broken") && selected.contains("fix line 4"),
        "{selected}"
    );
    assert!(!selected.contains("create one"), "{selected}");
    let write: Value = serde_json::from_str(&openai_tool_result(&server, 2, "w1")).expect("json");
    let message = write["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(write["error"]["code"], "NO_ACTIVE_INTENT");
    assert!(
        message.contains("broken") && message.contains("line 4"),
        "{message}"
    );
    // The person is told at the start of the run, with the file and the line.
    let notices = out.events_of("notice");
    assert!(
        notices.iter().any(|n| {
            let m = n["message"].as_str().unwrap_or_default();
            n["level"] == "error"
                && m.contains(".orchestration/active_intents.yaml")
                && m.contains("line 4")
        }),
        "{notices:?}"
    );
    // The model's system prompt says so too.
    let system = server.requests()[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(system.contains("The intents file is broken"), "{system}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/greet/mod.rs")).expect("read"),
        GREET
    );
    assert!(ledger(ws.path()).is_empty());
}

#[tokio::test]
async fn a_task_pauses_at_its_budget_and_the_runner_exits_1_saying_so() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .usage(150, 20)
            .reply(),
        openai::turn()
            .tool_call("r", "read_file", json!({"path": "src/greet/mod.rs"}))
            .usage(200, 20)
            .reply(),
        openai::turn()
            .tool_call(
                "done",
                "attempt_completion",
                json!({"result": "never reached"}),
            )
            .reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow", "--max-tokens", "300"],
        "greet",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    let errors = |out: &mandate_tests::cli::Output| -> String {
        out.events_of("message_added")
            .iter()
            .filter(|e| e["message"]["kind"] == "error")
            .map(|e| {
                e["message"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    assert!(
        errors(&out)
            .contains("The task reached its budget (390 tokens used of a 300-token budget)"),
        "{}",
        out.stdout
    );
    assert_eq!(server.requests().len(), 2, "no request past the budget");
    let task = task_record(&dirs, &out.task_id().expect("task"));
    assert_eq!(task["summary"]["status"], "paused");

    // An intent's own budget counts every task that held it.
    let with_budget = format!("{INTENTS}    budget: {{max_tokens: 100}}\n");
    let ws = workspace(Some(&with_budget), &files());
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .usage(150, 20)
            .reply(),
        openai::turn()
            .tool_call(
                "done",
                "attempt_completion",
                json!({"result": "never reached"}),
            )
            .reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "greet",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        errors(&out).contains("Intent INT-001 reached its budget"),
        "{}",
        out.stdout
    );
    let bad = run_openai(
        ws.path(),
        &server.base_url(),
        &["--max-cost", "-1"],
        "greet",
        &dirs,
    )
    .await;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
}

/// Every way a key could leave: what a command prints (raw, encoded, the app's own environment),
/// a command line that carries it, a failed command's lesson. None of it reaches the model, the
/// task history, the lessons, the ledger, the notices or the log.
#[tokio::test]
async fn a_key_never_leaves_through_any_path() {
    const KEY: &str = "sk-live-7f3a9c2e41d8b6a0";
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let leak = format!(
        "cat /proc/$PPID/environ | tr '\\\\0' '\\\\n'; env; printenv TEST_KEY MANDATE_API_KEY; echo {KEY} | base64; echo {KEY}; exit 3"
    );
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .tool_call("c1", "execute_command", json!({"command": leak}))
            .reply(),
        openai::turn()
            .tool_call(
                "l",
                "record_lesson",
                json!({"lesson": format!("the key is {KEY}")}),
            )
            .reply(),
        openai::turn()
            .tool_call("done", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ])
    .await;
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &["--api-key-env", "TEST_KEY", "--approve", "allow"],
        "go",
        &dirs,
        &[("TEST_KEY", KEY), ("MANDATE_API_KEY", KEY)],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let encoded = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{KEY}\n"),
    );
    let c1 = openai_tool_result(&server, 2, "c1");
    assert!(c1.contains("[REDACTED]"), "the command did print it: {c1}");
    let everything = |what: &str, text: &str| {
        assert!(!text.contains(KEY), "the key is in {what}");
        assert!(
            !text.contains(encoded.trim()),
            "the key (base64) is in {what}"
        );
    };
    // Sent to the model: every request after the first carries the tool results.
    for (n, request) in server.requests().iter().enumerate() {
        let body = request.body.clone();
        everything(&format!("request {n} to the model"), &body);
    }
    everything("the events (notices, tool cards)", &out.stdout);
    let history: String = walk_text(&dirs.data().join("tasks"));
    everything("the task history", &history);
    everything("the logs", &walk_text(&dirs.data().join("logs")));
    let orchestration = walk_text(&ws.path().join(".orchestration"));
    everything("the lessons and the ledger", &orchestration);
    assert!(
        orchestration.contains("exited with status 3"),
        "the failed command's lesson was kept"
    );
}

fn walk_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.push_str(&walk_text(&p));
            } else if let Ok(bytes) = std::fs::read(&p) {
                out.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    out
}

#[tokio::test]
async fn a_damaged_ledger_is_said_at_the_start_and_no_change_is_buried_after_it() {
    let ws = workspace(Some(INTENTS), &files());
    let dirs = UserDirs::new();
    let ledger_path = ws.path().join(".orchestration/agent_trace.jsonl");
    let damaged = "{\"this is\": \"not a trace record\"}\n\u{0}\u{1}binary\n";
    std::fs::write(&ledger_path, damaged).expect("damage the ledger");
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("w", "write_to_file", json!({"path": "src/greet/new.rs", "content": "x\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("done", "attempt_completion", json!({"result": "the ledger refused"})).reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "add a file",
        &dirs,
    )
    .await;
    // Said at the start, with the file and the line.
    assert!(
        out.stdout
            .contains("agent_trace.jsonl is damaged at line 1")
            || out
                .stderr
                .contains("agent_trace.jsonl is damaged at line 1"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    // The write is refused with the reason, the model is told, and nothing follows the damage.
    let refused = openai_tool_result(&server, 2, "w");
    assert!(refused.contains("ledger"), "{refused}");
    assert!(!ws.path().join("src/greet/new.rs").exists());
    assert_eq!(
        std::fs::read_to_string(&ledger_path).expect("ledger"),
        damaged
    );
}

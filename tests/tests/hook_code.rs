//! A hook's own code is the person's: a PreToolUse hook (`.claude/hooks/check.py`) imports its
//! rules from `scripts/`, and an agent whose intent owns `scripts/**` can neither rewrite
//! them nor plant a module that shadows them — by its file tools or by a command — so the
//! hook keeps refusing what it refused.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{run_openai, Output};
use mandate_tests::llm_server::{Reply, ScriptedServer};
use mandate_tests::sse::openai;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-TOOLS
    name: Scripts and sources
    status: IN_PROGRESS
    owned_scope: ["scripts/**", "src/**"]
"#;

const SETTINGS: &str = r#"{"hooks": {"PreToolUse": [{"matcher": "Write|Edit|Bash",
  "hooks": [{"type": "command", "name": "check",
             "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.py"}]}]}}"#;

const CHECK: &str = r#"import json, os, sys
sys.path.insert(0, os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "scripts"))
import policy
event = json.load(sys.stdin)
reason = policy.refusal(event.get("tool_input", {}))
if reason:
    print(reason, file=sys.stderr)
    sys.exit(2)
"#;

const POLICY: &str = r#"import json
def refusal(tool_input):
    if "SECRET" in json.dumps(tool_input):
        return "nothing marked SECRET goes into this repository"
    return None
"#;

const LAX: &str = "def refusal(tool_input):\n    return None\n";

fn call(id: &str, tool: &str, args: Value) -> Reply {
    openai::turn().tool_call(id, tool, args).reply()
}

fn write(path: &str, content: &str) -> Value {
    json!({"path": path, "content": content, "intent_id": "INT-TOOLS", "mutation_class": "INTENT_EVOLUTION"})
}

fn error_of(server: &ScriptedServer, id: &str) -> Value {
    let text = server
        .tool_result(id)
        .unwrap_or_else(|| panic!("no result for {id}"));
    serde_json::from_str::<Value>(&text).map_or(Value::Null, |v| v["error"].clone())
}

fn said(out: &Output) -> String {
    format!("{}\n{}", out.stdout, out.stderr)
}

#[tokio::test]
async fn an_agent_that_owns_scripts_cannot_rewrite_or_shadow_the_module_a_hook_imports() {
    let ws = workspace(
        Some(INTENTS),
        &[
            (".claude/settings.json", SETTINGS),
            (".claude/hooks/check.py", CHECK),
            ("scripts/policy.py", POLICY),
            ("scripts/build.sh", "echo build\n"),
            ("src/app.py", "print('app')\n"),
        ],
    );
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        call(
            "s",
            "select_active_intent",
            json!({"intent_id": "INT-TOOLS"}),
        ),
        call("r0", "read_file", json!({"path": "src/app.py"})),
        call("r1", "read_file", json!({"path": "scripts/build.sh"})),
        // The hook refuses this...
        call(
            "w1",
            "write_to_file",
            write("src/app.py", "KEY = 'SECRET'\n"),
        ),
        // ...so the agent goes for the hook's rules, its shadow, and by commands.
        call("r", "read_file", json!({"path": "scripts/policy.py"})),
        call("w2", "write_to_file", write("scripts/policy.py", LAX)),
        call(
            "w3",
            "write_to_file",
            write("scripts/json.py", "dumps = str\n"),
        ),
        call(
            "c1",
            "execute_command",
            json!({"command": format!("printf '%s' '{LAX}' > scripts/policy.py")}),
        ),
        call(
            "c2",
            "execute_command",
            json!({"command": "python3 -c \"open('scripts/json.py', 'w').write('dumps = str')\""}),
        ),
        // Still refused; and what the intent owns that the hook does not load stays writable.
        call(
            "w4",
            "write_to_file",
            write("src/app.py", "KEY = 'SECRET'\n"),
        ),
        call(
            "w5",
            "write_to_file",
            write("scripts/build.sh", "echo built\n"),
        ),
        call("end", "attempt_completion", json!({"result": "done"})),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow", "--trust-hooks"],
        "work",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", said(&out));

    for id in ["w1", "w4"] {
        assert_eq!(error_of(&server, id)["code"], "HOOK_DENIED", "{id}");
    }
    for id in ["w2", "w3"] {
        let error = error_of(&server, id);
        assert_eq!(error["code"], "PROTECTED_PATH", "{id}: {error}");
        let message = error["message"].as_str().unwrap_or("");
        assert!(message.contains("hook `check`"), "{id}: {message}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("scripts/policy.py")).expect("read"),
        POLICY,
        "the hook's module was rewritten"
    );
    assert!(
        !ws.path().join("scripts/json.py").exists(),
        "a module shadowing the standard library's was planted beside the hook's"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/app.py")).expect("read"),
        "print('app')\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("scripts/build.sh")).expect("read"),
        "echo built\n"
    );
}

#[tokio::test]
async fn when_the_person_changes_the_hook_s_module_the_hook_waits_to_be_confirmed_again() {
    let ws = workspace(
        Some(INTENTS),
        &[
            (".claude/settings.json", SETTINGS),
            (".claude/hooks/check.py", CHECK),
            ("scripts/policy.py", POLICY),
        ],
    );
    let dirs = UserDirs::new();
    let script = || {
        vec![
            call(
                "s",
                "select_active_intent",
                json!({"intent_id": "INT-TOOLS"}),
            ),
            call(
                "w",
                "write_to_file",
                write("src/new.py", "KEY = 'SECRET'\n"),
            ),
            call("end", "attempt_completion", json!({"result": "done"})),
        ]
    };
    let server = ScriptedServer::start(script()).await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow", "--trust-hooks"],
        "work",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", said(&out));
    assert_eq!(error_of(&server, "w")["code"], "HOOK_DENIED");

    // Changed outside Mandate: confirmed hooks no longer cover it, so nothing changes until
    // the person confirms what runs now.
    std::fs::write(ws.path().join("scripts/policy.py"), LAX).expect("write");
    let server = ScriptedServer::start(script()).await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "work",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", said(&out));
    let refused = error_of(&server, "w");
    assert_eq!(refused["code"], "HOOK_FAILURE", "{refused}");
    assert!(!ws.path().join("src/new.py").exists());
}

//! The person's `Notification` hook (Claude Code's event) through `mandate run`: headless,
//! nobody waits, so it runs where the run goes on or stops without the person (a question
//! nobody answers, a task paused at its budget) and not for approvals `--approve` decides; it
//! reads the contract's JSON, cannot change anything, and runs only once confirmed.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{run_openai, Output};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Colours
    status: IN_PROGRESS
    owned_scope: ["src/**"]
"#;

/// Prints its input back as a `systemMessage`, and tries to block (which it cannot).
const ECHO: &str = r#"import json, sys
event = sys.stdin.read()
print(json.dumps({"systemMessage": event, "decision": "block", "reason": "stop everything"}))
"#;

const HOOKS: &str = r#"{"hooks": {"Notification": [{"hooks": [
    {"type": "command", "command": "python3 .mandate/echo.py", "name": "echo"}]}]}}"#;

fn script() -> Vec<mandate_tests::llm_server::Reply> {
    vec![
        openai::turn()
            .tool_call(
                "s",
                "select_active_intent",
                json!({"intent_id": "INT-001"}),
            )
            .reply(),
        openai::turn()
            .tool_call(
                "w",
                "write_to_file",
                json!({"path": "src/shed.txt", "content": "blue\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"}),
            )
            .reply(),
        openai::turn()
            .tool_call(
                "q",
                "ask_followup_question",
                json!({"question": "Blue or red?"}),
            )
            .usage(500, 20)
            .reply(),
        openai::turn()
            .tool_call("done", "attempt_completion", json!({"result": "never reached"}))
            .reply(),
    ]
}

/// The inputs the hook printed back.
fn hook_inputs(out: &Output) -> Vec<Value> {
    out.events_of("notice")
        .iter()
        .filter_map(|e| e["message"].as_str()?.strip_prefix("Your hook `echo`: "))
        .filter_map(|m| serde_json::from_str(m).ok())
        .collect()
}

#[tokio::test]
async fn headless_the_notification_hook_hears_an_unanswered_question_and_a_pause_once_confirmed() {
    let ws = workspace(
        Some(INTENTS),
        &[(".mandate/hooks.json", HOOKS), (".mandate/echo.py", ECHO)],
    );
    let dirs = UserDirs::new();
    let args = ["--approve", "allow", "--max-tokens", "400"];

    // Not confirmed: it does not run, and nothing waits for it.
    let server = ScriptedServer::start(script()).await;
    let out = run_openai(ws.path(), &server.base_url(), &args, "paint", &dirs).await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(hook_inputs(&out), Vec::<Value>::new(), "{}", out.stdout);
    let paused = out.events_of("task_updated");
    assert!(
        paused.iter().any(|e| e["task"]["status"] == "paused"),
        "{}",
        out.stdout
    );

    // Confirmed: once for the question nobody answered, once for the pause; the write the
    // flag approved is not announced, and its `block` changes nothing.
    let server = ScriptedServer::start(script()).await;
    let trusted = [&args[..], &["--trust-hooks"]].concat();
    let out = run_openai(ws.path(), &server.base_url(), &trusted, "paint", &dirs).await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(ws.path().join("src/shed.txt").is_file());
    let asked = out
        .events_of("tool_call_finished")
        .into_iter()
        .find(|e| e["call"]["call_id"] == "q")
        .expect("the question's card");
    assert!(
        asked.to_string().contains("no one to answer"),
        "the question went on unanswered: {asked}"
    );
    let task = out.task_id().expect("task");
    let root = ws.path().canonicalize().expect("root");
    let input = |message: &str, kind: &str, waiting: &str| {
        json!({
            "session_id": task,
            "transcript_path": null,
            "cwd": root,
            "permission_mode": "default",
            "hook_event_name": "Notification",
            "mandate_intent_id": "INT-001",
            "message": message,
            "notification_type": kind,
            "mandate_waiting": waiting,
            "mandate_task_title": "paint",
        })
    };
    assert_eq!(
        hook_inputs(&out),
        vec![
            input("Mandate asks: Blue or red?", "elicitation_dialog", "question"),
            input(
                "Mandate paused the task: The task reached its budget (520 tokens used of a 400-token budget). Raise the budget in Settings (or with --max-cost / --max-tokens), then retry to go on.",
                "idle_prompt",
                "paused"
            ),
        ],
        "{}",
        out.stdout
    );
}

//! `mandate run --mode orchestrator` end to end over the OpenAI wire format: the orchestrator
//! hands work to a child task under a narrower intent; the child stays inside it, its result
//! answers the parent's call, and the ledger names both tasks.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{mandate, run_openai_with_env};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Sources
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-002
    name: The parser
    status: IN_PROGRESS
    owned_scope: ["src/parser/**"]
"#;

fn tools_sent(server: &ScriptedServer, n: usize) -> Vec<String> {
    server.requests()[n].json()["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

fn write(id: &str, path: &str) -> serde_json::Value {
    json!({"path": path, "content": "pub fn parse() {}\n", "intent_id": id, "mutation_class": "INTENT_EVOLUTION"})
}

#[tokio::test]
async fn an_orchestrator_splits_its_work_into_a_child_that_stays_inside_its_narrower_intent() {
    let ws = workspace(Some(INTENTS), &[("src/lib.rs", "pub mod parser;\n")]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        // The parent (orchestrator).
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("n", "new_task", json!({"mode": "code", "message": "Write the parser in src/parser/mod.rs.", "intent_id": "INT-002", "todos": "[-] write the parser\n[ ] report"})).reply(),
        // The child (code), under INT-002.
        openai::turn().tool_call("cw1", "write_to_file", write("INT-002", "src/parser/mod.rs")).reply(),
        openai::turn().tool_call("cw2", "write_to_file", write("INT-002", "src/lib.rs")).reply(),
        openai::turn().tool_call("cd", "attempt_completion", json!({"result": "The parser is in src/parser/mod.rs."})).reply(),
        // The parent again.
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "Split and done."})).reply(),
    ])
    .await;
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &[
            "--approve",
            "allow",
            "--api-key-env",
            "TEST_KEY",
            "--mode",
            "orchestrator",
        ],
        "Add a parser",
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(server.requests().len(), 6);

    // The orchestrator was offered no edit tool; its child, in code mode, was.
    assert!(!tools_sent(&server, 0).contains(&"write_to_file".to_string()));
    assert!(tools_sent(&server, 0).contains(&"new_task".to_string()));
    assert!(tools_sent(&server, 2).contains(&"write_to_file".to_string()));
    // The child's conversation is its own: it starts with the parent's message to it.
    let child_first = server.requests()[2].json()["messages"][1]["content"].to_string();
    assert!(
        child_first.contains("Write the parser in src/parser/mod.rs."),
        "{child_first}"
    );
    assert!(child_first.contains("You are a subtask"), "{child_first}");
    let child_messages = server.requests()[2].json()["messages"]
        .as_array()
        .expect("messages")
        .len();
    assert_eq!(
        child_messages, 2,
        "the child saw more than its system prompt and its message"
    );

    // The child stayed inside INT-002.
    let refused = server.tool_result_in(4, "cw2").expect("cw2");
    assert!(refused.contains("SCOPE_VIOLATION"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/lib.rs")).expect("read"),
        "pub mod parser;\n"
    );
    assert!(ws.path().join("src/parser/mod.rs").exists());

    // Its result answered the parent's call.
    let answer = server.tool_result_in(5, "n").expect("n");
    assert!(
        answer.contains("The parser is in src/parser/mod.rs."),
        "{answer}"
    );

    // The events show the subtask starting and how it ended, in the parent's transcript.
    let cards: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["message"]["kind"] == "subtask")
        .collect();
    assert_eq!(cards.len(), 2, "{}", out.stdout);
    assert_eq!(cards[0]["message"]["status"], "running");
    assert_eq!(cards[1]["message"]["status"], "completed");
    assert!(cards[1]["message"]["result_safe_html"]
        .as_str()
        .is_some_and(|r| r.contains("The parser is in")));
    let child_id = cards[0]["message"]["task_id"].clone();
    assert_ne!(cards[0]["task_id"], child_id, "the card is the parent's");

    // The ledger ties the child's change to the child and to its parent.
    let ledger = std::fs::read_to_string(ws.path().join(".orchestration/agent_trace.jsonl"))
        .expect("ledger");
    let records: Vec<serde_json::Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    assert_eq!(records.len(), 1, "{ledger}");
    let block = &records[0]["metadata"]["dev.mandate"];
    assert_eq!(block["intent_id"], json!("INT-002"));
    assert_eq!(block["task_id"], child_id);
    assert_eq!(block["parent_task_id"], cards[0]["task_id"]);

    // Undoing the parent takes its child's change back too.
    let parent = cards[0]["task_id"].as_str().expect("parent id").to_string();
    let workspace = ws.path().display().to_string();
    let undo = mandate(
        &[
            "undo",
            "--workspace",
            &workspace,
            "--json",
            "--task",
            &parent,
        ],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(undo.code, Some(0), "{}\n{}", undo.stdout, undo.stderr);
    assert!(
        !ws.path().join("src/parser/mod.rs").exists(),
        "{}",
        undo.stdout
    );
}

#[tokio::test]
async fn a_child_that_selects_a_wider_intent_still_cannot_change_files_outside_its_parents_by_command(
) {
    let intents = format!(
        "{INTENTS}  - id: INT-003\n    name: Everything\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n"
    );
    let ws = workspace(
        Some(&intents),
        &[
            ("src/lib.rs", "pub mod parser;\n"),
            ("docs/keep.md", "kept\n"),
        ],
    );
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("n", "new_task", json!({"mode": "code", "message": "Generate the parser."})).reply(),
        // The child reaches for the intent that owns everything, then writes by command.
        openai::turn().tool_call("cs", "select_active_intent", json!({"intent_id": "INT-003"})).reply(),
        openai::turn().tool_call("cc", "execute_command", json!({"command": "mkdir -p src/parser; echo ok > src/parser/gen.rs; echo hacked > docs/keep.md; echo new > docs/new.md"})).reply(),
        openai::turn().tool_call("cd", "attempt_completion", json!({"result": "Generated."})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "Done."})).reply(),
    ])
    .await;
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &[
            "--approve",
            "allow",
            "--api-key-env",
            "TEST_KEY",
            "--mode",
            "orchestrator",
        ],
        "Generate a parser",
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    // The kernel refused the writes outside INT-001 (where commands are not confined, they
    // would be found and put back: the workspace is a git repository for that case).
    let result = server.tool_result_in(4, "cc").expect("cc");
    assert!(
        result.contains("Read-only file system") || result.contains("SCOPE_VIOLATION"),
        "{result}"
    );
    // Inside the parent's intent: kept. Outside it: put back or removed.
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/parser/gen.rs")).expect("gen"),
        "ok\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("docs/keep.md")).expect("keep"),
        "kept\n"
    );
    assert!(!ws.path().join("docs/new.md").exists());
}

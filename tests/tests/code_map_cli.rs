//! The model does not start blind: a `mandate run` task's first message carries a map of the
//! code (files ranked, with their definitions), leaning toward what the prompt names; the model
//! can list a file's definitions; a syntax error it writes is said in the same result.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::run_openai_with_env;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Sources
    status: IN_PROGRESS
    owned_scope: ["src/**", "web/**"]
"#;

#[tokio::test]
async fn a_task_starts_with_a_map_of_the_code_and_hears_of_a_syntax_error_at_once() {
    let ws = workspace(
        Some(INTENTS),
        &[
            (
                "src/main.rs",
                "mod parser;\nfn main() { parser::parse(\"1\"); }\n",
            ),
            ("src/parser.rs", "pub fn parse(input: &str) -> u32 { 1 }\n"),
            ("src/other.rs", "pub fn unrelated() {}\n"),
            (
                "web/app.ts",
                "export interface Shape { area(): number }\nexport function draw(s: Shape) {}\n",
            ),
            ("tools/gen.py", "def generate():\n    pass\n"),
            ("README.md", "# Demo\n"),
            ("AGENTS.md", "Never draw a shape by hand.\n"),
        ],
    );
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("l", "list_code_definitions", json!({"path": "web/app.ts"})).reply(),
        openai::turn().tool_call("q", "codebase_search", json!({"query": "draw a shape"})).reply(),
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("w", "write_to_file", json!({"path": "src/strict.rs", "content": "pub fn parse(input: &str) -> u32 {\n    let n = ;\n    1\n}\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "Done."})).reply(),
    ])
    .await;
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow", "--api-key-env", "TEST_KEY"],
        "Make parse in src/parser.rs stricter",
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
    let first = server.requests()[0].json()["messages"][1]["content"].to_string();
    assert!(first.contains("<repo_map>"), "{first}");
    for expected in [
        "src/parser.rs:",
        "pub fn parse(input: &str) -> u32 { 1 }",
        "web/app.ts:",
        "export function draw(s: Shape) {}",
        "tools/gen.py:",
        "def generate():",
        "README.md",
    ] {
        assert!(first.contains(expected), "{expected} not in {first}");
    }
    // The file the prompt names comes first.
    let map_start = first.find("<repo_map>").expect("map");
    let parser_at = first[map_start..].find("src/parser.rs:").expect("parser");
    let other_at = first[map_start..].find("src/other.rs:").expect("other");
    assert!(parser_at < other_at, "{first}");

    let listed = server.tool_result_in(1, "l").expect("l");
    assert!(listed.contains("interface Shape"), "{listed}");
    let found = server.tool_result_in(2, "q").expect("q");
    assert!(found.starts_with("web/app.ts:2-2"), "{found}");
    assert!(
        found.contains("export function draw(s: Shape) {}"),
        "{found}"
    );
    assert!(
        !found.contains("AGENTS.md"),
        "the person's rules are not searched: {found}"
    );
    let written = server.tool_result_in(4, "w").expect("w");
    assert!(
        written.contains("Syntax errors in src/strict.rs as written"),
        "{written}"
    );
    assert!(written.contains("line 2, column"), "{written}");
}

#[tokio::test]
async fn a_prompts_mentions_attach_files_and_a_mention_of_an_ignored_file_is_refused() {
    let ws = workspace(
        Some(INTENTS),
        &[
            ("src/parser.rs", "pub fn parse(input: &str) -> u32 { 1 }\n"),
            (".gitignore", ".env\n"),
            (".env", "API_TOKEN=do-not-send\n"),
        ],
    );
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![openai::turn()
        .tool_call("d", "attempt_completion", json!({"result": "Read it."}))
        .reply()])
    .await;
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow", "--api-key-env", "TEST_KEY"],
        "Explain @src/parser.rs please",
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
    let first = server.requests()[0].json()["messages"][1]["content"].to_string();
    assert!(
        first.contains("<mention name=\\\"@src/parser.rs\\\">"),
        "{first}"
    );
    assert!(
        first.contains("pub fn parse(input: &str) -> u32 { 1 }"),
        "{first}"
    );

    let refused = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow", "--api-key-env", "TEST_KEY"],
        "Use the token in @.env",
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused.stdout.contains("@.env: .env is ignored"),
        "{}",
        refused.stdout
    );
    assert_eq!(
        server.requests().len(),
        1,
        "nothing was sent for the refused message"
    );
    assert!(server
        .requests()
        .iter()
        .all(|r| !r.body.contains("do-not-send")));
}

//! `@https://…` in the person's request: the host fetches the page as text when the message
//! goes and the model reads it with the message; an address that cannot be fetched stops the
//! message with the reason, before anything reaches the model.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::run_openai_with_env;
use mandate_tests::llm_server::{Reply, ScriptedServer};
use mandate_tests::sse::openai;
use serde_json::json;

#[tokio::test]
async fn a_mentioned_address_is_fetched_as_text_and_read_by_the_model() {
    let ws = workspace(None, &[]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![openai::turn()
        .tool_call(
            "d",
            "attempt_completion",
            json!({"result": "Three retries."}),
        )
        .reply()])
    .await;
    server.on_get(
        "/spec/retries.json",
        Reply::json(200, &json!({"retries": 3, "backoff": "exponential"})),
    );
    let address = format!("{}/spec/retries.json", server.base_url());
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &["--api-key-env", "TEST_KEY"],
        &format!("How many retries does @{address} ask for?"),
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    let fetched = requests
        .iter()
        .find(|r| r.method == "GET" && r.path == "/spec/retries.json")
        .expect("the page was fetched");
    // The provider's key never goes with the page.
    assert_eq!(fetched.header("authorization"), None);
    assert!(!fetched.headers.iter().any(|(_, v)| v.contains("sk-test")));
    let model = requests
        .iter()
        .find(|r| r.method == "POST")
        .expect("the model was asked");
    let first = model.json()["messages"][1]["content"].to_string();
    assert!(
        first.contains(&format!("<mention name=\\\"@{address}\\\">")),
        "{first}"
    );
    assert!(first.contains("exponential"), "{first}");

    // An address that answers 404 stops the message; the model is not asked.
    let asked = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &["--api-key-env", "TEST_KEY"],
        &format!("Read @{}/spec/missing.html please", server.base_url()),
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("answered 404") || out.stderr.contains("answered 404"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count(),
        asked
    );
}

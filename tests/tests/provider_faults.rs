//! Every provider fault ends in a readable message, exit code 1, and no half-message stored as
//! if complete; retries honour `retry-after`; a task killed mid-run resumes with its intent.

use std::sync::Arc;
use std::time::Duration;

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{ledger, mandate, run_openai, task_record, Output};
use mandate_tests::llm_server::{refused_base_url, Chunk, Reply, ScriptedServer};
use mandate_tests::sse::{anthropic, openai};
use serde_json::json;

const INTENTS: &str =
    "active_intents:\n  - id: INT-1\n    name: Notes\n    owned_scope: [\"notes/**\"]\n";

/// The task's stored state must not contain an assistant message marked complete, nor any
/// assistant turn in the API conversation.
fn assert_nothing_half_stored(dirs: &UserDirs, out: &Output) {
    let id = out.task_id().expect("task id");
    let record = task_record(dirs, &id);
    let conversation = record["conversation"].as_array().expect("conversation");
    assert!(
        conversation.iter().all(|m| m["role"] != "assistant"),
        "a failed answer entered the conversation: {conversation:#?}"
    );
    for m in record["messages"].as_array().expect("messages") {
        if m["kind"] == "assistant" {
            assert_eq!(
                m["complete"], false,
                "a cut-off answer stored as complete: {m}"
            );
        }
    }
    assert_eq!(record["summary"]["status"], "failed");
}

fn error_messages(out: &Output) -> Vec<String> {
    out.events_of("message_added")
        .into_iter()
        .filter(|e| e["message"]["kind"] == "error")
        .map(|e| {
            e["message"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

async fn fails_with(replies: Vec<Reply>, expected: &str) -> (Output, ScriptedServer, UserDirs) {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(replies).await;
    let out = run_openai(ws.path(), &server.base_url(), &[], "hello", &dirs).await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    let errors = error_messages(&out);
    assert!(
        errors.iter().any(|e| e.contains(expected)),
        "expected an error containing `{expected}`, got {errors:?}"
    );
    assert_nothing_half_stored(&dirs, &out);
    (out, server, dirs)
}

#[tokio::test]
async fn unauthorized_is_a_clear_error_without_retries() {
    let (_, server, _) = fails_with(
        vec![openai::error_json(401, "Incorrect API key provided")],
        "rejected the API key (401): Incorrect API key provided",
    )
    .await;
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rate_limits_are_retried_then_reported() {
    let (_, server, _) = fails_with(
        vec![
            openai::error_json(429, "slow down"),
            openai::error_json(429, "slow down"),
            openai::error_json(429, "slow down"),
            openai::error_json(429, "slow down"),
        ],
        "rate-limiting requests (429) and still refused after 3 retries: slow down",
    )
    .await;
    assert_eq!(server.requests().len(), 4, "one try and three retries");
}

#[tokio::test]
async fn a_rate_limit_then_success_completes() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::error_json(429, "slow down"),
        openai::error_json(503, "overloaded"),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "ok"}))
            .reply(),
    ])
    .await;
    let out = run_openai(ws.path(), &server.base_url(), &[], "hello", &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    fails_with(
        vec![openai::error_json(500, "boom"); 4],
        "failed with HTTP 500 after 3 retries: boom",
    )
    .await;
}

#[tokio::test]
async fn connection_refused_names_the_url() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let base = refused_base_url();
    let out = run_openai(ws.path(), &base, &[], "hello", &dirs).await;
    assert_eq!(out.code, Some(1));
    let errors = error_messages(&out);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("Could not connect to") && e.contains(&base)),
        "{errors:?}"
    );
    assert_nothing_half_stored(&dirs, &out);
}

#[tokio::test]
async fn a_stream_cut_mid_answer_keeps_nothing_as_complete() {
    let chunks: Vec<Chunk> = openai::turn()
        .text("This answer will be cut in the middle of a long sentence")
        .chunks();
    let (out, _, dirs) = fails_with(
        vec![Reply::CutAfter {
            chunks: chunks[..4].to_vec(),
        }],
        "connection was cut",
    )
    .await;
    let finished = out.events_of("message_finished");
    assert_eq!(
        finished.last().map(|e| e["complete"].clone()),
        Some(json!(false))
    );
    let id = out.task_id().expect("id");
    let record = task_record(&dirs, &id);
    let cut: Vec<_> = record["messages"]
        .as_array()
        .expect("m")
        .iter()
        .filter(|m| m["kind"] == "assistant")
        .collect();
    assert_eq!(
        cut.len(),
        1,
        "the partial answer is kept for display, marked cut off"
    );
    assert_eq!(cut[0]["complete"], false);
}

#[tokio::test]
async fn malformed_sse_is_reported() {
    fails_with(
        vec![Reply::sse(vec![
            Chunk::new("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n"),
            Chunk::new("data: {not json at all\n\n"),
        ])],
        "malformed stream",
    )
    .await;
}

#[tokio::test]
async fn an_error_event_mid_stream_is_reported_over_anthropic() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let mut chunks = anthropic::turn().text("Starting").chunks();
    chunks.truncate(3);
    chunks.push(anthropic::error_event("overloaded_error", "Overloaded"));
    let server = ScriptedServer::start(vec![Reply::sse(chunks)]).await;
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
            "c",
            "--json",
            "hi",
        ],
        &dirs,
        &[("MANDATE_API_KEY", "k")],
    )
    .await;
    assert_eq!(out.code, Some(1));
    assert!(
        error_messages(&out)
            .iter()
            .any(|e| e.contains("overloaded_error: Overloaded")),
        "{:?}",
        error_messages(&out)
    );
    assert_nothing_half_stored(&dirs, &out);
}

#[tokio::test]
async fn a_task_killed_mid_run_resumes_with_its_intent() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let server = Arc::new(
        ScriptedServer::start(vec![
            openai::turn()
                .tool_call("s", "select_active_intent", json!({"intent_id": "INT-1"}))
                .reply(),
            Reply::Hang,
        ])
        .await,
    );
    let ws_arg = ws.path().display().to_string();
    let base = format!("{}/v1", server.base_url());
    let mut child = tokio::process::Command::new(mandate_tests::app::mandate_bin())
        .args([
            "run",
            "--workspace",
            &ws_arg,
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--model",
            "m",
            "--json",
            "--approve",
            "allow",
            "write a note",
        ])
        .envs(dirs.env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    server
        .wait_for_requests(2, Duration::from_secs(30))
        .await
        .expect("second request");
    child.start_kill().expect("kill");
    let killed = child.wait_with_output().await.expect("wait");
    let first_line = String::from_utf8_lossy(&killed.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let event: serde_json::Value = serde_json::from_str(&first_line).expect("first event");
    let task_id = event["task"]["id"].as_str().expect("task id").to_string();

    let record = task_record(&dirs, &task_id);
    assert_eq!(
        record["governance"]["selected_intent"], "INT-1",
        "the intent was saved before the kill"
    );

    server.push(openai::turn().tool_call("w", "write_to_file", json!({"path": "notes/a.md", "content": "note\n", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"})).reply());
    server.push(
        openai::turn()
            .tool_call(
                "d",
                "attempt_completion",
                json!({"result": "wrote the note"}),
            )
            .reply(),
    );
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
            "m",
            "--json",
            "--approve",
            "allow",
            "--resume",
            &task_id,
        ],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("notes/a.md")).expect("note"),
        "note\n"
    );
    // The resumed request carries the history, including the handshake's result.
    let resumed = server.requests().last().cloned().expect("request").json();
    let messages = resumed["messages"].as_array().expect("messages");
    assert!(messages
        .iter()
        .any(|m| m["role"] == "tool" && m["tool_call_id"] == "s"));
    assert_eq!(ledger(ws.path()).len(), 1);
}

// ---- Answers that are not event streams, and providers that go silent ----------------------

#[derive(Clone, Copy, Debug)]
enum Wire {
    OpenAi,
    Anthropic,
}

const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// `mandate run` over `wire` against these replies, allowing 1 s of silence.
async fn run_over(wire: Wire, replies: Vec<Reply>) -> (Output, ScriptedServer, UserDirs) {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(replies).await;
    let ws_arg = ws.path().display().to_string();
    let (provider, base) = match wire {
        Wire::OpenAi => ("openai", format!("{}/v1", server.base_url())),
        Wire::Anthropic => ("anthropic", server.base_url()),
    };
    let out = mandate(
        &[
            "run",
            "--workspace",
            &ws_arg,
            "--provider",
            provider,
            "--base-url",
            &base,
            "--model",
            "m",
            "--json",
            "hello",
        ],
        &dirs,
        &[("MANDATE_API_KEY", "k"), ("MANDATE_STREAM_IDLE_SECS", "1")],
    )
    .await;
    (out, server, dirs)
}

/// The run failed with exactly `expected` as its error and stored nothing as complete.
fn assert_failed_with(wire: Wire, out: &Output, dirs: &UserDirs, expected: &str) {
    assert_eq!(
        out.code,
        Some(1),
        "{wire:?}\n{}\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(error_messages(out), vec![expected.to_string()], "{wire:?}");
    assert_nothing_half_stored(dirs, out);
}

/// A whole finished turn as one body (the tool call ends the task).
fn finished_turn_body(wire: Wire) -> String {
    let chunks = match wire {
        Wire::OpenAi => openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "ok"}))
            .chunks(),
        Wire::Anthropic => anthropic::turn()
            .tool_use("d", "attempt_completion", json!({"result": "ok"}))
            .chunks(),
    };
    chunks.into_iter().map(|c| c.data).collect()
}

#[tokio::test]
async fn a_web_page_instead_of_a_stream_is_named_with_its_start() {
    let page = "<!DOCTYPE html>\n<html><head><title>Hotel Wi-Fi</title></head>\n<body><form action=\"/login\">Accept the terms to get online</form></body></html>\n";
    for wire in WIRES {
        let reply = Reply::Body {
            content_type: Some("text/html; charset=utf-8".into()),
            body: page.into(),
        };
        let (out, server, dirs) = run_over(wire, vec![reply]).await;
        assert_failed_with(
            wire,
            &out,
            &dirs,
            "The provider answered with text/html instead of an event stream: `<!DOCTYPE html> <html><head><title>Hotel Wi-Fi</title></head> <body><form action=\"/login\">Accept the terms to get online</form></body></html>`. Is the base URL right?",
        );
        assert_eq!(server.requests().len(), 1, "{wire:?}: not retried");
    }
}

#[tokio::test]
async fn a_json_answer_instead_of_a_stream_is_named_with_its_start() {
    let body = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! This server ignored stream: true and answered all at once, which Mandate cannot show as it arrives."}}]}"#;
    for wire in WIRES {
        let reply = Reply::Body {
            content_type: Some("application/json".into()),
            body: body.into(),
        };
        let (out, _, dirs) = run_over(wire, vec![reply]).await;
        assert_failed_with(
            wire,
            &out,
            &dirs,
            &format!(
                "The provider answered with application/json instead of an event stream: `{}…`. Is the base URL right?",
                &body[..200]
            ),
        );
    }
}

#[tokio::test]
async fn a_missing_content_type_is_accepted_only_for_a_body_that_starts_like_sse() {
    for wire in WIRES {
        let reply = Reply::Body {
            content_type: None,
            body: "404 page not found\n".into(),
        };
        let (out, _, dirs) = run_over(wire, vec![reply]).await;
        assert_failed_with(
            wire,
            &out,
            &dirs,
            "The provider answered with no content type instead of an event stream: `404 page not found`. Is the base URL right?",
        );

        let reply = Reply::Body {
            content_type: None,
            body: finished_turn_body(wire),
        };
        let (out, _, _) = run_over(wire, vec![reply]).await;
        assert_eq!(
            out.code,
            Some(0),
            "{wire:?}\n{}\n{}",
            out.stdout,
            out.stderr
        );
        assert_eq!(error_messages(&out), Vec::<String>::new());
    }
}

#[tokio::test]
async fn a_provider_that_sends_headers_then_nothing_is_stopped_after_the_idle_time() {
    for wire in WIRES {
        let reply = Reply::StallAfter { chunks: Vec::new() };
        let (out, _, dirs) = run_over(wire, vec![reply]).await;
        assert_failed_with(
            wire,
            &out,
            &dirs,
            "No data from the provider for 1 s; the request was stopped. Retry to ask again.",
        );
    }
}

#[tokio::test]
async fn a_provider_that_goes_silent_mid_answer_is_stopped_and_the_part_is_not_kept() {
    for wire in WIRES {
        let chunks = match wire {
            Wire::OpenAi => openai::turn()
                .text("This answer stops in the middle of a long sentence")
                .chunks(),
            Wire::Anthropic => anthropic::turn()
                .text("This answer stops in the middle of a long sentence")
                .chunks(),
        };
        let reply = Reply::StallAfter {
            chunks: chunks[..4].to_vec(),
        };
        let (out, _, dirs) = run_over(wire, vec![reply]).await;
        assert_failed_with(
            wire,
            &out,
            &dirs,
            "No data from the provider for 1 s; the request was stopped. Retry to ask again.",
        );
        let finished = out.events_of("message_finished");
        assert_eq!(
            finished.last().map(|e| e["complete"].clone()),
            Some(json!(false)),
            "{wire:?}"
        );
    }
}

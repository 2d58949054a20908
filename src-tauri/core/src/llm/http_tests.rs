//! The checks on a successful answer, against a real HTTP server on 127.0.0.1 that writes
//! exactly the bytes a test gives it.

use super::*;
use pretty_assertions::assert_eq;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves one connection: reads the request head, writes `reply`, then (if `hold`) keeps the
/// socket open and silent until the client goes away.
async fn serve_once(reply: String, hold: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        if socket.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
        if hold {
            while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
        }
    });
    format!("http://{addr}/v1")
}

/// A 200 answer with this content type (none if `None`) and a complete body.
fn answer(content_type: Option<&str>, body: &str) -> String {
    let header = content_type
        .map(|t| format!("content-type: {t}\r\n"))
        .unwrap_or_default();
    format!(
        "HTTP/1.1 200 OK\r\n{header}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn quick() -> RetryPolicy {
    RetryPolicy {
        max_retries: 0,
        stream_idle_timeout_secs: 1,
        ..RetryPolicy::default()
    }
}

/// Every event's data, or the first error.
async fn events_of(reply: String, hold: bool) -> Result<Vec<String>, LlmError> {
    let url = serve_once(reply, hold).await;
    let policy = quick();
    let response = send_with_retries(|| client().get(&url), &policy, &url).await?;
    let mut events = Box::pin(sse_events(response, &policy).await?);
    let mut data = Vec::new();
    while let Some(event) = events.next().await {
        data.push(event?.data);
    }
    Ok(data)
}

#[tokio::test]
async fn a_web_page_is_named_with_its_start() {
    let page = "<!DOCTYPE html>\n<html>\n  <head><title>Sign in to the Wi-Fi</title></head>\n  <body>Accept the `terms` to go on.</body>\n</html>\n";
    let err = events_of(answer(Some("text/html; charset=UTF-8"), page), false)
        .await
        .expect_err("not a stream");
    assert_eq!(
        err.to_string(),
        "The provider answered with text/html instead of an event stream: `<!DOCTYPE html> <html> <head><title>Sign in to the Wi-Fi</title></head> <body>Accept the 'terms' to go on.</body> </html>`. Is the base URL right?"
    );
}

#[tokio::test]
async fn a_json_answer_is_named_and_a_long_body_is_cut() {
    let body = format!(
        r#"{{"object":"chat.completion","choices":[{{"message":{{"content":"{}"}}}}]}}"#,
        "x".repeat(400)
    );
    let err = events_of(answer(Some("application/json"), &body), false)
        .await
        .expect_err("not a stream");
    let LlmError::NotAStream {
        content_type,
        body_start,
    } = err
    else {
        panic!("{err:?}");
    };
    assert_eq!(content_type, "application/json");
    assert_eq!(body_start, format!("`{}…`", &body[..200]));
}

#[tokio::test]
async fn a_missing_content_type_is_accepted_only_for_a_body_that_starts_like_sse() {
    let sse = ": keep-alive\n\ndata: {\"a\":1}\n\ndata: [DONE]\n\n";
    assert_eq!(
        events_of(answer(None, sse), false).await.expect("sse"),
        vec!["{\"a\":1}".to_string(), "[DONE]".to_string()]
    );
    assert_eq!(
        events_of(
            answer(Some("text/event-stream; charset=utf-8"), "data: 1\n\n"),
            false
        )
        .await
        .expect("sse with a charset"),
        vec!["1".to_string()]
    );
    let err = events_of(answer(None, "Not Found\n"), false)
        .await
        .expect_err("plain text");
    assert_eq!(
        err.to_string(),
        "The provider answered with no content type instead of an event stream: `Not Found`. Is the base URL right?"
    );
    let err = events_of(answer(None, ""), false).await.expect_err("empty");
    assert_eq!(
        err,
        LlmError::NotAStream {
            content_type: "no content type".into(),
            body_start: "an empty body".into()
        }
    );
}

#[test]
fn the_start_of_a_body_decides_as_soon_as_it_can() {
    assert_eq!(starts_like_sse(b""), None);
    assert_eq!(starts_like_sse(b"\r\n\r\nda"), None);
    assert_eq!(starts_like_sse(b"\xEF\xBB\xBFevent: x"), Some(true));
    assert_eq!(starts_like_sse(b": ping"), Some(true));
    assert_eq!(starts_like_sse(b"retry: 10"), Some(true));
    assert_eq!(starts_like_sse(b"{\"data\":"), Some(false));
    assert_eq!(starts_like_sse(b"<html>"), Some(false));
}

#[tokio::test]
async fn headers_then_silence_stop_after_the_idle_time() {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    let err = events_of(head.to_string(), true)
        .await
        .expect_err("stalled");
    assert_eq!(
        err.to_string(),
        "No data from the provider for 1 s; the request was stopped. Retry to ask again."
    );
}

#[tokio::test]
async fn silence_mid_stream_stops_after_the_events_that_came() {
    let event = "data: {\"a\":1}\n\n";
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
        event.len()
    );
    let url = serve_once(head, true).await;
    let policy = quick();
    let response = send_with_retries(|| client().get(&url), &policy, &url)
        .await
        .expect("answer");
    let mut events = Box::pin(sse_events(response, &policy).await.expect("stream"));
    assert_eq!(
        events.next().await.map(|e| e.map(|e| e.data)),
        Some(Ok("{\"a\":1}".to_string()))
    );
    assert_eq!(
        events.next().await,
        Some(Err(LlmError::Stalled { seconds: 1 }))
    );
}

#[tokio::test]
async fn a_server_that_never_answers_is_stopped_too() {
    // Nothing at all is written back: not even the status line.
    let url = serve_once(String::new(), true).await;
    let err = send_with_retries(|| client().get(&url), &quick(), &url)
        .await
        .expect_err("stalled");
    assert_eq!(err, LlmError::Stalled { seconds: 1 });
}

#[test]
fn the_idle_time_defaults_to_two_minutes() {
    assert_eq!(RetryPolicy::default().stream_idle_timeout_secs, 120);
}

#[test]
fn model_names_become_safe_path_parts_and_origins_drop_the_path() {
    assert_eq!(
        path_part("qwen/qwen3-8b:Q4 x?#"),
        "qwen/qwen3-8b:Q4%20x%3F%23"
    );
    assert_eq!(
        origin("http://localhost:11434/v1").as_deref(),
        Some("http://localhost:11434")
    );
    assert_eq!(
        origin("https://openrouter.ai/api/v1").as_deref(),
        Some("https://openrouter.ai")
    );
    assert_eq!(origin("not a url"), None);
}

#[tokio::test]
async fn a_refusal_for_length_comes_back_as_context_too_long() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208367 tokens > 200000 maximum"}}"#;
    let refusal = |status: &str| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let url = serve_once(refusal("400 Bad Request"), false).await;
    let err = send_with_retries(|| client().get(&url), &quick(), &url)
        .await
        .expect_err("refused");
    assert_eq!(
        err,
        LlmError::ContextTooLong {
            status: 400,
            limit: Some(200_000),
            requested: Some(208_367),
            message: "prompt is too long: 208367 tokens > 200000 maximum".into(),
        }
    );
    let url = serve_once(refusal("413 Payload Too Large"), false).await;
    let err = send_with_retries(|| client().get(&url), &quick(), &url)
        .await
        .expect_err("refused");
    assert!(
        matches!(err, LlmError::ContextTooLong { status: 413, .. }),
        "{err:?}"
    );
}

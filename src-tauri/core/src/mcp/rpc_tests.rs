//! The client against servers that misbehave: answers out of order or never, lines that are not
//! JSON-RPC, messages past the bound, versions it does not speak, HTTP redirects and sessions.

use super::*;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::net::TcpListener;

/// The server's end of a stdio connection.
struct Far {
    read: BufReader<tokio::io::ReadHalf<DuplexStream>>,
    write: tokio::io::WriteHalf<DuplexStream>,
}

impl Far {
    async fn next(&mut self) -> Value {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(5), self.read.read_line(&mut line))
            .await
            .expect("a message in time")
            .expect("read");
        assert!(n > 0, "the client closed its end");
        serde_json::from_str(&line).expect("the client sends JSON")
    }

    async fn say(&mut self, raw: &str) {
        self.write.write_all(raw.as_bytes()).await.expect("write");
        self.write.write_all(b"\n").await.expect("write");
    }

    async fn send(&mut self, message: Value) {
        self.say(&message.to_string()).await;
    }

    /// Answers `initialize` with `version` and checks the notification that follows.
    async fn handshake(&mut self, version: &str) {
        let init = self.next().await;
        assert_eq!(init["method"], "initialize");
        assert_eq!(init["params"]["protocolVersion"], PROTOCOL_VERSION);
        assert_eq!(init["params"]["clientInfo"]["name"], "mandate");
        self.send(json!({"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "t", "version": "1"}}}))
            .await;
    }
}

fn pair() -> (
    tokio::io::ReadHalf<DuplexStream>,
    tokio::io::WriteHalf<DuplexStream>,
    Far,
) {
    let (near, far) = tokio::io::duplex(1 << 16);
    let (near_read, near_write) = tokio::io::split(near);
    let (far_read, far_write) = tokio::io::split(far);
    (
        near_read,
        near_write,
        Far {
            read: BufReader::new(far_read),
            write: far_write,
        },
    )
}

async fn connected() -> (Session, Far) {
    let (read, write, mut far) = pair();
    let client = tokio::spawn(stdio(read, write));
    far.handshake("2025-06-18").await;
    let session = client.await.expect("join").expect("initialized");
    let note = far.next().await;
    assert_eq!(note["method"], "notifications/initialized");
    assert!(note.get("id").is_none());
    (session, far)
}

#[tokio::test]
async fn answers_are_matched_by_id_whatever_their_order_and_noise_is_skipped() {
    let (session, mut far) = connected().await;
    let peer = session.peer().clone();
    let (a, b) = (peer.clone(), peer.clone());
    let first = tokio::spawn(async move { a.call_tool("one", Map::new()).await });
    let second = tokio::spawn(async move { b.call_tool("two", Map::new()).await });
    let (x, y) = (far.next().await, far.next().await);
    far.say("npm WARN something printed on stdout").await;
    far.say("").await;
    far.say("[1, 2").await;
    far.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        .await;
    // Answered in the opposite order.
    for m in [&y, &x] {
        let name = m["params"]["name"].as_str().expect("name").to_string();
        far.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": name}]}}))
            .await;
    }
    let text = |r: Answer| r.expect("answer")["content"][0]["text"].clone();
    assert_eq!(text(first.await.expect("join")), "one");
    assert_eq!(text(second.await.expect("join")), "two");
}

#[tokio::test]
async fn the_servers_ping_is_answered_and_other_requests_refused() {
    let (_session, mut far) = connected().await;
    far.send(json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}))
        .await;
    let pong = far.next().await;
    assert_eq!(pong["id"], "p1");
    assert_eq!(pong["result"], json!({}));
    far.send(json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}))
        .await;
    let refused = far.next().await;
    assert_eq!(refused["id"], 7);
    assert_eq!(refused["error"]["code"], -32601);
}

#[tokio::test]
async fn an_error_answer_is_a_refusal_with_its_code_and_message() {
    let (session, mut far) = connected().await;
    let peer = session.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool("x", Map::new()).await });
    let m = far.next().await;
    far.send(json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32602, "message": "bad\narguments"}}))
        .await;
    assert_eq!(
        call.await.expect("join"),
        Err(RpcError::Refused {
            code: -32602,
            message: "bad\\narguments".into()
        })
    );
    // An answer that is neither is malformed, not a success.
    let peer = session.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool("y", Map::new()).await });
    let m = far.next().await;
    far.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": "ok"}))
        .await;
    assert!(matches!(
        call.await.expect("join"),
        Err(RpcError::Malformed(_))
    ));
}

#[tokio::test]
async fn a_message_past_the_bound_ends_the_connection_and_says_why() {
    let (session, mut far) = connected().await;
    let peer = session.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool("big", Map::new()).await });
    let _ = far.next().await;
    let writer = tokio::spawn(async move {
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..=(MAX_MESSAGE >> 20) + 1 {
            if far.write.write_all(&chunk).await.is_err() {
                break;
            }
        }
        far
    });
    let answer = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("in time")
        .expect("join");
    assert_eq!(
        answer,
        Err(RpcError::Closed(format!(
            "it sent a message longer than {} MiB",
            MAX_MESSAGE >> 20
        )))
    );
    tokio::time::timeout(Duration::from_secs(5), session.waiting())
        .await
        .expect("the session ended");
    // Later requests fail at once, with the same reason.
    let again = session.peer().call_tool("next", Map::new()).await;
    assert!(matches!(again, Err(RpcError::Closed(why)) if why.contains("longer than")));
    writer.abort();
}

#[tokio::test]
async fn a_server_that_closes_fails_the_requests_waiting() {
    let (session, mut far) = connected().await;
    let peer = session.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool("slow", Map::new()).await });
    let _ = far.next().await;
    drop(far);
    let answer = call.await.expect("join");
    assert_eq!(answer, Err(RpcError::Closed("it closed its output".into())));
}

#[tokio::test]
async fn a_caller_that_stops_waiting_cancels_at_the_server() {
    let (session, mut far) = connected().await;
    let peer = session.peer().clone();
    let waited = tokio::time::timeout(
        Duration::from_millis(100),
        peer.call_tool("slow", Map::new()),
    )
    .await;
    assert!(waited.is_err());
    let sent = far.next().await;
    let cancel = far.next().await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], sent["id"]);
    // A late answer to it is dropped; the connection goes on.
    far.send(json!({"jsonrpc": "2.0", "id": sent["id"], "result": {}}))
        .await;
    let next = tokio::spawn(async move { peer.call_tool("next", Map::new()).await });
    let m = far.next().await;
    assert_eq!(m["params"]["name"], "next");
    far.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": {"content": []}}))
        .await;
    assert_eq!(next.await.expect("join"), Ok(json!({"content": []})));
}

#[tokio::test]
async fn a_version_it_does_not_speak_is_refused_at_initialize() {
    let (read, write, mut far) = pair();
    let client = tokio::spawn(stdio(read, write));
    far.handshake("1999-01-01").await;
    let Err(e) = client.await.expect("join") else {
        panic!("initialized")
    };
    assert_eq!(
        e.to_string(),
        "it speaks MCP version `1999-01-01`, which Mandate does not"
    );
}

#[tokio::test]
async fn tool_pages_need_a_tools_array() {
    let (session, mut far) = connected().await;
    let peer = session.peer().clone();
    let list = tokio::spawn(async move { peer.list_tools(Some("c1".into())).await });
    let m = far.next().await;
    assert_eq!(m["method"], "tools/list");
    assert_eq!(m["params"]["cursor"], "c1");
    far.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": {"name": "x"}}}))
        .await;
    assert!(matches!(
        list.await.expect("join"),
        Err(RpcError::Malformed(_))
    ));
    let peer = session.peer().clone();
    let list = tokio::spawn(async move { peer.list_tools(None).await });
    let m = far.next().await;
    far.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "x"}], "nextCursor": ""}}))
        .await;
    assert_eq!(
        list.await.expect("join"),
        Ok((vec![json!({"name": "x"})], None))
    );
}

#[test]
fn events_are_split_however_the_bytes_arrive() {
    let stream =
        b": comment\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nid: 4\ndata:{}\n\n";
    for cut in 0..stream.len() {
        let mut parser = SseParser::default();
        let mut all = parser.feed(&stream[..cut]).expect("feed");
        all.extend(parser.feed(&stream[cut..]).expect("feed"));
        assert_eq!(all, ["{\"a\":\n1}", "{}"], "cut at {cut}");
    }
    let mut parser = SseParser::default();
    let big = vec![b'x'; MAX_MESSAGE + 2];
    assert!(parser.feed(b"data: ").expect("feed").is_empty());
    assert!(parser.feed(&big).is_err());
}

/// An HTTP server on 127.0.0.1 answering each request with the next of `answers`; the
/// requests it got (head and body) come back on the channel.
async fn http_server(answers: Vec<String>) -> (String, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        for answer in answers {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let mut stream = BufReader::new(stream);
            let mut head = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0u8; length];
            let _ = tokio::io::AsyncReadExt::read_exact(&mut stream, &mut body).await;
            let _ = tx.send(format!("{head}{}", String::from_utf8_lossy(&body)));
            let _ = stream.get_mut().write_all(answer.as_bytes()).await;
            let _ = stream.get_mut().shutdown().await;
        }
    });
    (url, rx)
}

fn reply(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn over_http_the_session_and_version_are_carried_and_an_event_stream_answers() {
    let init = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-03-26", "capabilities": {}}});
    let events = format!(
        ": keep-alive\n\ndata: {}\n\ndata: {}\n\n",
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}})
    );
    let (url, mut got) = http_server(vec![
        reply(
            "200 OK",
            "content-type: application/json\r\nmcp-session-id: s-42\r\n",
            &init.to_string(),
        ),
        reply("202 Accepted", "", ""),
        reply("200 OK", "content-type: text/event-stream\r\n", &events),
        reply("204 No Content", "", ""),
    ])
    .await;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-token", "t0ken".parse().expect("header"));
    let session = http(&url, headers).await.expect("initialized");
    let answer = session
        .peer()
        .call_tool("greet", Map::new())
        .await
        .expect("answer");
    assert_eq!(answer["content"][0]["text"], "hi");
    let first = got.recv().await.expect("initialize").to_ascii_lowercase();
    assert!(first.starts_with("post /mcp "), "{first}");
    assert!(first.contains("x-token: t0ken"), "{first}");
    assert!(
        first.contains("accept: application/json, text/event-stream"),
        "{first}"
    );
    assert!(!first.contains("mcp-session-id"), "{first}");
    for _ in 0..2 {
        let later = got.recv().await.expect("request").to_ascii_lowercase();
        assert!(later.contains("mcp-session-id: s-42"), "{later}");
        assert!(
            later.contains("mcp-protocol-version: 2025-03-26"),
            "{later}"
        );
    }
    drop(session);
    let deleted = tokio::time::timeout(Duration::from_secs(5), got.recv())
        .await
        .expect("in time")
        .expect("delete");
    assert!(deleted.starts_with("DELETE /mcp "), "{deleted}");
    assert!(deleted
        .to_ascii_lowercase()
        .contains("mcp-session-id: s-42"));
}

#[tokio::test]
async fn over_http_a_redirect_is_not_followed_and_an_error_is_quoted() {
    let (url, _got) = http_server(vec![reply(
        "307 Temporary Redirect",
        "location: http://elsewhere.example/steal\r\n",
        "",
    )])
    .await;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", "Bearer secret".parse().expect("header"));
    let Err(e) = http(&url, headers).await else {
        panic!("initialized")
    };
    assert_eq!(
        e.to_string(),
        "it answered HTTP 307 Temporary Redirect, a redirect to `http://elsewhere.example/steal` (not followed)"
    );
    let (url, _got) = http_server(vec![reply(
        "401 Unauthorized",
        "content-type: text/plain\r\n",
        "missing\ttoken",
    )])
    .await;
    let Err(e) = http(&url, reqwest::header::HeaderMap::new()).await else {
        panic!("initialized")
    };
    assert_eq!(
        e.to_string(),
        "it answered HTTP 401 Unauthorized: missing\\ttoken"
    );
}

#[tokio::test]
async fn over_http_a_session_the_server_forgot_ends_the_connection() {
    let init = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18"}});
    let (url, _got) = http_server(vec![
        reply(
            "200 OK",
            "content-type: application/json\r\nmcp-session-id: s1\r\n",
            &init.to_string(),
        ),
        reply("202 Accepted", "", ""),
        reply("404 Not Found", "", ""),
    ])
    .await;
    let session = http(&url, reqwest::header::HeaderMap::new())
        .await
        .expect("initialized");
    let answer = session.peer().call_tool("x", Map::new()).await;
    assert_eq!(
        answer,
        Err(RpcError::Closed("the server ended its session".into()))
    );
    tokio::time::timeout(Duration::from_secs(5), session.waiting())
        .await
        .expect("ended");
}

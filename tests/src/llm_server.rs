//! A scripted LLM provider on 127.0.0.1.
//!
//! HTTP/1.1 is written by hand on a plain `TcpListener` so a test controls
//! every byte and every pause of an answer, including streams that are cut
//! mid-way or never answered at all.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// The request target as sent, query string included.
    pub path: String,
    /// Header names are lowercased; values are trimmed.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RecordedRequest {
    /// The body parsed as JSON; panics with the body in the message if it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| {
            panic!(
                "request {} {} has no JSON body ({e}): {:?}",
                self.method, self.path, self.body
            )
        })
    }

    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A piece of a streamed body, written and flushed on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub data: String,
    /// Pause before this chunk is written.
    pub delay_ms: u64,
}

impl Chunk {
    pub fn new(data: impl Into<String>) -> Chunk {
        Chunk {
            data: data.into(),
            delay_ms: 0,
        }
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Stream an SSE body: `content-type: text/event-stream`, chunked transfer
    /// encoding, each chunk written and flushed separately after its delay.
    Sse {
        status: u16,
        headers: Vec<(String, String)>,
        chunks: Vec<Chunk>,
    },
    /// A plain JSON (or text) response with `Content-Length`.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Write these chunks, then close the socket without the terminating
    /// zero-length chunk (a stream cut mid-answer).
    CutAfter { chunks: Vec<Chunk> },
    /// Read the request, then never answer (until the client gives up or the
    /// server is dropped).
    Hang,
    /// A 200 answer with this content type (no header at all if `None`) and
    /// body, with `Content-Length`: a captive portal's page, a JSON answer
    /// where a stream was asked for, or a server that omits the header.
    Body {
        content_type: Option<String>,
        body: String,
    },
    /// SSE headers and these chunks, then silence on an open connection (a
    /// provider that stalls before or in the middle of its answer).
    StallAfter { chunks: Vec<Chunk> },
    /// `then`, once the test opened `gate` (`gate.notify_one()`): holds the app between two
    /// turns while the test looks at what it left running.
    After {
        gate: Arc<tokio::sync::Notify>,
        then: Box<Reply>,
    },
}

impl Reply {
    /// A 200 SSE stream of these chunks.
    pub fn sse(chunks: Vec<Chunk>) -> Reply {
        Reply::Sse {
            status: 200,
            headers: Vec::new(),
            chunks,
        }
    }

    /// A JSON response with this status.
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }
}

/// Answers a model request from what it contains, instead of a fixed queue.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    responder: Option<Responder>,
    gets: HashMap<String, Reply>,
    requests: Vec<RecordedRequest>,
    probes: Vec<RecordedRequest>,
}

/// A request the app makes to learn a model's window (OpenRouter and vLLM `/models`,
/// LM Studio `/api/v0/…`, Ollama `POST /api/show`): not a turn of the conversation.
fn is_probe(req: &RecordedRequest) -> bool {
    let bare = req.path.split('?').next().unwrap_or_default();
    match req.method.as_str() {
        "GET" => bare.contains("/models") || bare.starts_with("/api/v0/"),
        "POST" => bare == "/api/show",
        _ => false,
    }
}

struct Shared {
    script: Mutex<Script>,
    // Count of recorded requests, so waiters wake as soon as one arrives.
    count: watch::Sender<usize>,
}

impl Shared {
    fn record(&self, req: RecordedRequest) -> Reply {
        let mut script = self.script.lock().unwrap();
        if is_probe(&req) {
            let reply = script.fixed_reply(&req);
            script.probes.push(req);
            return reply;
        }
        let reply = if req.method == "GET" {
            script.fixed_reply(&req)
        } else if let Some(responder) = script.responder.clone() {
            // The responder may take its time (and its own locks); waiters must not.
            drop(script);
            let reply = responder(&req);
            script = self.script.lock().unwrap();
            reply
        } else {
            script
                .replies
                .pop_front()
                .unwrap_or_else(|| error_reply(500, "scripted server: no reply left"))
        };
        script.requests.push(req);
        let n = script.requests.len();
        drop(script);
        self.count.send_replace(n);
        reply
    }
}

impl Script {
    /// The `on_get` reply for this target (query string ignored unless set in full), or a 404.
    fn fixed_reply(&self, req: &RecordedRequest) -> Reply {
        let bare = req.path.split('?').next().unwrap_or_default();
        self.gets
            .get(&req.path)
            .or_else(|| self.gets.get(bare))
            .cloned()
            .unwrap_or_else(|| {
                let message = format!("scripted server: no {} reply for {bare}", req.method);
                error_reply(404, &message)
            })
    }
}

fn error_reply(status: u16, message: &str) -> Reply {
    Reply::json(
        status,
        &serde_json::json!({ "error": { "message": message } }),
    )
}

/// A scripted provider server; dropping it stops it and closes every connection.
pub struct ScriptedServer {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        // The connection tasks live in a JoinSet owned by the accept task,
        // so aborting it also ends hanging connections.
        self.accept.abort();
    }
}

impl ScriptedServer {
    /// Starts serving on an ephemeral port; `replies` answer non-GET requests in order.
    pub async fn start(replies: Vec<Reply>) -> ScriptedServer {
        ScriptedServer::serve(Script {
            replies: replies.into(),
            ..Script::default()
        })
        .await
    }

    /// Starts serving on an ephemeral port; `responder` answers every non-GET request
    /// that is not a window probe.
    pub async fn start_with(responder: Responder) -> ScriptedServer {
        ScriptedServer::serve(Script {
            responder: Some(responder),
            ..Script::default()
        })
        .await
    }

    async fn serve(script: Script) -> ScriptedServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind scripted server on 127.0.0.1");
        let addr = listener.local_addr().expect("scripted server address");
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            count: watch::channel(0).0,
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        ScriptedServer {
            addr,
            shared,
            accept,
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.shared.script.lock().unwrap()
    }

    /// Every request received so far, in arrival order, window probes left out.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.script().requests.clone()
    }

    /// The window probes received so far (`GET …/models…`, `GET /api/v0/…`,
    /// `POST /api/show`), in arrival order; they are answered from the `on_get` table.
    pub fn probes(&self) -> Vec<RecordedRequest> {
        self.script().probes.clone()
    }

    /// The result of tool call `call_id` that request `n` carried (OpenAI wire format).
    pub fn tool_result_in(&self, n: usize, call_id: &str) -> Option<String> {
        let body = self.requests().get(n)?.json();
        body["messages"]
            .as_array()?
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
            .and_then(|m| m["content"].as_str())
            .map(str::to_string)
    }

    /// The result of tool call `call_id` in the newest request that carried it.
    pub fn tool_result(&self, call_id: &str) -> Option<String> {
        (0..self.requests().len())
            .rev()
            .find_map(|n| self.tool_result_in(n, call_id))
    }

    /// Appends a reply to the script while the server runs.
    pub fn push(&self, reply: Reply) {
        self.script().replies.push_back(reply);
    }

    /// A fixed reply for `GET path`, served every time (the query string is
    /// ignored unless a reply was set for the full target). Window probes are
    /// served from the same table, `POST /api/show` included.
    pub fn on_get(&self, path: &str, reply: Reply) {
        self.script().gets.insert(path.to_string(), reply);
    }

    /// Waits until at least `n` requests have been received (window probes not counted).
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> anyhow::Result<()> {
        let mut rx = self.shared.count.subscribe();
        if tokio::time::timeout(timeout, rx.wait_for(|c| *c >= n))
            .await
            .is_ok()
        {
            return Ok(());
        }
        let seen: Vec<String> = self
            .requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        anyhow::bail!(
            "scripted server: expected {n} requests within {timeout:?}, got {}: {seen:?}",
            seen.len()
        )
    }
}

/// A closed port on 127.0.0.1 (bound, then released) for connection-refused tests.
pub fn refused_base_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    conns.spawn(serve_connection(stream, shared.clone()));
                }
                // Transient errors (e.g. too many open files) must not end the server.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    loop {
        let req = match read_request(&mut stream, &mut buf).await {
            Ok(Some(req)) => req,
            Ok(None) | Err(_) => return,
        };
        let client_closes = req
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let reply = shared.record(req);
        let keep_alive = match write_reply(&mut stream, reply).await {
            Ok(keep) => keep && !client_closes,
            Err(_) => false,
        };
        if !keep_alive {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

const MAX_HEAD: usize = 1 << 20;

/// Reads one request; `Ok(None)` when the client closed an idle connection.
/// `buf` carries bytes that arrived beyond this request over to the next one.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> anyhow::Result<Option<RecordedRequest>> {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        anyhow::ensure!(buf.len() < MAX_HEAD, "request head too large");
        if read_more(stream, buf).await? == 0 {
            anyhow::ensure!(buf.is_empty(), "connection closed inside a request head");
            return Ok(None);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end + 4);

    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    anyhow::ensure!(!method.is_empty() && !path.is_empty(), "bad request line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut req = RecordedRequest {
        method,
        path,
        headers,
        body: String::new(),
    };
    let get = |name| req.header(name);

    if get("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let chunked =
        get("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let len: usize = get("content-length").map_or(Ok(0), str::parse)?;
    let body: Vec<u8> = if chunked {
        read_chunked_body(stream, buf).await?
    } else {
        while buf.len() < len {
            anyhow::ensure!(read_more(stream, buf).await? > 0, "closed inside a body");
        }
        buf.drain(..len).collect()
    };
    req.body = String::from_utf8_lossy(&body).into_owned();
    Ok(Some(req))
}

async fn read_chunked_body(stream: &mut TcpStream, buf: &mut Vec<u8>) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(stream, buf).await?;
        // Chunk extensions after ';' carry nothing we need.
        let size_hex = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)?;
        if size == 0 {
            // Skip optional trailers up to the empty line.
            while !read_line(stream, buf).await?.is_empty() {}
            return Ok(body);
        }
        while buf.len() < size + 2 {
            anyhow::ensure!(
                read_more(stream, buf).await? > 0,
                "connection closed inside a chunk"
            );
        }
        body.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
    }
}

async fn read_line(stream: &mut TcpStream, buf: &mut Vec<u8>) -> anyhow::Result<String> {
    loop {
        if let Some(i) = find(buf, b"\r\n") {
            let line = String::from_utf8_lossy(&buf[..i]).into_owned();
            buf.drain(..i + 2);
            return Ok(line);
        }
        anyhow::ensure!(buf.len() < MAX_HEAD, "chunk line too long");
        anyhow::ensure!(
            read_more(stream, buf).await? > 0,
            "connection closed inside a chunk line"
        );
    }
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut tmp = [0u8; 8192];
    let n = stream.read(&mut tmp).await?;
    buf.extend_from_slice(&tmp[..n]);
    Ok(n)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Writes a reply; returns whether the connection may serve another request.
async fn write_reply(stream: &mut TcpStream, reply: Reply) -> std::io::Result<bool> {
    let reply = match reply {
        Reply::After { gate, then } => {
            gate.notified().await;
            *then
        }
        other => other,
    };
    match reply {
        Reply::Json {
            status,
            headers,
            body,
        } => {
            let mut head = status_line(status);
            if !has_header(&headers, "content-type") {
                head.push_str("content-type: application/json\r\n");
            }
            push_headers(&mut head, &headers);
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
            stream.flush().await?;
            Ok(true)
        }
        Reply::Sse {
            status,
            headers,
            chunks,
        } => {
            write_stream_head(stream, status, &headers).await?;
            write_chunks(stream, &chunks).await?;
            stream.write_all(b"0\r\n\r\n").await?;
            stream.flush().await?;
            Ok(false)
        }
        Reply::CutAfter { chunks } => {
            write_stream_head(stream, 200, &[]).await?;
            write_chunks(stream, &chunks).await?;
            // A FIN rather than a reset: a reset could discard the bytes the
            // client has not read yet, and the test wants to see them first.
            Ok(false)
        }
        Reply::Hang => {
            hold_until_closed(stream).await?;
            Ok(false)
        }
        Reply::Body { content_type, body } => {
            let mut head = status_line(200);
            if let Some(t) = content_type {
                head.push_str(&format!("content-type: {t}\r\n"));
            }
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
            stream.flush().await?;
            Ok(true)
        }
        // Opened above.
        Reply::After { .. } => Ok(false),
        Reply::StallAfter { chunks } => {
            write_stream_head(stream, 200, &[]).await?;
            write_chunks(stream, &chunks).await?;
            hold_until_closed(stream).await?;
            Ok(false)
        }
    }
}

/// Holds the socket open and silent; returns when the client gives up.
async fn hold_until_closed(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut sink = [0u8; 1024];
    while stream.read(&mut sink).await? > 0 {}
    Ok(())
}

async fn write_stream_head(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
) -> std::io::Result<()> {
    let mut head = status_line(status);
    if !has_header(headers, "content-type") {
        head.push_str("content-type: text/event-stream\r\n");
    }
    if !has_header(headers, "cache-control") {
        head.push_str("cache-control: no-cache\r\n");
    }
    push_headers(&mut head, headers);
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await
}

async fn write_chunks(stream: &mut TcpStream, chunks: &[Chunk]) -> std::io::Result<()> {
    for chunk in chunks {
        if chunk.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(chunk.delay_ms)).await;
        }
        // An empty chunk would be read as the end of the body.
        if chunk.data.is_empty() {
            continue;
        }
        let frame = format!("{:x}\r\n{}\r\n", chunk.data.len(), chunk.data);
        stream.write_all(frame.as_bytes()).await?;
        stream.flush().await?;
    }
    Ok(())
}

fn status_line(status: u16) -> String {
    // Clients read the code; the phrase is only for people reading captures.
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Scripted",
    };
    format!("HTTP/1.1 {status} {reason}\r\n")
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
}

fn push_headers(head: &mut String, headers: &[(String, String)]) {
    for (k, v) in headers {
        // Framing is ours to decide; a scripted one would corrupt the response.
        if k.eq_ignore_ascii_case("content-length")
            || k.eq_ignore_ascii_case("transfer-encoding")
            || k.eq_ignore_ascii_case("connection")
        {
            continue;
        }
        head.push_str(&format!("{k}: {v}\r\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use serde_json::json;
    use std::time::Instant;

    async fn post(url: &str) -> reqwest::Response {
        reqwest::Client::new().post(url).send().await.unwrap()
    }

    async fn raw_exchange(base: &str, request: &str, until: &str) -> String {
        let addr = base.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        while !String::from_utf8_lossy(&got).contains(until) {
            assert!(read_more(&mut s, &mut got).await.unwrap() > 0);
        }
        String::from_utf8(got).unwrap()
    }

    #[tokio::test]
    async fn records_requests_and_serves_json_then_runs_out() {
        let server = ScriptedServer::start(vec![Reply::json(201, &json!({"ok": 1}))]).await;
        let client = reqwest::Client::new();
        let url = format!("{}/v1/chat/completions", server.base_url());
        let req = client.post(&url).header("Authorization", "Bearer sk-test");
        let resp = req.json(&json!({"model": "m"})).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 201);
        assert_eq!(resp.text().await.unwrap(), r#"{"ok":1}"#);
        // Second request on the same pooled connection: the script is exhausted.
        let resp = client.post(&url).body("x").send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 500);
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["message"], "scripted server: no reply left");

        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            (reqs[0].method.as_str(), reqs[0].path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(reqs[0].header("AUTHORIZATION"), Some("Bearer sk-test"));
        assert_eq!(reqs[0].header("content-type"), Some("application/json"));
        assert_eq!(reqs[0].json()["model"], "m");
        assert_eq!(reqs[1].body, "x");
    }

    #[tokio::test]
    async fn keep_alive_serves_two_requests_on_one_socket() {
        let replies = vec![
            Reply::json(200, &json!("first")),
            Reply::json(200, &json!("second")),
        ];
        let server = ScriptedServer::start(replies).await;
        let req = "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}";
        let got = raw_exchange(&server.base_url(), &format!("{req}{req}"), "\"second\"").await;
        assert!(got.contains("\"first\""), "{got}");
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test]
    async fn reads_chunked_request_bodies() {
        let server = ScriptedServer::start(vec![Reply::json(200, &json!(1))]).await;
        let req = "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                   4\r\n{\"a\"\r\n5;ext=1\r\n:true\r\n1\r\n}\r\n0\r\n\r\n";
        raw_exchange(&server.base_url(), req, "\r\n\r\n1").await;
        assert_eq!(server.requests()[0].json(), json!({"a": true}));
    }

    #[tokio::test]
    async fn get_replies_repeat_and_push_extends_the_script() {
        let server = ScriptedServer::start(vec![]).await;
        server.on_get("/v1/models", Reply::json(200, &json!({"data": []})));
        server.push(Reply::sse(vec![Chunk::new("data: 1\n\n")]));
        let base = server.base_url();
        for _ in 0..2 {
            let r = reqwest::get(format!("{base}/v1/models?x=1")).await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
        }
        let r = reqwest::get(format!("{base}/nope")).await.unwrap();
        assert_eq!(r.status().as_u16(), 404);
        let r = post(&base).await;
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        assert_eq!(r.text().await.unwrap(), "data: 1\n\n");
        // The two `/models` GETs are window probes: served, but neither listed nor counted.
        let ok = server.wait_for_requests(2, Duration::from_secs(1)).await;
        assert!(ok.is_ok());
        let err = server.wait_for_requests(3, Duration::from_millis(50)).await;
        assert!(err.unwrap_err().to_string().contains("got 2"));
        assert_eq!(server.probes().len(), 2);
    }

    #[tokio::test]
    async fn window_probes_never_take_a_model_reply() {
        let server = ScriptedServer::start(vec![Reply::json(200, &json!("turn"))]).await;
        server.on_get("/api/show", Reply::json(200, &json!({"model_info": {}})));
        let base = server.base_url();
        let client = reqwest::Client::new();
        let r = client
            .post(format!("{base}/api/show"))
            .body("{}")
            .send()
            .await;
        assert_eq!(r.unwrap().status().as_u16(), 200);
        for path in [
            "/api/v0/models/m",
            "/v1/models",
            "/api/v1/models/x/endpoints",
        ] {
            let r = reqwest::get(format!("{base}{path}")).await.unwrap();
            assert_eq!(r.status().as_u16(), 404, "{path}");
        }
        let r = client
            .post(format!("{base}/v1/chat/completions"))
            .body("{}");
        assert_eq!(r.send().await.unwrap().text().await.unwrap(), "\"turn\"");
        assert_eq!(server.requests().len(), 1);
        let probes: Vec<String> = server.probes().into_iter().map(|r| r.path).collect();
        assert_eq!(probes[0], "/api/show");
        assert_eq!(probes.len(), 4);
    }

    #[tokio::test]
    async fn a_responder_answers_from_the_request() {
        let responder: Responder =
            Arc::new(|req: &RecordedRequest| Reply::json(200, &json!({"echo": req.json()["n"]})));
        let server = ScriptedServer::start_with(responder).await;
        let client = reqwest::Client::new();
        for n in 0..3 {
            let r = client.post(server.base_url()).json(&json!({"n": n}));
            let body: serde_json::Value = r.send().await.unwrap().json().await.unwrap();
            assert_eq!(body, json!({"echo": n}));
        }
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test]
    async fn sse_chunks_arrive_separately_with_their_delays() {
        let chunk = |i| Chunk {
            data: format!("data: {i}\n\n"),
            delay_ms: 150,
        };
        let server = ScriptedServer::start(vec![Reply::sse((0..3).map(chunk).collect())]).await;
        let mut stream = post(&server.base_url()).await.bytes_stream();
        let first = stream.next().await.unwrap().unwrap();
        let at_first = Instant::now();
        assert_eq!(&first[..], b"data: 0\n\n");
        let mut rest = Vec::new();
        while let Some(b) = stream.next().await {
            rest.extend_from_slice(&b.unwrap());
        }
        assert_eq!(rest, b"data: 1\n\ndata: 2\n\n");
        // Two more pauses of 150 ms after the first chunk was already delivered.
        assert!(at_first.elapsed() >= Duration::from_millis(290));
    }

    #[tokio::test]
    async fn cut_stream_is_a_body_error_after_the_partial_data() {
        let chunks = vec![Chunk::new("data: {\"partial\":true}\n\n")];
        let server = ScriptedServer::start(vec![Reply::CutAfter { chunks }]).await;
        let mut stream = post(&server.base_url()).await.bytes_stream();
        let first = stream.next().await.unwrap().unwrap();
        assert!(first.starts_with(b"data: {\"partial\""));
        let end = stream.next().await.expect("an error, not a clean end");
        assert!(end.is_err(), "{end:?}");
    }

    #[tokio::test]
    async fn body_replies_send_the_given_content_type_or_none() {
        let server = ScriptedServer::start(vec![
            Reply::Body {
                content_type: Some("text/html".into()),
                body: "<html></html>".into(),
            },
            Reply::Body {
                content_type: None,
                body: "data: 1\n\n".into(),
            },
        ])
        .await;
        let r = post(&server.base_url()).await;
        assert_eq!(r.headers()["content-type"], "text/html");
        assert_eq!(r.text().await.unwrap(), "<html></html>");
        let r = post(&server.base_url()).await;
        assert!(r.headers().get("content-type").is_none());
        assert_eq!(r.text().await.unwrap(), "data: 1\n\n");
    }

    #[tokio::test]
    async fn stall_after_sends_its_chunks_then_nothing() {
        let chunks = vec![Chunk::new("data: 1\n\n")];
        let server = ScriptedServer::start(vec![Reply::StallAfter { chunks }]).await;
        let mut stream = post(&server.base_url()).await.bytes_stream();
        assert_eq!(&stream.next().await.unwrap().unwrap()[..], b"data: 1\n\n");
        let next = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
        assert!(next.is_err(), "nothing more arrives: {next:?}");
    }

    #[tokio::test]
    async fn refused_url_refuses() {
        let err = reqwest::get(refused_base_url()).await.unwrap_err();
        assert!(err.is_connect(), "{err:?}");
    }

    #[tokio::test]
    async fn hang_times_out_and_dropping_the_server_closes_it() {
        let server = ScriptedServer::start(vec![Reply::Hang, Reply::Hang]).await;
        let client = reqwest::Client::new();
        let url = server.base_url();
        let quick = client.post(&url).timeout(Duration::from_millis(200));
        assert!(quick.send().await.unwrap_err().is_timeout());

        let pending = tokio::spawn(client.post(&url).send());
        let two = server.wait_for_requests(2, Duration::from_secs(2)).await;
        assert!(two.is_ok());
        drop(server);
        let res = tokio::time::timeout(Duration::from_secs(2), pending).await;
        assert!(res
            .expect("drop must close hanging connections")
            .unwrap()
            .is_err());
    }
}

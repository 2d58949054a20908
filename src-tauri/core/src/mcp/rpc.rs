//! MCP's JSON-RPC, client side: requests matched to their answers by id, over a child's
//! stdin/stdout (one message per line) or streamable HTTP (each message POSTed; the answer a
//! JSON body or an event stream).
//!
//! What a server sends is bounded and checked: a message longer than [`MAX_MESSAGE`] ends the
//! connection with that reason; a line on stdout that is not JSON-RPC is skipped (servers print
//! logs there); its own requests get `ping` answered and anything else refused as unknown
//! (Mandate offers no sampling, roots or elicitation); an HTTP redirect is an error, never
//! followed with the server's headers. A request whose caller stops waiting (a time limit, a
//! cancel) is cancelled at the server with `notifications/cancelled`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;

/// The protocol version Mandate asks for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// The versions a server may answer with (it answers with another when it lacks ours).
const KNOWN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The longest message a server may send (a tool's result included).
pub const MAX_MESSAGE: usize = 32 << 20;
/// How much of an HTTP error body is quoted.
const QUOTED: usize = 300;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// The server answered with a JSON-RPC error.
    #[error("{message} (error {code})")]
    Refused { code: i64, message: String },
    /// The connection ended before the answer.
    #[error("the connection ended: {0}")]
    Closed(String),
    /// An HTTP exchange failed.
    #[error("{0}")]
    Transport(String),
    /// Answered, but not as MCP says.
    #[error("{0}")]
    Malformed(String),
}

type Answer = Result<Value, RpcError>;

/// A handle on a live connection, cheap to clone; its requests fail once it has ended.
#[derive(Clone)]
pub struct Peer {
    inner: Arc<Inner>,
}

struct Inner {
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Answer>>>,
    out: Outbound,
    closed: CancellationToken,
    why: Mutex<Option<String>>,
}

enum Outbound {
    /// Lines for the writer of a child's stdin.
    Lines(mpsc::UnboundedSender<Vec<u8>>),
    Http(Arc<Http>),
}

struct Http {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: reqwest::header::HeaderMap,
    session: Mutex<Option<reqwest::header::HeaderValue>>,
    version: Mutex<Option<reqwest::header::HeaderValue>>,
}

/// The connection itself: ended (its tasks stopped, an HTTP session deleted) when dropped.
pub struct Session {
    peer: Peer,
    tasks: Vec<JoinHandle<()>>,
}

impl Session {
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Resolves when the connection ends (the server closed its output, a write failed, an
    /// HTTP session was ended by the server).
    pub async fn waiting(&self) {
        self.peer.inner.closed.cancelled().await;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let inner = &self.peer.inner;
        let open = !inner.closed.is_cancelled();
        inner.close("Mandate closed it");
        for task in &self.tasks {
            task.abort();
        }
        if let (true, Outbound::Http(http)) = (open, &inner.out) {
            let session = lock(&http.session).clone();
            if let (Some(session), Ok(runtime)) = (session, tokio::runtime::Handle::try_current()) {
                let request = http
                    .client
                    .delete(http.url.clone())
                    .headers(http.headers.clone())
                    .header("mcp-session-id", session);
                runtime.spawn(async move {
                    let _ = request.send().await;
                });
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    fn new(out: Outbound) -> Arc<Self> {
        Arc::new(Self {
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            out,
            closed: CancellationToken::new(),
            why: Mutex::new(None),
        })
    }

    fn why(&self) -> String {
        lock(&self.why)
            .clone()
            .unwrap_or_else(|| "it is closed".into())
    }

    /// Ends the connection (the first reason is kept); every request waiting fails.
    fn close(&self, why: &str) {
        lock(&self.why).get_or_insert_with(|| why.to_string());
        self.closed.cancel();
        let waiting: Vec<_> = lock(&self.pending).drain().collect();
        let why = self.why();
        for (_, tx) in waiting {
            let _ = tx.send(Err(RpcError::Closed(why.clone())));
        }
    }

    fn answer(&self, id: u64, answer: Answer) {
        if let Some(tx) = lock(&self.pending).remove(&id) {
            let _ = tx.send(answer);
        }
    }

    fn is_pending(&self, id: u64) -> bool {
        lock(&self.pending).contains_key(&id)
    }

    /// Sends one message; over HTTP, the exchange runs in a task whose handle is returned.
    fn send(self: &Arc<Self>, message: &Value, id: Option<u64>) -> Option<AbortHandle> {
        let mut bytes = serde_json::to_vec(message).unwrap_or_default();
        match &self.out {
            Outbound::Lines(tx) => {
                bytes.push(b'\n');
                if tx.send(bytes).is_err() {
                    self.close("its input is closed");
                }
                None
            }
            Outbound::Http(http) => {
                let (inner, http) = (self.clone(), http.clone());
                let task = tokio::spawn(async move {
                    let outcome = exchange(&inner, &http, bytes, id).await;
                    if let Some(id) = id {
                        // Still unanswered after the exchange: the answer never came.
                        let e = outcome.err().unwrap_or_else(|| {
                            RpcError::Malformed(
                                "it answered the request without a JSON-RPC response".into(),
                            )
                        });
                        inner.answer(id, Err(e));
                    } else if let Err(e) = outcome {
                        tracing::debug!(error = %e, "MCP notification not delivered");
                    }
                });
                Some(task.abort_handle())
            }
        }
    }

    /// One message from the server: an answer, its own request, or a notification.
    fn dispatch(self: &Arc<Self>, message: Value) {
        let Value::Object(map) = message else {
            if let Value::Array(batch) = message {
                batch.into_iter().for_each(|m| self.dispatch(m));
            }
            return;
        };
        let method = map.get("method").and_then(Value::as_str);
        match (method, map.get("id")) {
            (Some(method), Some(id)) => {
                let reply = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                        "message": format!("Mandate does not offer `{}`", super::config::printable(method, 80))}})
                };
                self.send(&reply, None);
            }
            (None, Some(id)) => {
                let Some(id) = id.as_u64() else { return };
                self.answer(id, response(&map));
            }
            _ => {}
        }
    }
}

/// A JSON-RPC response as an answer.
fn response(map: &Map<String, Value>) -> Answer {
    if let Some(error) = map.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(RpcError::Refused {
            code,
            message: super::config::printable(message, 2000),
        });
    }
    match map.get("result") {
        Some(result @ Value::Object(_)) => Ok(result.clone()),
        Some(_) => Err(RpcError::Malformed("its result is not an object".into())),
        None => Err(RpcError::Malformed(
            "its answer has neither a result nor an error".into(),
        )),
    }
}

/// A request in flight: cancelled at the server if its caller stops waiting.
struct Outstanding {
    inner: Arc<Inner>,
    id: u64,
    exchange: Option<AbortHandle>,
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        if let Some(task) = &self.exchange {
            task.abort();
        }
        if lock(&self.inner.pending).remove(&self.id).is_some() && !self.inner.closed.is_cancelled()
        {
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": self.id, "reason": "the caller stopped waiting"}});
            if tokio::runtime::Handle::try_current().is_ok()
                || matches!(self.inner.out, Outbound::Lines(_))
            {
                self.inner.send(&cancel, None);
            }
        }
    }
}

impl Peer {
    /// Sends a request and waits for its answer (for ever: the caller bounds the wait).
    pub async fn request(&self, method: &str, params: Value) -> Answer {
        let inner = &self.inner;
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&inner.pending).insert(id, tx);
        if inner.closed.is_cancelled() {
            lock(&inner.pending).remove(&id);
            return Err(RpcError::Closed(inner.why()));
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut outstanding = Outstanding {
            inner: inner.clone(),
            id,
            exchange: None,
        };
        outstanding.exchange = inner.send(&message, Some(id));
        let answer = rx
            .await
            .unwrap_or_else(|_| Err(RpcError::Closed(inner.why())));
        outstanding.exchange = None;
        answer
    }

    /// Sends a notification; over HTTP, waits until it is delivered (or not: its failure is
    /// only logged), so that it arrives before the next request.
    async fn notify(&self, method: &str) {
        let message = json!({"jsonrpc": "2.0", "method": method});
        match &self.inner.out {
            Outbound::Lines(_) => {
                self.inner.send(&message, None);
            }
            Outbound::Http(http) => {
                let bytes = serde_json::to_vec(&message).unwrap_or_default();
                if let Err(e) = exchange(&self.inner, http, bytes, None).await {
                    tracing::debug!(error = %e, method, "MCP notification not delivered");
                }
            }
        }
    }

    /// One page of `tools/list`: the tools in their wire form, and the next page's cursor.
    pub async fn list_tools(
        &self,
        cursor: Option<String>,
    ) -> Result<(Vec<Value>, Option<String>), RpcError> {
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let mut page = self.request("tools/list", params).await?;
        let Some(Value::Array(tools)) = page.get_mut("tools").map(Value::take) else {
            return Err(RpcError::Malformed(
                "its tool list has no `tools` array".into(),
            ));
        };
        let next = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        Ok((tools, next))
    }

    /// `tools/call`: the result in its wire form.
    pub async fn call_tool(&self, name: &str, arguments: Map<String, Value>) -> Answer {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// `initialize`, then `notifications/initialized`.
    async fn initialize(&self) -> Result<(), RpcError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mandate", "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = self.request("initialize", params).await?;
        let version = answer
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::Malformed("its answer names no protocol version".into()))?;
        if !KNOWN_VERSIONS.contains(&version) {
            return Err(RpcError::Malformed(format!(
                "it speaks MCP version `{}`, which Mandate does not",
                super::config::printable(version, 40)
            )));
        }
        if let Outbound::Http(http) = &self.inner.out {
            *lock(&http.version) = reqwest::header::HeaderValue::from_str(version).ok();
        }
        self.notify("notifications/initialized").await;
        Ok(())
    }
}

/// Connects over a child's stdout (`read`) and stdin (`write`) and initializes.
pub async fn stdio<R, W>(read: R, write: W) -> Result<Session, RpcError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let inner = Inner::new(Outbound::Lines(tx));
    let tasks = vec![
        tokio::spawn(read_lines(inner.clone(), read)),
        tokio::spawn(write_lines(inner.clone(), rx, write)),
    ];
    let session = Session {
        peer: Peer { inner },
        tasks,
    };
    session.peer.initialize().await?;
    Ok(session)
}

/// Connects to a streamable HTTP endpoint with `headers` on every request, and initializes.
pub async fn http(url: &str, headers: reqwest::header::HeaderMap) -> Result<Session, RpcError> {
    let url = reqwest::Url::parse(url)
        .map_err(|e| RpcError::Transport(format!("its address is not a URL ({e})")))?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| RpcError::Transport(format!("no HTTP client: {e}")))?;
    let http = Arc::new(Http {
        client,
        url,
        headers,
        session: Mutex::new(None),
        version: Mutex::new(None),
    });
    let session = Session {
        peer: Peer {
            inner: Inner::new(Outbound::Http(http)),
        },
        tasks: Vec::new(),
    };
    session.peer.initialize().await?;
    Ok(session)
}

async fn write_lines<W: AsyncWrite + Unpin>(
    inner: Arc<Inner>,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    mut write: W,
) {
    loop {
        let line = tokio::select! {
            line = rx.recv() => line,
            () = inner.closed.cancelled() => None,
        };
        let Some(line) = line else { return };
        let written = async {
            write.write_all(&line).await?;
            write.flush().await
        };
        if let Err(e) = written.await {
            return inner.close(&format!("writing to it failed: {e}"));
        }
    }
}

async fn read_lines<R: AsyncRead + Unpin>(inner: Arc<Inner>, read: R) {
    let mut read = BufReader::with_capacity(64 * 1024, read);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut read, &mut line).await {
            Ok(0) => return inner.close("it closed its output"),
            Ok(_) => match serde_json::from_slice::<Value>(&line) {
                Ok(message) => inner.dispatch(message),
                Err(_) => tracing::debug!(
                    line = %String::from_utf8_lossy(&line[..line.len().min(200)]),
                    "not JSON-RPC on an MCP server's stdout; skipped"
                ),
            },
            Err(why) => return inner.close(&why),
        }
    }
}

/// One line (its newline included), at most [`MAX_MESSAGE`] bytes; 0 at the end.
async fn read_line<R: AsyncRead + Unpin>(
    read: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> Result<usize, String> {
    loop {
        let buf = read
            .fill_buf()
            .await
            .map_err(|e| format!("reading its output failed: {e}"))?;
        if buf.is_empty() {
            return Ok(line.len());
        }
        let (take, end) = match memchr::memchr(b'\n', buf) {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > MAX_MESSAGE + 1 {
            return Err(format!(
                "it sent a message longer than {} MiB",
                MAX_MESSAGE >> 20
            ));
        }
        line.extend_from_slice(&buf[..take]);
        read.consume(take);
        if end {
            return Ok(line.len());
        }
    }
}

/// POSTs one message and dispatches what the answer carries.
async fn exchange(
    inner: &Arc<Inner>,
    http: &Http,
    body: Vec<u8>,
    id: Option<u64>,
) -> Result<(), RpcError> {
    use reqwest::header::{ACCEPT, CONTENT_TYPE};
    let session = lock(&http.session).clone();
    let mut request = http
        .client
        .post(http.url.clone())
        .headers(http.headers.clone())
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(session) = &session {
        request = request.header("mcp-session-id", session.clone());
    }
    if let Some(version) = lock(&http.version).clone() {
        request = request.header("mcp-protocol-version", version);
    }
    let response = request
        .send()
        .await
        .map_err(|e| RpcError::Transport(format!("it could not be reached: {}", chain(&e))))?;
    if let Some(given) = response.headers().get("mcp-session-id") {
        lock(&http.session).get_or_insert_with(|| given.clone());
    }
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND && session.is_some() {
        inner.close("the server ended its session");
        return Err(RpcError::Closed(inner.why()));
    }
    if status == reqwest::StatusCode::ACCEPTED {
        return Ok(());
    }
    let media = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if status.is_redirection() {
        let to = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("?");
        return Err(RpcError::Transport(format!(
            "it answered HTTP {status}, a redirect to `{}` (not followed)",
            super::config::printable(to, 200)
        )));
    }
    if !status.is_success() {
        let body = bounded_body(response, QUOTED).await.unwrap_or_default();
        let quoted = super::config::printable(String::from_utf8_lossy(&body).trim(), QUOTED);
        return Err(RpcError::Transport(format!(
            "it answered HTTP {status}: {quoted}"
        )));
    }
    if media.starts_with("text/event-stream") {
        // A stream is an answer to a request; one opened for a notification is not read.
        return match id {
            Some(_) => events(inner, response, id).await,
            None => Ok(()),
        };
    }
    let body = bounded_body(response, MAX_MESSAGE)
        .await
        .map_err(RpcError::Transport)?;
    if body.iter().all(u8::is_ascii_whitespace) && id.is_none() {
        return Ok(());
    }
    let message = serde_json::from_slice(&body)
        .map_err(|e| RpcError::Malformed(format!("its answer ({media}) is not JSON ({e})")))?;
    inner.dispatch(message);
    Ok(())
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// A body read to its end, refused past `max` bytes (an error body is cut there instead).
async fn bounded_body(response: reqwest::Response, max: usize) -> Result<Vec<u8>, String> {
    let cut = max < MAX_MESSAGE;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(piece) = stream.next().await {
        let piece = piece.map_err(|e| format!("its answer was cut: {}", chain(&e)))?;
        if body.len() + piece.len() > max {
            if cut {
                body.extend_from_slice(&piece[..max - body.len()]);
                return Ok(body);
            }
            return Err(format!(
                "its answer is longer than {} MiB",
                MAX_MESSAGE >> 20
            ));
        }
        body.extend_from_slice(&piece);
    }
    Ok(body)
}

/// An event stream's messages, each dispatched; ends once `id` is answered.
async fn events(
    inner: &Arc<Inner>,
    response: reqwest::Response,
    id: Option<u64>,
) -> Result<(), RpcError> {
    let mut parser = SseParser::default();
    let mut stream = response.bytes_stream();
    while let Some(piece) = stream.next().await {
        let piece = piece
            .map_err(|e| RpcError::Transport(format!("its event stream was cut: {}", chain(&e))))?;
        for data in parser.feed(&piece).map_err(RpcError::Malformed)? {
            if let Ok(message) = serde_json::from_str::<Value>(&data) {
                inner.dispatch(message);
            }
        }
        if id.is_some_and(|id| !inner.is_pending(id)) {
            return Ok(());
        }
    }
    Ok(())
}

/// Server-sent events, reduced to the `data` of each event; no event may exceed [`MAX_MESSAGE`].
#[derive(Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let (take, end) = match memchr::memchr(b'\n', bytes) {
                Some(at) => (at, true),
                None => (bytes.len(), false),
            };
            if self.line.len() + take + self.data.len() > MAX_MESSAGE {
                return Err(format!(
                    "it sent an event longer than {} MiB",
                    MAX_MESSAGE >> 20
                ));
            }
            self.line.extend_from_slice(&bytes[..take]);
            bytes = &bytes[(take + usize::from(end)).min(bytes.len())..];
            if end {
                let line = std::mem::take(&mut self.line);
                self.line_done(&line, &mut out);
            }
        }
        Ok(out)
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<String>) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if std::mem::take(&mut self.has_data) {
                out.push(std::mem::take(&mut self.data));
            }
            return;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = text.split_once(':').unwrap_or((&text, ""));
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value.strip_prefix(' ').unwrap_or(value));
            self.has_data = true;
        }
    }
}

#[cfg(test)]
#[path = "rpc_tests.rs"]
mod tests;

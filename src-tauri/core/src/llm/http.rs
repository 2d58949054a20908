//! HTTP plumbing shared by both wire formats: one client, retries with backoff that honour
//! `retry-after`, status-to-error mapping with the provider's own message, a check that a
//! successful answer really is an event stream, and SSE decoding that stops a silent stream.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{stream, Stream, StreamExt};

use super::{backoff, LlmError};

/// How requests to the provider are retried, and how long one may wait for data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// How long the provider may send nothing (before its headers, or between two pieces of
    /// an answer) before the request is stopped. A slow local model may need more.
    pub stream_idle_timeout_secs: u64,
}

pub const DEFAULT_STREAM_IDLE_SECS: u64 = 120;

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            stream_idle_timeout_secs: DEFAULT_STREAM_IDLE_SECS,
        }
    }
}

impl RetryPolicy {
    /// The default policy, tunable with `MANDATE_RETRY_BASE_MS`, `MANDATE_MAX_RETRIES` and
    /// `MANDATE_STREAM_IDLE_SECS` (scripts, tests, slow local models).
    pub fn from_env() -> Self {
        let mut policy = Self::default();
        if let Some(ms) = env_u64("MANDATE_RETRY_BASE_MS") {
            policy.base_delay = Duration::from_millis(ms);
        }
        if let Some(n) = env_u64("MANDATE_MAX_RETRIES") {
            policy.max_retries = n.min(10) as u32;
        }
        if let Some(secs) = env_u64("MANDATE_STREAM_IDLE_SECS") {
            policy.stream_idle_timeout_secs = secs.clamp(1, 24 * 3600);
        }
        policy
    }

    pub(crate) fn idle(&self) -> Idle {
        Idle(self.stream_idle_timeout_secs.max(1))
    }
}

/// The silence allowed between two pieces of data from the provider, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Idle(u64);

impl Idle {
    fn duration(self) -> Duration {
        Duration::from_secs(self.0)
    }

    fn stalled(self) -> LlmError {
        LlmError::Stalled { seconds: self.0 }
    }

    /// Awaits `future` unless the provider stays silent for longer than allowed.
    pub(crate) async fn limit<T>(
        self,
        future: impl std::future::Future<Output = T>,
    ) -> Result<T, LlmError> {
        tokio::time::timeout(self.duration(), future)
            .await
            .map_err(|_| self.stalled())
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// One connection pool for the whole process. Streams can be long, so there is no total
/// timeout, only one on connecting; silence is limited per request (`Idle`), where the
/// error can say what happened.
pub(crate) fn client() -> reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(15))
                .user_agent(concat!("mandate/", env!("CARGO_PKG_VERSION")))
                .build()
                .unwrap_or_else(|_| reqwest::Client::new())
        })
        .clone()
}

/// Sends the request built by `build`, retrying 429 and 5xx answers. Returns a successful
/// response or the error the user should read.
pub(crate) async fn send_with_retries(
    build: impl Fn() -> reqwest::RequestBuilder,
    policy: &RetryPolicy,
    url: &str,
) -> Result<reqwest::Response, LlmError> {
    let idle = policy.idle();
    let mut attempt = 0u32;
    loop {
        let response = idle
            .limit(build().send())
            .await?
            .map_err(|e| transport_error(e, url))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let code = status.as_u16();
        let retryable = code == 429 || (500..600).contains(&code);
        let retry_after = retry_after(&response);
        let body = read_text(response, idle, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let message = error_message(&body, status);
        if retryable && attempt < policy.max_retries {
            let delay = retry_after
                .unwrap_or_else(|| backoff(policy, attempt))
                .min(policy.max_delay);
            tokio::time::sleep(delay).await;
            attempt += 1;
            continue;
        }
        if let Some(too_long) = super::context_error::from_status(code, &body, &message) {
            return Err(too_long);
        }
        return Err(match code {
            401 | 403 => LlmError::Unauthorized {
                status: code,
                message,
            },
            429 => LlmError::RateLimited {
                retries: attempt,
                message,
            },
            500..=599 => LlmError::Server {
                status: code,
                retries: attempt,
                message,
            },
            _ => LlmError::BadRequest {
                status: code,
                message,
            },
        });
    }
}

fn transport_error(error: reqwest::Error, url: &str) -> LlmError {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(s) = source {
        message = s.to_string();
        source = s.source();
    }
    LlmError::Connect {
        url: url.to_string(),
        message,
    }
}

/// `retry-after` in seconds or as an HTTP date.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs.min(3600.0)));
        }
    }
    let when =
        time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822).ok()?;
    let delta = when - time::OffsetDateTime::now_utc();
    Some(Duration::from_secs(
        delta.whole_seconds().clamp(0, 3600) as u64
    ))
}

/// The provider's own explanation from an error body, else the status text.
pub(crate) fn error_message(body: &str, status: reqwest::StatusCode) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let candidates = [
                v.pointer("/error/message"),
                v.pointer("/error"),
                v.pointer("/message"),
                v.pointer("/detail"),
            ];
            candidates
                .into_iter()
                .flatten()
                .find_map(|m| m.as_str().map(str::to_string))
        });
    let text = from_json.unwrap_or_else(|| {
        let trimmed = body.trim();
        if trimmed.is_empty() || trimmed.starts_with('<') {
            status
                .canonical_reason()
                .unwrap_or("unknown error")
                .to_string()
        } else {
            trimmed.to_string()
        }
    });
    crate::text::ellipsize(&text, 300).into_owned()
}

const MAX_ERROR_BODY: usize = 64 * 1024;
/// OpenRouter lists a few hundred models in ~1 MB; a list 16 times that is not a list.
pub(crate) const MAX_MODEL_LIST: usize = 16 << 20;

/// Why the body stopped: the transport failed, or the provider went silent.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("{0}")]
    Transport(reqwest::Error),
    #[error("no data for {0} s")]
    Stalled(u64),
}

/// The body's pieces, ending with `Stalled` when none arrives within the idle time.
fn idle_limited(
    response: reqwest::Response,
    idle: Idle,
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send {
    let body = Box::pin(response.bytes_stream());
    stream::unfold(Some(body), move |state| async move {
        let mut body = state?;
        match tokio::time::timeout(idle.duration(), body.next()).await {
            Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(body))),
            Ok(Some(Err(e))) => Some((Err(BodyError::Transport(e)), None)),
            Ok(None) => None,
            Err(_) => Some((Err(BodyError::Stalled(idle.0)), None)),
        }
    })
}

/// Reads a whole (small) body, each piece within the idle time, keeping at most `max` bytes.
pub(crate) async fn read_text(
    response: reqwest::Response,
    idle: Idle,
    max: usize,
) -> Result<String, LlmError> {
    let mut body = Box::pin(idle_limited(response, idle));
    let mut bytes = Vec::new();
    while let Some(piece) = body.next().await {
        let piece = piece.map_err(|e| body_error(e, idle))?;
        let room = max.saturating_sub(bytes.len());
        bytes.extend_from_slice(&piece[..piece.len().min(room)]);
        if bytes.len() >= max {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn body_error(e: BodyError, idle: Idle) -> LlmError {
    match e {
        BodyError::Stalled(_) => idle.stalled(),
        BodyError::Transport(e) => LlmError::StreamCut {
            message: e.to_string(),
        },
    }
}

/// What a 200 answer's content type says about its body.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Declared {
    EventStream,
    Missing,
    Other(String),
}

fn declared_type(response: &reqwest::Response) -> Declared {
    let Some(value) = response.headers().get(reqwest::header::CONTENT_TYPE) else {
        return Declared::Missing;
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    // `text/event-stream; charset=utf-8` is an event stream too.
    let media = text.split(';').next().unwrap_or_default().trim();
    if media.eq_ignore_ascii_case("text/event-stream") {
        Declared::EventStream
    } else if media.is_empty() {
        Declared::Missing
    } else {
        Declared::Other(media.to_ascii_lowercase())
    }
}

/// Whether a body starts like SSE: `Some` once the first bytes decide, `None` while too few
/// have arrived to tell.
fn starts_like_sse(start: &[u8]) -> Option<bool> {
    let rest = start.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(start);
    let first = rest.iter().position(|b| !matches!(b, b'\r' | b'\n'))?;
    let rest = &rest[first..];
    const FIELDS: [&[u8]; 5] = [b"data:", b"event:", b":", b"id:", b"retry:"];
    if FIELDS.iter().any(|f| rest.starts_with(f)) {
        return Some(true);
    }
    // A prefix of a field name (`da`) may still become one.
    let undecided = FIELDS
        .iter()
        .any(|f| f.len() > rest.len() && f.starts_with(rest));
    if undecided {
        None
    } else {
        Some(false)
    }
}

/// How much of a wrong body the error quotes.
const PREVIEW_BYTES: usize = 200;

/// The first bytes of a body as one line of text for an error message.
fn preview(start: &[u8]) -> String {
    let cut = start.len().min(PREVIEW_BYTES);
    let text = String::from_utf8_lossy(&start[..cut]);
    let mut line = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        // A backtick would end the quotation the message puts the text in.
        .map(|c| if c == '`' { '\'' } else { c })
        .collect::<String>();
    if start.len() > cut {
        line.push('…');
    }
    if line.is_empty() {
        "an empty body".into()
    } else {
        format!("`{line}`")
    }
}

/// A 200 answer as SSE events, after checking that it is an event stream: a page from a
/// captive portal or a wrong base URL, or a JSON answer, is named as such. A missing content
/// type is accepted when the body starts like SSE (some local servers omit it). Transport
/// faults become `StreamCut`, silence `Stalled`, bad framing `Malformed`.
pub(crate) async fn sse_events(
    response: reqwest::Response,
    policy: &RetryPolicy,
) -> Result<impl Stream<Item = Result<eventsource_stream::Event, LlmError>> + Send, LlmError> {
    let idle = policy.idle();
    let declared = declared_type(&response);
    let mut body = Box::pin(idle_limited(response, idle));
    let mut start: Vec<u8> = Vec::new();
    if declared != Declared::EventStream {
        // Read only what the decision (or the error's quotation) needs.
        loop {
            let enough = match declared {
                Declared::Missing => starts_like_sse(&start).is_some(),
                _ => start.len() > PREVIEW_BYTES,
            };
            if enough {
                break;
            }
            match body.next().await {
                Some(Ok(piece)) => start.extend_from_slice(&piece),
                Some(Err(BodyError::Stalled(_))) if !start.is_empty() => break,
                Some(Err(e)) => return Err(body_error(e, idle)),
                None => break,
            }
        }
        let is_sse = declared == Declared::Missing && starts_like_sse(&start) == Some(true);
        if !is_sse {
            let content_type = match declared {
                Declared::Other(media) => media,
                _ => "no content type".into(),
            };
            return Err(LlmError::NotAStream {
                content_type,
                body_start: preview(&start),
            });
        }
    }
    let replay = stream::iter((!start.is_empty()).then(|| Ok(Bytes::from(start))));
    Ok(replay.chain(body).eventsource().map(move |item| {
        item.map_err(|e| match e {
            EventStreamError::Transport(e) => body_error(e, idle),
            EventStreamError::Utf8(e) => LlmError::Malformed {
                message: format!("the stream is not valid UTF-8 ({e})"),
            },
            EventStreamError::Parser(e) => LlmError::Malformed {
                message: format!("bad SSE framing ({e})"),
            },
        })
    }))
}

/// Parses one SSE `data` payload as JSON, naming the problem when it is not.
pub(crate) fn parse_data(data: &str) -> Result<serde_json::Value, LlmError> {
    serde_json::from_str(data).map_err(|e| LlmError::Malformed {
        message: format!(
            "an event's data is not JSON ({e}): `{}`",
            crate::text::ellipsize(data, 80)
        ),
    })
}

/// How long a probe for a model's figures may take: they help, but never at the price of a wait.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Sends a probe once (no retries, a short timeout for the whole exchange) and returns its
/// JSON answer; any failure is `None`, since the caller goes on with what it knows.
pub(crate) async fn probe_json(request: reqwest::RequestBuilder) -> Option<serde_json::Value> {
    let response = request.timeout(PROBE_TIMEOUT).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let text = read_text(response, Idle(PROBE_TIMEOUT.as_secs()), MAX_MODEL_LIST)
        .await
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// A model's name as one piece of a URL path: kept as is where safe, `/` included (LM Studio
/// names models `publisher/model`), everything else percent-encoded.
pub(crate) fn path_part(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~:/@".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `scheme://host[:port]` of a base URL: where a local server keeps its own API.
pub(crate) fn origin(base: &str) -> Option<String> {
    let url = reqwest::Url::parse(base).ok()?;
    url.has_host().then(|| url.origin().ascii_serialization())
}

/// Joins a base URL and a path without doubling or dropping slashes.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;

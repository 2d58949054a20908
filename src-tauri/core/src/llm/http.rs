//! HTTP plumbing shared by both wire formats: one client, retries with backoff that honour
//! `retry-after`, status-to-error mapping with the provider's own message, and SSE decoding.

use std::sync::OnceLock;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};

use super::{backoff, LlmError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The default policy, tunable with `MANDATE_RETRY_BASE_MS` and `MANDATE_MAX_RETRIES`
    /// (scripts and tests that must not wait seconds between attempts).
    pub fn from_env() -> Self {
        let mut policy = Self::default();
        if let Some(ms) = env_u64("MANDATE_RETRY_BASE_MS") {
            policy.base_delay = Duration::from_millis(ms);
        }
        if let Some(n) = env_u64("MANDATE_MAX_RETRIES") {
            policy.max_retries = n.min(10) as u32;
        }
        policy
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// One connection pool for the whole process. Streams can be long, so there is no total
/// timeout, only one on connecting and one on silence between bytes.
pub(crate) fn client() -> reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(15))
                .read_timeout(Duration::from_secs(300))
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
    let mut attempt = 0u32;
    loop {
        let response = build().send().await.map_err(|e| transport_error(e, url))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let code = status.as_u16();
        let retryable = code == 429 || (500..600).contains(&code);
        let retry_after = retry_after(&response);
        let body = response.text().await.unwrap_or_default();
        let message = error_message(&body, status);
        if retryable && attempt < policy.max_retries {
            let delay = retry_after
                .unwrap_or_else(|| backoff(policy, attempt))
                .min(policy.max_delay);
            tokio::time::sleep(delay).await;
            attempt += 1;
            continue;
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
    truncate(&text, 300)
}

pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// The response body as SSE events; transport faults become `StreamCut`, bad framing `Malformed`.
pub(crate) fn sse_events(
    response: reqwest::Response,
) -> impl Stream<Item = Result<eventsource_stream::Event, LlmError>> + Send {
    response.bytes_stream().eventsource().map(|item| {
        item.map_err(|e| match e {
            EventStreamError::Transport(e) => LlmError::StreamCut {
                message: e.to_string(),
            },
            EventStreamError::Utf8(e) => LlmError::Malformed {
                message: format!("the stream is not valid UTF-8 ({e})"),
            },
            EventStreamError::Parser(e) => LlmError::Malformed {
                message: format!("bad SSE framing ({e})"),
            },
        })
    })
}

/// Parses one SSE `data` payload as JSON, naming the problem when it is not.
pub(crate) fn parse_data(data: &str) -> Result<serde_json::Value, LlmError> {
    serde_json::from_str(data).map_err(|e| LlmError::Malformed {
        message: format!(
            "an event's data is not JSON ({e}): `{}`",
            truncate(data, 80)
        ),
    })
}

/// Joins a base URL and a path without doubling or dropping slashes.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

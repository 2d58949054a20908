//! Model providers: one streaming trait, two wire formats (Anthropic Messages and OpenAI-compatible
//! Chat Completions), shared HTTP plumbing with retries, and the accumulator that turns a stream of
//! deltas into one assistant turn.

mod anthropic;
mod http;
mod openai;
mod pricing;

use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use anthropic::AnthropicProvider;
pub use http::RetryPolicy;
pub use openai::OpenAiProvider;

use crate::protocol::{ProviderKind, Usage};
use crate::secrets::Secret;

/// A tool as the model sees it: name, description and JSON schema of the arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// A tool call as the model made it; `arguments` is the raw JSON text, validated later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of the conversation kept for the API (provider-neutral).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    User {
        text: String,
    },
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
}

/// What a provider stream yields, already normalised across wire formats.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArgs {
        index: usize,
        delta: String,
    },
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        cost_usd: Option<f64>,
    },
    /// The model finished its turn (`stop_reason` as the provider names it).
    Finished {
        stop_reason: String,
    },
}

pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, LlmError>> + Send>>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("The provider rejected the API key ({status}): {message}. Check the key in Settings.")]
    Unauthorized { status: u16, message: String },
    #[error("The provider refused the request ({status}): {message}")]
    BadRequest { status: u16, message: String },
    #[error("The provider is rate-limiting requests (429) and still refused after {retries} retries: {message}. Wait a moment, then retry.")]
    RateLimited { retries: u32, message: String },
    #[error("The provider failed with HTTP {status} after {retries} retries: {message}")]
    Server {
        status: u16,
        retries: u32,
        message: String,
    },
    #[error("Could not connect to {url}: {message}. Is the provider running, and is the base URL right?")]
    Connect { url: String, message: String },
    #[error("The connection was cut before the answer was complete ({message}); the partial answer was not kept. Retry to ask again.")]
    StreamCut { message: String },
    #[error(
        "No data from the provider for {seconds} s; the request was stopped. Retry to ask again."
    )]
    Stalled { seconds: u64 },
    #[error("The provider answered with {content_type} instead of an event stream: {body_start}. Is the base URL right?")]
    NotAStream {
        /// The media type the answer declared, or "no content type".
        content_type: String,
        /// The body's first ~200 bytes as one quoted line, or "an empty body".
        body_start: String,
    },
    #[error("The provider sent a malformed stream: {message}")]
    Malformed { message: String },
    #[error("The provider reported an error mid-answer: {message}")]
    Provider { message: String },
    #[error("Stopped.")]
    Cancelled,
    #[error(
        "No API key is set for {provider}. Add one in Settings (it is kept in the system keyring)."
    )]
    MissingKey { provider: String },
}

/// Everything needed to build a provider client.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Secret>,
    pub retry: RetryPolicy,
}

#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// `provider/model`, as recorded in the trace ledger.
    fn model_id(&self) -> String;
    /// Starts a streaming request. Status errors (after retries) surface here; stream faults later.
    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, LlmError>;
    /// Models the provider lists, where it offers a list.
    async fn list_models(&self) -> Result<Vec<String>, LlmError>;
}

/// Builds the client for a configuration.
pub fn provider_for(config: ProviderConfig) -> Box<dyn Provider> {
    match config.kind {
        ProviderKind::Openai => Box::new(OpenAiProvider::new(config)),
        ProviderKind::Anthropic => Box::new(AnthropicProvider::new(config)),
    }
}

/// A finished assistant turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub stop_reason: String,
}

/// A turn that ended in an error, with what had arrived before it (never stored as complete).
#[derive(Debug, Clone, PartialEq)]
pub struct FailedTurn {
    pub error: LlmError,
    pub partial_text: String,
}

/// Drains a stream into one turn, calling `on_text` with each text delta. Stops on cancel.
pub async fn collect_turn(
    mut stream: ModelStream,
    cancel: &CancellationToken,
    mut on_text: impl FnMut(&str),
) -> Result<AssistantTurn, FailedTurn> {
    let mut turn = AssistantTurn::default();
    // Tool calls by stream index; some servers skip indices, so keep them sparse.
    let mut calls: Vec<(usize, ToolCall)> = Vec::new();
    let mut finished = false;
    let fail = |error: LlmError, text: &str| FailedTurn {
        error,
        partial_text: text.to_string(),
    };
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(fail(LlmError::Cancelled, &turn.text)),
            next = stream.next() => next,
        };
        let event = match next {
            None => break,
            Some(Err(e)) => return Err(fail(e, &turn.text)),
            Some(Ok(ev)) => ev,
        };
        match event {
            ModelEvent::TextDelta(delta) => {
                turn.text.push_str(&delta);
                on_text(&delta);
            }
            ModelEvent::ToolCallStart { index, id, name } => {
                match calls.iter_mut().find(|(i, _)| *i == index) {
                    Some((_, call)) => {
                        if !id.is_empty() {
                            call.id = id;
                        }
                        if !name.is_empty() {
                            call.name = name;
                        }
                    }
                    None => calls.push((
                        index,
                        ToolCall {
                            id,
                            name,
                            arguments: String::new(),
                        },
                    )),
                }
            }
            ModelEvent::ToolCallArgs { index, delta } => {
                match calls.iter_mut().find(|(i, _)| *i == index) {
                    Some((_, call)) => call.arguments.push_str(&delta),
                    None => {
                        return Err(fail(
                            LlmError::Malformed {
                                message: format!(
                                    "arguments arrived for tool call {index} before the call was announced"
                                ),
                            },
                            &turn.text,
                        ))
                    }
                }
            }
            ModelEvent::Usage {
                input_tokens,
                output_tokens,
                cost_usd,
            } => {
                // Providers report cumulative figures for the request; keep the largest seen.
                turn.usage.input_tokens = turn.usage.input_tokens.max(input_tokens);
                turn.usage.output_tokens = turn.usage.output_tokens.max(output_tokens);
                if cost_usd.is_some() {
                    turn.usage.cost_usd = cost_usd;
                }
            }
            ModelEvent::Finished { stop_reason } => {
                finished = true;
                turn.stop_reason = stop_reason;
            }
        }
    }
    if !finished {
        return Err(fail(
            LlmError::StreamCut {
                message: "the stream ended without a finish signal".into(),
            },
            &turn.text,
        ));
    }
    calls.sort_by_key(|(i, _)| *i);
    for (n, (_, mut call)) in calls.into_iter().enumerate() {
        if call.id.is_empty() {
            // Some local servers omit ids; the conversation still needs a stable one.
            call.id = format!("call_{n}_{}", uuid::Uuid::new_v4().simple());
        }
        turn.tool_calls.push(call);
    }
    Ok(turn)
}

/// Estimated cost for providers that do not report it, from a small price table.
pub fn estimate_cost(model: &str, input_tokens: u64, output_tokens: u64) -> Option<f64> {
    pricing::estimate(model, input_tokens, output_tokens)
}

/// Default delay before retry `attempt` (0-based): exponential, capped.
pub(crate) fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.min(16));
    policy
        .base_delay
        .saturating_mul(factor)
        .min(policy.max_delay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    fn boxed(events: Vec<Result<ModelEvent, LlmError>>) -> ModelStream {
        Box::pin(stream::iter(events))
    }

    #[tokio::test]
    async fn collects_text_and_interleaved_tool_calls() {
        let events = vec![
            Ok(ModelEvent::TextDelta("Hel".into())),
            Ok(ModelEvent::TextDelta("lo".into())),
            Ok(ModelEvent::ToolCallStart {
                index: 1,
                id: "b".into(),
                name: "list_files".into(),
            }),
            Ok(ModelEvent::ToolCallStart {
                index: 0,
                id: "a".into(),
                name: "read_file".into(),
            }),
            Ok(ModelEvent::ToolCallArgs {
                index: 0,
                delta: "{\"path\":".into(),
            }),
            Ok(ModelEvent::ToolCallArgs {
                index: 1,
                delta: "{}".into(),
            }),
            Ok(ModelEvent::ToolCallArgs {
                index: 0,
                delta: "\"a\"}".into(),
            }),
            Ok(ModelEvent::Finished {
                stop_reason: "tool_calls".into(),
            }),
        ];
        let mut seen = String::new();
        let turn = collect_turn(boxed(events), &CancellationToken::new(), |d| {
            seen.push_str(d)
        })
        .await
        .expect("turn");
        assert_eq!(seen, "Hello");
        assert_eq!(turn.tool_calls.len(), 2);
        assert_eq!(turn.tool_calls[0].arguments, "{\"path\":\"a\"}");
        assert_eq!(turn.tool_calls[1].name, "list_files");
    }

    #[tokio::test]
    async fn a_stream_without_finish_is_cut_and_keeps_partial_text_apart() {
        let events = vec![Ok(ModelEvent::TextDelta("half".into()))];
        let err = collect_turn(boxed(events), &CancellationToken::new(), |_| {})
            .await
            .expect_err("cut");
        assert!(matches!(err.error, LlmError::StreamCut { .. }));
        assert_eq!(err.partial_text, "half");
    }

    #[tokio::test]
    async fn cancel_stops_collecting() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let pending: ModelStream = Box::pin(stream::pending());
        let err = collect_turn(pending, &cancel, |_| {})
            .await
            .expect_err("cancelled");
        assert_eq!(err.error, LlmError::Cancelled);
    }
}

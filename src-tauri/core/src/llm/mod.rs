//! Model providers: one streaming trait, two wire formats (Anthropic Messages and OpenAI-compatible
//! Chat Completions), shared HTTP plumbing with retries, and the accumulator that turns a stream of
//! deltas into one assistant turn.

mod anthropic;
mod context_error;
mod http;
mod model_info;
mod openai;
mod pricing;
mod vision;

use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use anthropic::AnthropicProvider;
pub(crate) use http::client as http_client;
pub use http::RetryPolicy;
pub use openai::OpenAiProvider;
pub use vision::accepts_images_by_name;

use crate::protocol::ProviderKind;
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
        /// Images the person attached, re-encoded by the host (see `images`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageData>,
    },
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
        /// The model's reasoning before this answer (Anthropic's thinking blocks, with their
        /// signatures, sent back unchanged inside a tool loop). Never written to the ledger.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thinking: Vec<ThinkingBlock>,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

impl ChatMessage {
    /// A user-role message of text alone.
    pub fn user(text: impl Into<String>) -> Self {
        ChatMessage::User {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// An image in the conversation, as the host re-encoded it: base64 of its bytes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageData {
    /// `image/png` or `image/jpeg`.
    pub media_type: String,
    pub data: String,
    pub width: u32,
    pub height: u32,
}

impl std::fmt::Debug for ImageData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ImageData({} {}×{}, {} base64 bytes)",
            self.media_type,
            self.width,
            self.height,
            self.data.len()
        )
    }
}

impl ImageData {
    /// What the image costs in the window, as the providers count it (about one token per
    /// 750 pixels; never less than a small image's 85).
    pub fn tokens(&self) -> u64 {
        (u64::from(self.width) * u64::from(self.height))
            .div_ceil(750)
            .max(85)
    }

    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }
}

/// One block of the model's reasoning, kept as the provider sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThinkingBlock {
    /// Readable reasoning; Anthropic signs it, and the signature must go back unchanged.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted: opaque, sent back as it came.
    Redacted { data: String },
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    /// The most the answer may use (reasoning models: `max_completion_tokens`).
    pub max_tokens: u32,
    /// Anthropic extended thinking: the budget in tokens (below `max_tokens`); None is off.
    pub thinking_budget: Option<u32>,
    /// OpenAI reasoning models: `low`, `medium` or `high`; None leaves the provider's default.
    pub reasoning_effort: Option<String>,
    /// Place prompt-cache breakpoints (Anthropic `cache_control`).
    pub cache: bool,
    /// The tools are sent (so the prompt's prefix stays the cached one) but may not be called:
    /// `tool_choice: none`.
    pub forbid_tools: bool,
    /// The window the request must fit. Not sent on either wire: Ollama's OpenAI-compatible
    /// endpoint ignores `options.num_ctx`, so its window is read by `model_info` instead.
    pub context_window: Option<u64>,
}

/// Tokens of one request as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TokenUsage {
    /// Input tokens billed at the full price (not read from or written to a cache).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic).
    pub cache_write_tokens: u64,
    /// What the provider says the request cost, or the price table's estimate.
    pub cost_usd: Option<f64>,
}

impl TokenUsage {
    /// Everything the request put in the window: input of every kind and the answer.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens + self.output_tokens
    }
}

/// What a provider says of a model, where it can say (each field None when it cannot).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub context_window: Option<u64>,
    pub max_output: Option<u64>,
    /// Where the figures came from (`openrouter`, `vllm`, `lmstudio`, `ollama`, …).
    pub source: String,
    /// The server is Ollama, which cuts an over-long prompt silently instead of refusing it;
    /// `context_window` is then the window it runs the model with, not the model's maximum.
    pub ollama: bool,
    /// Whether the model reads images, where the server says (see `vision`).
    #[serde(default)]
    pub images: Option<bool>,
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
    Usage(TokenUsage),
    /// Reasoning text of block `index` (Anthropic `thinking_delta`; OpenAI-compatible
    /// `reasoning_content` / `reasoning`).
    ThinkingDelta {
        index: usize,
        text: String,
    },
    /// The signature that closes thinking block `index`.
    ThinkingSignature {
        index: usize,
        signature: String,
    },
    /// An encrypted thinking block, whole.
    RedactedThinking {
        index: usize,
        data: String,
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
    /// The request did not fit the model's context window (400 with the provider's wording,
    /// or 413). `limit` is the window the error names, where it names one.
    #[error("The conversation is too long for the model's context window ({status}): {message}")]
    ContextTooLong {
        status: u16,
        limit: Option<u64>,
        requested: Option<u64>,
        message: String,
    },
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
    /// The base URL requests go to (windows learned from errors are kept per origin).
    fn base_url(&self) -> String {
        String::new()
    }
    /// Starts a streaming request. Status errors (after retries) surface here; stream faults later.
    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, LlmError>;
    /// Models the provider lists, where it offers a list.
    async fn list_models(&self) -> Result<Vec<String>, LlmError>;
    /// What the provider says of this model's window and output limit (nothing, by default).
    async fn model_info(&self) -> ModelInfo {
        ModelInfo::default()
    }
    /// The same provider (host, key, retries) for another model; None where it cannot say.
    fn with_model(&self, _model: &str) -> Option<Box<dyn Provider>> {
        None
    }
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
    pub thinking: Vec<ThinkingBlock>,
    pub usage: TokenUsage,
    pub stop_reason: String,
}

impl AssistantTurn {
    /// The answer was cut at the output limit (`max_tokens` / `length`).
    pub fn cut_at_output_limit(&self) -> bool {
        matches!(self.stop_reason.as_str(), "max_tokens" | "length")
    }
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
    let mut thinking: Vec<(usize, ThinkingBlock)> = Vec::new();
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
            ModelEvent::Usage(u) => {
                // Providers report cumulative figures for the request; keep the largest seen.
                let t = &mut turn.usage;
                t.input_tokens = t.input_tokens.max(u.input_tokens);
                t.output_tokens = t.output_tokens.max(u.output_tokens);
                t.cache_read_tokens = t.cache_read_tokens.max(u.cache_read_tokens);
                t.cache_write_tokens = t.cache_write_tokens.max(u.cache_write_tokens);
                if u.cost_usd.is_some() {
                    t.cost_usd = u.cost_usd;
                }
            }
            ModelEvent::ThinkingDelta { index, text } => {
                match thinking.iter_mut().find(|(i, _)| *i == index) {
                    Some((_, ThinkingBlock::Thinking { text: t, .. })) => t.push_str(&text),
                    Some(_) => {}
                    None => thinking.push((
                        index,
                        ThinkingBlock::Thinking {
                            text,
                            signature: None,
                        },
                    )),
                }
            }
            ModelEvent::ThinkingSignature { index, signature } => {
                match thinking.iter_mut().find(|(i, _)| *i == index) {
                    Some((_, ThinkingBlock::Thinking { signature: s, .. })) => *s = Some(signature),
                    Some(_) => {}
                    None => thinking.push((
                        index,
                        ThinkingBlock::Thinking {
                            text: String::new(),
                            signature: Some(signature),
                        },
                    )),
                }
            }
            ModelEvent::RedactedThinking { index, data } => {
                thinking.push((index, ThinkingBlock::Redacted { data }));
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
    thinking.sort_by_key(|(i, _)| *i);
    turn.thinking = thinking.into_iter().map(|(_, b)| b).collect();
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

/// Estimated cost for providers that do not report it, from the price table.
pub fn estimate_cost(model: &str, usage: &TokenUsage) -> Option<f64> {
    pricing::estimate(model, usage)
}

pub use pricing::{cache_savings, model_facts, set_overrides as set_price_overrides, ModelFacts};

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

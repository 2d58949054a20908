//! Anthropic Messages API with streaming: `base_url` is the host root; requests go to `/v1/messages`.

use futures_util::{future, stream, StreamExt};
use serde_json::{json, Value};

use super::http::{
    client, join_url, parse_data, path_part, probe_json, read_text, send_with_retries, sse_events,
    MAX_MODEL_LIST,
};
use super::{
    context_error, estimate_cost, model_info, ChatMessage, LlmError, ModelEvent, ModelInfo,
    ModelRequest, ModelStream, Provider, ProviderConfig, ThinkingBlock, TokenUsage,
};

const API_VERSION: &str = "2023-06-01";

pub struct AnthropicProvider {
    config: ProviderConfig,
}

impl AnthropicProvider {
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }

    fn headers(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = builder.header("anthropic-version", API_VERSION);
        match &self.config.api_key {
            Some(key) => builder.header("x-api-key", key.expose()),
            None => builder,
        }
    }
}

/// The conversation as Anthropic wants it: strictly alternating roles, tool results as
/// `tool_result` blocks in the next user message, thinking blocks first in an assistant turn
/// (only while thinking is on), and cache breakpoints when asked for.
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Value {
    let thinking_on = request.thinking_budget.is_some();
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, block: Value| {
        if let Some(last) = messages.last_mut() {
            if last["role"] == role {
                if let Some(content) = last.get_mut("content").and_then(Value::as_array_mut) {
                    content.push(block);
                    return;
                }
            }
        }
        messages.push(json!({"role": role, "content": [block]}));
    };
    for message in &request.messages {
        match message {
            ChatMessage::User { text, images } => {
                // Images first, then the words about them (as Anthropic advises).
                for image in images {
                    push(
                        "user",
                        json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}),
                    );
                }
                push("user", json!({"type": "text", "text": text}));
            }
            ChatMessage::Assistant {
                text,
                tool_calls,
                thinking,
            } => {
                // Within a tool loop the API wants the turn's reasoning back, signed and
                // unchanged; without the thinking parameter it has no use for it.
                if thinking_on {
                    for block in thinking.iter().filter_map(thinking_block) {
                        push("assistant", block);
                    }
                }
                if !text.is_empty() {
                    push("assistant", json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    // The model's arguments were validated before they were kept; fall back to
                    // an empty object so the history stays well-formed either way.
                    let input: Value =
                        serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
                    let input = if input.is_object() { input } else { json!({}) };
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                    );
                }
                if text.is_empty() && tool_calls.is_empty() {
                    push("assistant", json!({"type": "text", "text": "(no answer)"}));
                }
            }
            ChatMessage::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}),
            ),
        }
    }
    // An empty text block is refused, with or without a breakpoint on it.
    let system = if request.cache && !request.system.is_empty() {
        json!([{"type": "text", "text": request.system, "cache_control": ephemeral()}])
    } else {
        json!(request.system)
    };
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "system": system,
        "messages": messages,
        "stream": true,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if request.forbid_tools {
            body["tool_choice"] = json!({"type": "none"});
        }
    }
    if let Some(budget) = request.thinking_budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    if request.cache {
        place_cache_breakpoints(&mut body, !request.forbid_tools);
    }
    body
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// A kept thinking block as the API wants it back. Reasoning without a signature (from another
/// provider's model) would be refused, so it is left out.
fn thinking_block(block: &ThinkingBlock) -> Option<Value> {
    match block {
        ThinkingBlock::Thinking {
            text,
            signature: Some(signature),
        } if !signature.is_empty() => {
            Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
        }
        ThinkingBlock::Thinking { .. } => None,
        ThinkingBlock::Redacted { data } => {
            Some(json!({"type": "redacted_thinking", "data": data}))
        }
    }
}

/// The breakpoints besides the system prompt's (four at most in all): the last tool, the end of
/// the previous turn (so this request reads what the last one wrote) and the newest block (so
/// the next request can read this one).
/// `with_tail`: also the newest block (not for a summary: nothing after it is asked again).
fn place_cache_breakpoints(body: &mut Value, with_tail: bool) {
    if let Some(last_tool) = body
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .and_then(|tools| tools.last_mut())
    {
        last_tool["cache_control"] = ephemeral();
    }
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "user")
        .map(|(i, _)| i)
        .collect();
    let last = messages.len().checked_sub(1);
    let tail = last.filter(|_| with_tail);
    let previous = users
        .len()
        .checked_sub(2)
        .and_then(|i| users.get(i).copied())
        .filter(|i| Some(*i) != last);
    for at in [previous, tail].into_iter().flatten() {
        let last_block = messages
            .get_mut(at)
            .and_then(|m| m.get_mut("content"))
            .and_then(Value::as_array_mut)
            .and_then(|content| content.last_mut());
        if let Some(block) = last_block {
            block["cache_control"] = ephemeral();
        }
    }
}

#[derive(Default)]
struct EventDecoder {
    done: bool,
    usage: TokenUsage,
    stop_reason: Option<String>,
    model: String,
}

impl EventDecoder {
    fn decode(
        &mut self,
        item: Result<eventsource_stream::Event, LlmError>,
    ) -> Option<Vec<Result<ModelEvent, LlmError>>> {
        if self.done {
            return None;
        }
        let event = match item {
            Ok(e) => e,
            Err(e) => {
                self.done = true;
                return Some(vec![Err(e)]);
            }
        };
        if event.data.trim().is_empty() {
            return Some(Vec::new());
        }
        let data = match parse_data(&event.data) {
            Ok(v) => v,
            Err(e) => {
                self.done = true;
                return Some(vec![Err(e)]);
            }
        };
        // The event name is repeated as `type` in the data; trust the data when both exist.
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str())
            .to_string();
        Some(self.event(&kind, &data))
    }

    fn event(&mut self, kind: &str, data: &Value) -> Vec<Result<ModelEvent, LlmError>> {
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.read_usage(usage);
                }
                Vec::new()
            }
            "content_block_start" => block_start(data).into_iter().map(Ok).collect(),
            "content_block_delta" => block_delta(data).into_iter().map(Ok).collect(),
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = data.get("usage") {
                    self.read_usage(usage);
                }
                Vec::new()
            }
            "message_stop" => self.message_stop(),
            "error" => {
                self.done = true;
                vec![Err(stream_error(data))]
            }
            // ping, content_block_stop and event types added later are ignored
            _ => Vec::new(),
        }
    }

    /// Token counts from `message_start` or `message_delta`. The figures are cumulative, so a
    /// later one replaces an earlier one; a missing field keeps what was known.
    fn read_usage(&mut self, usage: &Value) {
        let field = |key: &str| usage.get(key).and_then(Value::as_u64);
        let u = &mut self.usage;
        if let Some(n) = field("input_tokens") {
            u.input_tokens = u.input_tokens.max(n);
        }
        if let Some(n) = field("cache_creation_input_tokens") {
            u.cache_write_tokens = u.cache_write_tokens.max(n);
        }
        if let Some(n) = field("cache_read_input_tokens") {
            u.cache_read_tokens = u.cache_read_tokens.max(n);
        }
        if let Some(n) = field("output_tokens") {
            u.output_tokens = n;
        }
    }

    fn message_stop(&mut self) -> Vec<Result<ModelEvent, LlmError>> {
        self.done = true;
        let mut usage = self.usage;
        usage.cost_usd = estimate_cost(&self.model, &usage);
        vec![
            Ok(ModelEvent::Usage(usage)),
            Ok(ModelEvent::Finished {
                stop_reason: self
                    .stop_reason
                    .clone()
                    .unwrap_or_else(|| "end_turn".into()),
            }),
        ]
    }
}

/// The start of a content block: a tool call, text or reasoning that may already hold some
/// words, or a whole encrypted reasoning block.
fn block_start(data: &Value) -> Vec<ModelEvent> {
    let index = block_index(data);
    let block = data.get("content_block").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    match block.get("type").and_then(Value::as_str) {
        Some("tool_use") => out.push(ModelEvent::ToolCallStart {
            index,
            id: str_at(block, "id"),
            name: str_at(block, "name"),
        }),
        Some("text") => {
            let text = str_at(block, "text");
            if !text.is_empty() {
                out.push(ModelEvent::TextDelta(text));
            }
        }
        Some("thinking") => {
            let text = str_at(block, "thinking");
            if !text.is_empty() {
                out.push(ModelEvent::ThinkingDelta { index, text });
            }
            let signature = str_at(block, "signature");
            if !signature.is_empty() {
                out.push(ModelEvent::ThinkingSignature { index, signature });
            }
        }
        Some("redacted_thinking") => out.push(ModelEvent::RedactedThinking {
            index,
            data: str_at(block, "data"),
        }),
        _ => {}
    }
    out
}

fn block_delta(data: &Value) -> Option<ModelEvent> {
    let index = block_index(data);
    let delta = data.get("delta").unwrap_or(&Value::Null);
    match delta.get("type").and_then(Value::as_str) {
        Some("text_delta") => Some(ModelEvent::TextDelta(str_at(delta, "text"))),
        Some("input_json_delta") => {
            let partial = str_at(delta, "partial_json");
            (!partial.is_empty()).then_some(ModelEvent::ToolCallArgs {
                index,
                delta: partial,
            })
        }
        Some("thinking_delta") => {
            let text = str_at(delta, "thinking");
            (!text.is_empty()).then_some(ModelEvent::ThinkingDelta { index, text })
        }
        Some("signature_delta") => {
            let signature = str_at(delta, "signature");
            (!signature.is_empty()).then_some(ModelEvent::ThinkingSignature { index, signature })
        }
        _ => None,
    }
}

/// A content block's index; one too large for this machine is clamped, not trusted to wrap.
fn block_index(data: &Value) -> usize {
    data.get("index")
        .and_then(Value::as_u64)
        .map_or(0, |i| usize::try_from(i).unwrap_or(usize::MAX))
}

/// An `error` event in the stream (an overload, for one), as the provider named it; a prompt
/// that turned out too long is told apart so the caller can condense and retry.
fn stream_error(data: &Value) -> LlmError {
    let error = data.get("error").unwrap_or(data);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("unknown error");
    let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
    let message = format!("{kind}: {message}");
    context_error::from_stream_error(error, &message).unwrap_or(LlmError::Provider { message })
}

fn str_at(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[async_trait::async_trait]
impl Provider for AnthropicProvider {
    fn model_id(&self) -> String {
        format!("anthropic/{}", self.config.model)
    }

    fn with_model(&self, model: &str) -> Option<Box<dyn Provider>> {
        let mut config = self.config.clone();
        config.model = model.to_string();
        Some(Box::new(Self::new(config)))
    }

    fn base_url(&self) -> String {
        self.config.base_url.clone()
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, LlmError> {
        if self.config.api_key.is_none() {
            return Err(LlmError::MissingKey {
                provider: "Anthropic".into(),
            });
        }
        let url = join_url(&self.config.base_url, "v1/messages");
        let body = request_body(&self.config.model, request);
        let http = client();
        let response = send_with_retries(
            || self.headers(http.post(&url).json(&body)),
            &self.config.retry,
            &url,
        )
        .await?;
        let decoder = EventDecoder {
            model: self.config.model.clone(),
            ..EventDecoder::default()
        };
        let events = sse_events(response, &self.config.retry)
            .await?
            .scan(decoder, |decoder, item| future::ready(decoder.decode(item)))
            .flat_map(stream::iter);
        Ok(Box::pin(events))
    }

    /// `max_input_tokens` and `max_tokens` from the Models API, where it returns them.
    async fn model_info(&self) -> ModelInfo {
        if self.config.api_key.is_none() {
            return ModelInfo::default();
        }
        let path = format!("v1/models/{}", path_part(&self.config.model));
        let url = join_url(&self.config.base_url, &path);
        match probe_json(self.headers(client().get(&url))).await {
            Some(model) => model_info::window_from_anthropic(&model),
            None => ModelInfo::default(),
        }
    }

    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        let url = join_url(&self.config.base_url, "v1/models");
        let http = client();
        let response =
            send_with_retries(|| self.headers(http.get(&url)), &self.config.retry, &url).await?;
        let text = read_text(response, self.config.retry.idle(), MAX_MODEL_LIST).await?;
        let value: Value = serde_json::from_str(&text).map_err(|e| LlmError::Malformed {
            message: format!("the model list is not JSON ({e})"),
        })?;
        Ok(value
            .get("data")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default())
    }
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;

//! Anthropic Messages API with streaming: `base_url` is the host root; requests go to `/v1/messages`.

use futures_util::{future, stream, StreamExt};
use serde_json::{json, Value};

use super::http::{
    client, join_url, parse_data, read_text, send_with_retries, sse_events, MAX_MODEL_LIST,
};
use super::{
    estimate_cost, ChatMessage, LlmError, ModelEvent, ModelRequest, ModelStream, Provider,
    ProviderConfig, TokenUsage,
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
/// `tool_result` blocks in the next user message.
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, block: Value| {
        if let Some(last) = messages.last_mut() {
            if last["role"] == role {
                if let Some(content) = last["content"].as_array_mut() {
                    content.push(block);
                    return;
                }
            }
        }
        messages.push(json!({"role": role, "content": [block]}));
    };
    for message in &request.messages {
        match message {
            ChatMessage::User { text } => push("user", json!({"type": "text", "text": text})),
            ChatMessage::Assistant {
                text, tool_calls, ..
            } => {
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
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "system": request.system,
        "messages": messages,
        "stream": true,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

#[derive(Default)]
struct EventDecoder {
    done: bool,
    input_tokens: u64,
    output_tokens: u64,
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
                self.message_start(data);
                Vec::new()
            }
            "content_block_start" => block_start(data).into_iter().map(Ok).collect(),
            "content_block_delta" => block_delta(data).into_iter().map(Ok).collect(),
            "message_delta" => {
                self.message_delta(data);
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

    fn message_start(&mut self, data: &Value) {
        self.input_tokens = data
            .pointer("/message/usage/input_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        self.output_tokens = data
            .pointer("/message/usage/output_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
    }

    fn message_delta(&mut self, data: &Value) {
        if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
            self.stop_reason = Some(reason.to_string());
        }
        if let Some(n) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
            self.output_tokens = n;
        }
        if let Some(n) = data.pointer("/usage/input_tokens").and_then(Value::as_u64) {
            self.input_tokens = self.input_tokens.max(n);
        }
    }

    fn message_stop(&mut self) -> Vec<Result<ModelEvent, LlmError>> {
        self.done = true;
        vec![
            Ok(ModelEvent::Usage({
                let mut usage = TokenUsage {
                    input_tokens: self.input_tokens,
                    output_tokens: self.output_tokens,
                    ..TokenUsage::default()
                };
                usage.cost_usd = estimate_cost(&self.model, &usage);
                usage
            })),
            Ok(ModelEvent::Finished {
                stop_reason: self
                    .stop_reason
                    .clone()
                    .unwrap_or_else(|| "end_turn".into()),
            }),
        ]
    }
}

/// The start of a content block: a tool call, or text that may already hold some words.
fn block_start(data: &Value) -> Option<ModelEvent> {
    let index = data.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
    let block = data.get("content_block").unwrap_or(&Value::Null);
    match block.get("type").and_then(Value::as_str) {
        Some("tool_use") => Some(ModelEvent::ToolCallStart {
            index,
            id: str_at(block, "id"),
            name: str_at(block, "name"),
        }),
        Some("text") => {
            let text = str_at(block, "text");
            (!text.is_empty()).then_some(ModelEvent::TextDelta(text))
        }
        _ => None,
    }
}

fn block_delta(data: &Value) -> Option<ModelEvent> {
    let index = data.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
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
        // thinking and signature deltas are not shown
        _ => None,
    }
}

/// An `error` event in the stream (an overload, for one), as the provider named it.
fn stream_error(data: &Value) -> LlmError {
    let message = data
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("unknown error");
    let kind = data
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("error");
    LlmError::Provider {
        message: format!("{kind}: {message}"),
    }
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
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn ev(name: &str, data: &str) -> Result<eventsource_stream::Event, LlmError> {
        Ok(eventsource_stream::Event {
            event: name.into(),
            data: data.into(),
            ..Default::default()
        })
    }

    #[test]
    fn decodes_text_tool_use_and_usage() {
        let mut d = EventDecoder::default();
        let mut all = Vec::new();
        for (name, data) in [
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"a\"}"}}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ] {
            all.extend(d.decode(ev(name, data)).expect("open"));
        }
        let all: Vec<ModelEvent> = all.into_iter().map(|e| e.expect("ok")).collect();
        assert_eq!(all.len(), 5);
        assert_eq!(all[0], ModelEvent::TextDelta("Hi".into()));
        assert_eq!(
            all[4],
            ModelEvent::Finished {
                stop_reason: "tool_use".into()
            }
        );
        assert!(matches!(
            all[3],
            ModelEvent::Usage(TokenUsage {
                input_tokens: 12,
                output_tokens: 30,
                ..
            })
        ));
    }

    #[test]
    fn error_event_becomes_a_provider_error() {
        let mut d = EventDecoder::default();
        let out = d
            .decode(ev(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ))
            .expect("item");
        assert!(
            matches!(out.as_slice(), [Err(LlmError::Provider { message })] if message == "overloaded_error: Overloaded")
        );
    }

    #[test]
    fn tool_results_merge_into_one_user_message() {
        let request = ModelRequest {
            system: "s".into(),
            messages: vec![
                ChatMessage::User { text: "go".into() },
                ChatMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall {
                            id: "a".into(),
                            name: "x".into(),
                            arguments: "{}".into(),
                        },
                        ToolCall {
                            id: "b".into(),
                            name: "y".into(),
                            arguments: "{}".into(),
                        },
                    ],
                    thinking: vec![],
                },
                ChatMessage::ToolResult {
                    call_id: "a".into(),
                    name: "x".into(),
                    content: "1".into(),
                    is_error: false,
                },
                ChatMessage::ToolResult {
                    call_id: "b".into(),
                    name: "y".into(),
                    content: "2".into(),
                    is_error: true,
                },
            ],
            tools: vec![],
            max_tokens: 100,
            ..ModelRequest::default()
        };
        let body = request_body("m", &request);
        let messages = body["messages"].as_array().expect("array");
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[2]["content"].as_array().map(Vec::len), Some(2));
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    }
}

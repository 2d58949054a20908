//! OpenAI-compatible Chat Completions with streaming (OpenAI, OpenRouter, Ollama, LM Studio,
//! llama.cpp, vLLM): `base_url` is documented up to and including `/v1`.

use futures_util::{future, stream, StreamExt};
use serde_json::{json, Value};

use super::http::{
    client, error_message, join_url, parse_data, read_text, send_with_retries, sse_events,
    MAX_MODEL_LIST,
};
use super::{
    estimate_cost, ChatMessage, LlmError, ModelEvent, ModelRequest, ModelStream, Provider,
    ProviderConfig, TokenUsage,
};

pub struct OpenAiProvider {
    config: ProviderConfig,
}

impl OpenAiProvider {
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }

    fn authorized(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.config.api_key {
            // Local servers (Ollama, llama.cpp) need no key; send none rather than an empty one.
            Some(key) if !key.expose().is_empty() => builder.bearer_auth(key.expose()),
            _ => builder,
        }
    }
}

/// The request body in the Chat Completions format.
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for message in &request.messages {
        messages.push(match message {
            ChatMessage::User { text } => json!({"role": "user", "content": text}),
            ChatMessage::Assistant { text, tool_calls, .. } => {
                let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                        .collect();
                }
                m
            }
            ChatMessage::ToolResult {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": request.max_tokens,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    body
}

/// Decodes chunk after chunk; remembers whether a finish reason was seen.
#[derive(Default)]
struct ChunkDecoder {
    done: bool,
    finished: bool,
    model: String,
}

impl ChunkDecoder {
    /// `None` ends the stream (after `[DONE]` or an error).
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
        let data = event.data.trim();
        if data.is_empty() {
            return Some(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            // Some servers end with [DONE] alone; that is a normal end of the answer.
            return Some(if self.finished {
                Vec::new()
            } else {
                vec![Ok(ModelEvent::Finished {
                    stop_reason: "stop".into(),
                })]
            });
        }
        let chunk = match parse_data(data) {
            Ok(v) => v,
            Err(e) => {
                self.done = true;
                return Some(vec![Err(e)]);
            }
        };
        if let Some(error) = chunk.get("error") {
            self.done = true;
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            return Some(vec![Err(LlmError::Provider { message })]);
        }
        let mut out = Vec::new();
        if let Some(choice) = chunk.pointer("/choices/0") {
            self.choice(choice, &mut out);
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            out.push(Ok(self.usage(usage)));
        }
        Some(out)
    }

    /// The text, the pieces of tool calls and the finish reason in the first choice.
    fn choice(&mut self, choice: &Value, out: &mut Vec<Result<ModelEvent, LlmError>>) {
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                out.push(Ok(ModelEvent::TextDelta(text.to_string())));
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                tool_call_delta(call, position, out);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finished = true;
            out.push(Ok(ModelEvent::Finished {
                stop_reason: reason.to_string(),
            }));
        }
    }

    /// The tokens of the answer, and its cost as the server reports it or as estimated.
    fn usage(&self, usage: &Value) -> ModelEvent {
        let input = usage
            .get("prompt_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let output = usage
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let mut tokens = TokenUsage {
            input_tokens: input,
            output_tokens: output,
            ..TokenUsage::default()
        };
        tokens.cost_usd = usage
            .get("cost")
            .and_then(Value::as_f64)
            .or_else(|| estimate_cost(&self.model, &tokens));
        ModelEvent::Usage(tokens)
    }
}

/// One piece of a tool call: its start (when it names an id or a tool) and more of its arguments.
fn tool_call_delta(call: &Value, position: usize, out: &mut Vec<Result<ModelEvent, LlmError>>) {
    let index = call
        .get("index")
        .and_then(Value::as_u64)
        .map(|i| i as usize)
        .unwrap_or(position);
    let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
    let name = call
        .pointer("/function/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !id.is_empty() || !name.is_empty() {
        out.push(Ok(ModelEvent::ToolCallStart {
            index,
            id: id.to_string(),
            name: name.to_string(),
        }));
    }
    let args = call
        .pointer("/function/arguments")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !args.is_empty() {
        out.push(Ok(ModelEvent::ToolCallArgs {
            index,
            delta: args.to_string(),
        }));
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
    fn model_id(&self) -> String {
        format!("openai/{}", self.config.model)
    }

    fn base_url(&self) -> String {
        self.config.base_url.clone()
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, LlmError> {
        let url = join_url(&self.config.base_url, "chat/completions");
        let body = request_body(&self.config.model, request);
        let http = client();
        let response = send_with_retries(
            || self.authorized(http.post(&url).json(&body)),
            &self.config.retry,
            &url,
        )
        .await?;
        let decoder = ChunkDecoder {
            model: self.config.model.clone(),
            ..ChunkDecoder::default()
        };
        let events = sse_events(response, &self.config.retry)
            .await?
            .scan(decoder, |decoder, item| future::ready(decoder.decode(item)))
            .flat_map(stream::iter);
        Ok(Box::pin(events))
    }

    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        let url = join_url(&self.config.base_url, "models");
        let http = client();
        let response =
            send_with_retries(|| self.authorized(http.get(&url)), &self.config.retry, &url).await?;
        let status = response.status();
        let text = read_text(response, self.config.retry.idle(), MAX_MODEL_LIST).await?;
        let value: Value = serde_json::from_str(&text).map_err(|_| LlmError::Malformed {
            message: format!(
                "the model list is not JSON: {}",
                error_message(&text, status)
            ),
        })?;
        let mut models: Vec<String> = value
            .get("data")
            .or_else(|| value.get("models"))
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|m| {
                        m.get("id")
                            .or_else(|| m.get("name"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        models.sort();
        models.dedup();
        Ok(models)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(data: &str) -> Result<eventsource_stream::Event, LlmError> {
        Ok(eventsource_stream::Event {
            data: data.into(),
            ..Default::default()
        })
    }

    #[test]
    fn decodes_split_tool_calls_usage_and_done() {
        let mut d = ChunkDecoder::default();
        let mut all = Vec::new();
        for data in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}"#,
            "[DONE]",
        ] {
            all.extend(d.decode(ev(data)).expect("not ended"));
        }
        assert!(d.decode(ev("{}")).is_none(), "nothing after [DONE]");
        let all: Vec<ModelEvent> = all.into_iter().map(|e| e.expect("ok")).collect();
        assert_eq!(
            all,
            vec![
                ModelEvent::TextDelta("Hi".into()),
                ModelEvent::ToolCallStart {
                    index: 0,
                    id: "call_1".into(),
                    name: "read_file".into()
                },
                ModelEvent::ToolCallArgs {
                    index: 0,
                    delta: "{\"pa".into()
                },
                ModelEvent::Finished {
                    stop_reason: "tool_calls".into()
                },
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 10,
                    output_tokens: 5,
                    ..TokenUsage::default()
                }),
            ]
        );
    }

    #[test]
    fn malformed_json_and_error_chunks_end_the_stream_with_an_error() {
        let mut d = ChunkDecoder::default();
        let out = d.decode(ev("{not json")).expect("one item");
        assert!(matches!(out.as_slice(), [Err(LlmError::Malformed { .. })]));
        assert!(d.decode(ev("[DONE]")).is_none());

        let mut d = ChunkDecoder::default();
        let out = d
            .decode(ev(r#"{"error":{"message":"upstream overloaded"}}"#))
            .expect("one item");
        assert!(
            matches!(out.as_slice(), [Err(LlmError::Provider { message })] if message == "upstream overloaded")
        );
    }
}

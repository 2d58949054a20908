//! OpenAI-compatible Chat Completions with streaming (OpenAI, OpenRouter, Ollama, LM Studio,
//! llama.cpp, vLLM): `base_url` is documented up to and including `/v1`.

use futures_util::{future, stream, StreamExt};
use serde_json::{json, Value};

use super::http::{
    client, error_message, join_url, origin, parse_data, path_part, probe_json, read_text,
    send_with_retries, sse_events, MAX_MODEL_LIST,
};
use super::{
    context_error, estimate_cost, model_info, ChatMessage, LlmError, ModelEvent, ModelInfo,
    ModelRequest, ModelStream, Provider, ProviderConfig, TokenUsage,
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

/// OpenAI's reasoning models (`o1`, `o3`, `o4`, `gpt-5` families, also behind a `vendor/`
/// prefix as OpenRouter names them): they refuse `max_tokens` and take `max_completion_tokens`.
pub(crate) fn is_reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5"].iter().any(|family| {
        name.strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.', ':']))
    })
}

/// The request body in the Chat Completions format. The system prompt stays the first message,
/// a stable prefix for servers that cache prompts automatically. Kept reasoning is not sent:
/// this wire has no place for it. Ollama's `options.num_ctx` is not sent either: its
/// OpenAI-compatible endpoint ignores it (the window is the server's or the Modelfile's).
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for message in &request.messages {
        messages.push(match message {
            ChatMessage::User { text, images } if images.is_empty() => {
                json!({"role": "user", "content": text})
            }
            ChatMessage::User { text, images } => {
                let mut parts = vec![json!({"type": "text", "text": text})];
                parts.extend(images.iter().map(|image| {
                    json!({"type": "image_url", "image_url": {"url": image.data_url(), "detail": "high"}})
                }));
                json!({"role": "user", "content": parts})
            }
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
    });
    if is_reasoning_model(model) {
        body["max_completion_tokens"] = json!(request.max_tokens);
        if let Some(effort) = &request.reasoning_effort {
            body["reasoning_effort"] = json!(effort);
        }
    } else {
        body["max_tokens"] = json!(request.max_tokens);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        if request.forbid_tools {
            body["tool_choice"] = json!("none");
        }
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
                .or_else(|| error.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            let error = context_error::from_stream_error(error, &message)
                .unwrap_or(LlmError::Provider { message });
            return Some(vec![Err(error)]);
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
        // DeepSeek and vLLM name the reasoning `reasoning_content`, OpenRouter `reasoning`;
        // it is one block, unsigned.
        let reasoning = ["reasoning_content", "reasoning"]
            .iter()
            .find_map(|key| delta.get(*key).and_then(Value::as_str));
        if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
            out.push(Ok(ModelEvent::ThinkingDelta {
                index: 0,
                text: text.to_string(),
            }));
        }
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
    /// `prompt_tokens` counts the cached ones too; they are billed apart.
    fn usage(&self, usage: &Value) -> ModelEvent {
        let field = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
        let prompt = field("/prompt_tokens");
        let cached = field("/prompt_tokens_details/cached_tokens").min(prompt);
        let mut tokens = TokenUsage {
            input_tokens: prompt - cached,
            output_tokens: field("/completion_tokens"),
            cache_read_tokens: cached,
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
        .map_or(position, |i| usize::try_from(i).unwrap_or(usize::MAX));
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

    fn with_model(&self, model: &str) -> Option<Box<dyn Provider>> {
        let mut config = self.config.clone();
        config.model = model.to_string();
        Some(Box::new(Self::new(config)))
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

    /// Asks, in turn and each once with a short timeout, the OpenAI-compatible model list
    /// (OpenRouter, vLLM), LM Studio's own API, then Ollama's; the first that names a window
    /// answers. Failures are not errors: the window then comes from the table or from errors.
    async fn model_info(&self) -> ModelInfo {
        let http = client();
        let model = &self.config.model;
        let list_url = join_url(&self.config.base_url, "models");
        if let Some(list) = probe_json(self.authorized(http.get(&list_url))).await {
            let info = model_info::window_from_models_list(&list, model);
            if info.context_window.is_some() {
                return info;
            }
        }
        let Some(origin) = origin(&self.config.base_url) else {
            return ModelInfo::default();
        };
        let lmstudio_url = join_url(&origin, &format!("api/v0/models/{}", path_part(model)));
        if let Some(found) = probe_json(self.authorized(http.get(&lmstudio_url))).await {
            let info = model_info::window_from_lmstudio(&found);
            if info.context_window.is_some() {
                return info;
            }
        }
        let show_url = join_url(&origin, "api/show");
        let show_request = self.authorized(http.post(&show_url).json(&json!({"model": model})));
        let Some(show) = probe_json(show_request).await else {
            return ModelInfo::default();
        };
        let ps_url = join_url(&origin, "api/ps");
        let running = probe_json(self.authorized(http.get(&ps_url)))
            .await
            .and_then(|ps| model_info::ollama_running_window(&ps, model));
        model_info::window_from_ollama(&show, running)
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
#[path = "openai_tests.rs"]
mod tests;

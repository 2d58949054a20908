//! Builders for SSE transcripts shaped like the real provider streams, so the
//! app's parsers see the same framing, field order and fragmenting as in use.

use std::sync::atomic::{AtomicU64, Ordering};

/// Splits `s` into pieces of 3 to 8 characters (never inside a UTF-8
/// character). The sizes come from a fixed generator so a transcript is the
/// same on every run.
fn pieces(s: &str, seed: u64) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let end = (at + 3 + (state % 6) as usize).min(chars.len());
        out.push(chars[at..end].iter().collect());
        at = end;
    }
    out
}

/// Compact JSON with the keys in the order given: serde_json's map would sort
/// them, and the real streams lead with `id` or `type`.
fn obj(fields: &[(&str, String)]) -> String {
    let fields: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", val(k)))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// One JSON value as text, for `obj`.
fn val(v: impl serde::Serialize) -> String {
    serde_json::to_string(&v).expect("plain values serialize")
}

const NULL: &str = "null";

/// A unique suffix for message ids, so two turns in one test differ.
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Every event becomes one chunk, each with the same pause before it.
fn paced(events: Vec<String>, delay_ms: u64) -> Vec<crate::llm_server::Chunk> {
    let chunk = |data| crate::llm_server::Chunk { data, delay_ms };
    events.into_iter().map(chunk).collect()
}

fn error_reply(status: u16, extra: (&str, &str), body: String) -> crate::llm_server::Reply {
    let mut headers = vec![(extra.0.to_string(), extra.1.to_string())];
    // Retry tests should not sleep through a real back-off.
    if status == 429 {
        headers.push(("retry-after".to_string(), "0".to_string()));
    }
    crate::llm_server::Reply::Json {
        status,
        headers,
        body,
    }
}

/// OpenAI Chat Completions streaming (`stream: true`).
pub mod openai {
    use serde_json::Value;

    use super::{error_reply, next_id, obj, paced, pieces, val, NULL};
    use crate::llm_server::{Chunk, Reply};

    enum Part {
        Text(String),
        /// id, name, arguments as compact JSON
        Tool(String, String, String),
    }

    /// One assistant turn, streamed as `chat.completion.chunk` events.
    pub struct Turn {
        parts: Vec<Part>,
        usage: Option<(u64, u64)>,
        cached_tokens: u64,
        comments: Vec<String>,
        delay_ms: u64,
        model: String,
        id: String,
        created: u64,
    }

    /// An empty turn; add text and tool calls to it.
    pub fn turn() -> Turn {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        Turn {
            parts: Vec::new(),
            usage: None,
            cached_tokens: 0,
            comments: Vec::new(),
            delay_ms: 0,
            model: "gpt-4o-mini-2024-07-18".to_string(),
            id: format!("chatcmpl-scripted{:012}", next_id()),
            created: now.map(|d| d.as_secs()).unwrap_or(0),
        }
    }

    impl Turn {
        /// Assistant text, streamed as many small `content` deltas.
        pub fn text(mut self, text: &str) -> Self {
            self.parts.push(Part::Text(text.to_string()));
            self
        }

        /// A function call; its arguments stream as fragments of the compact JSON.
        pub fn tool_call(mut self, id: &str, name: &str, args: Value) -> Self {
            let part = Part::Tool(id.to_string(), name.to_string(), args.to_string());
            self.parts.push(part);
            self
        }

        /// Ends the stream with a usage chunk (`choices: []`), as
        /// `stream_options.include_usage` does.
        pub fn usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
            self.usage = Some((prompt_tokens, completion_tokens));
            self
        }

        /// Prompt tokens served from the provider's prefix cache, reported in
        /// `usage.prompt_tokens_details.cached_tokens` (they stay counted in `prompt_tokens`).
        pub fn cached_tokens(mut self, cached: u64) -> Self {
            self.cached_tokens = cached;
            self
        }

        /// An SSE comment before the first event, as OpenRouter sends
        /// (`": OPENROUTER PROCESSING"`); the leading `": "` is added if missing.
        pub fn comment(mut self, line: &str) -> Self {
            let line = if line.starts_with(':') {
                line.to_string()
            } else {
                format!(": {line}")
            };
            self.comments.push(line);
            self
        }

        /// Pause before every chunk.
        pub fn delay_ms(mut self, ms: u64) -> Self {
            self.delay_ms = ms;
            self
        }

        /// The model name reported in every chunk.
        pub fn model(mut self, model: &str) -> Self {
            self.model = model.to_string();
            self
        }

        fn event(&self, choices: String, usage: Option<String>) -> String {
            let mut fields = vec![
                ("id", val(&self.id)),
                ("object", val("chat.completion.chunk")),
                ("created", val(self.created)),
                ("model", val(&self.model)),
                ("system_fingerprint", val("fp_scripted")),
                ("choices", choices),
            ];
            // With include_usage every chunk carries `usage`, null until the last.
            if self.usage.is_some() {
                fields.push(("usage", usage.unwrap_or_else(|| NULL.to_string())));
            }
            format!("data: {}\n\n", obj(&fields))
        }

        fn delta(&self, delta: String, finish: Option<&str>) -> String {
            let choice = obj(&[
                ("index", val(0)),
                ("delta", delta),
                ("logprobs", NULL.to_string()),
                ("finish_reason", val(finish)),
            ]);
            self.event(format!("[{choice}]"), None)
        }

        /// The whole stream: comments, deltas, the finish chunk, usage, `[DONE]`.
        pub fn chunks(&self) -> Vec<Chunk> {
            let mut events: Vec<String> =
                self.comments.iter().map(|c| format!("{c}\n\n")).collect();
            let mut role_sent = false;
            let mut tool_index = 0u64;
            for (seed, part) in (2u64..).zip(&self.parts) {
                match part {
                    Part::Text(text) => {
                        if !role_sent {
                            let first = obj(&[
                                ("role", val("assistant")),
                                ("content", val("")),
                                ("refusal", NULL.to_string()),
                            ]);
                            events.push(self.delta(first, None));
                            role_sent = true;
                        }
                        for piece in pieces(text, seed) {
                            events.push(self.delta(obj(&[("content", val(piece))]), None));
                        }
                    }
                    Part::Tool(id, name, args) => {
                        let function = obj(&[("name", val(name)), ("arguments", val(""))]);
                        let call = obj(&[
                            ("index", val(tool_index)),
                            ("id", val(id)),
                            ("type", val("function")),
                            ("function", function),
                        ]);
                        let mut delta = vec![("tool_calls", format!("[{call}]"))];
                        // OpenAI puts the role in the first delta, whatever it carries.
                        if !role_sent {
                            delta.insert(0, ("role", val("assistant")));
                            delta.insert(1, ("content", NULL.to_string()));
                            delta.push(("refusal", NULL.to_string()));
                            role_sent = true;
                        }
                        events.push(self.delta(obj(&delta), None));
                        for piece in pieces(args, seed) {
                            let function = obj(&[("arguments", val(piece))]);
                            let call = obj(&[("index", val(tool_index)), ("function", function)]);
                            let delta = obj(&[("tool_calls", format!("[{call}]"))]);
                            events.push(self.delta(delta, None));
                        }
                        tool_index += 1;
                    }
                }
            }
            if !role_sent {
                let first = obj(&[("role", val("assistant")), ("content", val(""))]);
                events.push(self.delta(first, None));
            }
            let finish = if tool_index > 0 { "tool_calls" } else { "stop" };
            events.push(self.delta("{}".to_string(), Some(finish)));
            if let Some((prompt, completion)) = self.usage {
                let usage = obj(&[
                    ("prompt_tokens", val(prompt)),
                    ("completion_tokens", val(completion)),
                    ("total_tokens", val(prompt + completion)),
                    (
                        "prompt_tokens_details",
                        obj(&[("cached_tokens", val(self.cached_tokens))]),
                    ),
                    (
                        "completion_tokens_details",
                        obj(&[("reasoning_tokens", val(0))]),
                    ),
                ]);
                events.push(self.event("[]".to_string(), Some(usage)));
            }
            events.push("data: [DONE]\n\n".to_string());
            paced(events, self.delay_ms)
        }

        /// A 200 SSE reply streaming this turn.
        pub fn reply(self) -> Reply {
            Reply::sse(self.chunks())
        }
    }

    /// An error body as OpenAI sends it; 429 carries `retry-after: 0`.
    pub fn error_json(status: u16, message: &str) -> Reply {
        let (kind, code) = match status {
            401 => ("invalid_request_error", val("invalid_api_key")),
            404 => ("invalid_request_error", val("model_not_found")),
            429 => ("requests", val("rate_limit_exceeded")),
            s if s >= 500 => ("server_error", NULL.to_string()),
            _ => ("invalid_request_error", NULL.to_string()),
        };
        let error = obj(&[
            ("message", val(message)),
            ("type", val(kind)),
            ("param", NULL.to_string()),
            ("code", code),
        ]);
        let body = obj(&[("error", error)]);
        error_reply(status, ("x-request-id", "req_scripted"), body)
    }
}

/// Anthropic Messages streaming (`stream: true`).
pub mod anthropic {
    use serde_json::Value;

    use super::{error_reply, next_id, obj, paced, pieces, val, NULL};
    use crate::llm_server::{Chunk, Reply};

    enum Block {
        Text(String),
        /// id, name, input as compact JSON
        ToolUse(String, String, String),
        /// thinking text, signature
        Thinking(String, String),
    }

    /// One assistant message, streamed as Messages API events.
    pub struct Turn {
        blocks: Vec<Block>,
        usage: Option<(u64, u64)>,
        /// cache_creation_input_tokens, cache_read_input_tokens
        cache: Option<(u64, u64)>,
        pings: usize,
        delay_ms: u64,
        model: String,
        id: String,
        /// Instead of `tool_use` / `end_turn` (e.g. `max_tokens`: the answer was cut).
        stop_reason: Option<String>,
    }

    /// An empty message; add text and tool_use blocks to it.
    pub fn turn() -> Turn {
        Turn {
            blocks: Vec::new(),
            usage: None,
            cache: None,
            pings: 0,
            delay_ms: 0,
            model: "claude-sonnet-4-5-20250929".to_string(),
            stop_reason: None,
            id: format!("msg_01Scripted{:012}", next_id()),
        }
    }

    /// `event: NAME` then `data:` an object whose `type` is NAME, as documented.
    fn event(name: &str, fields: &[(&str, String)]) -> String {
        let data = obj(&[&[("type", val(name))], fields].concat());
        format!("event: {name}\ndata: {data}\n\n")
    }

    impl Turn {
        /// A text block, streamed as `text_delta` fragments.
        pub fn text(mut self, t: &str) -> Self {
            self.blocks.push(Block::Text(t.to_string()));
            self
        }

        /// A tool_use block; its input streams as `input_json_delta` fragments,
        /// the first one empty as the API sends it.
        pub fn tool_use(mut self, id: &str, name: &str, input: Value) -> Self {
            let block = Block::ToolUse(id.to_string(), name.to_string(), input.to_string());
            self.blocks.push(block);
            self
        }

        /// An extended-thinking block: `thinking_delta` fragments, then its
        /// `signature_delta`, as the API streams it.
        pub fn thinking(mut self, thinking: &str, signature: &str) -> Self {
            let block = Block::Thinking(thinking.to_string(), signature.to_string());
            self.blocks.push(block);
            self
        }

        /// Prompt-cache figures: tokens written to and read from the cache. With them,
        /// `message_delta` repeats the whole input usage, as the API does.
        pub fn cache_usage(mut self, creation: u64, read: u64) -> Self {
            self.cache = Some((creation, read));
            self
        }

        /// Input tokens go in `message_start`, output tokens in `message_delta`.
        pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
            self.usage = Some((input_tokens, output_tokens));
            self
        }

        /// A `ping` event after the first `content_block_start`, where the API puts it.
        pub fn ping(mut self) -> Self {
            self.pings += 1;
            self
        }

        /// Pause before every chunk.
        pub fn delay_ms(mut self, ms: u64) -> Self {
            self.delay_ms = ms;
            self
        }

        /// The model name reported in `message_start`.
        /// The stop reason the stream ends with.
        pub fn stop_reason(mut self, reason: &str) -> Self {
            self.stop_reason = Some(reason.to_string());
            self
        }

        pub fn model(mut self, model: &str) -> Self {
            self.model = model.to_string();
            self
        }

        /// The whole stream from `message_start` to `message_stop`.
        pub fn chunks(&self) -> Vec<Chunk> {
            let (input_tokens, output_tokens) = self.usage.unwrap_or((10, 1));
            let (creation, read) = self.cache.unwrap_or((0, 0));
            let input_usage = [
                ("input_tokens", val(input_tokens)),
                ("cache_creation_input_tokens", val(creation)),
                ("cache_read_input_tokens", val(read)),
            ];
            let usage = obj(&[&input_usage[..], &[("output_tokens", val(1))]].concat());
            let message = obj(&[
                ("id", val(&self.id)),
                ("type", val("message")),
                ("role", val("assistant")),
                ("model", val(&self.model)),
                ("content", "[]".to_string()),
                ("stop_reason", NULL.to_string()),
                ("stop_sequence", NULL.to_string()),
                ("usage", usage),
            ]);
            let mut events = vec![event("message_start", &[("message", message)])];
            let pings = vec![event("ping", &[]); self.pings];
            if self.blocks.is_empty() {
                events.extend(pings.iter().cloned());
            }
            for (index, block) in self.blocks.iter().enumerate() {
                let seed = index as u64 + 2;
                let (start, deltas) = match block {
                    Block::Text(text) => {
                        let start = obj(&[("type", val("text")), ("text", val(""))]);
                        let delta = |p| obj(&[("type", val("text_delta")), ("text", val(p))]);
                        (start, pieces(text, seed).into_iter().map(delta).collect())
                    }
                    Block::ToolUse(id, name, input) => {
                        let start = obj(&[
                            ("type", val("tool_use")),
                            ("id", val(id)),
                            ("name", val(name)),
                            ("input", "{}".to_string()),
                        ]);
                        let parts = [vec![String::new()], pieces(input, seed)].concat();
                        let delta =
                            |p| obj(&[("type", val("input_json_delta")), ("partial_json", val(p))]);
                        (start, parts.into_iter().map(delta).collect::<Vec<_>>())
                    }
                    Block::Thinking(thinking, signature) => {
                        let start = obj(&[("type", val("thinking")), ("thinking", val(""))]);
                        let delta =
                            |p| obj(&[("type", val("thinking_delta")), ("thinking", val(p))]);
                        let mut deltas: Vec<String> =
                            pieces(thinking, seed).into_iter().map(delta).collect();
                        let sig = [
                            ("type", val("signature_delta")),
                            ("signature", val(signature)),
                        ];
                        deltas.push(obj(&sig));
                        (start, deltas)
                    }
                };
                let first = index == 0;
                let index = val(index);
                let start = [("index", index.clone()), ("content_block", start)];
                events.push(event("content_block_start", &start));
                if first {
                    events.extend(pings.iter().cloned());
                }
                for delta in deltas {
                    let fields = [("index", index.clone()), ("delta", delta)];
                    events.push(event("content_block_delta", &fields));
                }
                events.push(event("content_block_stop", &[("index", index)]));
            }
            let has_tool = self.blocks.iter().any(|b| matches!(b, Block::ToolUse(..)));
            let stop_reason = match (&self.stop_reason, has_tool) {
                (Some(r), _) => r.as_str(),
                (None, true) => "tool_use",
                (None, false) => "end_turn",
            };
            let delta = obj(&[
                ("stop_reason", val(stop_reason)),
                ("stop_sequence", NULL.to_string()),
            ]);
            let output = ("output_tokens", val(output_tokens));
            let usage = match self.cache {
                Some(_) => obj(&[&input_usage[..], &[output]].concat()),
                None => obj(&[output]),
            };
            events.push(event(
                "message_delta",
                &[("delta", delta), ("usage", usage)],
            ));
            events.push(event("message_stop", &[]));
            paced(events, self.delay_ms)
        }

        /// A 200 SSE reply streaming this message.
        pub fn reply(self) -> Reply {
            Reply::sse(self.chunks())
        }
    }

    fn error_body(kind: &str, message: &str) -> String {
        obj(&[("type", val(kind)), ("message", val(message))])
    }

    /// An `error` event as sent mid-stream, e.g. kind `overloaded_error`.
    pub fn error_event(kind: &str, message: &str) -> Chunk {
        Chunk::new(event("error", &[("error", error_body(kind, message))]))
    }

    /// An error body as the API sends it; 429 carries `retry-after: 0`.
    pub fn error_json(status: u16, kind: &str, message: &str) -> Reply {
        let body = obj(&[("type", val("error")), ("error", error_body(kind, message))]);
        error_reply(status, ("request-id", "req_scripted"), body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm_server::{Reply, ScriptedServer};
    use serde_json::{json, Value};

    /// Serves `reply` and returns the raw body the client read, with headers.
    async fn fetch(reply: Reply) -> (u16, reqwest::header::HeaderMap, String) {
        let server = ScriptedServer::start(vec![reply]).await;
        let req = reqwest::Client::new().post(server.base_url());
        let resp = req.json(&json!({"stream": true})).send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        (status, headers, resp.text().await.unwrap())
    }

    fn joined(chunks: &[crate::llm_server::Chunk]) -> String {
        chunks.iter().map(|c| c.data.as_str()).collect()
    }

    /// Splits a body into (event name, data) pairs; comment blocks keep their text as the name.
    fn parse(body: &str) -> Vec<(String, String)> {
        assert!(body.ends_with("\n\n"), "unterminated event: {body:?}");
        body.trim_end_matches("\n\n")
            .split("\n\n")
            .map(|block| {
                let (mut name, mut data) = (String::new(), String::new());
                for line in block.lines() {
                    match (line.strip_prefix("event: "), line.strip_prefix("data: ")) {
                        (Some(v), _) => name = v.to_string(),
                        (_, Some(v)) => data = v.to_string(),
                        _ if line.starts_with(':') => name = line.to_string(),
                        _ => panic!("unexpected line {line:?}"),
                    }
                }
                (name, data)
            })
            .collect()
    }

    #[test]
    fn pieces_are_short_and_split_on_char_boundaries() {
        let s = "héllo wörld 👋🏽 naïve café — ok";
        let parts = pieces(s, 7);
        assert!(parts.len() > 3);
        assert!(parts.iter().all(|p| (1..=8).contains(&p.chars().count())));
        assert_eq!(parts.concat(), s);
    }

    #[tokio::test]
    async fn openai_stream_reassembles_text_and_tool_calls() {
        let text = "Sure — I'll read both files: naïve 👋 approach first.";
        let args0 = json!({"path": "src/main.rs", "limit": 200});
        let args1 = json!({"cmd": "ls -la \"dir\"", "nested": {"a": [1, 2, 3]}});
        let reply = openai::turn()
            .comment("OPENROUTER PROCESSING")
            .text(text)
            .tool_call("call_abc", "read_file", args0.clone())
            .tool_call("call_def", "bash", args1.clone())
            .usage(120, 33)
            .reply();
        let (status, headers, body) = fetch(reply).await;
        assert_eq!(status, 200);
        assert_eq!(headers["content-type"], "text/event-stream");
        let events = parse(&body);
        assert_eq!(events[0].0, ": OPENROUTER PROCESSING");
        assert_eq!(events.last().unwrap().1, "[DONE]");

        let chunks: Vec<Value> = events[1..events.len() - 1]
            .iter()
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect();
        let (mut content, mut finish) = (String::new(), None);
        let mut calls: Vec<(String, String, String)> = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(c["object"], "chat.completion.chunk");
            assert!(c["id"].as_str().unwrap().starts_with("chatcmpl-"));
            assert!(c["created"].is_u64() && c["model"].is_string());
            let choices = c["choices"].as_array().unwrap();
            if choices.is_empty() {
                assert_eq!(i, chunks.len() - 1, "usage chunk comes last");
                assert_eq!(c["usage"]["total_tokens"], 153);
                continue;
            }
            assert!(c["usage"].is_null());
            let delta = &choices[0]["delta"];
            assert_eq!(
                delta.get("role").is_some(),
                i == 0,
                "role in the first only"
            );
            content += delta["content"].as_str().unwrap_or_default();
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let idx = tc["index"].as_u64().unwrap() as usize;
                if let Some(id) = tc["id"].as_str() {
                    assert_eq!(tc["type"], "function");
                    assert_eq!(tc["function"]["arguments"], "");
                    assert_eq!(idx, calls.len());
                    let name = tc["function"]["name"].as_str().unwrap();
                    calls.push((id.into(), name.into(), String::new()));
                } else {
                    assert!(tc.get("type").is_none() && tc["function"].get("name").is_none());
                    calls[idx].2 += tc["function"]["arguments"].as_str().unwrap();
                }
            }
            if let Some(f) = choices[0]["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
        }
        assert_eq!(content, text);
        assert_eq!(finish.as_deref(), Some("tool_calls"));
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0, "call_abc");
        assert_eq!(calls[1].1, "bash");
        assert_eq!(serde_json::from_str::<Value>(&calls[0].2).unwrap(), args0);
        assert_eq!(serde_json::from_str::<Value>(&calls[1].2).unwrap(), args1);
        let arg_deltas = body.matches("\"arguments\":").count();
        assert!(arg_deltas > 6, "arguments should arrive in fragments");
    }

    #[test]
    fn openai_text_only_turn_stops_and_has_no_usage() {
        let chunks = openai::turn().text("Hi").delay_ms(5).chunks();
        assert!(chunks.iter().all(|c| c.delay_ms == 5));
        let joined = joined(&chunks);
        assert!(
            joined.starts_with("data: {\"id\":\"chatcmpl-"),
            "field order as sent"
        );
        assert!(joined.contains("\"finish_reason\":\"stop\""));
        assert!(!joined.contains("usage") && !joined.starts_with(':'));
    }

    #[tokio::test]
    async fn openai_errors_look_like_openai() {
        let (status, headers, body) = fetch(openai::error_json(429, "Rate limit reached")).await;
        assert_eq!(status, 429);
        assert_eq!(headers["retry-after"], "0");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["message"], "Rate limit reached");
        assert_eq!(v["error"]["code"], "rate_limit_exceeded");
        let (status, headers, _) = fetch(openai::error_json(401, "bad key")).await;
        assert_eq!(status, 401);
        assert!(headers.get("retry-after").is_none());
    }

    #[tokio::test]
    async fn anthropic_stream_follows_the_documented_event_order() {
        let input = json!({"command": "cargo test", "timeout_ms": 60000});
        let reply = anthropic::turn()
            .text("Let me run the tests — ✓")
            .tool_use("toolu_01A", "bash", input.clone())
            .ping()
            .usage(512, 48)
            .reply();
        let (_, _, body) = fetch(reply).await;
        let start =
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_";
        assert!(body.starts_with(start), "field order as documented");
        let events = parse(&body);
        let mut names = Vec::new();
        let (mut text, mut json_parts) = (String::new(), Vec::new());
        for (name, data) in &events {
            let v: Value = serde_json::from_str(data).unwrap();
            assert_eq!(&v["type"], name.as_str(), "event name matches data type");
            match name.as_str() {
                "content_block_delta" if v["delta"]["type"] == "text_delta" => {
                    assert_eq!(v["index"], 0);
                    text += v["delta"]["text"].as_str().unwrap();
                }
                "content_block_delta" => {
                    assert_eq!(v["index"], 1);
                    assert_eq!(v["delta"]["type"], "input_json_delta");
                    json_parts.push(v["delta"]["partial_json"].as_str().unwrap().to_string());
                }
                "message_start" => {
                    assert_eq!(v["message"]["role"], "assistant");
                    assert_eq!(v["message"]["usage"]["input_tokens"], 512);
                }
                "content_block_start" if v["index"] == 1 => {
                    let b = &v["content_block"];
                    let expected =
                        json!({"type": "tool_use", "id": "toolu_01A", "name": "bash", "input": {}});
                    assert_eq!(b, &expected);
                }
                "message_delta" => {
                    assert_eq!(v["delta"]["stop_reason"], "tool_use");
                    assert_eq!(v["usage"]["output_tokens"], 48);
                }
                _ => {}
            }
            if names.last() != Some(name) {
                names.push(name.clone());
            }
        }
        let expected = "message_start content_block_start ping content_block_delta \
            content_block_stop content_block_start content_block_delta content_block_stop \
            message_delta message_stop";
        assert_eq!(names, expected.split_whitespace().collect::<Vec<_>>());
        assert_eq!(text, "Let me run the tests — ✓");
        assert_eq!(json_parts[0], "");
        assert!(json_parts.len() > 3);
        let reassembled: Value = serde_json::from_str(&json_parts.concat()).unwrap();
        assert_eq!(reassembled, input);
    }

    #[tokio::test]
    async fn anthropic_errors_look_like_anthropic() {
        let c = anthropic::error_event("overloaded_error", "Overloaded");
        let (name, data) = parse(&c.data).remove(0);
        assert_eq!(name, "error");
        let v: Value = serde_json::from_str(&data).unwrap();
        let error = json!({"type": "overloaded_error", "message": "Overloaded"});
        assert_eq!(v, json!({"type": "error", "error": error}));
        let end = joined(&anthropic::turn().text("ok").chunks());
        assert!(end.contains("\"stop_reason\":\"end_turn\""));

        let (status, headers, body) =
            fetch(anthropic::error_json(429, "rate_limit_error", "slow down")).await;
        assert_eq!(status, 429);
        assert_eq!(headers["retry-after"], "0");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "rate_limit_error");
    }
}

//! The conversation a request carries, read the same way from either wire format, and the
//! checks the real APIs make on it before any model sees it (with their wording).

use serde_json::Value;

use super::WireFormat;

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        id: String,
        content: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `user`, `assistant` or `tool` (OpenAI tool results stay their own messages).
    pub role: String,
    pub parts: Vec<Part>,
}

/// What a request asks the model: its system prompt, whether it offers tools, its messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub system: String,
    pub has_tools: bool,
    pub messages: Vec<Message>,
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl Conversation {
    /// Reads a request body of either wire format.
    pub fn read(wire: WireFormat, body: &Value) -> Conversation {
        // `tool_choice: none` (both formats spell it so) offers the tools for the prefix only.
        let none = body["tool_choice"] == "none" || body["tool_choice"]["type"] == "none";
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty()) && !none;
        let raw = body["messages"].as_array().cloned().unwrap_or_default();
        let mut system = text_of(&body["system"]);
        let mut messages = Vec::new();
        for m in &raw {
            let role = m["role"].as_str().unwrap_or_default().to_string();
            if matches!(role.as_str(), "system" | "developer") {
                system = [system, text_of(&m["content"])].join("\n");
                continue;
            }
            let parts = match wire {
                WireFormat::Anthropic => anthropic_parts(&m["content"]),
                WireFormat::OpenAi => openai_parts(m),
            };
            messages.push(Message { role, parts });
        }
        Conversation {
            system: system.trim_start().to_string(),
            has_tools,
            messages,
        }
    }

    /// The id of the tool call whose result ends the conversation, if it ends with one.
    pub fn last_tool_result(&self) -> Option<&str> {
        let last = self.messages.last()?;
        last.parts.iter().rev().find_map(|p| match p {
            Part::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// Every line of text the request carries: system prompt, messages, tool calls and results.
    pub fn lines(&self) -> Vec<&str> {
        let parts = self.messages.iter().flat_map(|m| &m.parts);
        let texts = parts.filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            Part::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        });
        std::iter::once(self.system.as_str())
            .chain(texts)
            .flat_map(str::lines)
            .collect()
    }
}

fn anthropic_parts(content: &Value) -> Vec<Part> {
    let blocks = match content {
        Value::String(s) => return vec![Part::Text(s.clone())],
        Value::Array(blocks) => blocks,
        _ => return Vec::new(),
    };
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    blocks
        .iter()
        .filter_map(|b| match b["type"].as_str()? {
            "text" => Some(Part::Text(s(&b["text"]))),
            "thinking" => Some(Part::Thinking {
                thinking: s(&b["thinking"]),
                signature: s(&b["signature"]),
            }),
            "tool_use" => Some(Part::ToolCall {
                id: s(&b["id"]),
                name: s(&b["name"]),
                input: b["input"].clone(),
            }),
            "tool_result" => Some(Part::ToolResult {
                id: s(&b["tool_use_id"]),
                content: text_of(&b["content"]),
            }),
            _ => None,
        })
        .collect()
}

fn openai_parts(m: &Value) -> Vec<Part> {
    if m["role"] == "tool" {
        let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
        let content = text_of(&m["content"]);
        return vec![Part::ToolResult { id, content }];
    }
    let mut parts = Vec::new();
    let text = text_of(&m["content"]);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    for call in m["tool_calls"].as_array().into_iter().flatten() {
        let args = call["function"]["arguments"].as_str().unwrap_or("{}");
        parts.push(Part::ToolCall {
            id: call["id"].as_str().unwrap_or_default().to_string(),
            name: call["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            input: serde_json::from_str(args).unwrap_or(Value::Null),
        });
    }
    parts
}

fn ids_of<'a>(blocks: &'a [Value], kind: &str, key: &str) -> Vec<&'a str> {
    blocks
        .iter()
        .filter(|b| b["type"] == kind)
        .filter_map(|b| b[key].as_str())
        .collect()
}

/// Why the Messages API would refuse this history (400 `invalid_request_error`), if it would.
pub fn anthropic_refusal(body: &Value) -> Option<String> {
    let Some(messages) = body["messages"].as_array() else {
        return Some("messages: Field required".to_string());
    };
    let Some(first) = messages.first() else {
        return Some("messages: at least one message is required".to_string());
    };
    if first["role"] != "user" {
        return Some("messages: first message must use the \"user\" role".to_string());
    }
    let empty = [];
    let blocks = |i: usize| messages[i]["content"].as_array().map_or(&empty[..], |b| b);
    for (i, m) in messages.iter().enumerate() {
        let final_assistant = i + 1 == messages.len() && m["role"] == "assistant";
        let is_empty = match &m["content"] {
            Value::String(s) => s.is_empty(),
            Value::Array(b) => b.is_empty(),
            _ => true,
        };
        if is_empty && !final_assistant {
            return Some(format!(
                "messages.{i}: all messages must have non-empty content except for the optional \
                 final assistant message"
            ));
        }
        if blocks(i)
            .iter()
            .any(|b| b["type"] == "text" && b["text"] == "")
        {
            return Some("messages: text content blocks must be non-empty".to_string());
        }
        if m["role"] == "user" {
            let offered = match i.checked_sub(1) {
                Some(p) if messages[p]["role"] == "assistant" => {
                    ids_of(blocks(p), "tool_use", "id")
                }
                _ => Vec::new(),
            };
            for (j, b) in blocks(i).iter().enumerate() {
                if b["type"] == "image" {
                    if let Some(why) = image_refusal(&b["source"]) {
                        return Some(format!("messages.{i}.content.{j}.image.source.base64{why}"));
                    }
                }
                let id = b["tool_use_id"].as_str().unwrap_or_default();
                if b["type"] == "tool_result" && !offered.contains(&id) {
                    return Some(format!(
                        "messages.{i}.content.{j}: unexpected `tool_use_id` found in \
                         `tool_result` blocks: {id}. Each `tool_result` block must have a \
                         corresponding `tool_use` block in the previous message."
                    ));
                }
            }
        } else if i + 1 < messages.len() {
            let answered = ids_of(blocks(i + 1), "tool_result", "tool_use_id");
            let missing: Vec<&str> = ids_of(blocks(i), "tool_use", "id")
                .into_iter()
                .filter(|id| !answered.contains(id) || messages[i + 1]["role"] != "user")
                .collect();
            if !missing.is_empty() {
                return Some(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks \
                     immediately after: {}. Each `tool_use` block must have a corresponding \
                     `tool_result` block in the next message.",
                    missing.join(", ")
                ));
            }
        }
    }
    None
}

/// Why the Messages API would refuse an image's `source`, as it says it: the media types it
/// reads, base64 that decodes, bytes that are what they claim, at most 5 MB.
fn image_refusal(source: &Value) -> Option<String> {
    use base64::Engine;
    const TYPES: [(&str, &[u8]); 4] = [
        ("image/jpeg", b"\xff\xd8\xff"),
        ("image/png", b"\x89PNG"),
        ("image/gif", b"GIF8"),
        ("image/webp", b"RIFF"),
    ];
    if source["type"] != "base64" {
        return Some(".type: Input should be 'base64'".into());
    }
    let media = source["media_type"].as_str().unwrap_or_default();
    let Some((_, magic)) = TYPES.iter().find(|(t, _)| *t == media) else {
        return Some(
            ".media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
                .into(),
        );
    };
    let data = source["data"].as_str().unwrap_or_default();
    if data.len() > 5 * 1024 * 1024 {
        return Some(format!(
            ": image exceeds 5 MB maximum: {} bytes > 5242880 bytes",
            data.len()
        ));
    }
    match base64::engine::general_purpose::STANDARD.decode(data) {
        Ok(bytes) if bytes.starts_with(magic) => None,
        Ok(_) => Some(format!(
            ": Image does not match the provided media type {media}"
        )),
        Err(_) => Some(".data: Invalid base64 data".into()),
    }
}

/// Why Chat Completions would refuse this history: (message, `param`).
pub fn openai_refusal(body: &Value) -> Option<(String, String)> {
    let messages = body["messages"].as_array()?;
    let mut offered: Vec<&str> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let param = format!("messages.[{i}].role");
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            if !offered.contains(&id) {
                let message = "Invalid parameter: messages with role 'tool' must be a response \
                               to a preceeding message with 'tool_calls'.";
                return Some((message.to_string(), param));
            }
            continue;
        }
        offered.clear();
        let calls = m["tool_calls"].as_array().map_or(&[][..], |c| c);
        if m["role"] != "assistant" || calls.is_empty() {
            continue;
        }
        offered = calls.iter().filter_map(|c| c["id"].as_str()).collect();
        let answered: Vec<&str> = messages[i + 1..]
            .iter()
            .take_while(|n| n["role"] == "tool")
            .filter_map(|n| n["tool_call_id"].as_str())
            .collect();
        let missing: Vec<&str> = offered
            .iter()
            .copied()
            .filter(|id| !answered.contains(id))
            .collect();
        if !missing.is_empty() {
            let message = format!(
                "An assistant message with 'tool_calls' must be followed by tool messages \
                 responding to each 'tool_call_id'. The following tool_call_ids did not have \
                 response messages: {}",
                missing.join(", ")
            );
            return Some((message, param));
        }
    }
    None
}

/// With extended thinking on, the assistant message answered by the closing tool results must
/// start with its thinking block, and every thinking block must come back as it was issued
/// (`issued` says whether this signature was given to exactly this text).
pub fn thinking_refusal(body: &Value, issued: impl Fn(&str, &str) -> bool) -> Option<String> {
    let messages = body["messages"].as_array()?;
    for (i, m) in messages.iter().enumerate() {
        for (j, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            let text = b["thinking"].as_str().unwrap_or_default();
            let signature = b["signature"].as_str().unwrap_or_default();
            if b["type"] == "thinking" && !issued(signature, text) {
                return Some(format!(
                    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                ));
            }
        }
    }
    let last = messages.len().checked_sub(1)?;
    let closes_tool_loop = messages[last]["content"]
        .as_array()
        .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"));
    let i = last.checked_sub(1)?;
    if !closes_tool_loop || messages[i]["role"] != "assistant" {
        return None;
    }
    let found = messages[i]["content"][0]["type"].as_str().unwrap_or("text");
    if matches!(found, "thinking" | "redacted_thinking") {
        return None;
    }
    Some(format!(
        "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found \
         `{found}`. When `thinking` is enabled, a final `assistant` message must start with a \
         thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). \
         We recommend you include thinking blocks from previous turns. To avoid this \
         requirement, disable `thinking`. Please consult our documentation at \
         https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    ))
}

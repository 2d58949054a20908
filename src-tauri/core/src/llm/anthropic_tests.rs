//! The Anthropic wire format: the request body sent and the events decoded.

use super::*;
use crate::llm::ToolCall;
use pretty_assertions::assert_eq;

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
            ChatMessage::user("go"),
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

fn tool(name: &str) -> crate::llm::ToolSpec {
    crate::llm::ToolSpec {
        name: name.into(),
        description: "d".into(),
        parameters: json!({"type": "object"}),
    }
}

/// Two finished tool rounds, the second's result the newest message.
fn loop_request(cache: bool, thinking_budget: Option<u32>) -> ModelRequest {
    let assistant = |id: &str, signature: &str| ChatMessage::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: "x".into(),
            arguments: "{}".into(),
        }],
        thinking: vec![
            ThinkingBlock::Thinking {
                text: format!("plan {id}"),
                signature: Some(signature.into()),
            },
            ThinkingBlock::Redacted {
                data: "opaque".into(),
            },
            ThinkingBlock::Thinking {
                text: "unsigned".into(),
                signature: None,
            },
            ThinkingBlock::Thinking {
                text: "empty signature".into(),
                signature: Some(String::new()),
            },
        ],
    };
    let result = |id: &str| ChatMessage::ToolResult {
        call_id: id.into(),
        name: "x".into(),
        content: "out".into(),
        is_error: false,
    };
    ModelRequest {
        system: "rules".into(),
        messages: vec![
            ChatMessage::user("go"),
            assistant("a", "sig-a"),
            result("a"),
            assistant("b", "sig-b"),
            result("b"),
        ],
        tools: vec![tool("x"), tool("y")],
        max_tokens: 16_000,
        thinking_budget,
        cache,
        ..ModelRequest::default()
    }
}

#[test]
fn cache_breakpoints_mark_tools_system_previous_turn_and_tail() {
    let body = request_body("m", &loop_request(true, None));
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}])
    );
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(
        body["tools"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let marked: Vec<(usize, usize)> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .enumerate()
        .flat_map(|(m, message)| {
            message["content"]
                .as_array()
                .expect("content")
                .iter()
                .enumerate()
                .filter(|(_, block)| block.get("cache_control").is_some())
                .map(move |(b, _)| (m, b))
                .collect::<Vec<_>>()
        })
        .collect();
    // The first tool result (end of the previous turn) and the newest one.
    assert_eq!(marked, vec![(2, 0), (4, 0)]);

    let plain = request_body("m", &loop_request(false, None));
    assert_eq!(plain["system"], "rules");
    assert!(!plain.to_string().contains("cache_control"));
}

#[test]
fn one_user_message_gets_one_message_breakpoint_and_an_empty_system_none() {
    let request = ModelRequest {
        messages: vec![ChatMessage::user("hi")],
        max_tokens: 10,
        cache: true,
        ..ModelRequest::default()
    };
    let body = request_body("m", &request);
    assert_eq!(body["system"], "");
    assert_eq!(body.to_string().matches("cache_control").count(), 1);
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[test]
fn thinking_blocks_go_back_first_and_signed_only_while_thinking_is_on() {
    let body = request_body("m", &loop_request(false, Some(8_000)));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 8000})
    );
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "plan a", "signature": "sig-a"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "a", "name": "x", "input": {}},
        ])
    );
    let off = request_body("m", &loop_request(false, None));
    assert!(off.get("thinking").is_none());
    assert_eq!(
        off["messages"][1]["content"],
        json!([{"type": "tool_use", "id": "a", "name": "x", "input": {}}])
    );
}

#[test]
fn decodes_thinking_redacted_thinking_and_cache_usage() {
    let mut d = EventDecoder {
        model: "claude-sonnet-4-5".into(),
        ..EventDecoder::default()
    };
    let mut all = Vec::new();
    for (name, data) in [
        (
            "message_start",
            r#"{"type":"message_start","message":{"usage":{"input_tokens":50,"cache_creation_input_tokens":2000,"cache_read_input_tokens":9000,"output_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me see"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwK"}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Done"}}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":50,"cache_creation_input_tokens":2000,"cache_read_input_tokens":9000,"output_tokens":700}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ] {
        all.extend(d.decode(ev(name, data)).expect("open"));
    }
    let all: Vec<ModelEvent> = all.into_iter().map(|e| e.expect("ok")).collect();
    let mut usage = TokenUsage {
        input_tokens: 50,
        output_tokens: 700,
        cache_read_tokens: 9000,
        cache_write_tokens: 2000,
        cost_usd: None,
    };
    usage.cost_usd = estimate_cost("claude-sonnet-4-5", &usage);
    assert!(usage.cost_usd.is_some());
    assert_eq!(
        all,
        vec![
            ModelEvent::ThinkingDelta {
                index: 0,
                text: "Let me see".into()
            },
            ModelEvent::ThinkingSignature {
                index: 0,
                signature: "EqQB".into()
            },
            ModelEvent::RedactedThinking {
                index: 1,
                data: "EmwK".into()
            },
            ModelEvent::TextDelta("Done".into()),
            ModelEvent::Usage(usage),
            ModelEvent::Finished {
                stop_reason: "max_tokens".into()
            },
        ]
    );
}

#[test]
fn a_too_long_error_event_is_told_apart() {
    let mut d = EventDecoder::default();
    let out = d
        .decode(ev(
            "error",
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208367 tokens > 200000 maximum"}}"#,
        ))
        .expect("item");
    assert!(
        matches!(
            out.as_slice(),
            [Err(LlmError::ContextTooLong {
                limit: Some(200_000),
                requested: Some(208_367),
                ..
            })]
        ),
        "{out:?}"
    );
}

#[test]
fn an_image_goes_before_the_words_about_it_as_a_base64_block() {
    let image = crate::llm::ImageData {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
        width: 10,
        height: 10,
    };
    let request = ModelRequest {
        system: "s".into(),
        messages: vec![ChatMessage::User {
            text: "what is wrong here?".into(),
            images: vec![image],
        }],
        max_tokens: 100,
        cache: true,
        ..ModelRequest::default()
    };
    let body = request_body("m", &request);
    let content = body["messages"][0]["content"].as_array().expect("blocks");
    assert_eq!(content.len(), 2, "{content:?}");
    assert_eq!(
        content[0],
        serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
    assert_eq!(content[1]["type"], "text");
    assert_eq!(content[1]["text"], "what is wrong here?");
}

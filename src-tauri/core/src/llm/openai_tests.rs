//! The OpenAI-compatible wire format: the request body sent and the chunks decoded.

use super::*;
use pretty_assertions::assert_eq;

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

fn one_user_message(max_tokens: u32, effort: Option<&str>) -> ModelRequest {
    ModelRequest {
        system: "sys".into(),
        messages: vec![ChatMessage::user("hi")],
        max_tokens,
        reasoning_effort: effort.map(str::to_string),
        context_window: Some(32_768),
        ..ModelRequest::default()
    }
}

#[test]
fn reasoning_models_take_max_completion_tokens_and_the_effort() {
    for model in [
        "o1",
        "o3-mini",
        "openai/o4-mini",
        "gpt-5",
        "gpt-5.1-codex",
        "o3:latest",
    ] {
        assert!(is_reasoning_model(model), "{model}");
    }
    for model in [
        "gpt-4.1",
        "gpt-4o",
        "o1x",
        "llama3.2",
        "deepseek/deepseek-r1",
        "gpt-50",
    ] {
        assert!(!is_reasoning_model(model), "{model}");
    }
    let body = request_body("openai/gpt-5-mini", &one_user_message(4000, Some("high")));
    assert_eq!(body["max_completion_tokens"], 4000);
    assert_eq!(body["reasoning_effort"], "high");
    assert!(body.get("max_tokens").is_none());

    let body = request_body("gpt-4.1", &one_user_message(4000, Some("high")));
    assert_eq!(body["max_tokens"], 4000);
    assert!(body.get("max_completion_tokens").is_none());
    assert!(body.get("reasoning_effort").is_none());
    // The system prompt is the first message; no Ollama options ride on this wire.
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "sys"})
    );
    assert!(body.get("options").is_none());
}

#[test]
fn kept_reasoning_is_not_sent_back() {
    let request = ModelRequest {
        messages: vec![ChatMessage::Assistant {
            text: "done".into(),
            tool_calls: vec![],
            thinking: vec![crate::llm::ThinkingBlock::Thinking {
                text: "secret plan".into(),
                signature: None,
            }],
        }],
        ..ModelRequest::default()
    };
    let body = request_body("deepseek-reasoner", &request);
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": "done"})
    );
}

#[test]
fn cached_prompt_tokens_are_counted_apart_and_reasoning_deltas_decoded() {
    let mut d = ChunkDecoder {
        model: "gpt-4.1".into(),
        ..ChunkDecoder::default()
    };
    let mut all = Vec::new();
    for data in [
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning":" more","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"length"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":800}}}"#,
    ] {
        all.extend(d.decode(ev(data)).expect("open"));
    }
    let all: Vec<ModelEvent> = all.into_iter().map(|e| e.expect("ok")).collect();
    let mut usage = TokenUsage {
        input_tokens: 200,
        output_tokens: 10,
        cache_read_tokens: 800,
        ..TokenUsage::default()
    };
    usage.cost_usd = estimate_cost("gpt-4.1", &usage);
    assert!(usage.cost_usd.is_some());
    assert_eq!(
        all,
        vec![
            ModelEvent::ThinkingDelta {
                index: 0,
                text: "think".into()
            },
            ModelEvent::ThinkingDelta {
                index: 0,
                text: " more".into()
            },
            ModelEvent::TextDelta("ok".into()),
            ModelEvent::Finished {
                stop_reason: "length".into()
            },
            ModelEvent::Usage(usage),
        ]
    );
    // More cached tokens than prompt tokens is nonsense; it is clamped, not wrapped.
    let mut d = ChunkDecoder::default();
    let out = d
        .decode(ev(
            r#"{"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":9}}}"#,
        ))
        .expect("open");
    assert!(matches!(
        out.as_slice(),
        [Ok(ModelEvent::Usage(TokenUsage {
            input_tokens: 0,
            cache_read_tokens: 5,
            ..
        }))]
    ));
}

#[test]
fn a_too_long_error_mid_stream_is_told_apart() {
    let mut d = ChunkDecoder::default();
    let out = d
        .decode(ev(
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#,
        ))
        .expect("one item");
    assert!(
        matches!(
            out.as_slice(),
            [Err(LlmError::ContextTooLong {
                status: 400,
                limit: Some(4096),
                requested: Some(5000),
                ..
            })]
        ),
        "{out:?}"
    );
}

#[test]
fn an_image_is_sent_as_a_data_url_part_beside_the_text() {
    let mut request = one_user_message(100, None);
    request.messages = vec![ChatMessage::User {
        text: "look".into(),
        images: vec![crate::llm::ImageData {
            media_type: "image/jpeg".into(),
            data: "/9j/4AAQ".into(),
            width: 8,
            height: 8,
        }],
    }];
    let body = request_body("gpt-4.1", &request);
    assert_eq!(
        body["messages"][1]["content"],
        serde_json::json!([
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ", "detail": "high"}}
        ])
    );
    // Without images a user message stays a plain string (what every server accepts).
    let plain = request_body("gpt-4.1", &one_user_message(100, None));
    assert_eq!(plain["messages"][1]["content"], "hi");
}

//! Every wording of "too long" the providers are known to use, with what can be read from it.

use super::*;
use pretty_assertions::assert_eq;

/// (what, status, body, limit, requested); `None` in the status column means "not a window error".
type Case = (
    &'static str,
    u16,
    &'static str,
    Option<(Option<u64>, Option<u64>)>,
);

const CASES: &[Case] = &[
    (
        "anthropic",
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208367 tokens > 200000 maximum"}}"#,
        Some((Some(200_000), Some(208_367))),
    ),
    (
        "anthropic, room for the answer",
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#,
        Some((Some(200_000), Some(197_000))),
    ),
    (
        "openai",
        400,
        r#"{"error":{"message":"This model's maximum context length is 16385 tokens. However, your messages resulted in 17000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        Some((Some(16_385), Some(17_000))),
    ),
    (
        "openai, code only",
        400,
        r#"{"error":{"message":"Input exceeds the limit.","code":"context_length_exceeded"}}"#,
        Some((None, None)),
    ),
    (
        "vllm, older wording",
        400,
        r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        Some((Some(4_096), Some(4_000))),
    ),
    (
        "vllm, newer wording",
        400,
        r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}}"#,
        Some((Some(4_096), Some(5_000))),
    ),
    (
        "openai completions, total only",
        400,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 9000 tokens. Please reduce your prompt."}}"#,
        Some((Some(8_192), Some(9_000))),
    ),
    (
        "llama.cpp",
        400,
        r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5210,"n_ctx":4096}}"#,
        Some((Some(4_096), Some(5_210))),
    ),
    (
        "lm studio",
        400,
        r#"{"error":"Trying to keep the first 6000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#,
        Some((Some(4_096), None)),
    ),
    (
        "ollama-like",
        400,
        r#"{"error":{"message":"input length exceeds the context length","type":"invalid_request_error"}}"#,
        Some((None, None)),
    ),
    (
        "openrouter",
        400,
        r#"{"error":{"message":"This endpoint's maximum context length is 131,072 tokens. However, you requested about 140,000 tokens (139,000 of text input, 1,000 in the output).","code":400}}"#,
        Some((Some(131_072), None)),
    ),
    (
        "plain text body",
        400,
        "Prompt is too long for this model",
        Some((None, None)),
    ),
    ("request too large", 413, "", Some((None, None))),
    (
        "anthropic 413",
        413,
        r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#,
        Some((None, None)),
    ),
    (
        "a different bad request",
        400,
        r#"{"error":{"message":"Invalid 'messages[0].content': string too long. Expected a string with maximum length 10485760.","code":"string_above_max_length"}}"#,
        None,
    ),
    (
        "bad key",
        401,
        r#"{"error":{"message":"prompt is too long: 5 tokens > 4 maximum"}}"#,
        None,
    ),
    (
        "server error",
        500,
        r#"{"error":{"message":"maximum context length is 4096 tokens"}}"#,
        None,
    ),
];

#[test]
fn each_known_wording_is_recognised_with_the_numbers_it_pins() {
    for (what, status, body, expected) in CASES {
        let got = from_status(*status, body, "shown").map(|e| match e {
            LlmError::ContextTooLong {
                status: s,
                limit,
                requested,
                message,
            } => {
                assert_eq!((s, message.as_str()), (*status, "shown"), "{what}");
                (limit, requested)
            }
            other => panic!("{what}: {other:?}"),
        });
        assert_eq!(got, *expected, "{what}");
    }
}

#[test]
fn an_error_event_mid_stream_is_recognised() {
    let error: Value = serde_json::from_str(
        r#"{"type":"invalid_request_error","message":"prompt is too long: 300 tokens > 200 maximum"}"#,
    )
    .expect("json");
    let got = from_stream_error(&error, "invalid_request_error: prompt is too long");
    assert_eq!(
        got,
        Some(LlmError::ContextTooLong {
            status: 400,
            limit: Some(200),
            requested: Some(300),
            message: "invalid_request_error: prompt is too long".into(),
        })
    );
    let overloaded: Value =
        serde_json::from_str(r#"{"type":"overloaded_error","message":"Overloaded"}"#)
            .expect("json");
    assert_eq!(from_stream_error(&overloaded, "Overloaded"), None);
}

#[test]
fn hostile_numbers_are_no_numbers() {
    assert_eq!(
        from_wording("maximum context length is 99999999999999999999999 tokens"),
        (None, None)
    );
    assert_eq!(
        from_wording("prompt is too long: tokens > maximum"),
        (None, None)
    );
    assert_eq!(from_wording("maximum context length is"), (None, None));
}

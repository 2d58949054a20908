//! Recognises "the conversation does not fit the window" among provider errors, whatever the
//! server's wording, so the caller can condense and retry instead of showing a dead end. The
//! window and the request's size are taken from the message only where the wording pins them;
//! a guessed number would be worse than none.

use serde_json::Value;

use super::LlmError;

/// The error for a refused request whose body says it did not fit, or a 413 (too large).
/// `message` is the text already shown to the user; `body` is the raw answer.
pub(crate) fn from_status(status: u16, body: &str, message: &str) -> Option<LlmError> {
    let json = serde_json::from_str::<Value>(body).ok();
    let error = json.as_ref().map(|v| v.get("error").unwrap_or(v));
    if status == 413 {
        let (limit, requested) = error.map(|e| numbers(e, body)).unwrap_or((None, None));
        return Some(too_long(status, limit, requested, message));
    }
    // 422 is how some servers (Hugging Face TGI) refuse an input that does not validate.
    if !matches!(status, 400 | 422) {
        return None;
    }
    let flagged = error.is_some_and(flagged_by_code);
    if !flagged && !mentions_the_window(body) {
        return None;
    }
    let (limit, requested) = match error {
        Some(e) => numbers(e, body),
        None => from_wording(body),
    };
    Some(too_long(status, limit, requested, message))
}

/// The same check for an `error` event in the middle of a stream: `error` is the event's error
/// object (or the whole event when it has none). The status is the one the object names, else 400.
pub(crate) fn from_stream_error(error: &Value, message: &str) -> Option<LlmError> {
    let text = error.to_string();
    if !flagged_by_code(error) && !mentions_the_window(&text) && !mentions_the_window(message) {
        return None;
    }
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(400);
    let (limit, requested) = numbers(error, message);
    Some(too_long(status, limit, requested, message))
}

fn too_long(status: u16, limit: Option<u64>, requested: Option<u64>, message: &str) -> LlmError {
    LlmError::ContextTooLong {
        status,
        limit,
        requested,
        message: message.to_string(),
    }
}

/// The machine-readable markers: OpenAI's `context_length_exceeded`, llama.cpp's
/// `exceed_context_size_error`.
fn flagged_by_code(error: &Value) -> bool {
    ["code", "type"].iter().any(|key| {
        error.get(*key).and_then(Value::as_str).is_some_and(|c| {
            matches!(
                c,
                "context_length_exceeded" | "exceed_context_size_error" | "request_too_large"
            )
        })
    })
}

/// Wordings of the servers Mandate talks to (Anthropic, OpenAI, vLLM, llama.cpp, LM Studio,
/// Ollama, OpenRouter). Generic "too long" is not enough: a single over-long string or tool
/// name is a different fault that condensing would not fix.
fn mentions_the_window(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    const PHRASES: [&str; 15] = [
        "context length",
        "context limit",
        "context_length",
        "context window",
        "context size",
        "maximum context",
        "prompt is too long",
        "prompt too long",
        "input is too long",
        "input too long",
        "too many tokens",
        "too many input tokens",
        "exceeds the available context",
        "exceeds the context",
        "reduce the length of the messages",
    ];
    PHRASES.iter().any(|p| text.contains(p))
}

/// The window and the request's input size from an error object: llama.cpp's `n_ctx` and
/// `n_prompt_tokens` fields first, then the wording of its message (or of the whole body).
fn numbers(error: &Value, body: &str) -> (Option<u64>, Option<u64>) {
    let field = |key: &str| error.get(key).and_then(Value::as_u64);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .unwrap_or(body);
    let (limit, requested) = from_wording(message);
    (
        field("n_ctx").or(limit),
        field("n_prompt_tokens").or(requested),
    )
}

/// Numbers pinned by known wordings: the window, then the tokens the input needed.
pub(crate) fn from_wording(message: &str) -> (Option<u64>, Option<u64>) {
    let text = message.to_ascii_lowercase();
    // Anthropic: "prompt is too long: 208367 tokens > 200000 maximum".
    if let Some(rest) = after(&text, "prompt is too long:") {
        if let Some((requested, rest)) = leading_number(rest) {
            if let Some(rest) = rest.trim_start().strip_prefix("tokens >") {
                if let Some((limit, rest)) = leading_number(rest) {
                    if rest.trim_start().starts_with("maximum") {
                        return (Some(limit), Some(requested));
                    }
                }
            }
        }
    }
    // Anthropic, when the answer's room does not fit either: "input length and `max_tokens`
    // exceed context limit: 197000 + 8192 > 200000".
    if let Some(rest) = after(&text, "exceed context limit:") {
        if let Some((input, rest)) = leading_number(rest) {
            let limit = rest
                .trim_start()
                .strip_prefix('+')
                .and_then(leading_number)
                .and_then(|(_, r)| r.trim_start().strip_prefix('>'))
                .and_then(leading_number)
                .map(|(n, _)| n);
            return (limit, Some(input));
        }
    }
    // OpenAI and vLLM: "maximum context length is 16385 tokens"; LM Studio:
    // "loaded with context length of only 4096 tokens".
    let limit = number_after(&text, "maximum context length is")
        .or_else(|| number_after(&text, "context length of only"))
        .or_else(|| number_after(&text, "context length of"));
    // The input's size: "your messages resulted in N tokens" (OpenAI), "your request has N
    // input tokens" (newer vLLM), "you requested N tokens (M in the messages, …)" (older vLLM
    // and OpenAI, where M is the input and N adds the completion).
    let requested = number_after(&text, "messages resulted in")
        .or_else(|| number_after(&text, "prompt resulted in"))
        .or_else(|| input_tokens_of_request(&text))
        .or_else(|| {
            let rest = after(&text, "you requested")?;
            let (total, rest) = leading_number(rest)?;
            let in_messages = rest
                .trim_start()
                .strip_prefix("tokens (")
                .and_then(leading_number)
                .filter(|(_, r)| {
                    let r = r.trim_start();
                    r.starts_with("in the messages") || r.starts_with("in your prompt")
                })
                .map(|(n, _)| n);
            Some(in_messages.unwrap_or(total))
        });
    (limit, requested)
}

/// "your request has 5000 input tokens" (only when the count is called input tokens).
fn input_tokens_of_request(text: &str) -> Option<u64> {
    let rest = after(text, "your request has")?;
    let (n, rest) = leading_number(rest)?;
    rest.trim_start().starts_with("input tokens").then_some(n)
}

fn after<'a>(text: &'a str, phrase: &str) -> Option<&'a str> {
    text.find(phrase).map(|at| &text[at + phrase.len()..])
}

fn number_after(text: &str, phrase: &str) -> Option<u64> {
    leading_number(after(text, phrase)?).map(|(n, _)| n)
}

/// A whole number at the start of `text` (after spaces; thousands separators allowed), and
/// what follows it. Too many digits for a u64 is no number.
fn leading_number(text: &str) -> Option<(u64, &str)> {
    let text = text.trim_start();
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == ','))
        .map_or(text.len(), |(i, _)| i);
    let digits: String = text[..end].chars().filter(char::is_ascii_digit).collect();
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    // A trailing comma belongs to the sentence, not the number.
    let used = text[..end].trim_end_matches(',').len();
    digits.parse().ok().map(|n| (n, &text[used..]))
}

#[cfg(test)]
#[path = "context_error_tests.rs"]
mod tests;

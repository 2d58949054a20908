//! What a tool's result becomes for the model: its text, a note for each image, audio or binary
//! resource (never the bytes), the structured result when there is no text; capped, and with
//! every secret Mandate holds taken out.

use serde_json::Value;

use crate::redact::Redactor;

/// The most of a result the model reads (start and end kept).
pub const MODEL_CAP: usize = 64 * 1024;

/// A result as the model reads it, and whether the server flagged it as an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForModel {
    pub text: String,
    pub is_error: bool,
}

/// `result` is a `tools/call` result in its wire form.
pub fn for_model(result: &Value) -> ForModel {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(block).collect())
        .unwrap_or_default();
    if parts.iter().all(|p| p.trim().is_empty()) {
        parts.clear();
        if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
            parts.push(structured.to_string());
        }
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    };
    let text = crate::text::head_and_tail(&text, MODEL_CAP * 3 / 4, MODEL_CAP / 4).into_owned();
    ForModel {
        text: redact(&text),
        is_error,
    }
}

fn field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn block(b: &Value) -> String {
    let size = |data: &str| data.len() / 4 * 3;
    match field(b, "type") {
        "text" => field(b, "text").to_string(),
        "image" | "audio" => format!(
            "[{} content ({}, about {} bytes); not shown]",
            field(b, "type"),
            field(b, "mimeType"),
            size(field(b, "data"))
        ),
        "resource" => {
            let r = b.get("resource").unwrap_or(&Value::Null);
            match r.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {}]\n{text}", field(r, "uri")),
                None => format!(
                    "[resource {} ({}, binary); not shown]",
                    field(r, "uri"),
                    field(r, "mimeType")
                ),
            }
        }
        "resource_link" => format!("[resource link: {} {}]", field(b, "uri"), field(b, "name")),
        other => format!(
            "[{} content; not shown]",
            crate::mcp::config::printable(other, 40)
        ),
    }
}

/// Every secret Mandate holds (the app's API keys, every server's resolved secrets, which
/// [`super::server::resolve`] registers) is taken out of what a server returns, in the encodings
/// a hostile server could hide it in, before the model, the transcript or a log sees it.
pub fn redact(text: &str) -> String {
    Redactor::global().redact(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::Secret;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn content_becomes_text_with_notes_for_the_rest() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/octet-stream", "blob": "AA=="}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
            {"type": "hologram"}
        ], "isError": true});
        let out = for_model(&result);
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "hello\n[image content (image/png, about 3 bytes); not shown]\n[resource file:///a.txt]\ninside\n[resource file:///b.bin (application/octet-stream, binary); not shown]\n[resource link: file:///c c]\n[hologram content; not shown]"
        );
    }

    #[test]
    fn structured_content_stands_in_for_missing_text_and_big_results_are_capped() {
        let out = for_model(&json!({"content": [], "structuredContent": {"n": 1}}));
        assert_eq!(out.text, "{\"n\":1}");
        assert_eq!(for_model(&json!({})).text, "(the tool returned no content)");
        let big = "x".repeat(MODEL_CAP * 4);
        let out = for_model(&json!({"content": [{"type": "text", "text": big}]}));
        assert!(out.text.len() < MODEL_CAP + 100 && out.text.contains("bytes omitted"));
    }

    #[test]
    fn secrets_never_reach_the_model() {
        crate::secrets::remember(&Secret::new("sk-live-abcdef123456"));
        // Too short to tell from ordinary words: not registered, not scrubbed.
        crate::secrets::remember(&Secret::new("short"));
        let result =
            json!({"content": [{"type": "text", "text": "token=sk-live-abcdef123456 ok short"}]});
        assert_eq!(for_model(&result).text, "token=[REDACTED] ok short");
    }
}

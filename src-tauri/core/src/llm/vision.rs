//! Which models accept images. A server that says (OpenRouter's `input_modalities`, Ollama's
//! `capabilities`, LM Studio's model type) is believed; otherwise the model's name is read
//! against the families known either way. A model known in neither way is unknown: the
//! message may still go, and the person is told the model may refuse it.

use serde_json::Value;

/// Families that read images, by the start of the model's name (after any `vendor/`).
const SEES: &[&str] = &[
    "claude-3",
    "claude-opus",
    "claude-sonnet",
    "claude-haiku",
    "gpt-4o",
    "gpt-4.1",
    "gpt-4-turbo",
    "gpt-4-vision",
    "gpt-5",
    "chatgpt-4o",
    "o1",
    "o3",
    "o4",
    "gemini",
    "gemma3",
    "llava",
    "bakllava",
    "pixtral",
    "llama3.2-vision",
    "llama-3.2-11b-vision",
    "llama-3.2-90b-vision",
    "llama4",
    "llama-4",
    "minicpm-v",
    "moondream",
    "grok-2-vision",
    "grok-4",
    "mistral-small3.1",
    "mistral-small-3.1",
    "mistral-medium-3",
    "qwen2.5vl",
    "qwen2.5-vl",
    "qwen2-vl",
    "qwen-vl",
    "qwen3-vl",
    "granite3.2-vision",
];

/// Families that do not, checked first (a text-only variant of a family above).
const BLIND: &[&str] = &[
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "gpt-3.5",
    "gpt-4-0613",
    "gpt-4-32k",
    "gpt-oss",
    "claude-2",
    "claude-instant",
    "deepseek",
    "codestral",
    "codellama",
    "qwen2.5-coder",
    "qwen3-coder",
    "qwq",
    "starcoder",
    "devstral",
];

/// What the name says: Some(true) for a family that reads images, Some(false) for one that
/// does not, None when the name says nothing.
pub fn accepts_images_by_name(model: &str) -> Option<bool> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let starts = |prefix: &&str| name.starts_with(*prefix);
    if BLIND.iter().any(starts) {
        return Some(false);
    }
    if SEES.iter().any(starts) || name.contains("-vision") || name.contains("-vl") {
        return Some(true);
    }
    None
}

/// OpenRouter's model list: `architecture.input_modalities` (or `modality` such as
/// `text+image->text`) of `model`'s entry.
pub(crate) fn from_models_list(entry: &Value) -> Option<bool> {
    let arch = entry.get("architecture")?;
    if let Some(inputs) = arch.get("input_modalities").and_then(Value::as_array) {
        return Some(inputs.iter().any(|m| m.as_str() == Some("image")));
    }
    let modality = arch.get("modality").and_then(Value::as_str)?;
    let inputs = modality.split("->").next().unwrap_or("");
    Some(inputs.split('+').any(|m| m == "image"))
}

/// Ollama's `/api/show`: `capabilities` lists `vision` for a model that reads images (older
/// releases have no such list and say nothing).
pub(crate) fn from_ollama_show(show: &Value) -> Option<bool> {
    let caps = show.get("capabilities").and_then(Value::as_array)?;
    Some(caps.iter().any(|c| c.as_str() == Some("vision")))
}

/// LM Studio's `/api/v0/models/{model}`: `type` is `vlm` for a model that reads images.
pub(crate) fn from_lmstudio(model: &Value) -> Option<bool> {
    match model.get("type").and_then(Value::as_str)? {
        "vlm" => Some(true),
        "llm" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_say_what_they_can() {
        for m in [
            "anthropic/claude-sonnet-4-5",
            "claude-3-5-haiku-latest",
            "openai/gpt-4.1-mini",
            "gpt-5-codex",
            "o4-mini",
            "llava:13b",
            "qwen2.5vl:7b",
            "meta-llama/llama-3.2-11b-vision-instruct",
        ] {
            assert_eq!(accepts_images_by_name(m), Some(true), "{m}");
        }
        for m in [
            "o3-mini",
            "gpt-3.5-turbo",
            "deepseek/deepseek-chat",
            "qwen2.5-coder:32b",
            "gpt-oss:20b",
        ] {
            assert_eq!(accepts_images_by_name(m), Some(false), "{m}");
        }
        assert_eq!(accepts_images_by_name("my-finetune"), None);
    }

    #[test]
    fn servers_that_say_are_believed() {
        let entry = json!({"id": "x", "architecture": {"input_modalities": ["text", "image"]}});
        assert_eq!(from_models_list(&entry), Some(true));
        let entry = json!({"id": "x", "architecture": {"modality": "text->text"}});
        assert_eq!(from_models_list(&entry), Some(false));
        assert_eq!(from_models_list(&json!({"id": "x"})), None);
        let show = json!({"capabilities": ["completion", "vision"]});
        assert_eq!(from_ollama_show(&show), Some(true));
        assert_eq!(
            from_ollama_show(&json!({"capabilities": ["completion"]})),
            Some(false)
        );
        assert_eq!(from_ollama_show(&json!({"details": {}})), None);
        assert_eq!(from_lmstudio(&json!({"type": "vlm"})), Some(true));
        assert_eq!(from_lmstudio(&json!({"type": "llm"})), Some(false));
    }
}

//! What a server says of a model's window, read from the answers of the endpoints each kind of
//! server offers: the OpenAI-compatible `/models` list (OpenRouter, vLLM), LM Studio's
//! `/api/v0/models/{model}`, Ollama's `/api/show` and `/api/ps`, Anthropic's `/v1/models/{model}`.
//! Pure functions over JSON here; the requests are made by the providers. Every figure is
//! optional: a field missing or of the wrong kind leaves it unknown.

use serde_json::Value;

use super::ModelInfo;

/// The window Ollama gives a model when neither the server (`OLLAMA_CONTEXT_LENGTH`) nor the
/// model (`PARAMETER num_ctx`) sets one. Ollama cuts a longer prompt from the start without an
/// error, so a window too small is the safe guess.
pub(crate) const OLLAMA_DEFAULT_WINDOW: u64 = 4096;

fn u64_at(value: &Value, pointer: &str) -> Option<u64> {
    value
        .pointer(pointer)
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// The entry for `model` in an OpenAI-compatible model list: OpenRouter's `context_length` and
/// `top_provider.max_completion_tokens`, vLLM's `max_model_len`.
pub(crate) fn window_from_models_list(list: &Value, model: &str) -> ModelInfo {
    let entry = list
        .get("data")
        .or_else(|| list.get("models"))
        .and_then(Value::as_array)
        .and_then(|entries| {
            entries
                .iter()
                .find(|e| e.get("id").and_then(Value::as_str) == Some(model))
        });
    let Some(entry) = entry else {
        return ModelInfo::default();
    };
    if let Some(window) = u64_at(entry, "/max_model_len") {
        return ModelInfo {
            context_window: Some(window),
            source: "vllm".into(),
            images: super::vision::from_models_list(entry),
            ..ModelInfo::default()
        };
    }
    let window =
        u64_at(entry, "/context_length").or_else(|| u64_at(entry, "/top_provider/context_length"));
    match window {
        Some(window) => ModelInfo {
            context_window: Some(window),
            max_output: u64_at(entry, "/top_provider/max_completion_tokens"),
            source: "openrouter".into(),
            images: super::vision::from_models_list(entry),
            ..ModelInfo::default()
        },
        None => ModelInfo {
            images: super::vision::from_models_list(entry),
            ..ModelInfo::default()
        },
    }
}

/// LM Studio's own description of a model: the window it is loaded with, where it says,
/// else the most the model can take.
pub(crate) fn window_from_lmstudio(model: &Value) -> ModelInfo {
    let window =
        u64_at(model, "/loaded_context_length").or_else(|| u64_at(model, "/max_context_length"));
    match window {
        Some(window) => ModelInfo {
            context_window: Some(window),
            source: "lmstudio".into(),
            images: super::vision::from_lmstudio(model),
            ..ModelInfo::default()
        },
        None => ModelInfo {
            images: super::vision::from_lmstudio(model),
            ..ModelInfo::default()
        },
    }
}

/// Ollama's `/api/show`: the model's trained window (`model_info["<arch>.context_length"]`) and
/// the `num_ctx` its Modelfile sets (in the `parameters` text, one `name value` per line).
pub(crate) fn ollama_show(show: &Value) -> (Option<u64>, Option<u64>) {
    let trained = show
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|info| {
            info.iter()
                .find(|(key, _)| key.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        })
        .filter(|n| *n > 0);
    let num_ctx = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        })
        .filter(|n| *n > 0);
    (trained, num_ctx)
}

/// The window a loaded model runs with, from Ollama's `/api/ps` (newer releases report it).
/// Ollama names an untagged model `name:latest`.
pub(crate) fn ollama_running_window(ps: &Value, model: &str) -> Option<u64> {
    let tagged = format!("{model}:latest");
    ps.get("models")
        .and_then(Value::as_array)?
        .iter()
        .find(|m| {
            ["name", "model"].iter().any(|key| {
                let name = m.get(*key).and_then(Value::as_str);
                name == Some(model) || name == Some(tagged.as_str())
            })
        })
        .and_then(|m| u64_at(m, "/context_length"))
}

/// The window an Ollama model will really have: the one it runs with, else its Modelfile's
/// `num_ctx`, else Ollama's default; never more than it was trained for.
/// An answer without the fields `/api/show` always has is not Ollama's and says nothing.
pub(crate) fn window_from_ollama(show: &Value, running: Option<u64>) -> ModelInfo {
    let is_ollama = ["model_info", "modelfile", "details"]
        .iter()
        .any(|key| show.get(*key).is_some_and(|v| !v.is_null()));
    if !is_ollama {
        return ModelInfo::default();
    }
    let (trained, num_ctx) = ollama_show(show);
    let window = running
        .or(num_ctx)
        .unwrap_or(OLLAMA_DEFAULT_WINDOW)
        .min(trained.unwrap_or(u64::MAX));
    ModelInfo {
        context_window: Some(window),
        max_output: None,
        source: "ollama".into(),
        ollama: true,
        images: super::vision::from_ollama_show(show),
    }
}

/// Anthropic's `/v1/models/{model}`: `max_input_tokens` and `max_tokens`, where the API
/// version in use returns them.
pub(crate) fn window_from_anthropic(model: &Value) -> ModelInfo {
    let context_window = u64_at(model, "/max_input_tokens");
    let max_output = u64_at(model, "/max_tokens");
    let known = context_window.is_some() || max_output.is_some();
    ModelInfo {
        context_window,
        max_output,
        source: if known {
            "anthropic".into()
        } else {
            String::new()
        },
        ollama: false,
        images: None,
    }
}

#[cfg(test)]
#[path = "model_info_tests.rs"]
mod tests;

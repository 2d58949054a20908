//! The window read from each kind of server's answer, and nothing read from a wrong one.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn openrouter_and_vllm_lists_give_the_window_of_the_model_asked_for() {
    let openrouter = json!({"data": [
        {"id": "other/model", "context_length": 8192},
        {"id": "anthropic/claude-sonnet-4.5", "context_length": 1000000,
         "top_provider": {"context_length": 1000000, "max_completion_tokens": 64000}}
    ]});
    assert_eq!(
        window_from_models_list(&openrouter, "anthropic/claude-sonnet-4.5"),
        ModelInfo {
            context_window: Some(1_000_000),
            max_output: Some(64_000),
            source: "openrouter".into(),
            ollama: false,
            images: None,
        }
    );
    let vllm = json!({"object": "list", "data": [
        {"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 32768}
    ]});
    assert_eq!(
        window_from_models_list(&vllm, "Qwen/Qwen3-8B"),
        ModelInfo {
            context_window: Some(32_768),
            source: "vllm".into(),
            ..ModelInfo::default()
        }
    );
    assert_eq!(
        window_from_models_list(&vllm, "absent"),
        ModelInfo::default()
    );
    let hostile = json!({"data": [{"id": "m", "context_length": "big", "max_model_len": -1}]});
    assert_eq!(window_from_models_list(&hostile, "m"), ModelInfo::default());
    assert_eq!(
        window_from_models_list(&json!([1, 2]), "m"),
        ModelInfo::default()
    );
}

#[test]
fn lm_studio_prefers_the_loaded_window() {
    let loaded = json!({"id": "qwen/qwen3-8b", "state": "loaded",
        "max_context_length": 40960, "loaded_context_length": 8192});
    assert_eq!(window_from_lmstudio(&loaded).context_window, Some(8192));
    let not_loaded =
        json!({"id": "qwen/qwen3-8b", "state": "not-loaded", "max_context_length": 40960});
    assert_eq!(
        window_from_lmstudio(&not_loaded).context_window,
        Some(40960)
    );
    assert_eq!(
        window_from_lmstudio(&json!({"error": "no"})),
        ModelInfo::default()
    );
}

#[test]
fn ollama_windows_come_from_the_running_model_the_modelfile_or_the_default() {
    let show = json!({
        "parameters": "stop \"<|im_end|>\"\nnum_ctx                        16384\ntemperature 0.7",
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}
    });
    assert_eq!(ollama_show(&show), (Some(32_768), Some(16_384)));
    assert_eq!(
        window_from_ollama(&show, None),
        ModelInfo {
            context_window: Some(16_384),
            max_output: None,
            source: "ollama".into(),
            ollama: true,
            images: None,
        }
    );
    assert_eq!(
        window_from_ollama(&show, Some(8192)).context_window,
        Some(8192)
    );
    // A window larger than the model was trained for is cut to what it was trained for.
    assert_eq!(
        window_from_ollama(&show, Some(65_536)).context_window,
        Some(32_768)
    );
    let bare = json!({"model_info": {"llama.context_length": 131072}});
    assert_eq!(
        window_from_ollama(&bare, None).context_window,
        Some(OLLAMA_DEFAULT_WINDOW)
    );
    assert_eq!(
        window_from_ollama(&json!({"ok": true}), Some(8192)),
        ModelInfo::default()
    );
    let ps = json!({"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 8192}]});
    assert_eq!(ollama_running_window(&ps, "llama3.2"), Some(8192));
    assert_eq!(ollama_running_window(&ps, "qwen3"), None);
    assert_eq!(
        ollama_running_window(&json!({"models": "x"}), "llama3.2"),
        None
    );
}

#[test]
fn anthropic_model_fields_where_the_api_returns_them() {
    let model = json!({"id": "claude-sonnet-4-5", "type": "model",
        "max_input_tokens": 200000, "max_tokens": 64000});
    assert_eq!(
        window_from_anthropic(&model),
        ModelInfo {
            context_window: Some(200_000),
            max_output: Some(64_000),
            source: "anthropic".into(),
            ollama: false,
            images: None,
        }
    );
    assert_eq!(
        window_from_anthropic(&json!({"id": "claude-sonnet-4-5"})),
        ModelInfo::default()
    );
}

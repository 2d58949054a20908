//! How big the model's window is, and how it is shared between input and output.
//!
//! Order of trust: the person's override (Settings, `--context-window`); a window learned from
//! the provider's own context-length error (reality, where it disagrees with everyone else);
//! what the provider says of the model; the table of known families; a default, marked unknown
//! so the first error teaches the real figure.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::llm::ModelInfo;
use crate::protocol::ModelOverride;

/// Assumed when nothing is known: large enough not to waste a big model, and corrected by the
/// provider's first context-length error.
pub const DEFAULT_WINDOW: u64 = 128_000;
/// Assumed output limit when nothing is known.
pub const DEFAULT_MAX_OUTPUT: u64 = 8_192;
/// The smallest window Mandate works in.
pub const MIN_WINDOW: u64 = 2_048;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    Settings,
    Learned,
    Provider,
    Table,
    Default,
}

impl WindowSource {
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::Settings => "settings",
            WindowSource::Learned => "learned",
            WindowSource::Provider => "provider",
            WindowSource::Table => "table",
            WindowSource::Default => "default",
        }
    }
}

/// The window of one model, and the share of it each part of a request may use.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelWindow {
    pub context_window: u64,
    pub source: WindowSource,
    /// The most the model can write in one answer.
    pub max_output: u64,
    /// Anthropic extended thinking budget (None: off).
    pub thinking_budget: Option<u32>,
    /// The server is Ollama: the request asks for `num_ctx`.
    pub ollama: bool,
}

impl ModelWindow {
    /// Works the window out from what each source says.
    pub fn resolve(
        model: &str,
        over: &ModelOverride,
        learned: Option<u64>,
        provider: &ModelInfo,
    ) -> Self {
        let facts = crate::llm::model_facts(model);
        let (context_window, source) = if let Some(w) = over.context_window {
            (w, WindowSource::Settings)
        } else if let Some(w) = learned {
            (w, WindowSource::Learned)
        } else if let Some(w) = provider.context_window {
            (w, WindowSource::Provider)
        } else if let Some(f) = facts {
            (f.context_window, WindowSource::Table)
        } else {
            (DEFAULT_WINDOW, WindowSource::Default)
        };
        let context_window = context_window.max(MIN_WINDOW);
        let max_output = over
            .max_output
            .map(u64::from)
            .or(provider.max_output)
            .or(facts.map(|f| f.max_output))
            .unwrap_or(DEFAULT_MAX_OUTPUT)
            .clamp(256, context_window / 2);
        let thinking_budget = over.thinking_budget.filter(|b| *b >= 1024);
        Self {
            context_window,
            source,
            max_output,
            thinking_budget,
            ollama: provider.ollama,
        }
    }

    /// Whether the figure is known rather than assumed.
    pub fn known(&self) -> bool {
        self.source != WindowSource::Default
    }

    /// Output reserved in every request: a fifth of the window (at least 1k, at most 32k),
    /// never more than the model can write; more when thinking needs room before the answer.
    pub fn reserved_output(&self) -> u64 {
        let scaled = (self.context_window / 5).clamp(1_024, 32_000);
        let base = scaled.min(self.max_output);
        match self.thinking_budget {
            Some(b) => (u64::from(b) + base.min(8_192))
                .min(self.max_output.max(u64::from(b) + 1_024))
                .min(self.context_window / 2),
            None => base,
        }
    }

    /// Kept free for what the estimate misses: 5% of the window, at least 256 tokens.
    pub fn margin(&self) -> u64 {
        (self.context_window / 20).max(256)
    }

    /// What the input of a request may use.
    pub fn usable_input(&self) -> u64 {
        self.context_window
            .saturating_sub(self.reserved_output())
            .saturating_sub(self.margin())
            .max(MIN_WINDOW / 2)
    }

    /// Where automatic condensing starts.
    pub fn threshold(&self, percent: u8) -> u64 {
        self.usable_input() * u64::from(percent.clamp(10, 95)) / 100
    }

    /// The `max_tokens` of a request.
    pub fn max_tokens(&self) -> u32 {
        self.reserved_output().min(u64::from(u32::MAX)) as u32
    }

    /// The thinking budget a request may carry: below its `max_tokens`, or none.
    pub fn request_thinking(&self) -> Option<u32> {
        let b = self.thinking_budget?;
        (u64::from(b) + 256 <= self.reserved_output()).then_some(b)
    }
}

/// Windows learned from providers' context-length errors, per model and origin, kept in
/// the data directory so a model's limit is learned once.
#[derive(Debug)]
pub struct LearnedWindows {
    file: Option<PathBuf>,
    known: Mutex<BTreeMap<String, u64>>,
}

impl LearnedWindows {
    /// Kept in memory only (tests).
    pub fn in_memory() -> Self {
        Self {
            file: None,
            known: Mutex::new(BTreeMap::new()),
        }
    }

    /// Reads `DATA/model-windows.json` (a file that does not parse is treated as empty and
    /// rewritten whole at the next lesson).
    pub fn open(data_dir: &std::path::Path) -> Self {
        let file = data_dir.join("model-windows.json");
        let known = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<BTreeMap<String, u64>>(&b).ok())
            .unwrap_or_default();
        Self {
            file: Some(file),
            known: Mutex::new(known),
        }
    }

    /// The key of a model at a provider: `provider/model@origin`.
    pub fn key(model_id: &str, base_url: &str) -> String {
        let origin = reqwest::Url::parse(base_url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|_| base_url.to_string());
        format!("{model_id}@{origin}")
    }

    pub fn get(&self, key: &str) -> Option<u64> {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .copied()
    }

    /// Remembers `limit` for `key` (only ever smaller than what was known); the file is
    /// written atomically. A write that fails costs only the memory across restarts.
    pub fn learn(&self, key: &str, limit: u64) -> std::io::Result<()> {
        let limit = limit.max(MIN_WINDOW);
        let bytes = {
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            let entry = known.entry(key.to_string()).or_insert(limit);
            *entry = (*entry).min(limit);
            serde_json::to_vec_pretty(&*known).map_err(std::io::Error::other)?
        };
        match &self.file {
            Some(file) => {
                if let Some(dir) = file.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                crate::fsutil::write_atomic(file, &bytes)
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(window: Option<u64>) -> ModelOverride {
        ModelOverride {
            context_window: window,
            ..ModelOverride::default()
        }
    }

    #[test]
    fn the_persons_figure_wins_then_what_was_learned_then_the_provider_then_the_table() {
        let provider = ModelInfo {
            context_window: Some(32_768),
            ..ModelInfo::default()
        };
        let w = ModelWindow::resolve(
            "claude-sonnet-4-5",
            &over(Some(50_000)),
            Some(20_000),
            &provider,
        );
        assert_eq!(
            (w.context_window, w.source),
            (50_000, WindowSource::Settings)
        );
        let w = ModelWindow::resolve("claude-sonnet-4-5", &over(None), Some(20_000), &provider);
        assert_eq!(
            (w.context_window, w.source),
            (20_000, WindowSource::Learned)
        );
        let w = ModelWindow::resolve("claude-sonnet-4-5", &over(None), None, &provider);
        assert_eq!(
            (w.context_window, w.source),
            (32_768, WindowSource::Provider)
        );
        let w = ModelWindow::resolve(
            "claude-sonnet-4-5",
            &over(None),
            None,
            &ModelInfo::default(),
        );
        assert_eq!((w.context_window, w.source), (200_000, WindowSource::Table));
        let w = ModelWindow::resolve("my-local-model", &over(None), None, &ModelInfo::default());
        assert_eq!((w.context_window, w.known()), (DEFAULT_WINDOW, false));
    }

    #[test]
    fn a_small_window_keeps_most_of_itself_for_input() {
        let w = ModelWindow::resolve("local", &over(Some(16_384)), None, &ModelInfo::default());
        assert_eq!(w.reserved_output(), 3_276);
        assert_eq!(w.margin(), 819);
        assert_eq!(w.usable_input(), 16_384 - 3_276 - 819);
        assert_eq!(w.threshold(80), (16_384 - 3_276 - 819) * 80 / 100);
        let big = ModelWindow::resolve(
            "claude-sonnet-4-5",
            &over(None),
            None,
            &ModelInfo::default(),
        );
        assert_eq!(big.reserved_output(), 32_000);
        assert_eq!(big.usable_input(), 200_000 - 32_000 - 10_000);
    }

    #[test]
    fn thinking_gets_room_below_max_tokens() {
        let mut o = over(None);
        o.thinking_budget = Some(10_000);
        let w = ModelWindow::resolve("claude-sonnet-4-5", &o, None, &ModelInfo::default());
        assert!(u64::from(w.max_tokens()) > 10_000);
        assert_eq!(w.request_thinking(), Some(10_000));
    }

    #[test]
    fn learned_windows_are_kept_on_disk_and_only_shrink() {
        let dir = tempfile::tempdir().expect("dir");
        let key = LearnedWindows::key("openai/m", "http://127.0.0.1:9/v1");
        assert_eq!(key, "openai/m@http://127.0.0.1:9");
        let learned = LearnedWindows::open(dir.path());
        learned.learn(&key, 16_000).expect("learn");
        learned.learn(&key, 32_000).expect("learn");
        assert_eq!(LearnedWindows::open(dir.path()).get(&key), Some(16_000));
    }
}

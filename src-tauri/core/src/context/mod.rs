//! The model's context window, and keeping a long task inside it.
//!
//! The task store keeps the whole conversation; what is *sent* is rebuilt here, in one place,
//! before every request:
//! - `window`: how big the model's window is (the person's setting, the provider, the table of
//!   known families, or what a context-length error named — learned once, remembered);
//! - `tokens`: how much of it the next request holds (the last usage plus a corrected estimate);
//! - `fit`: every tool result measured before it enters the conversation, cut to head and tail
//!   with the whole output kept beside the task;
//! - `history`: the request's messages (condensed summary, newest turns verbatim, superseded
//!   reads dropped, never a call without its result);
//! - `condense`: the summary call and its guards.
//!
//! Condensing touches neither the ledger nor undo: they know nothing of what is sent.

pub mod condense;
pub mod fit;
pub mod history;
pub mod tokens;
pub mod window;

use serde::{Deserialize, Serialize};

pub use window::{LearnedWindows, ModelWindow, WindowSource};

use crate::protocol::ModelOverride;

/// What a run knows of the person's wishes for the context (Settings, CLI flags).
#[derive(Debug, Clone)]
pub struct ContextConfig {
    /// Condense at this share of the usable input (percent).
    pub threshold_percent: u8,
    /// The person's figures for this model (window, output, thinking budget).
    pub model_override: ModelOverride,
    /// OpenAI reasoning models: the effort asked for.
    pub reasoning_effort: Option<String>,
    /// Windows learned from providers' errors, kept in the data directory.
    pub learned: std::sync::Arc<LearnedWindows>,
    /// The window of this run's model, once worked out.
    pub resolved: std::sync::Arc<std::sync::Mutex<Option<ModelWindow>>>,
}

impl ContextConfig {
    /// The person's settings for the model `model_id` (`provider/model`), with windows learned
    /// before kept in `data_dir`.
    pub fn from_settings(
        settings: &crate::protocol::ContextSettings,
        model_id: &str,
        data_dir: &std::path::Path,
    ) -> Self {
        let model_override = settings
            .models
            .iter()
            .find(|m| {
                m.model == model_id
                    || Some(m.model.as_str()) == model_id.split_once('/').map(|(_, m)| m)
            })
            .cloned()
            .unwrap_or_default();
        Self {
            threshold_percent: settings.threshold_percent,
            model_override,
            reasoning_effort: None,
            learned: std::sync::Arc::new(LearnedWindows::open(data_dir)),
            resolved: Default::default(),
        }
    }
}

impl ContextConfig {
    /// The same settings for another model of the run (a mode's): its window is worked out
    /// afresh; the person's figures for the first model do not carry over.
    pub fn for_other_model(&self) -> Self {
        Self {
            threshold_percent: self.threshold_percent,
            model_override: ModelOverride::default(),
            reasoning_effort: self.reasoning_effort.clone(),
            learned: self.learned.clone(),
            resolved: Default::default(),
        }
    }
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            threshold_percent: 80,
            model_override: ModelOverride::default(),
            reasoning_effort: None,
            learned: std::sync::Arc::new(LearnedWindows::in_memory()),
            resolved: Default::default(),
        }
    }
}

/// One condensation: the conversation before `at` is replaced, in what is sent, by `summary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condensation {
    /// Index in the task's conversation where the verbatim part starts.
    pub at: usize,
    pub summary: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub cost_usd: Option<f64>,
    pub created_at: String,
    /// The transcript card's id.
    pub message_id: String,
    /// False for the fallback that dropped the oldest turns without a summary call.
    #[serde(default = "yes")]
    pub summarized: bool,
}

fn yes() -> bool {
    true
}

/// What a task remembers of its context between requests (kept in its record).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextState {
    /// Newest last; the newest one decides what is sent.
    pub condensations: Vec<Condensation>,
    /// The last request's estimate and the provider's count for it (request and answer).
    pub last: Option<tokens::Measured>,
    /// Model turns since the last condensation (automatic condensing waits two).
    pub turns_since_condense: u32,
    /// Condensing failures in a row (three ask the person).
    pub failures: u32,
}

impl ContextState {
    /// The newest condensation that still applies to a conversation of `len` messages.
    pub fn current(&self) -> Option<&Condensation> {
        self.condensations.last()
    }

    /// After a rewind to `len` messages, condensations of what is gone no longer apply.
    pub fn rewound_to(&mut self, len: usize) {
        self.condensations.retain(|c| c.at <= len);
        self.last = None;
        self.turns_since_condense = 0;
        self.failures = 0;
    }
}

//! Settings as the window shows and saves them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::Budget;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Anthropic Messages API.
    Anthropic,
    /// Any OpenAI-compatible Chat Completions API (OpenAI, OpenRouter, Ollama, LM Studio, ...).
    Openai,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai => "openai",
        }
    }
}

/// A named provider set-up: a wire format, a server and a model. Its key lives in the
/// keyring, bound to the origin of `base_url` (see `crate::profiles`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProviderProfile {
    /// Stable: lower-case letters, digits and `-` (the keyring entry is named by it).
    pub id: String,
    pub name: String,
    pub provider: ProviderKind,
    pub preset: String,
    pub base_url: String,
    pub model: String,
    /// The origin the key was given for (Mandate sets it; a key goes nowhere else).
    #[serde(default)]
    #[ts(optional)]
    pub key_origin: Option<String>,
}

/// A profile as Settings shows it: whether its key is set for where it points now, or was
/// given for another origin (and waits for the person to let it go there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProfileView {
    pub profile: ProviderProfile,
    pub api_key_set: bool,
    pub key_elsewhere: Option<String>,
}

/// Which actions wait for a human. Destructive commands always ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct ApprovalPolicy {
    pub ask_before_writes: bool,
    pub ask_before_safe_commands: bool,
    /// The agent's `switch_mode` takes effect without asking the person.
    #[serde(default)]
    pub switch_modes_without_asking: bool,
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        Self {
            ask_before_writes: true,
            ask_before_safe_commands: false,
            switch_modes_without_asking: false,
        }
    }
}

/// Settings as the UI sees them: never the key itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SettingsView {
    pub provider: ProviderKind,
    /// A label for the provider preset: anthropic, openai, openrouter, ollama, lmstudio, custom.
    pub preset: String,
    pub base_url: String,
    pub model: String,
    pub api_key_set: bool,
    /// Where the key comes from: `keyring`, `env:NAME` or `none`.
    pub api_key_source: String,
    pub custom_instructions: String,
    pub approval: ApprovalPolicy,
    /// Why the keyring cannot be used, when it cannot.
    pub keyring_error: Option<String>,
    /// The provider needs an API key and none is set (a server on this machine needs none).
    pub needs_key: bool,
    /// The editor file paths open in: `auto` (the first detected) or one of `editors`.
    pub editor: String,
    pub editors: Vec<EditorOption>,
    /// Workspaces opened before, most recent first (existing folders only).
    pub recent_workspaces: Vec<String>,
    /// How commands are confined on this machine.
    pub confinement: ConfinementView,
    /// The cap on what one task may spend (none when both are None).
    pub budget: Budget,
    /// Condensing and the models' windows as the person set them.
    pub context: ContextSettings,
    /// The embeddings endpoint for code search, if any.
    pub code_search: CodeSearchSettings,
    /// Every provider profile; the fields above describe the default one.
    pub profiles: Vec<ProfileView>,
    pub default_profile: String,
    /// The profile each mode runs on, where the person named one (its slug → a profile id).
    pub mode_profiles: std::collections::BTreeMap<String, String>,
    pub notifications: bool,
}

/// `codebase_search` by meaning as well as by words: an OpenAI-compatible `/embeddings`
/// endpoint the person chose (a local embedding model, typically). Optional: an empty
/// `embeddings_base_url` searches by words alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct CodeSearchSettings {
    /// Up to and including `/v1`, e.g. `http://127.0.0.1:11434/v1`.
    pub embeddings_base_url: String,
    pub embeddings_model: String,
}

/// When the conversation is condensed, and what the person knows better than any table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct ContextSettings {
    /// Condense automatically when the conversation reaches this share of the usable input
    /// (percent, 10 to 95).
    pub threshold_percent: u8,
    /// Per model (`provider/model`, as recorded in the ledger): window, output and thinking.
    pub models: Vec<ModelOverride>,
}

impl Default for ContextSettings {
    fn default() -> Self {
        Self {
            threshold_percent: 80,
            models: Vec::new(),
        }
    }
}

/// What the person says of one model; None leaves it to the provider and the table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct ModelOverride {
    /// `provider/model`, e.g. `anthropic/claude-sonnet-4-5` or `openai/llama3.2`.
    pub model: String,
    pub context_window: Option<u64>,
    pub max_output: Option<u32>,
    /// Anthropic extended thinking budget in tokens (0 or None: off).
    pub thinking_budget: Option<u32>,
    /// Its prices, instead of the table's (or where the table knows none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub prices: Option<ModelPrices>,
}

/// US dollars per million tokens. A cache price left out is the table's for the model, else
/// the input price (no discount assumed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct ModelPrices {
    pub input: f64,
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

/// The confinement commands run under, as Settings shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ConfinementView {
    /// False: nothing but a person's approval stops a command.
    pub confined: bool,
    /// One line: `landlock ABI 7 + bwrap`, `landlock ABI 7 only`, `none`.
    pub summary: String,
    /// What this confinement does not stop, in the user's words.
    pub gaps: Vec<String>,
}

/// An editor Mandate can open files in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct EditorOption {
    pub id: String,
    pub label: String,
    /// Found on this machine (its program is on the PATH).
    pub detected: bool,
}

/// A model server found on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LocalServer {
    /// The settings preset it matches: `ollama`, `lmstudio` or `llamacpp`.
    pub preset: String,
    pub label: String,
    /// OpenAI-compatible base URL, up to and including `/v1`.
    pub base_url: String,
    pub models: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct SettingsUpdate {
    pub provider: ProviderKind,
    pub preset: String,
    pub base_url: String,
    pub model: String,
    pub custom_instructions: String,
    pub approval: ApprovalPolicy,
    /// `auto` or the id of one of `SettingsView::editors`.
    pub editor: String,
    /// The cap on what one task may spend; absent is no cap.
    #[serde(default)]
    #[ts(optional)]
    pub budget: Option<Budget>,
    /// Condensing and per-model windows; absent keeps what is set.
    #[serde(default)]
    #[ts(optional)]
    pub context: Option<ContextSettings>,
    /// The embeddings endpoint for code search; absent keeps what is set.
    #[serde(default)]
    #[ts(optional)]
    pub code_search: Option<CodeSearchSettings>,
    /// The profile the provider fields above are for (absent: the default one); an id not
    /// known yet makes a new profile.
    #[serde(default)]
    #[ts(optional)]
    pub profile: Option<String>,
    /// Its name (a new profile needs one).
    #[serde(default)]
    #[ts(optional)]
    pub profile_name: Option<String>,
    /// Makes this profile the default one for new tasks.
    #[serde(default)]
    #[ts(optional)]
    pub default_profile: Option<String>,
    /// The profile each mode runs on (its slug → a profile id); absent keeps what is set.
    #[serde(default)]
    #[ts(optional)]
    pub mode_profiles: Option<std::collections::BTreeMap<String, String>>,
    /// Desktop notifications when Mandate waits; absent keeps what is set.
    #[serde(default)]
    #[ts(optional)]
    pub notifications: Option<bool>,
}

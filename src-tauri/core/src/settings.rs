//! User settings (everything but secrets), persisted as JSON in the user's config directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::write_atomic;
use crate::protocol::{
    ApprovalPolicy, Budget, CodeSearchSettings, ContextSettings, ProviderKind, ProviderProfile,
    SettingsUpdate,
};

/// Where Mandate keeps per-user files. Overridable for tests and portable installs.
#[derive(Debug, Clone)]
pub struct AppDirs {
    pub config: PathBuf,
    pub data: PathBuf,
}

impl AppDirs {
    /// `MANDATE_CONFIG_DIR` / `MANDATE_DATA_DIR`, else the XDG directories + `mandate`.
    pub fn from_env() -> Self {
        let config = std::env::var_os("MANDATE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| dirs::config_dir().map(|d| d.join("mandate")))
            .unwrap_or_else(|| PathBuf::from(".mandate/config"));
        let data = std::env::var_os("MANDATE_DATA_DIR")
            .map(PathBuf::from)
            .or_else(|| dirs::data_dir().map(|d| d.join("mandate")))
            .unwrap_or_else(|| PathBuf::from(".mandate/data"));
        Self { config, data }
    }

    /// Where MCP servers keep their package caches (npx, uvx) between runs:
    /// `MANDATE_CACHE_DIR`, else the XDG cache directory + `mandate`. Never inside `config`
    /// or `data`, which servers may not write.
    pub fn cache_from_env() -> Option<PathBuf> {
        std::env::var_os("MANDATE_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| dirs::cache_dir().map(|d| d.join("mandate")))
    }

    pub fn settings_file(&self) -> PathBuf {
        self.config.join("settings.json")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub provider: ProviderKind,
    pub preset: String,
    pub base_url: String,
    pub model: String,
    pub custom_instructions: String,
    pub approval: ApprovalPolicy,
    /// `auto` or an editor id (see `host::editor`).
    pub editor: String,
    /// Absolute paths of workspaces opened in the window, most recent first.
    pub recent_workspaces: Vec<String>,
    /// What one task may spend before it pauses (no cap by default).
    pub budget: Budget,
    /// Condensing threshold and per-model windows.
    pub context: ContextSettings,
    /// Embeddings for code search (off when no endpoint is named).
    pub code_search: CodeSearchSettings,
    /// Provider profiles side by side (see `profiles`); `provider`, `preset`, `base_url` and
    /// `model` above mirror the default one.
    pub profiles: Vec<ProviderProfile>,
    pub default_profile: String,
    /// The profile a mode runs on (its slug → a profile id), where the person named one: a
    /// task in that mode, a subtask started in it, a task that switches to it.
    pub mode_profiles: std::collections::BTreeMap<String, String>,
    /// Desktop notifications when Mandate waits for the person and the window is not focused.
    pub notifications: bool,
}

/// How many recent workspaces are remembered.
pub const RECENT_WORKSPACES: usize = 10;

impl Default for Settings {
    fn default() -> Self {
        Self {
            provider: ProviderKind::Openai,
            preset: "openai".into(),
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4.1-mini".into(),
            custom_instructions: String::new(),
            approval: ApprovalPolicy::default(),
            editor: "auto".into(),
            recent_workspaces: Vec::new(),
            budget: Budget::default(),
            context: ContextSettings::default(),
            code_search: CodeSearchSettings::default(),
            profiles: Vec::new(),
            default_profile: crate::profiles::DEFAULT_ID.into(),
            mode_profiles: Default::default(),
            notifications: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{0}")]
    Invalid(String),
    #[error("could not save settings to {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

pub const PRESETS: &[&str] = &[
    "anthropic",
    "openai",
    "openrouter",
    "ollama",
    "lmstudio",
    "llamacpp",
    "custom",
];

impl Settings {
    /// Loads the settings file. A file that does not parse is set aside (never silently
    /// overwritten) and defaults are used; the returned warning says so.
    /// The person's prices (Settings → Context window) take effect for every cost estimate.
    pub fn load(dirs: &AppDirs) -> (Settings, Option<String>) {
        let (mut settings, warning) = Self::read(dirs);
        crate::profiles::normalize(&mut settings);
        crate::llm::set_price_overrides(&settings.context.models);
        (settings, warning)
    }

    fn read(dirs: &AppDirs) -> (Settings, Option<String>) {
        let path = dirs.settings_file();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (Settings::default(), None)
            }
            Err(e) => {
                return (
                    Settings::default(),
                    Some(format!("could not read {}: {e}", path.display())),
                )
            }
        };
        match serde_json::from_str::<Settings>(&text) {
            Ok(s) => (s, None),
            Err(e) => {
                let aside = path.with_extension("json.unreadable");
                let kept = match std::fs::rename(&path, &aside) {
                    Ok(()) => format!("it was kept as {}", aside.display()),
                    Err(moved) => format!("it could not be set aside ({moved}) and stays as it is"),
                };
                (
                    Settings::default(),
                    Some(format!(
                        "{} is not valid ({e}); {kept} and defaults are in use",
                        path.display()
                    )),
                )
            }
        }
    }

    /// Saves the settings; the prices they name take effect at once.
    pub fn save(&self, dirs: &AppDirs) -> Result<(), SettingsError> {
        crate::llm::set_price_overrides(&self.context.models);
        let path = dirs.settings_file();
        let mut text = serde_json::to_string_pretty(self).map_err(|e| SettingsError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        text.push('\n');
        write_atomic(&path, text.as_bytes()).map_err(|source| SettingsError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// Checks an update from the UI and applies it; what the UI does not edit (the recent
    /// workspaces) is kept.
    pub fn with_update(&self, update: SettingsUpdate) -> Result<Settings, SettingsError> {
        let base_url = update.base_url.trim().trim_end_matches('/').to_string();
        validate_base_url(&base_url)?;
        let model = update.model.trim().to_string();
        if model.is_empty() || model.len() > 200 || model.chars().any(char::is_control) {
            return Err(SettingsError::Invalid(
                "the model name must be 1 to 200 printable characters".into(),
            ));
        }
        if !PRESETS.contains(&update.preset.as_str()) {
            return Err(SettingsError::Invalid(format!(
                "unknown provider preset `{}` (expected one of {})",
                update.preset,
                PRESETS.join(", ")
            )));
        }
        if update.custom_instructions.len() > 20_000 {
            return Err(SettingsError::Invalid(
                "custom instructions are limited to 20,000 characters".into(),
            ));
        }
        if update.editor != "auto" && !crate::host::editor::is_known(&update.editor) {
            return Err(SettingsError::Invalid(format!(
                "unknown editor `{}`",
                update.editor
            )));
        }
        let budget = update.budget.unwrap_or_default();
        check_budget(&budget)?;
        let context = match update.context {
            Some(context) => check_context(context)?,
            None => self.context.clone(),
        };
        let code_search = match update.code_search {
            Some(c) => check_code_search(c)?,
            None => self.code_search.clone(),
        };
        let mut base = self.clone();
        crate::profiles::normalize(&mut base);
        let mut profiles = base.profiles.clone();
        let edited = update
            .profile
            .clone()
            .unwrap_or_else(|| base.default_profile.clone());
        if !crate::profiles::valid_id(&edited) {
            return Err(SettingsError::Invalid(format!(
                "a profile id is 1 to 40 of a-z, 0-9 and -, not `{edited}`"
            )));
        }
        let name = update.profile_name.as_deref().map(str::trim);
        if name.is_some_and(|n| n.is_empty() || n.len() > 60 || n.chars().any(char::is_control)) {
            return Err(SettingsError::Invalid(
                "a profile's name is 1 to 60 printable characters".into(),
            ));
        }
        let profile = match profiles.iter_mut().find(|p| p.id == edited) {
            Some(p) => p,
            None => {
                let name = name
                    .ok_or_else(|| SettingsError::Invalid("a new profile needs a name".into()))?;
                profiles.push(ProviderProfile {
                    id: edited.clone(),
                    name: name.to_string(),
                    provider: update.provider,
                    preset: update.preset.clone(),
                    base_url: base_url.clone(),
                    model: model.clone(),
                    key_origin: None,
                });
                profiles.last_mut().expect("just pushed")
            }
        };
        if let Some(name) = name {
            profile.name = name.to_string();
        }
        profile.provider = update.provider;
        profile.preset = update.preset;
        profile.base_url = base_url;
        profile.model = model;
        let mut names: Vec<String> = profiles.iter().map(|p| p.name.to_lowercase()).collect();
        names.sort();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err(SettingsError::Invalid(
                "two profiles cannot have the same name".into(),
            ));
        }
        let default_profile = update
            .default_profile
            .unwrap_or_else(|| base.default_profile.clone());
        if !profiles.iter().any(|p| p.id == default_profile) {
            return Err(SettingsError::Invalid(format!(
                "there is no profile `{default_profile}` to make the default"
            )));
        }
        let mode_profiles = match update.mode_profiles {
            Some(chosen) => check_mode_profiles(chosen, &profiles)?,
            None => base.mode_profiles.clone(),
        };
        let mut settings = Settings {
            mode_profiles,
            notifications: update.notifications.unwrap_or(base.notifications),
            budget,
            context,
            code_search,
            custom_instructions: update.custom_instructions,
            approval: update.approval,
            editor: update.editor,
            recent_workspaces: self.recent_workspaces.clone(),
            profiles,
            default_profile,
            ..base
        };
        crate::profiles::normalize(&mut settings);
        Ok(settings)
    }

    /// Puts `root` first in the recent workspaces; false when it was first already.
    pub fn remember_workspace(&mut self, root: &str) -> bool {
        if self.recent_workspaces.first().map(String::as_str) == Some(root) {
            return false;
        }
        self.recent_workspaces.retain(|r| r != root);
        self.recent_workspaces.insert(0, root.to_string());
        self.recent_workspaces.truncate(RECENT_WORKSPACES);
        true
    }
}

/// A mode's slug → the id of the profile it runs on.
type ModeProfiles = std::collections::BTreeMap<String, String>;

/// Which profile each mode runs on: a mode's slug as modes are named, a profile that exists.
fn check_mode_profiles(
    chosen: ModeProfiles,
    profiles: &[ProviderProfile],
) -> Result<ModeProfiles, SettingsError> {
    if chosen.len() > 200 {
        return Err(SettingsError::Invalid(
            "at most 200 modes can name a profile".into(),
        ));
    }
    for (mode, profile) in &chosen {
        let slug = !mode.is_empty()
            && mode.len() <= 64
            && mode
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !slug {
            return Err(SettingsError::Invalid(format!(
                "`{mode}` is not a mode's slug"
            )));
        }
        if !profiles.iter().any(|p| &p.id == profile) {
            return Err(SettingsError::Invalid(format!(
                "the {mode} mode names the profile `{profile}`, which does not exist"
            )));
        }
    }
    Ok(chosen)
}

/// A cap is a positive number: dollars up to a million, tokens up to a trillion.
pub fn check_budget(budget: &Budget) -> Result<(), SettingsError> {
    if let Some(cost) = budget.max_cost_usd {
        if !cost.is_finite() || cost <= 0.0 || cost > 1e6 {
            return Err(SettingsError::Invalid(format!(
                "a cost cap is more than $0 and at most $1,000,000, not {cost}"
            )));
        }
    }
    if let Some(tokens) = budget.max_tokens {
        if tokens == 0 || tokens > 1_000_000_000_000 {
            return Err(SettingsError::Invalid(format!(
                "a token cap is 1 to 1,000,000,000,000 tokens, not {tokens}"
            )));
        }
    }
    Ok(())
}

/// A threshold between 10% and 95%; a window of 1k to 10M tokens; an output limit and a
/// thinking budget below the window; one line per model.
pub fn check_context(mut context: ContextSettings) -> Result<ContextSettings, SettingsError> {
    if !(10..=95).contains(&context.threshold_percent) {
        return Err(SettingsError::Invalid(format!(
            "the condensing threshold is 10% to 95% of the usable input, not {}%",
            context.threshold_percent
        )));
    }
    context.models.retain(|m| !m.model.trim().is_empty());
    let mut seen = std::collections::BTreeSet::new();
    for m in &mut context.models {
        m.model = m.model.trim().to_string();
        if !seen.insert(m.model.clone()) {
            return Err(SettingsError::Invalid(format!(
                "the model `{}` is listed twice",
                m.model
            )));
        }
        if let Some(w) = m.context_window {
            if !(1_000..=10_000_000).contains(&w) {
                return Err(SettingsError::Invalid(format!(
                    "{}: a context window is 1,000 to 10,000,000 tokens, not {w}",
                    m.model
                )));
            }
        }
        let window = m.context_window.unwrap_or(10_000_000);
        if let Some(o) = m.max_output {
            if o < 256 || u64::from(o) >= window {
                return Err(SettingsError::Invalid(format!(
                    "{}: the output limit is at least 256 tokens and below the window, not {o}",
                    m.model
                )));
            }
        }
        if let Some(t) = m.thinking_budget {
            if t != 0 && (t < 1024 || u64::from(t) >= window) {
                return Err(SettingsError::Invalid(format!(
                    "{}: a thinking budget is 0 (off) or at least 1,024 tokens and below the window, not {t}",
                    m.model
                )));
            }
        }
        if let Some(p) = &m.prices {
            let all = [Some(p.input), Some(p.output), p.cache_read, p.cache_write];
            if all
                .iter()
                .flatten()
                .any(|d| !d.is_finite() || *d < 0.0 || *d > 10_000.0)
            {
                return Err(SettingsError::Invalid(format!(
                    "{}: a price is 0 to 10,000 US dollars per million tokens",
                    m.model
                )));
            }
        }
    }
    Ok(context)
}

/// An embeddings endpoint is a web address with a model, or nothing at all.
pub fn check_code_search(mut c: CodeSearchSettings) -> Result<CodeSearchSettings, SettingsError> {
    c.embeddings_base_url = c
        .embeddings_base_url
        .trim()
        .trim_end_matches('/')
        .to_string();
    c.embeddings_model = c.embeddings_model.trim().to_string();
    if c.embeddings_base_url.is_empty() {
        return Ok(CodeSearchSettings::default());
    }
    validate_base_url(&c.embeddings_base_url)
        .map_err(|e| SettingsError::Invalid(format!("embeddings endpoint: {e}")))?;
    if c.embeddings_model.is_empty() {
        return Err(SettingsError::Invalid(
            "embeddings endpoint: name the embedding model it serves".into(),
        ));
    }
    Ok(c)
}

/// The embeddings endpoint the settings name, for the search index.
pub fn embeddings_endpoint(c: &CodeSearchSettings) -> Option<crate::code::search::embed::Endpoint> {
    (!c.embeddings_base_url.is_empty()).then(|| crate::code::search::embed::Endpoint {
        base_url: c.embeddings_base_url.clone(),
        model: c.embeddings_model.clone(),
    })
}

/// A provider base URL must be http(s) with a host; anything else is refused before any request.
pub fn validate_base_url(url: &str) -> Result<(), SettingsError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| SettingsError::Invalid(format!("the base URL `{url}` is not a URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(SettingsError::Invalid(format!(
            "the base URL `{url}` must start with http:// or https:// and name a host"
        )));
    }
    Ok(())
}

/// Stable, filesystem-safe key for a workspace path (used to file tasks per workspace).
pub fn workspace_key(root: &Path) -> String {
    crate::fsutil::sha256_hex(root.to_string_lossy().as_bytes())[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(tmp: &Path) -> AppDirs {
        AppDirs {
            config: tmp.join("config"),
            data: tmp.join("data"),
        }
    }

    #[test]
    fn round_trip_and_bad_file_is_kept_aside() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let d = dirs(tmp.path());
        let mut s = Settings {
            model: "m".into(),
            ..Settings::default()
        };
        crate::profiles::normalize(&mut s);
        s.save(&d).expect("save");
        assert_eq!(Settings::load(&d), (s, None));

        std::fs::write(d.settings_file(), "{ not json").expect("write");
        let (loaded, warning) = Settings::load(&d);
        let mut defaults = Settings::default();
        crate::profiles::normalize(&mut defaults);
        assert_eq!(loaded, defaults);
        assert!(warning.expect("warning").contains("not valid"));
        assert!(d.config.join("settings.json.unreadable").exists());
    }

    #[test]
    fn updates_are_validated() {
        let update = |url: &str, model: &str| SettingsUpdate {
            provider: ProviderKind::Openai,
            preset: "custom".into(),
            base_url: url.into(),
            model: model.into(),
            custom_instructions: String::new(),
            approval: ApprovalPolicy::default(),
            editor: "auto".into(),
            context: None,
            code_search: None,
            profile: None,
            profile_name: None,
            default_profile: None,
            mode_profiles: None,
            notifications: None,
            budget: None,
        };
        let old = Settings {
            recent_workspaces: vec!["/w".into()],
            ..Settings::default()
        };
        let new = old
            .with_update(update("http://127.0.0.1:9/v1/", "m"))
            .expect("valid");
        assert_eq!(new.recent_workspaces, ["/w"], "kept");
        assert!(old.with_update(update("file:///etc/passwd", "m")).is_err());
        assert!(old.with_update(update("javascript:alert(1)", "m")).is_err());
        assert!(old.with_update(update("http://x/v1", "")).is_err());
        for editor in ["sh", "/bin/sh", "", "auto "] {
            let bad = SettingsUpdate {
                editor: editor.into(),
                ..update("http://x/v1", "m")
            };
            assert!(old.with_update(bad).is_err(), "{editor:?}");
        }
        let zed = SettingsUpdate {
            editor: "zed".into(),
            ..update("http://x/v1", "m")
        };
        assert_eq!(old.with_update(zed).expect("zed").editor, "zed");
    }

    #[test]
    fn budgets_are_positive_and_bounded() {
        let with = |max_cost_usd: Option<f64>, max_tokens: Option<u64>| SettingsUpdate {
            provider: ProviderKind::Openai,
            preset: "custom".into(),
            base_url: "http://x/v1".into(),
            model: "m".into(),
            custom_instructions: String::new(),
            approval: ApprovalPolicy::default(),
            editor: "auto".into(),
            context: None,
            code_search: None,
            profile: None,
            profile_name: None,
            default_profile: None,
            mode_profiles: None,
            notifications: None,
            budget: Some(Budget {
                max_cost_usd,
                max_tokens,
            }),
        };
        let s = Settings::default();
        let ok = s.with_update(with(Some(2.5), Some(10_000))).expect("valid");
        assert_eq!(ok.budget.max_cost_usd, Some(2.5));
        assert_eq!(ok.budget.max_tokens, Some(10_000));
        assert_eq!(
            s.with_update(with(None, None)).expect("no cap").budget,
            Budget::default()
        );
        for (cost, tokens) in [
            (Some(0.0), None),
            (Some(-1.0), None),
            (Some(f64::NAN), None),
            (Some(f64::INFINITY), None),
            (Some(2e6), None),
            (None, Some(0)),
            (None, Some(u64::MAX)),
        ] {
            assert!(
                s.with_update(with(cost, tokens)).is_err(),
                "{cost:?} {tokens:?}"
            );
        }
    }

    #[test]
    fn recent_workspaces_are_most_recent_first_and_bounded() {
        let mut s = Settings::default();
        assert!(s.remember_workspace("/a"));
        assert!(!s.remember_workspace("/a"), "already first");
        assert!(s.remember_workspace("/b"));
        assert!(s.remember_workspace("/a"));
        assert_eq!(s.recent_workspaces, ["/a", "/b"]);
        for n in 0..20 {
            s.remember_workspace(&format!("/w{n}"));
        }
        assert_eq!(s.recent_workspaces.len(), RECENT_WORKSPACES);
        assert_eq!(s.recent_workspaces[0], "/w19");
    }

    #[test]
    fn an_embeddings_endpoint_is_a_web_address_with_a_model_or_nothing() {
        let c = |url: &str, model: &str| CodeSearchSettings {
            embeddings_base_url: url.into(),
            embeddings_model: model.into(),
        };
        assert_eq!(
            check_code_search(c("  ", "ignored")).expect("off"),
            c("", "")
        );
        let ok = check_code_search(c(" http://127.0.0.1:11434/v1/ ", " nomic-embed-text "))
            .expect("valid");
        assert_eq!(ok, c("http://127.0.0.1:11434/v1", "nomic-embed-text"));
        assert_eq!(
            embeddings_endpoint(&ok).map(|e| e.model),
            Some("nomic-embed-text".to_string())
        );
        assert_eq!(embeddings_endpoint(&c("", "")), None);
        for (url, model, said) in [
            ("file:///tmp/x", "m", "embeddings endpoint"),
            ("not a url", "m", "embeddings endpoint"),
            ("http://127.0.0.1:1/v1", "", "name the embedding model"),
        ] {
            let e = check_code_search(c(url, model))
                .expect_err("refused")
                .to_string();
            assert!(e.contains(said), "{e}");
        }
    }
}

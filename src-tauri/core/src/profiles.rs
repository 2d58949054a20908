//! Provider profiles side by side (Anthropic, OpenRouter, a local server…), each with its own
//! key in the keyring **bound to the origin** (scheme, host and port) of its base URL: the
//! keyring entry is named by the profile and the origin, so a key is looked up only for the
//! origin it was given for. Pointing a profile at another server leaves its key behind until
//! the person lets it go there (`move_key`); editing the settings file cannot redirect a key.
//! Settings from before profiles become the `default` profile, and the key kept for their
//! wire format moves to it once, without the person retyping it.

use crate::protocol::ProviderProfile;
use crate::secrets::{api_key_name, Secret, SecretError, SecretStore};
use crate::settings::Settings;

/// The id the settings from before profiles become.
pub const DEFAULT_ID: &str = "default";

/// `scheme://host[:port]` of a URL (default ports left out), or None if it has none.
pub fn origin(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url.trim()).ok()?;
    let o = parsed.origin();
    o.is_tuple().then(|| o.ascii_serialization())
}

/// The keyring entry of `profile`'s key for `origin`.
pub fn key_name(profile: &str, origin: &str) -> String {
    format!("api-key:profile:{profile}@{origin}")
}

/// A profile id: 1 to 40 of `a-z`, `0-9` and `-`.
pub fn valid_id(id: &str) -> bool {
    (1..=40).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A profile id made from a name (`My Ollama` → `my-ollama`).
pub fn id_from_name(name: &str) -> String {
    let mut id = String::new();
    for c in name.trim().chars().flat_map(char::to_lowercase) {
        match c {
            'a'..='z' | '0'..='9' => id.push(c),
            _ if !id.ends_with('-') && !id.is_empty() => id.push('-'),
            _ => {}
        }
    }
    let id: String = id.trim_end_matches('-').chars().take(40).collect();
    match id.is_empty() {
        true => "profile".into(),
        false => id,
    }
}

fn display_name(preset: &str) -> String {
    match preset {
        "anthropic" => "Anthropic",
        "openai" => "OpenAI",
        "openrouter" => "OpenRouter",
        "ollama" => "Ollama",
        "lmstudio" => "LM Studio",
        "llamacpp" => "llama.cpp",
        _ => "Custom",
    }
    .into()
}

/// Settings as profiles: the settings from before profiles become the default profile; a
/// default that names no profile falls back to the first; the single-provider fields mirror
/// the default profile (what older code and the window's provider card read).
pub fn normalize(settings: &mut Settings) {
    if settings.profiles.is_empty() {
        settings.profiles.push(from_legacy(settings));
    }
    if !settings
        .profiles
        .iter()
        .any(|p| p.id == settings.default_profile)
    {
        settings.default_profile = settings.profiles[0].id.clone();
    }
    // A mode whose profile was deleted runs on the task's again.
    let ids: Vec<String> = settings.profiles.iter().map(|p| p.id.clone()).collect();
    settings.mode_profiles.retain(|_, id| ids.contains(id));
    let p = default_profile(settings);
    settings.provider = p.provider;
    settings.preset = p.preset;
    settings.base_url = p.base_url;
    settings.model = p.model;
}

/// The profile the settings from before profiles describe. The key kept for their wire format
/// is bound to the server they pointed at then, whatever the profile is pointed at later.
fn from_legacy(settings: &Settings) -> ProviderProfile {
    ProviderProfile {
        id: DEFAULT_ID.into(),
        name: display_name(&settings.preset),
        provider: settings.provider,
        preset: settings.preset.clone(),
        base_url: settings.base_url.clone(),
        model: settings.model.clone(),
        key_origin: origin(&settings.base_url),
    }
}

pub fn default_profile(settings: &Settings) -> ProviderProfile {
    settings
        .profiles
        .iter()
        .find(|p| p.id == settings.default_profile)
        .or(settings.profiles.first())
        .cloned()
        .unwrap_or_else(|| from_legacy(settings))
}

/// The profile `id` names, or the default one when `id` is None.
pub fn find(settings: &Settings, id: Option<&str>) -> Option<ProviderProfile> {
    match id {
        None => Some(default_profile(settings)),
        Some(id) => settings.profiles.iter().find(|p| p.id == id).cloned(),
    }
}

/// What the keyring holds for a profile as it points now.
#[derive(Debug, Default)]
pub struct KeyLookup {
    /// The key for the profile's origin, and only that.
    pub key: Option<Secret>,
    /// The origin a key was given for, when it is not where the profile points now.
    pub elsewhere: Option<String>,
    pub error: Option<String>,
}

/// The key of `profile` for the origin it points at (blocking: the keyring). The key kept for
/// a wire format before profiles moves, once, to the default profile's current origin.
pub fn lookup_key(store: &dyn SecretStore, profile: &ProviderProfile) -> KeyLookup {
    let Some(here) = origin(&profile.base_url) else {
        return KeyLookup::default();
    };
    let mut out = KeyLookup::default();
    match store.get(&key_name(&profile.id, &here)) {
        Ok(Some(key)) => {
            out.key = Some(key);
            return out;
        }
        Ok(None) => {}
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    }
    // The key from before profiles moves, once, to the origin the settings named then.
    if let (DEFAULT_ID, Some(then)) = (profile.id.as_str(), profile.key_origin.as_deref()) {
        if let Ok(Some(legacy)) = store.get(&api_key_name(profile.provider)) {
            if store.set(&key_name(&profile.id, then), &legacy).is_ok() {
                let _ = store.delete(&api_key_name(profile.provider));
                if then == here {
                    out.key = Some(legacy);
                    return out;
                }
            }
        }
    }
    if let Some(there) = profile.key_origin.as_deref().filter(|o| *o != here) {
        if matches!(store.get(&key_name(&profile.id, there)), Ok(Some(_))) {
            out.elsewhere = Some(there.to_string());
        }
    }
    out
}

/// Stores `key` for `profile` at the origin it points at; returns that origin.
pub fn set_key(
    store: &dyn SecretStore,
    profile: &ProviderProfile,
    key: &Secret,
) -> Result<String, SecretError> {
    let here = origin(&profile.base_url)
        .ok_or_else(|| SecretError::Unavailable("the profile's base URL has no origin".into()))?;
    store.set(&key_name(&profile.id, &here), key)?;
    Ok(here)
}

/// Forgets every key of `profile` Mandate knows of (where it points and where its key was).
pub fn clear_keys(store: &dyn SecretStore, profile: &ProviderProfile) -> Result<(), SecretError> {
    let origins = [origin(&profile.base_url), profile.key_origin.clone()];
    for o in origins.iter().flatten() {
        store.delete(&key_name(&profile.id, o))?;
    }
    Ok(())
}

/// The person let the key go where the profile points now: it moves there (and is no longer
/// kept for the old origin). Returns the new origin.
pub fn move_key(store: &dyn SecretStore, profile: &ProviderProfile) -> Result<String, SecretError> {
    let there = profile
        .key_origin
        .as_deref()
        .ok_or_else(|| SecretError::Unavailable("the profile has no key to move".into()))?;
    let key = store
        .get(&key_name(&profile.id, there))?
        .ok_or_else(|| SecretError::Unavailable(format!("no key is kept for {there}")))?;
    let here = set_key(store, profile, &key)?;
    if here != there {
        store.delete(&key_name(&profile.id, there))?;
    }
    Ok(here)
}

/// In words, why a profile's key is not sent where it points.
pub fn held_back(profile: &ProviderProfile, elsewhere: &str) -> String {
    format!(
        "The key of the {} profile was given for {elsewhere}; the profile now points at {}. The key is not sent there until you let it go (Settings → Provider, \"Use the key here\").",
        profile.name,
        origin(&profile.base_url).unwrap_or_else(|| profile.base_url.clone())
    )
}

#[cfg(test)]
#[path = "profiles_tests.rs"]
mod tests;

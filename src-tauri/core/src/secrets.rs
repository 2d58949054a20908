//! API keys: in the OS keyring (Secret Service) behind a small trait, never in a file.
//!
//! A missing or locked keyring is an error the user sees; there is no plaintext fallback.
//! Keyring calls block on D-Bus, so async callers run them in `spawn_blocking`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use crate::protocol::ProviderKind;

/// Service name under which Mandate's entries live in the keyring.
pub const KEYRING_SERVICE: &str = "dev.mandate";

/// Environment variable that supplies an API key for headless use, for any provider.
pub const API_KEY_ENV: &str = "MANDATE_API_KEY";

/// A secret value. `Debug` and `Display` never show it, so it cannot leak through a log line.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Keys given through the environment, taken out of it at start-up (see
/// [`take_from_environment`]): commands and `/proc/<pid>/environ` never see them.
static FROM_ENVIRONMENT: Mutex<Vec<(String, Secret)>> = Mutex::new(Vec::new());

/// Takes `names` out of the process environment (and out of the block `/proc/self/environ`
/// shows), registers their values with the redactor, and keeps them for
/// [`from_environment`]. Call it first thing in `main`, before any thread starts.
pub fn take_from_environment(names: &[&str]) {
    let found = crate::redact::scrub_environment(names);
    let mut kept = FROM_ENVIRONMENT.lock().unwrap_or_else(|p| p.into_inner());
    for (name, secret) in found {
        kept.retain(|(n, _)| n != &name);
        kept.push((name, secret));
    }
}

/// A key that was in the environment at start-up (taken out by [`take_from_environment`]), or
/// still is (tests and embedders that never called it).
pub fn from_environment(name: &str) -> Option<Secret> {
    let kept = FROM_ENVIRONMENT.lock().unwrap_or_else(|p| p.into_inner());
    let found = kept
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| s.clone())
        .or_else(|| std::env::var(name).ok().map(Secret::new));
    found
        .filter(|s| !s.expose().trim().is_empty())
        .map(|s| Secret::new(s.expose().trim()))
}

/// Every key Mandate holds is registered with the redactor, so it is cut out of anything stored
/// or sent to a model.
pub fn remember(secret: &Secret) {
    crate::redact::Redactor::global().add(secret.expose());
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("the system keyring is not available ({0}). Start a Secret Service provider such as gnome-keyring, or set {API_KEY_ENV} for this session.")]
    Unavailable(String),
    #[error("the system keyring is locked or refused access ({0}). Unlock it and try again.")]
    Locked(String),
    #[error("the system keyring rejected the entry: {0}")]
    Rejected(String),
}

/// Where secrets are kept. Names are short ASCII identifiers such as `api-key:openai`.
pub trait SecretStore: Send + Sync {
    fn get(&self, name: &str) -> Result<Option<Secret>, SecretError>;
    fn set(&self, name: &str, value: &Secret) -> Result<(), SecretError>;
    fn delete(&self, name: &str) -> Result<(), SecretError>;
    /// A cheap check that the store can be reached, for the settings view.
    fn probe(&self) -> Result<(), SecretError> {
        self.get("probe").map(|_| ())
    }
}

/// The keyring entry name for a provider's API key.
pub fn api_key_name(provider: ProviderKind) -> String {
    format!("api-key:{}", provider.as_str())
}

/// The OS keyring through the `keyring` crate (Secret Service on Linux).
#[derive(Debug, Default)]
pub struct KeyringStore;

impl KeyringStore {
    fn entry(name: &str) -> Result<keyring::Entry, SecretError> {
        keyring::Entry::new(KEYRING_SERVICE, name).map_err(map_keyring_error)
    }
}

fn map_keyring_error(error: keyring::Error) -> SecretError {
    match error {
        keyring::Error::NoStorageAccess(e) => SecretError::Locked(e.to_string()),
        keyring::Error::PlatformFailure(e) => SecretError::Unavailable(e.to_string()),
        other => SecretError::Rejected(other.to_string()),
    }
}

impl SecretStore for KeyringStore {
    fn get(&self, name: &str) -> Result<Option<Secret>, SecretError> {
        match Self::entry(name)?.get_password() {
            Ok(value) => Ok(Some(Secret(value))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(map_keyring_error(e)),
        }
    }

    fn set(&self, name: &str, value: &Secret) -> Result<(), SecretError> {
        Self::entry(name)?
            .set_password(value.expose())
            .map_err(map_keyring_error)
    }

    fn delete(&self, name: &str) -> Result<(), SecretError> {
        match Self::entry(name)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(map_keyring_error(e)),
        }
    }
}

/// For unit tests only: secrets in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    values: Mutex<HashMap<String, Secret>>,
    unavailable: Option<String>,
}

impl MemoryStore {
    /// A store that fails every call, like a machine without a keyring.
    pub fn unavailable(reason: &str) -> Self {
        Self {
            values: Mutex::default(),
            unavailable: Some(reason.to_string()),
        }
    }

    fn check(&self) -> Result<(), SecretError> {
        match &self.unavailable {
            Some(reason) => Err(SecretError::Unavailable(reason.clone())),
            None => Ok(()),
        }
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, name: &str) -> Result<Option<Secret>, SecretError> {
        self.check()?;
        let values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        Ok(values.get(name).cloned())
    }

    fn set(&self, name: &str, value: &Secret) -> Result<(), SecretError> {
        self.check()?;
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        values.insert(name.to_string(), value.clone());
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<(), SecretError> {
        self.check()?;
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        values.remove(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("sk-very-secret");
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
    }

    #[test]
    fn memory_store_round_trip_and_unavailable() {
        let store = MemoryStore::default();
        store.set("a", &Secret::new("x")).expect("set");
        assert_eq!(store.get("a").expect("get"), Some(Secret::new("x")));
        store.delete("a").expect("delete");
        assert_eq!(store.get("a").expect("get"), None);

        let broken = MemoryStore::unavailable("no D-Bus session");
        let err = broken.get("a").expect_err("must fail");
        assert!(err.to_string().contains("keyring is not available"));
    }
}

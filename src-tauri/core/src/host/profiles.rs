//! Provider profiles from the window: a key set for a profile is kept for the origin the
//! profile points at; moving it to another origin is the person's act; a profile goes with
//! its keys.

use super::{err, Host};
use crate::protocol::{IpcError, IpcErrorCode, Reply};
use crate::secrets::Secret;
use crate::settings::Settings;

impl Host {
    /// Changes the settings and saves them; nothing changes if they cannot be saved.
    fn change_settings(&self, change: impl FnOnce(&mut Settings)) -> Result<(), IpcError> {
        let mut new = self.settings();
        change(&mut new);
        crate::profiles::normalize(&mut new);
        new.save(&self.dirs)
            .map_err(|e| err(IpcErrorCode::Io, e.to_string()))?;
        *self.settings.lock().unwrap_or_else(|p| p.into_inner()) = new;
        Ok(())
    }

    pub(super) async fn set_api_key(
        &self,
        profile: Option<&str>,
        api_key: String,
    ) -> Result<Reply, IpcError> {
        let key = api_key.trim().to_string();
        if key.is_empty() || key.len() > 1000 || key.chars().any(char::is_control) {
            return Err(err(
                IpcErrorCode::InvalidInput,
                "an API key is 1 to 1000 printable characters",
            ));
        }
        let profile = self.profile(profile)?;
        let secrets = self.secrets.clone();
        let owned = profile.clone();
        let origin = tokio::task::spawn_blocking(move || {
            crate::profiles::set_key(secrets.as_ref(), &owned, &Secret::new(key))
        })
        .await
        .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
        .map_err(|e| err(IpcErrorCode::Keyring, e.to_string()))?;
        self.key_kept_for(&profile.id, origin).await
    }

    /// The person lets the profile's key go where the profile points now.
    pub(super) async fn move_profile_key(&self, id: &str) -> Result<Reply, IpcError> {
        let profile = self.profile(Some(id))?;
        // The person says so in the desktop's own dialog, not the page: a page that could
        // point a profile at a server and move its key there would be a way to take the key.
        let found = self.profile_key(&profile).await;
        let Some(from) = found.elsewhere else {
            return Err(err(
                IpcErrorCode::Conflict,
                format!(
                    "the key of {} is already kept for where it points",
                    profile.name
                ),
            ));
        };
        let to =
            crate::profiles::origin(&profile.base_url).unwrap_or_else(|| profile.base_url.clone());
        let question = crate::host::Confirmation {
            title: format!("Send the {} key to {to}?", profile.name),
            message: format!(
                "The key of the {} profile was given for {from}. The profile now points at {to}.\n\nFrom now on the key is sent to {to}, and no longer to {from}. Allow it only if you changed the profile yourself and trust {to}.",
                profile.name
            ),
            accept: "_Use the key there".into(),
        };
        if !self.desktop.confirm(&question).await {
            return Err(err(
                IpcErrorCode::Conflict,
                format!(
                    "the key of {} stays with {from}: the move was not confirmed",
                    profile.name
                ),
            ));
        }
        let secrets = self.secrets.clone();
        let owned = profile.clone();
        let origin = tokio::task::spawn_blocking(move || {
            crate::profiles::move_key(secrets.as_ref(), &owned)
        })
        .await
        .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
        .map_err(|e| err(IpcErrorCode::Keyring, e.to_string()))?;
        self.key_kept_for(&profile.id, origin).await
    }

    /// Records the origin a profile's key is now kept for, and says the new settings.
    async fn key_kept_for(&self, id: &str, origin: String) -> Result<Reply, IpcError> {
        self.change_settings(|s| {
            if let Some(p) = s.profiles.iter_mut().find(|p| p.id == id) {
                p.key_origin = Some(origin);
            }
        })?;
        self.settings_changed().await
    }

    /// Removes a profile and its keys; the last one stays.
    pub(super) async fn delete_profile(&self, id: &str) -> Result<Reply, IpcError> {
        let profile = self.profile(Some(id))?;
        if self.settings().profiles.len() < 2 {
            return Err(err(
                IpcErrorCode::Conflict,
                "the last profile cannot be deleted; change it instead",
            ));
        }
        let secrets = self.secrets.clone();
        let owned = profile.clone();
        tokio::task::spawn_blocking(move || crate::profiles::clear_keys(secrets.as_ref(), &owned))
            .await
            .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
            .map_err(|e| err(IpcErrorCode::Keyring, e.to_string()))?;
        self.change_settings(|s| s.profiles.retain(|p| p.id != profile.id))?;
        self.settings_changed().await
    }
}

/// The person's profiles as a run reaches them: a mode on a profile of its own (Settings), its
/// key only for its origin, as for a task started there.
pub(super) struct HostProfiles(pub std::sync::Weak<Host>);

#[async_trait::async_trait]
impl crate::agent::ProfileSource for HostProfiles {
    fn for_mode(&self, slug: &str) -> Option<String> {
        self.0
            .upgrade()?
            .settings()
            .mode_profiles
            .get(slug)
            .cloned()
    }

    async fn provider(
        &self,
        id: &str,
    ) -> Result<std::sync::Arc<dyn crate::llm::Provider>, crate::agent::ProfileUnavailable> {
        let unavailable = |m: String| crate::agent::ProfileUnavailable(m);
        let host = self
            .0
            .upgrade()
            .ok_or_else(|| unavailable("Mandate is closing".into()))?;
        let config = host
            .provider_config(Some(id))
            .await
            .map_err(|e| unavailable(e.message))?;
        Ok(std::sync::Arc::from(crate::llm::provider_for(config)))
    }
}

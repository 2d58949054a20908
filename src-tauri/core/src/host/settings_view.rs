//! Settings as the window sees them: the provider, where the key comes from (never the key),
//! the editors found, the confinement commands run under, and the task budget.

use std::path::Path;

use super::{discovery, editor, err, Host};
use crate::llm::{ProviderConfig, RetryPolicy};
use crate::protocol::{
    ConfinementView, Event, IpcError, IpcErrorCode, ProfileView, ProviderKind, ProviderProfile,
    Reply, SettingsView,
};
use crate::secrets::{Secret, API_KEY_ENV};

impl Host {
    pub(super) async fn settings_changed(&self) -> Result<Reply, IpcError> {
        let settings = self.settings_view().await;
        self.sink.emit(Event::SettingsChanged {
            settings: settings.clone(),
        });
        Ok(Reply::Settings { settings })
    }

    /// The settings view, with where the key comes from (never the key).
    pub async fn settings_view(&self) -> SettingsView {
        let settings = self.settings();
        let default = crate::profiles::default_profile(&settings);
        let found = self.profile_key(&default).await;
        let (key, source, keyring_error) = (found.key, found.source, found.error);
        let profiles = self.profile_views().await;
        let recent = settings.recent_workspaces.clone();
        // Both look at the disk (PATH directories, folders): off the async workers.
        let (editors, recent_workspaces) = tokio::task::spawn_blocking(move || {
            let editors = editor::options(&editor::EditorEnv::from_process());
            let recent: Vec<String> = recent
                .into_iter()
                .filter(|r| Path::new(r).is_dir())
                .collect();
            (editors, recent)
        })
        .await
        .unwrap_or_default();
        SettingsView {
            provider: settings.provider,
            needs_key: key.is_none() && !discovery::is_on_this_machine(&settings.base_url),
            preset: settings.preset,
            base_url: settings.base_url,
            model: settings.model,
            api_key_set: key.is_some(),
            api_key_source: source,
            custom_instructions: settings.custom_instructions,
            approval: settings.approval,
            keyring_error,
            editor: settings.editor,
            editors,
            recent_workspaces,
            confinement: confinement_view(&self.governance().confinement),
            budget: settings.budget,
            context: settings.context.clone(),
            code_search: settings.code_search.clone(),
            profiles,
            default_profile: settings.default_profile.clone(),
            mode_profiles: settings.mode_profiles.clone(),
            notifications: settings.notifications,
        }
    }

    /// A profile's key for where it points now (the keyring, else `MANDATE_API_KEY` for the
    /// default profile), its source, any keyring error, and the origin a key was given for
    /// when it is not this one.
    pub(super) async fn profile_key(&self, profile: &ProviderProfile) -> ProfileKey {
        let secrets = self.secrets.clone();
        let owned = profile.clone();
        let found = tokio::task::spawn_blocking(move || {
            crate::profiles::lookup_key(secrets.as_ref(), &owned)
        })
        .await
        .unwrap_or_default();
        if let Some(k) = found.key {
            crate::secrets::remember(&k);
            return ProfileKey {
                key: Some(k),
                source: "keyring".into(),
                error: None,
                elsewhere: None,
            };
        }
        let env = (profile.id == self.settings().default_profile && found.elsewhere.is_none())
            .then(|| crate::secrets::from_environment(API_KEY_ENV))
            .flatten();
        match env {
            Some(k) => {
                crate::secrets::remember(&k);
                ProfileKey {
                    key: Some(k),
                    source: format!("env:{API_KEY_ENV}"),
                    error: found.error,
                    elsewhere: None,
                }
            }
            None => ProfileKey {
                key: None,
                source: "none".into(),
                error: found.error,
                elsewhere: found.elsewhere,
            },
        }
    }

    /// The profile `id` names (None: the default one), or why there is none.
    pub(super) fn profile(&self, id: Option<&str>) -> Result<ProviderProfile, IpcError> {
        crate::profiles::find(&self.settings(), id).ok_or_else(|| {
            err(
                IpcErrorCode::NotFound,
                format!("there is no provider profile `{}`", id.unwrap_or_default()),
            )
        })
    }

    /// How to reach a profile's model: its key goes only to the origin it was given for.
    pub(super) async fn provider_config(
        &self,
        id: Option<&str>,
    ) -> Result<ProviderConfig, IpcError> {
        let profile = self.profile(id)?;
        let found = self.profile_key(&profile).await;
        if let Some(there) = &found.elsewhere {
            return Err(err(
                IpcErrorCode::Keyring,
                crate::profiles::held_back(&profile, there),
            ));
        }
        if found.key.is_none() && profile.provider == ProviderKind::Anthropic {
            let mut message = format!(
                "No API key is set for the {} profile. Add one in Settings.",
                profile.name
            );
            if let Some(e) = found.error {
                message = format!("{message} ({e})");
            }
            return Err(err(IpcErrorCode::Keyring, message));
        }
        Ok(ProviderConfig {
            kind: profile.provider,
            base_url: profile.base_url,
            model: profile.model,
            api_key: found.key,
            retry: RetryPolicy::from_env(),
        })
    }

    /// Every profile, with whether its key is set where it points.
    async fn profile_views(&self) -> Vec<ProfileView> {
        let mut out = Vec::new();
        for profile in self.settings().profiles {
            let found = self.profile_key(&profile).await;
            out.push(ProfileView {
                api_key_set: found.key.is_some(),
                key_elsewhere: found.elsewhere,
                profile,
            });
        }
        out
    }
}

/// A profile's key as the host found it.
pub(super) struct ProfileKey {
    pub key: Option<Secret>,
    pub source: String,
    pub error: Option<String>,
    pub elsewhere: Option<String>,
}

fn confinement_view(c: &crate::sandbox::Confinement) -> ConfinementView {
    ConfinementView {
        confined: c.is_confined(),
        summary: c.summary(),
        gaps: c.gaps.clone(),
    }
}

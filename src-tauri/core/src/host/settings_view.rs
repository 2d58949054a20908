//! Settings as the window sees them: the provider, where the key comes from (never the key),
//! the editors found, the confinement commands run under, and the task budget.

use std::path::Path;

use super::{discovery, editor, err, Host};
use crate::llm::{ProviderConfig, RetryPolicy};
use crate::protocol::{
    ConfinementView, Event, IpcError, IpcErrorCode, ProviderKind, Reply, SettingsView,
};
use crate::secrets::{api_key_name, Secret, API_KEY_ENV};

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
        let (key, source, keyring_error) = self.api_key(settings.provider).await;
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
        }
    }

    /// The key from the keyring, else from `MANDATE_API_KEY`; with its source and any keyring error.
    pub(super) async fn api_key(
        &self,
        provider: ProviderKind,
    ) -> (Option<Secret>, String, Option<String>) {
        let secrets = self.secrets.clone();
        let from_keyring =
            tokio::task::spawn_blocking(move || secrets.get(&api_key_name(provider)))
                .await
                .unwrap_or_else(|e| Err(crate::secrets::SecretError::Unavailable(e.to_string())));
        let (key, error) = match from_keyring {
            Ok(Some(k)) => {
                crate::secrets::remember(&k);
                return (Some(k), "keyring".into(), None);
            }
            Ok(None) => (None, None),
            Err(e) => (None, Some(e.to_string())),
        };
        match crate::secrets::from_environment(API_KEY_ENV) {
            Some(k) => {
                crate::secrets::remember(&k);
                (Some(k), format!("env:{API_KEY_ENV}"), error)
            }
            None => (key, "none".into(), error),
        }
    }

    pub(super) async fn provider_config(&self) -> Result<ProviderConfig, IpcError> {
        let settings = self.settings();
        let (key, _, keyring_error) = self.api_key(settings.provider).await;
        if key.is_none() && settings.provider == ProviderKind::Anthropic {
            let mut message = "No API key is set for Anthropic. Add one in Settings.".to_string();
            if let Some(e) = keyring_error {
                message = format!("{message} ({e})");
            }
            return Err(err(IpcErrorCode::Keyring, message));
        }
        Ok(ProviderConfig {
            kind: settings.provider,
            base_url: settings.base_url,
            model: settings.model,
            api_key: key,
            retry: RetryPolicy::from_env(),
        })
    }
}

fn confinement_view(c: &crate::sandbox::Confinement) -> ConfinementView {
    ConfinementView {
        confined: c.is_confined(),
        summary: c.summary(),
        gaps: c.gaps.clone(),
    }
}

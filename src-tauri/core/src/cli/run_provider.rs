//! Which provider a `mandate run` talks to and with which key: a profile (`--profile`), or the
//! server named on the command line. A key goes only to the origin it was given for: a
//! profile's key only where the profile pointed when the key was set, and without a profile,
//! only the key of a profile of the same wire format and origin (or the person's
//! `--api-key-env` / `MANDATE_API_KEY`, given for this run).

use super::run::usage;
use super::{ProviderArg, RunArgs};
use crate::profiles::{find, held_back, lookup_key, origin};
use crate::protocol::{ProviderKind, ProviderProfile};
use crate::secrets::{KeyringStore, Secret, API_KEY_ENV};
use crate::settings::Settings;

/// Where the run's requests go.
pub(super) struct Target {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub profile: Option<ProviderProfile>,
}

/// The profile `--profile` names (by id or name), or the server the flags name.
pub(super) fn target(args: &RunArgs, settings: &Settings) -> Result<Target, i32> {
    if let Some(wanted) = args.profile.as_deref() {
        if args.provider.is_some() || args.base_url.is_some() {
            return Err(usage(
                "--profile names the provider and its server; leave out --provider and --base-url (--model may change the model)",
            ));
        }
        let profile = find(settings, Some(wanted))
            .or_else(|| {
                settings
                    .profiles
                    .iter()
                    .find(|p| p.name.eq_ignore_ascii_case(wanted))
                    .cloned()
            })
            .ok_or_else(|| {
                let names: Vec<&str> = settings.profiles.iter().map(|p| p.name.as_str()).collect();
                usage(&format!(
                    "there is no profile `{wanted}` (profiles: {})",
                    names.join(", ")
                ))
            })?;
        return Ok(Target {
            kind: profile.provider,
            base_url: profile.base_url.clone(),
            model: args.model.clone().unwrap_or_else(|| profile.model.clone()),
            profile: Some(profile),
        });
    }
    // Neither named: the profile Settings name for the run's mode, where they name one.
    let by_mode = args
        .mode
        .as_deref()
        .and_then(|m| settings.mode_profiles.get(m))
        .filter(|_| args.provider.is_none() && args.base_url.is_none())
        .and_then(|id| find(settings, Some(id)));
    if let Some(profile) = by_mode {
        return Ok(Target {
            kind: profile.provider,
            base_url: profile.base_url.clone(),
            model: args.model.clone().unwrap_or_else(|| profile.model.clone()),
            profile: Some(profile),
        });
    }
    let (Some(provider), Some(base_url), Some(model)) = (
        args.provider,
        args.base_url.as_deref(),
        args.model.as_deref(),
    ) else {
        return Err(usage(
            "name a profile (--profile NAME) or the server (--provider, --base-url and --model)",
        ));
    };
    if let Err(e) = crate::settings::validate_base_url(base_url.trim()) {
        return Err(usage(&e.to_string()));
    }
    Ok(Target {
        kind: match provider {
            ProviderArg::Openai => ProviderKind::Openai,
            ProviderArg::Anthropic => ProviderKind::Anthropic,
        },
        base_url: base_url.trim().trim_end_matches('/').to_string(),
        model: model.to_string(),
        profile: None,
    })
}

/// The key for the run: `--api-key-env`, else the keyring's for this origin, else
/// `MANDATE_API_KEY`. A profile whose key was given for another origin stops the run.
pub(super) async fn api_key(
    args: &RunArgs,
    target: &Target,
    settings: &Settings,
) -> Result<Option<Secret>, i32> {
    if let Some(var) = &args.api_key_env {
        return match crate::secrets::from_environment(var) {
            Some(key) => Ok(Some(key)),
            None => Err(usage(&format!(
                "--api-key-env {var}: that environment variable is not set"
            ))),
        };
    }
    if let Some(profile) = &target.profile {
        return match keyring_key(profile).await {
            Ok(Some(key)) => Ok(Some(key)),
            Ok(None) => Ok(crate::secrets::from_environment(API_KEY_ENV)),
            Err(held) => Err(usage(&held.0)),
        };
    }
    // No profile named: the key of a profile of this wire format given for this very origin.
    let here = origin(&target.base_url);
    let candidates: Vec<ProviderProfile> = settings
        .profiles
        .iter()
        .filter(|p| p.provider == target.kind && origin(&p.base_url) == here)
        .cloned()
        .collect();
    let found = tokio::task::spawn_blocking(move || {
        candidates
            .iter()
            .find_map(|p| lookup_key(&KeyringStore, p).key)
    })
    .await
    .ok()
    .flatten();
    if found.is_some() {
        return Ok(found);
    }
    Ok(crate::secrets::from_environment(API_KEY_ENV))
}

/// The person's profiles for a headless run: a mode on a profile of its own (Settings), its key
/// only for the origin it was given for.
pub(super) struct CliProfiles(pub Settings);

#[async_trait::async_trait]
impl crate::agent::ProfileSource for CliProfiles {
    fn for_mode(&self, slug: &str) -> Option<String> {
        self.0.mode_profiles.get(slug).cloned()
    }

    async fn provider(
        &self,
        id: &str,
    ) -> Result<std::sync::Arc<dyn crate::llm::Provider>, crate::agent::ProfileUnavailable> {
        use crate::agent::ProfileUnavailable;
        let profile = find(&self.0, Some(id))
            .ok_or_else(|| ProfileUnavailable(format!("there is no profile `{id}`")))?;
        let key = keyring_key(&profile).await?;
        if key.is_none() && profile.provider == ProviderKind::Anthropic {
            return Err(ProfileUnavailable(format!(
                "no API key is set for the {} profile",
                profile.name
            )));
        }
        Ok(std::sync::Arc::from(crate::llm::provider_for(
            crate::llm::ProviderConfig {
                kind: profile.provider,
                base_url: profile.base_url,
                model: profile.model,
                api_key: key,
                retry: crate::llm::RetryPolicy::from_env(),
            },
        )))
    }
}

/// A profile's key from the keyring, for the origin it points at now; a key kept for another
/// origin is held back, and said.
async fn keyring_key(
    profile: &ProviderProfile,
) -> Result<Option<Secret>, crate::agent::ProfileUnavailable> {
    let looked = profile.clone();
    let found = tokio::task::spawn_blocking(move || lookup_key(&KeyringStore, &looked))
        .await
        .unwrap_or_default();
    match (found.key, found.elsewhere) {
        (Some(key), _) => Ok(Some(key)),
        (None, Some(there)) => Err(crate::agent::ProfileUnavailable(held_back(profile, &there))),
        (None, None) => Ok(None),
    }
}

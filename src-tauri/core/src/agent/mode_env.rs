//! The model and provider a run uses for the task's mode: the model a mode names (`model:` of
//! a Claude Code agent or a mode), and the provider profile Settings name for the mode.

use std::sync::Arc;

use super::{AgentEnv, Governance, TaskHandle};
use crate::protocol::{Event, NoticeLevel};

/// Claude Code's model aliases, as the Anthropic API names those models.
const CLAUDE_ALIASES: [(&str, &str); 3] = [
    ("opus", "claude-opus-4-5"),
    ("sonnet", "claude-sonnet-4-5"),
    ("haiku", "claude-haiku-4-5"),
];

/// The run's environment: a task whose mode names a model (`model:` of a Claude Code agent or a
/// mode) runs on it, through the same provider, key and host; the mode is read as it is now.
pub(super) fn env_for_mode(env: Arc<AgentEnv>, task: &TaskHandle) -> Arc<AgentEnv> {
    let current = env.provider.model_id();
    let (mode, model) = match mode_model(&env.gov, task, &current) {
        ModeModel::Same => return env,
        ModeModel::Unnamed { mode, wanted } => {
            env.notice(format!(
                "The {mode} mode asks for Claude's `{wanted}`, which this provider does not name; the task runs on {current}."
            ));
            return env;
        }
        ModeModel::Named { mode, model } => (mode, model),
    };
    match env.provider.with_model(&model) {
        Some(provider) => {
            env.sink.emit(Event::Notice {
                level: NoticeLevel::Info,
                message: format!("The {mode} mode runs on {model}, as it asks."),
            });
            Arc::new(env.with_provider(Arc::from(provider)))
        }
        None => env,
    }
}

/// The task moved to the profile its mode runs on, where Settings name one and the task is
/// not on it (a task that switched to the mode, a subtask started in it); a profile that
/// cannot be used is said, and the task stays where it was. A task the person started on a
/// profile of their choice is not moved until its mode changes.
pub(super) async fn on_mode_profile(env: Arc<AgentEnv>, task: &TaskHandle) -> Arc<AgentEnv> {
    let (Some(source), Some(mode)) = (&env.profiles, task.governance().mode) else {
        return env;
    };
    let Some(wanted) = source.for_mode(&mode.slug) else {
        return env;
    };
    if task.summary().profile.as_deref() == Some(wanted.as_str()) {
        return env;
    }
    match source.provider(&wanted).await {
        Ok(provider) => {
            task.set_profile(Some(wanted.clone()));
            env.sink.emit(Event::Notice {
                level: NoticeLevel::Info,
                message: format!(
                    "The {} mode runs on the {wanted} profile ({}), as your Settings say.",
                    mode.name,
                    provider.model_id()
                ),
            });
            Arc::new(env.with_provider(provider))
        }
        Err(why) => {
            env.notice(format!(
                "The {} mode runs on the {wanted} profile, which cannot be used now ({why}); the task stays on its own.",
                mode.name
            ));
            env
        }
    }
}

/// What a task's mode says of the model its runs use, against `current` (the provider's).
enum ModeModel {
    /// Nothing, or the model already in use.
    Same,
    /// A Claude alias on a provider that does not name Claude's models.
    Unnamed {
        mode: String,
        wanted: String,
    },
    Named {
        mode: String,
        model: String,
    },
}

fn mode_model(gov: &Governance, task: &TaskHandle, current: &str) -> ModeModel {
    let Some(slug) = task.governance().mode.map(|m| m.slug) else {
        return ModeModel::Same;
    };
    let modes = crate::modes::load_modes(gov.root(), gov.config_dir());
    let Some(mode) = modes.get(&slug) else {
        return ModeModel::Same;
    };
    let Some(wanted) = mode.model.as_deref().map(str::trim) else {
        return ModeModel::Same;
    };
    let alias = CLAUDE_ALIASES.iter().find(|(a, _)| *a == wanted);
    let model = match alias {
        Some((_, full)) if current.starts_with("anthropic/") => *full,
        Some(_) => {
            return ModeModel::Unnamed {
                mode: mode.name.clone(),
                wanted: wanted.into(),
            }
        }
        None => wanted,
    };
    match current.split_once('/').map_or(current, |(_, m)| m) == model {
        true => ModeModel::Same,
        false => ModeModel::Named {
            mode: mode.name.clone(),
            model: model.into(),
        },
    }
}

/// The model a task's next run uses: its mode's, where the mode names one, else `current`.
pub fn model_for_task(gov: &Governance, task: &TaskHandle, current: &str) -> String {
    match mode_model(gov, task, current) {
        ModeModel::Named { model, .. } => model,
        _ => current.to_string(),
    }
}

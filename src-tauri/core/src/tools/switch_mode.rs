//! `switch_mode`: the model asks the person to put the task in another mode. Only the person
//! can say yes; with no one to ask (an unattended run) the mode stays.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;

/// Ask the user to switch this task to another mode, when the work needs what the current
/// mode does not allow (e.g. from architect to code to implement a plan).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The slug of the mode to switch to.
    pub mode_slug: String,
    /// Why the work needs that mode.
    pub reason: String,
}

pub struct SwitchMode;

pub struct Work {
    slug: String,
    reason: String,
}

#[async_trait]
impl AgentTool for SwitchMode {
    type Args = Args;
    type Work = Work;
    const NAME: &'static str = "switch_mode";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "Ask the user to switch the task to another mode (they decide); the new mode's tools are offered from the next turn.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<Work>, ToolError> {
        let slug = args.mode_slug.trim();
        if args.reason.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "reason is empty: say why the work needs that mode".into(),
            ));
        }
        // Whether the mode exists is looked up when the call runs (with the global modes).
        if slug.is_empty() {
            return Err(ToolError::InvalidArguments(
                "mode_slug is empty: name one of the modes the prompt lists".into(),
            ));
        }
        if cx.task.mode.as_ref().is_some_and(|m| m.slug == slug) {
            return Err(ToolError::InvalidArguments(format!(
                "the task is already in `{slug}` mode"
            )));
        }
        Ok(Plan {
            target: slug.to_string(),
            action: Action::Meta,
            work: Work {
                slug: slug.to_string(),
                reason: args.reason.trim().to_string(),
            },
        })
    }

    async fn run(&self, _: Action, work: Work, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let modes = crate::modes::load_modes(cx.gov.root(), cx.gov.config_dir());
        let Some(mode) = modes.get(&work.slug).cloned() else {
            let known: Vec<&str> = modes.modes.iter().map(|m| m.slug.as_str()).collect();
            return Err(ToolError::InvalidArguments(format!(
                "there is no mode `{}`; modes: {}",
                work.slug,
                known.join(", ")
            )));
        };
        let current = cx
            .task
            .governance()
            .mode
            .map_or_else(|| "no".to_string(), |m| m.name);
        if cx.policy.switch_modes_without_asking {
            cx.task.set_mode(&mode);
            return Ok(ToolOutput::text(
                format!("switched to {}", mode.slug),
                format!(
                    "The task is now in {} mode (`{}`): the user's settings let you switch without asking. Its tools are offered from your next turn.",
                    mode.name, mode.slug
                ),
            ));
        }
        let yes = format!("Switch to {}", mode.name);
        let question = format!(
            "The agent asks to switch from {current} mode to {} mode: {}",
            mode.name, work.reason
        );
        let answer = cx
            .task
            .ask(
                cx.interaction,
                cx.events,
                cx.call_id,
                &question,
                &[yes.clone(), format!("Stay in {current} mode")],
                cx.cancel,
            )
            .await;
        match answer {
            Some(answer) if answer == yes => {
                cx.task.set_mode(&mode);
                Ok(ToolOutput::text(
                    format!("switched to {}", mode.slug),
                    format!(
                        "The user switched the task to {} mode (`{}`). Its tools are offered from your next turn.",
                        mode.name, mode.slug
                    ),
                ))
            }
            Some(answer) => Err(ToolError::Failed(format!(
                "The user kept the task in {current} mode. Their answer: {answer}"
            ))),
            None => Err(ToolError::Failed(format!(
                "No one can approve a mode switch in this unattended run, so the task stays in {current} mode. Work within it, or finish and say which mode the rest needs (a run can start in a mode with --mode)."
            ))),
        }
    }
}

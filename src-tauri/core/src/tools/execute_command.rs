//! `execute_command`: a shell command in the workspace, with a timeout.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{
    blocking, resolve, AgentTool, Consequence, Plan, RunCx, ToolCx, ToolError, ToolOutput,
    DEFAULT_COMMAND_TIMEOUT, MAX_COMMAND_TIMEOUT,
};
use crate::agent::command;
use crate::hooks::{Action, CommandAction, CommandOutcome, TraceHook};
use crate::protocol::{Event, NoticeLevel, ToolKind};
use crate::workspace::protected_reason;

/// Run a shell command (`sh -c`) in the workspace. Output is streamed to the user and truncated
/// for you. Destructive commands wait for the user's approval. The whole process group is
/// killed on timeout.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The command line.
    pub command: String,
    /// Working directory relative to the workspace root (default: the root).
    pub cwd: Option<String>,
    /// Seconds before the command is killed (default 120, at most 1800).
    pub timeout_seconds: Option<u64>,
}

pub struct ExecuteCommand;

#[async_trait]
impl AgentTool for ExecuteCommand {
    type Args = Args;
    type Work = ();
    const NAME: &'static str = "execute_command";
    const KIND: ToolKind = ToolKind::Command;
    const DESCRIPTION: &'static str = "Run a shell command in the workspace (cwd optional, timeout_seconds optional). Destructive commands need the user's approval.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<()>, ToolError> {
        let command = args.command.trim().to_string();
        if command.is_empty() {
            return Err(ToolError::InvalidArguments("command is empty".into()));
        }
        if command.contains('\0') {
            return Err(ToolError::InvalidArguments(
                "command contains a NUL byte".into(),
            ));
        }
        let cwd = resolve(cx, args.cwd.as_deref().unwrap_or("."))?;
        if !cwd.abs.is_dir() {
            return Err(ToolError::Failed(format!(
                "cwd {} is not a directory",
                cwd.display()
            )));
        }
        let timeout = match args.timeout_seconds {
            Some(0) => {
                return Err(ToolError::InvalidArguments(
                    "timeout_seconds must be at least 1".into(),
                ))
            }
            Some(s) => Duration::from_secs(s).min(MAX_COMMAND_TIMEOUT),
            None => DEFAULT_COMMAND_TIMEOUT,
        };
        Ok(Plan {
            target: command.clone(),
            action: Action::Command(CommandAction {
                command,
                cwd,
                timeout,
            }),
            work: (),
        })
    }

    async fn run(&self, action: Action, _: (), cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let Action::Command(cmd) = action else {
            return Err(ToolError::Failed(
                "internal: execute_command was given another kind of plan".into(),
            ));
        };
        run_command(cmd, cx).await
    }
}

async fn run_command(cmd: CommandAction, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
    let root = cx.gov.root().to_path_buf();
    let snapshot_root = root.clone();
    let before = blocking("looking at the workspace", move || {
        Ok(command::snapshot(&snapshot_root))
    })
    .await?;
    let (task_id, call_id) = (cx.task.id.clone(), cx.call_id.to_string());
    let events = cx.events;
    let run = command::run(&cmd, &cx.gov.scrubbed_env, cx.cancel, |chunk| {
        events.emit(Event::ToolCallOutput {
            task_id: task_id.clone(),
            call_id: call_id.clone(),
            chunk: chunk.to_string(),
        })
    })
    .await;
    if let Some(e) = run.spawn_error {
        return Err(ToolError::Failed(e));
    }
    let after = blocking("looking at the workspace", move || {
        Ok(command::snapshot(&root))
    })
    .await?;
    let changed = command::changed_files(&before, &after);
    let intent_id = cx.task.governance().selected_intent.unwrap_or_default();
    let snapshot = cx.gov.intents.snapshot();
    let (in_scope, out_of_scope): (Vec<String>, Vec<String>) =
        changed.into_iter().partition(|rel| {
            protected_reason(rel).is_none()
                && snapshot.doc.get(&intent_id).is_some_and(|i| i.owns(rel))
        });
    let outcome = CommandOutcome {
        task_id: cx.task.id.clone(),
        intent_id: intent_id.clone(),
        model_id: cx.model_id.to_string(),
        call_id: cx.call_id.to_string(),
        command: cmd.command.clone(),
        cwd: cmd.cwd.rel.clone(),
        exit_code: run.exit_code,
        timed_out: run.timed_out,
        cancelled: run.cancelled,
        changed_in_scope: in_scope.clone(),
        changed_out_of_scope: out_of_scope.clone(),
        output_tail: crate::text::last_chars(&run.output, 4000).to_string(),
        approval: cx.approval.clone(),
    };
    let ledger = cx.gov.ledger.clone();
    let to_record = outcome.clone();
    let recorded = blocking("recording the command", move || {
        TraceHook { ledger: &ledger }
            .after_command(&to_record)
            .map_err(|e| ToolError::Failed(e.to_string()))
    })
    .await;
    if let Err(e) = recorded {
        notice(
            cx,
            format!(
                "The trace ledger could not record the files changed by `{}`: {e}",
                cmd.command
            ),
        );
    }
    if !out_of_scope.is_empty() {
        notice(
            cx,
            format!(
                "`{}` changed files outside the scope of {intent_id}: {}",
                cmd.command,
                out_of_scope.join(", ")
            ),
        );
    }
    let status = if run.cancelled {
        "was stopped by the user".to_string()
    } else if run.timed_out {
        format!("timed out after {} s and was killed", cmd.timeout.as_secs())
    } else {
        match run.exit_code {
            Some(code) => format!("exited with code {code}"),
            None => "was killed by a signal".to_string(),
        }
    };
    let mut content = format!(
        "The command {status}.\nOutput:\n{}",
        crate::text::head_and_tail(&run.output, 2_000, 8_000)
    );
    if !in_scope.is_empty() {
        content.push_str(&format!("\nFiles it changed: {}.", in_scope.join(", ")));
    }
    if !out_of_scope.is_empty() {
        content.push_str(&format!(
            "\nWarning: it changed files outside the scope of {intent_id}: {}. This was reported to the user and recorded in the ledger.",
            out_of_scope.join(", ")
        ));
    }
    let mut consequences = vec![Consequence::CommandFinished(outcome)];
    if !in_scope.is_empty() {
        consequences.push(Consequence::Changed { intent_id });
    }
    Ok(ToolOutput {
        content,
        summary: status,
        display: run.output,
        failed: run.cancelled || run.timed_out || run.exit_code != Some(0),
        completed: None,
        consequences,
    })
}

fn notice(cx: &RunCx<'_>, message: String) {
    cx.events.emit(Event::Notice {
        level: NoticeLevel::Warning,
        message,
    });
}

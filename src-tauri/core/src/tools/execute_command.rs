//! `execute_command`: a shell command in the workspace, with a timeout, or left running in the
//! background (`background_command`).

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{
    blocking, resolve, AgentTool, Consequence, Plan, RunCx, ToolCx, ToolError, ToolOutput,
    DEFAULT_COMMAND_TIMEOUT, MAX_COMMAND_TIMEOUT,
};
use crate::changes::shown;
use crate::checkpoint::ScopeImages;
use crate::hooks::{Action, CommandAction, CommandOutcome};
use crate::protocol::{Event, NoticeLevel, ToolKind};
use crate::redact::Redactor;
use crate::sandbox::{run_governed, scope_grants, CommandContext, GovernedRun, GrantKind};

/// Run a shell command (`bash -c`) in the workspace, confined by the operating system: it can
/// write only inside your intent's owned scope (plus build output and a private temporary
/// directory), has no network unless the user grants it, and gets no secrets. Output is streamed
/// to the user and truncated for you. Destructive commands wait for the user's approval. The
/// whole process group is killed on timeout. With `background: true` (a dev server, a watcher)
/// it keeps running, under the same confinement, after this call returns: you get a process id
/// and its first output; read more with read_process_output, end it with stop_process. It is
/// stopped when its task ends and when Mandate closes, and what it changes in the workspace is
/// found and governed as any command's changes are, while it runs and when it ends.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The command line.
    pub command: String,
    /// Working directory relative to the workspace root (default: the root).
    pub cwd: Option<String>,
    /// Seconds before the command is killed (default 120, at most 1800; in the background:
    /// default and at most 86400).
    pub timeout_seconds: Option<u64>,
    /// Keep it running in the background and return at once (default false).
    #[serde(default)]
    pub background: bool,
}

pub struct ExecuteCommand;

#[async_trait]
impl AgentTool for ExecuteCommand {
    type Args = Args;
    type Work = ();
    const NAME: &'static str = "execute_command";
    const KIND: ToolKind = ToolKind::Command;
    const DESCRIPTION: &'static str = "Run a shell command in the workspace (cwd optional, timeout_seconds optional). Destructive commands need the user's approval. background: true keeps a dev server or watcher running (read it with read_process_output, end it with stop_process).";

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
            Some(s) if args.background => Duration::from_secs(s).min(MAX_BACKGROUND_TIMEOUT),
            Some(s) => Duration::from_secs(s).min(MAX_COMMAND_TIMEOUT),
            None if args.background => MAX_BACKGROUND_TIMEOUT,
            None => DEFAULT_COMMAND_TIMEOUT,
        };
        Ok(Plan {
            target: command.clone(),
            action: Action::Command(CommandAction {
                command,
                cwd,
                timeout,
                granted: Default::default(),
                background: args.background,
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
        match cmd.background {
            true => super::background_command::start(cmd, cx).await,
            false => run_command(cmd, cx).await,
        }
    }
}

/// How long a background process may run at most.
const MAX_BACKGROUND_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// What a command of this task runs under: its intent, the globs it may be given to write, who
/// owns what it changes, the policy and ignore list, and the task's temporary directory.
pub(super) struct Ground {
    pub intent_id: String,
    pub intent: Option<crate::orchestration::intents::Intent>,
    pub owned_scope: Vec<String>,
    /// A subtask's changes must lie in the intents above it too.
    pub owns: std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>,
    pub policy: std::sync::Arc<crate::hooks::command_policy::CommandPolicy>,
    pub ignore: std::sync::Arc<crate::hooks::ignore_list::IntentIgnore>,
    pub temp_dir: std::path::PathBuf,
}

impl Ground {
    pub(super) fn of(cx: &RunCx<'_>) -> Result<Ground, ToolError> {
        let intent_id = cx.task.governance().selected_intent.unwrap_or_default();
        let intent = cx.gov.intents.snapshot().doc.get(&intent_id).cloned();
        // A subtask's command may write only where its parents' intents allow too.
        let (bounds, snapshot) = (cx.task.governance(), cx.gov.intents.snapshot());
        let owned_scope = bounds.command_scope(&snapshot);
        let owner = intent.clone();
        let owns = std::sync::Arc::new(move |p: &str| {
            owner.as_ref().is_some_and(|i| i.owns(p))
                && bounds.outside_bounds(&snapshot, p).is_none()
        });
        let temp_dir = cx.task.temp_dir().map_err(|e| {
            ToolError::Failed(format!(
                "could not make the command's temporary directory: {e}"
            ))
        })?;
        Ok(Ground {
            intent_id,
            intent,
            owned_scope,
            owns,
            policy: cx
                .gov
                .policy()
                .map_err(|e| ToolError::Failed(e.to_string()))?,
            ignore: cx
                .gov
                .ignore()
                .map_err(|e| ToolError::Failed(e.to_string()))?,
            temp_dir,
        })
    }

    pub(super) fn context<'a>(
        &'a self,
        cx: &'a RunCx<'_>,
        cmd: &CommandAction,
    ) -> CommandContext<'a> {
        CommandContext {
            workspace: cx.gov.root(),
            owned_scope: &self.owned_scope,
            owns: &*self.owns,
            ignore: &self.ignore,
            policy: &self.policy,
            confinement: &cx.gov.confinement,
            temp_dir: &self.temp_dir,
            granted: cmd.granted,
            app_dirs: &cx.gov.app_dirs,
            redactor: Redactor::global(),
        }
    }
}

async fn run_command(cmd: CommandAction, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
    let ground = Ground::of(cx)?;
    let (intent_id, owned_scope) = (ground.intent_id.clone(), ground.owned_scope.clone());
    let before = keep_owned_files(cx.gov, ground.intent.clone(), &owned_scope).await?;
    let (task_id, call_id) = (cx.task.id.clone(), cx.call_id.to_string());
    let events = cx.events;
    let context = ground.context(cx, &cmd);
    let governed = run_governed(&cmd, &context, cx.cancel, |chunk| {
        events.emit(Event::ToolCallOutput {
            task_id: task_id.clone(),
            call_id: call_id.clone(),
            chunk: chunk.to_string(),
        })
    })
    .await
    .map_err(|e| ToolError::Failed(format!("the command did not run: {e}")))?;
    if let Some(e) = &governed.run.spawn_error {
        return Err(ToolError::Failed(e.clone()));
    }
    // Fail closed: from a partial view nothing is recorded (see `output`).
    let recorded = if governed.unseen.is_empty() {
        super::command_record::record(cx, &cmd, &governed, &before).await
    } else {
        Ok(Vec::new())
    };
    let in_scope = match recorded {
        Ok(paths) => paths,
        Err(e) => {
            notice(cx, e.to_string());
            Vec::new()
        }
    };
    Ok(output(
        cx,
        &cmd,
        &governed,
        in_scope,
        &intent_id,
        &owned_scope,
    ))
}

/// What the intent owns is kept in the checkpoint store before the command, so what it changes
/// can be diffed and taken back.
pub(crate) async fn keep_owned_files(
    gov: &std::sync::Arc<crate::agent::Governance>,
    intent: Option<crate::orchestration::intents::Intent>,
    owned_scope: &[String],
) -> Result<ScopeImages, ToolError> {
    let policy = gov.policy().map_err(|e| ToolError::Failed(e.to_string()))?;
    let root = gov.root().to_path_buf();
    let dirs: Vec<String> = scope_grants(&root, owned_scope)
        .into_iter()
        .filter_map(|g| {
            let dir = match g.kind {
                GrantKind::Directory => g.path,
                GrantKind::File => g.path.parent()?.to_path_buf(),
            };
            dir.strip_prefix(&root).ok()?.to_str().map(str::to_string)
        })
        .collect();
    let mut skip: Vec<String> = policy
        .confinement()
        .build_output_names()
        .into_iter()
        .map(str::to_string)
        .collect();
    skip.push(".git".into());
    let gov = gov.clone();
    blocking("keeping the intent's files", move || {
        let skip: Vec<&str> = skip.iter().map(String::as_str).collect();
        let owns = |p: &str| intent.as_ref().is_some_and(|i| i.owns(p));
        Ok(gov
            .scope_cache
            .capture(gov.root(), &dirs, &owns, &skip, &gov.journal.checkpoints))
    })
    .await
}

fn status_line(cmd: &CommandAction, run: &crate::sandbox::CommandRun) -> String {
    if run.cancelled {
        "was stopped by the user".to_string()
    } else if run.timed_out {
        format!("timed out after {} s and was killed", cmd.timeout.as_secs())
    } else {
        match run.exit_code {
            Some(code) => format!("exited with code {code}"),
            None => "was killed by a signal".to_string(),
        }
    }
}

/// What the model reads, what the card shows, and what the post-hooks hear.
fn output(
    cx: &RunCx<'_>,
    cmd: &CommandAction,
    governed: &GovernedRun,
    in_scope: Vec<String>,
    intent_id: &str,
    owned_scope: &[String],
) -> ToolOutput {
    let run = &governed.run;
    let status = status_line(cmd, run);
    let shown_command = Redactor::global().redact(&cmd.command).into_owned();
    let mut content = report(&status, governed, &in_scope, intent_id);
    let out_of_scope = governed.changes.out_of_scope_paths();
    let mut failed = run.cancelled || run.timed_out || run.exit_code != Some(0);
    if !governed.unseen.is_empty() {
        let message = unseen(&shown_command, &status, governed);
        notice(cx, message.clone());
        let paths: Vec<_> = governed.unseen.iter().map(|p| shown(p)).collect();
        content = serde_json::json!({"error": {
            "code": "CHANGES_UNSEEN",
            "message": message,
            "paths": paths,
            "changed_out_of_scope": out_of_scope,
        }, "result": content})
        .to_string();
        failed = true;
    } else if !out_of_scope.is_empty() {
        let message = scope_violation(&shown_command, governed, intent_id, owned_scope);
        notice(cx, message.clone());
        content = serde_json::json!({"error": {
            "code": "SCOPE_VIOLATION",
            "message": message,
            "intent_id": intent_id,
            "paths": crate::changes::listed(out_of_scope.clone()),
            "owned_scope": owned_scope,
        }, "result": content})
        .to_string();
        failed = true;
    }
    let outcome = CommandOutcome {
        task_id: cx.task.id.clone(),
        intent_id: intent_id.to_string(),
        model_id: cx.model_id.to_string(),
        call_id: cx.call_id.to_string(),
        command: shown_command,
        cwd: cmd.cwd.rel.clone(),
        exit_code: run.exit_code,
        timed_out: run.timed_out,
        cancelled: run.cancelled,
        changed_in_scope: in_scope.clone(),
        changed_out_of_scope: out_of_scope.iter().map(|p| p.to_string()).collect(),
        output_tail: crate::text::last_chars(&run.output, 4000).to_string(),
        approval: cx.approval.clone(),
    };
    let mut consequences = vec![Consequence::CommandFinished(Box::new(outcome))];
    if !in_scope.is_empty() {
        consequences.push(Consequence::Changed {
            intent_id: intent_id.to_string(),
        });
    }
    ToolOutput {
        content,
        summary: status,
        display: run.output.clone(),
        failed,
        completed: None,
        subtask: None,
        consequences,
    }
}

/// How the command ended, its output (head and tail), and the files it changed.
fn report(status: &str, governed: &GovernedRun, in_scope: &[String], intent_id: &str) -> String {
    let mut content = format!(
        "The command {status}.\nOutput:\n{}",
        crate::text::head_and_tail(&governed.run.output, 2_000, 8_000)
    );
    if !in_scope.is_empty() {
        content.push_str(&format!(
            "\nFiles it changed (recorded in the trace ledger under {intent_id}): {}.",
            in_scope.join(", ")
        ));
    }
    if !governed.changes.permitted.is_empty() {
        let permitted: Vec<_> = governed
            .changes
            .permitted
            .iter()
            .take(20)
            .map(|(c, _)| shown(&c.path))
            .collect();
        content.push_str(&format!(
            "\nIt also wrote build output or approved `.git/` changes (not recorded): {}{}.",
            permitted.join(", "),
            if governed.changes.permitted.len() > 20 {
                ", …"
            } else {
                ""
            }
        ));
    }
    if !governed.reopened.is_empty() {
        let opened: Vec<String> = governed
            .reopened
            .iter()
            .map(|r| {
                format!(
                    "{} (left {:03o}, now {:03o})",
                    shown(&r.path),
                    r.left_mode,
                    r.mode
                )
            })
            .collect();
        content.push_str(&format!(
            "\nIt left these unreadable; Mandate put their permissions back to read them: {}.",
            opened.join(", ")
        ));
    }
    if !governed.unreadable.is_empty() {
        let unreadable: Vec<_> = governed.unreadable.iter().map(|p| shown(p)).collect();
        content.push_str(&format!(
            "\nNote: these could not be read to find changes: {}.",
            unreadable.join(", ")
        ));
    }
    content
}

/// Why a command's changes are not recorded: Mandate could not read where it could write.
fn unseen(shown_command: &str, status: &str, governed: &GovernedRun) -> String {
    let unseen: Vec<_> = governed.unseen.iter().map(|p| shown(p)).collect();
    let mut message = format!(
        "Changes unseen: `{shown_command}` {status}, but Mandate cannot read {} (another user's, so it cannot open them), where the command could have changed files; what it changed there is unknown, so nothing it changed was recorded in the trace ledger. Make them readable to Mandate's user, or move them out of the workspace, and look at the workspace before going on.",
        unseen.join(", ")
    );
    if !governed.restored.is_empty() {
        let described =
            crate::changes::described(&governed.changes.out_of_scope, &governed.restored);
        message.push_str(&format!(
            " Changes found outside the owned scope: {}.",
            described.list
        ));
        if !described.reasons.is_empty() {
            message.push(' ');
            message.push_str(&described.reasons);
        }
    }
    message
}

/// The files changed outside the owned scope, each with whether it was undone, and why those
/// no intent may change are out of scope.
fn scope_violation(
    shown_command: &str,
    governed: &GovernedRun,
    intent_id: &str,
    owned_scope: &[String],
) -> String {
    let described = crate::changes::described(&governed.changes.out_of_scope, &governed.restored);
    format!(
        "Scope Violation: `{shown_command}` changed files outside the owned scope of {intent_id} ({}): {}.{}{} They were reported to the user. To change them, request scope expansion with request_scope_expansion (intent_id, globs, reason).",
        if owned_scope.is_empty() { "nothing".to_string() } else { owned_scope.join(", ") },
        described.list,
        if described.reasons.is_empty() { "" } else { " " },
        described.reasons,
    )
}

fn notice(cx: &RunCx<'_>, message: String) {
    cx.events.emit(Event::Notice {
        level: NoticeLevel::Warning,
        message,
    });
}

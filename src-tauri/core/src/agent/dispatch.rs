//! One tool call, start to end: look up, parse, plan, pre-hooks, approval, the last stale check
//! under the path lock, execution, post-hooks, and the result for the model.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::command;
use super::task::{AgentEnv, TaskHandle};
use crate::hooks::{
    Action, AskReason, CommandOutcome, Decision, Denial, DenialCode, HookContext, IntentStatusHook,
    LessonHook, TraceHook, WriteAction, WriteOutcome,
};
use crate::llm::ToolCall;
use crate::orchestration::ledger::{now_rfc3339, ApprovalRecord};
use crate::protocol::{
    ApprovalDecision, ApprovalDetail, ApprovalRequest, Event, IntentStatus, TaskStatus,
    ToolCallStatus, ToolCallView, ToolKind, UiMessage,
};
use crate::tools::{Effect, Planned, ToolCx, ToolError};
use crate::workspace::protected_reason;

/// What goes back to the model, and whether the task is finished.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub content: String,
    pub is_error: bool,
    /// `attempt_completion`'s result.
    pub completed: Option<String>,
}

/// Command output as the tool card shows it: the last 64 KB.
fn ui_output(output: &str) -> String {
    const MAX: usize = 64 * 1024;
    if output.len() <= MAX {
        return output.to_string();
    }
    let mut start = output.len() - MAX;
    while !output.is_char_boundary(start) {
        start += 1;
    }
    format!("[…]\n{}", &output[start..])
}

fn tool_failure(message: &str) -> String {
    serde_json::json!({"error": {"code": "TOOL_FAILED", "message": message}}).to_string()
}

struct Call<'a> {
    env: &'a AgentEnv,
    task: &'a TaskHandle,
    call: &'a ToolCall,
    view: ToolCallView,
}

impl Call<'_> {
    fn emit_started(&self) {
        self.env.sink.emit(Event::ToolCallStarted {
            task_id: self.task.id.clone(),
            call: self.view.clone(),
        });
    }

    fn finish(
        mut self,
        status: ToolCallStatus,
        summary: String,
        content: String,
        is_error: bool,
    ) -> CallResult {
        self.view.status = status;
        self.view.summary = summary;
        let view = self.view.clone();
        self.task.update(|r| {
            r.messages.push(UiMessage::Tool {
                id: view.call_id.clone(),
                call: view.clone(),
            })
        });
        self.env.sink.emit(Event::ToolCallFinished {
            task_id: self.task.id.clone(),
            call: view,
        });
        CallResult {
            content,
            is_error,
            completed: None,
        }
    }

    fn deny(self, denial: Denial) -> CallResult {
        let status = if denial.code == DenialCode::InvalidArguments {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Denied
        };
        let summary = format!("{}: {}", denial.code_str(), denial.message);
        self.finish(status, summary, denial.to_tool_error(), true)
    }

    fn fail(self, error: ToolError) -> CallResult {
        match error {
            ToolError::InvalidArguments(m) => {
                self.deny(Denial::new(DenialCode::InvalidArguments, m))
            }
            ToolError::Failed(m) => {
                let content = tool_failure(&m);
                self.finish(ToolCallStatus::Failed, m, content, true)
            }
        }
    }

    fn succeed(mut self, summary: String, content: String, output: String) -> CallResult {
        self.view.output = ui_output(&output);
        self.finish(ToolCallStatus::Succeeded, summary, content, false)
    }
}

/// Runs one tool call through governance.
pub async fn dispatch(
    env: &AgentEnv,
    task: &TaskHandle,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> CallResult {
    let tool = env.tools.iter().find(|t| t.name() == call.name);
    let mut c = Call {
        env,
        task,
        call,
        view: ToolCallView {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            kind: tool.map(|t| t.kind()).unwrap_or(ToolKind::Mutate),
            target: String::new(),
            status: ToolCallStatus::Running,
            summary: String::new(),
            output: String::new(),
        },
    };
    let Some(tool) = tool else {
        c.emit_started();
        let names: Vec<&str> = env.tools.iter().map(|t| t.name()).collect();
        return c.deny(Denial::new(
            DenialCode::InvalidArguments,
            format!(
                "There is no tool `{}`. Available tools: {}.",
                call.name,
                names.join(", ")
            ),
        ));
    };
    let args: Value = if call.arguments.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_str(&call.arguments) {
            Ok(v) => v,
            Err(e) => {
                c.emit_started();
                return c.deny(Denial::new(
                    DenialCode::InvalidArguments,
                    format!("The arguments of {} are not valid JSON ({e}).", call.name),
                ));
            }
        }
    };
    let intents = env.gov.intents.snapshot();
    let governance = task.governance();
    let planned = tool.plan(
        args,
        &ToolCx {
            workspace: &env.gov.workspace,
            intents: &intents,
            task: &governance,
        },
    );
    let planned = match planned {
        Ok(p) => p,
        Err(e) => {
            c.emit_started();
            return c.fail(e);
        }
    };
    c.view.target = planned.target.clone();
    c.emit_started();

    let kind = tool.kind();
    let decision = match pre_hooks(env, &governance, &intents, kind, &planned.action) {
        Ok(d) => d,
        Err(denial) => return c.deny(denial),
    };
    let mut approval = ApprovalRecord {
        by: "policy".into(),
        at: now_rfc3339(),
        accepted_hunks: Vec::new(),
        rejected_hunks: Vec::new(),
        edited: false,
    };
    let mut planned = planned;
    let mut contributor = "ai";
    match decision {
        Decision::Allow => {}
        Decision::Deny(d) => return c.deny(d),
        Decision::Ask(reason) => {
            match ask_human(&mut c, &intents, &governance, reason, &mut planned, cancel).await {
                Ok((record, edited)) => {
                    approval = record;
                    if edited {
                        contributor = "mixed";
                    }
                }
                Err(d) => return c.deny(d),
            }
        }
    }
    execute(c, planned, approval, contributor, cancel).await
}

/// The pre-hooks, with the files they depend on loaded; a file that cannot be loaded denies.
fn pre_hooks(
    env: &AgentEnv,
    governance: &crate::hooks::TaskGovernance,
    intents: &crate::orchestration::intents::IntentsSnapshot,
    kind: ToolKind,
    action: &Action,
) -> Result<Decision, Denial> {
    let hook_failure = |m: String| Denial::new(DenialCode::HookFailure, m);
    let policy = match (env.gov.policy(), action) {
        (Ok(p), _) => p,
        (Err(e), Action::Command(_)) => return Err(hook_failure(e)),
        (Err(_), _) => Arc::new(crate::hooks::command_policy::CommandPolicy::builtin()),
    };
    let ignore = match (env.gov.ignore(), action) {
        (Ok(i), _) => i,
        (Err(e), Action::Write(_)) => {
            return Err(hook_failure(format!(
                "{e}; writes are refused until it parses"
            )))
        }
        (Err(_), _) => Arc::new(crate::hooks::ignore_list::IntentIgnore::empty()),
    };
    let cx = HookContext {
        workspace: &env.gov.workspace,
        intents,
        task: governance,
        approval: env.approval,
        policy: &policy,
        ignore: &ignore,
    };
    Ok(env.gov.hooks.pre(&cx, kind, action))
}

/// Asks the user (or the headless policy); on approval the planned write may change.
async fn ask_human(
    c: &mut Call<'_>,
    intents: &crate::orchestration::intents::IntentsSnapshot,
    governance: &crate::hooks::TaskGovernance,
    reason: AskReason,
    planned: &mut Planned,
    cancel: &CancellationToken,
) -> Result<(ApprovalRecord, bool), Denial> {
    let intent = governance
        .selected_intent
        .as_deref()
        .and_then(|id| intents.doc.get(id))
        .map(|i| i.view());
    let detail = match (&reason, &planned.action) {
        (AskReason::Write, Action::Write(w)) => {
            let old = w.old_text();
            ApprovalDetail::Write {
                path: w.path.rel.clone(),
                new_file: w.old.is_none(),
                language: language_of(&w.path.rel),
                hunks: crate::diff::hunks(&old, &w.new_content),
                old_text: old,
                new_text: w.new_content.clone(),
                mutation_class: w.mutation_class.clone(),
            }
        }
        (AskReason::Command(class), Action::Command(cmd)) => ApprovalDetail::Command {
            command: cmd.command.clone(),
            cwd: cmd.cwd.display().to_string(),
            destructive: class.class == crate::hooks::command_policy::CommandClass::Destructive,
            reasons: class.reasons.clone(),
        },
        _ => {
            return Err(Denial::new(
                DenialCode::HookFailure,
                "an approval was requested for an action that cannot be approved",
            ))
        }
    };
    let request = ApprovalRequest {
        approval_id: uuid::Uuid::new_v4().to_string(),
        call_id: c.call.id.clone(),
        intent,
        detail,
    };
    c.view.status = ToolCallStatus::WaitingForApproval;
    c.env.sink.emit(Event::ToolCallStarted {
        task_id: c.task.id.clone(),
        call: c.view.clone(),
    });
    c.task.set_status(c.env, TaskStatus::WaitingForApproval);
    let hunk_count = match &request.detail {
        ApprovalDetail::Write { hunks, .. } => hunks.len() as u32,
        _ => 0,
    };
    let approval_id = request.approval_id.clone();
    let decision = c.env.interaction.approve(&c.task.id, request, cancel).await;
    c.task.set_status(c.env, TaskStatus::Running);
    c.view.status = ToolCallStatus::Running;
    let by = c.env.interaction.approver().to_string();
    let outcome_text;
    let result = match decision {
        ApprovalDecision::Reject { reason } => {
            let reason = reason.trim();
            outcome_text = format!("rejected: {reason}");
            Err(Denial::new(
                DenialCode::RejectedByUser,
                if reason.is_empty() {
                    "The user rejected this action.".to_string()
                } else {
                    format!("The user rejected this action: {reason}")
                },
            )
            .with_intent(governance.selected_intent.as_deref()))
        }
        ApprovalDecision::AlwaysAllow => {
            if let Action::Command(cmd) = &planned.action {
                let command = cmd.command.trim().to_string();
                c.task.update(|r| {
                    r.governance.always_allowed_commands.insert(command);
                });
            }
            outcome_text = "approved (always for this command in this task)".into();
            Ok(record(&by, (0..hunk_count).collect(), Vec::new(), false))
        }
        ApprovalDecision::Approve {
            rejected_hunks,
            edited_content,
        } => match &mut planned.action {
            Action::Write(w) => {
                let rejected: Vec<u32> = rejected_hunks
                    .into_iter()
                    .filter(|h| *h < hunk_count)
                    .collect();
                let accepted: Vec<u32> =
                    (0..hunk_count).filter(|h| !rejected.contains(h)).collect();
                let old = w.old_text();
                let edited = edited_content.is_some();
                let final_text = match edited_content {
                    Some(text) => text,
                    None => crate::diff::apply_selected(&old, &w.new_content, &rejected),
                };
                if final_text == old && w.old.is_some() {
                    outcome_text = "rejected (every hunk)".into();
                    Err(Denial::new(
                        DenialCode::RejectedByUser,
                        "The user rejected every hunk of this change; nothing was written.",
                    ))
                } else {
                    w.new_content = final_text;
                    outcome_text = if edited {
                        "approved after the user edited it".into()
                    } else if rejected.is_empty() {
                        "approved".into()
                    } else {
                        format!("approved {} of {} hunks", accepted.len(), hunk_count)
                    };
                    Ok(record(&by, accepted, rejected, edited))
                }
            }
            _ => {
                outcome_text = "approved".into();
                Ok(record(&by, Vec::new(), Vec::new(), false))
            }
        },
    };
    c.env.sink.emit(Event::ApprovalResolved {
        task_id: c.task.id.clone(),
        approval_id,
        outcome: outcome_text,
    });
    result.map(|r| {
        let edited = r.edited;
        (r, edited)
    })
}

fn record(by: &str, accepted: Vec<u32>, rejected: Vec<u32>, edited: bool) -> ApprovalRecord {
    ApprovalRecord {
        by: by.into(),
        at: now_rfc3339(),
        accepted_hunks: accepted,
        rejected_hunks: rejected,
        edited,
    }
}

/// A language name for syntax highlighting, from the file extension.
pub fn language_of(path: &str) -> String {
    let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "rs" => "rust",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" | "tsx" => "typescript",
        "py" => "python",
        "go" => "go",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "hpp" => "cpp",
        "md" => "markdown",
        "json" => "json",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "sh" | "bash" => "bash",
        "html" => "html",
        "css" => "css",
        _ => "text",
    }
    .to_string()
}

async fn execute(
    c: Call<'_>,
    planned: Planned,
    approval: ApprovalRecord,
    contributor: &'static str,
    cancel: &CancellationToken,
) -> CallResult {
    let env = c.env;
    match (planned.effect, planned.action) {
        (Effect::Write, Action::Write(w)) => write(c, w, approval, contributor).await,
        (Effect::Command, Action::Command(cmd)) => run_command(c, cmd, approval, cancel).await,
        (
            Effect::ReadFile {
                path,
                start_line,
                end_line,
            },
            _,
        ) => {
            let rel = path.rel.clone();
            let read = tokio::task::spawn_blocking(move || {
                crate::tools::read_for_model(&path, start_line, end_line)
            })
            .await;
            match read {
                Ok(Ok((text, hash))) => {
                    c.task.update(|r| {
                        r.governance.read_hashes.insert(rel.clone(), hash);
                    });
                    let lines = text.lines().count();
                    c.succeed(format!("read {lines} lines"), text, String::new())
                }
                Ok(Err(e)) => c.fail(e),
                Err(e) => c.fail(ToolError::Failed(format!("read failed: {e}"))),
            }
        }
        (Effect::ListFiles { path, recursive }, _) => {
            match tokio::task::spawn_blocking(move || {
                crate::tools::walk::list_for_model(&path, recursive)
            })
            .await
            {
                Ok(Ok(text)) => {
                    let n = text.lines().count();
                    c.succeed(format!("{n} entries"), text, String::new())
                }
                Ok(Err(e)) => c.fail(e),
                Err(e) => c.fail(ToolError::Failed(format!("listing failed: {e}"))),
            }
        }
        (
            Effect::SearchFiles {
                path,
                regex,
                file_pattern,
            },
            _,
        ) => {
            let found = tokio::task::spawn_blocking(move || {
                crate::tools::walk::search(&path, &regex, file_pattern.as_deref(), 1)
            })
            .await;
            match found {
                Ok(Ok((text, n))) => c.succeed(format!("{n} matches"), text, String::new()),
                Ok(Err(e)) => c.fail(e),
                Err(e) => c.fail(ToolError::Failed(format!("search failed: {e}"))),
            }
        }
        (Effect::SelectIntent { intent_id }, _) => {
            let snapshot = env.gov.intents.snapshot();
            let Some(intent) = snapshot.doc.get(&intent_id) else {
                return c.fail(ToolError::Failed(format!("intent `{intent_id}` vanished")));
            };
            let root = env.gov.root().to_path_buf();
            let id = intent_id.clone();
            let history = tokio::task::spawn_blocking(move || {
                crate::orchestration::trace::intent_changes(&root, &id).unwrap_or_default()
            })
            .await
            .unwrap_or_default();
            let context = super::intent_context(intent, &history);
            c.task.update(|r| {
                r.governance.selected_intent = Some(intent_id.clone());
                r.summary.intent_id = Some(intent_id.clone());
            });
            c.task.emit_summary(env);
            c.succeed(format!("selected {intent_id}"), context, String::new())
        }
        (Effect::Ask { question, options }, _) => {
            c.task.set_status(env, TaskStatus::WaitingForAnswer);
            let answer = env
                .interaction
                .ask(&c.task.id, &c.call.id, &question, &options, cancel)
                .await;
            c.task.set_status(env, TaskStatus::Running);
            match answer {
                Some(answer) => {
                    c.task.update(|r| {
                        r.messages.push(UiMessage::User {
                            id: uuid::Uuid::new_v4().to_string(),
                            text: answer.clone(),
                        })
                    });
                    let content = format!("<answer>\n{answer}\n</answer>");
                    c.succeed("answered".into(), content, String::new())
                }
                None => c.succeed(
                    "no one to answer".into(),
                    "No one can answer right now (this is an unattended run). Make a reasonable assumption, say which, and continue.".into(),
                    String::new(),
                ),
            }
        }
        (Effect::Complete { result }, _) => {
            let note = complete_intent(env, c.task, &result);
            c.task.post(
                env.sink.as_ref(),
                UiMessage::Assistant {
                    id: uuid::Uuid::new_v4().to_string(),
                    safe_html: crate::markdown::render(&result),
                    complete: true,
                },
            );
            let mut r = c.succeed(
                format!("task complete{note}"),
                format!("The task is complete.{note}"),
                String::new(),
            );
            r.completed = Some(result);
            r
        }
        (Effect::Lesson { text }, _) => {
            let root = env.gov.root().to_path_buf();
            match tokio::task::spawn_blocking(move || {
                crate::orchestration::lessons::append(&root, "recorded by the agent", &text)
            })
            .await
            {
                Ok(Ok(())) => c.succeed(
                    "lesson recorded".into(),
                    "The lesson was recorded in .orchestration/AGENT.md.".into(),
                    String::new(),
                ),
                Ok(Err(e)) => c.fail(ToolError::Failed(format!(
                    "could not record the lesson: {e}"
                ))),
                Err(e) => c.fail(ToolError::Failed(format!(
                    "could not record the lesson: {e}"
                ))),
            }
        }
        (effect, _) => c.fail(ToolError::Failed(format!(
            "internal: {effect:?} has no matching action"
        ))),
    }
}

/// DONE only when every acceptance criterion is reported in the completion.
fn complete_intent(env: &AgentEnv, task: &TaskHandle, result: &str) -> String {
    let Some(id) = task.governance().selected_intent else {
        return String::new();
    };
    let snapshot = env.gov.intents.snapshot();
    let Some(intent) = snapshot.doc.get(&id) else {
        return String::new();
    };
    if intent.status == IntentStatus::Done {
        return String::new();
    }
    let normalize = |s: &str| {
        s.to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let reported = normalize(result);
    let missing: Vec<&String> = intent
        .acceptance_criteria
        .iter()
        .filter(|c| {
            let key: String = normalize(c).chars().take(40).collect();
            !reported.contains(&key)
        })
        .collect();
    if intent.acceptance_criteria.is_empty() || !missing.is_empty() {
        let list: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        return if intent.acceptance_criteria.is_empty() {
            format!(" Intent {id} has no acceptance criteria, so it stays open until the user marks it DONE.")
        } else {
            format!(
                " Intent {id} stays {} because the result does not report these acceptance criteria: {}.",
                crate::orchestration::intents::status_str(intent.status),
                list.join("; ")
            )
        };
    }
    match env.gov.intents.set_status(&id, IntentStatus::Done) {
        Ok(snap) => {
            env.sink.emit(Event::IntentsChanged {
                intents: snap.view(),
            });
            format!(" Intent {id} is now DONE.")
        }
        Err(e) => format!(" Intent {id} could not be marked DONE: {e}"),
    }
}

async fn write(
    c: Call<'_>,
    w: WriteAction,
    approval: ApprovalRecord,
    contributor: &'static str,
) -> CallResult {
    let env = c.env;
    let lock = env.gov.path_locks.lock_for(&w.path.abs);
    let _guard = lock.lock().await;
    // The last check, right before the bytes hit the disk, after any approval wait.
    let current = match crate::tools::current_bytes(&w.path) {
        Ok(b) => b,
        Err(e) => return c.fail(e),
    };
    let current_hash = current.as_deref().map(crate::fsutil::sha256_hex);
    let governance = c.task.governance();
    let intent_id = governance.selected_intent.clone().unwrap_or_default();
    if current_hash != w.old_hash() {
        return c.deny(
            Denial::new(
                DenialCode::StaleFile,
                format!("{} changed on disk while this change waited for approval. Read it again and redo the change on its current content.", w.path.rel),
            )
            .with_intent(Some(&intent_id))
            .with_path(&w.path.rel),
        );
    }
    if let Some(d) =
        crate::hooks::stale::stale_denial(&governance, &w.path.rel, current_hash.as_deref())
    {
        return c.deny(d);
    }
    if let Some(parent) = w.path.abs.parent() {
        if let Err(e) = std::fs::create_dir_all(parent) {
            return c.fail(ToolError::Failed(format!(
                "cannot create the directory for {}: {e}",
                w.path.rel
            )));
        }
    }
    if let Err(e) = crate::fsutil::write_replace(&w.path.abs, w.new_content.as_bytes()) {
        return c.fail(ToolError::Failed(format!(
            "could not write {}: {e}",
            w.path.rel
        )));
    }
    let old_text = w.old.as_ref().map(|_| w.old_text());
    let classified = crate::mutation::classify(old_text.as_deref(), &w.new_content);
    let changes = crate::diff::analyze(
        old_text.as_deref().unwrap_or(""),
        &w.new_content,
        &w.path.rel,
    );
    let outcome = WriteOutcome {
        task_id: c.task.id.clone(),
        intent_id: intent_id.clone(),
        model_id: env.provider.model_id(),
        tool: c.call.name.clone(),
        call_id: c.call.id.clone(),
        path: w.path.rel.clone(),
        old_text,
        new_text: w.new_content.clone(),
        contributor,
        declared_class: w.mutation_class.clone(),
        computed_class: classified.class.to_string(),
        computed_reason: classified.reason.clone(),
        approval: approval.clone(),
        changes,
    };
    let ledger = TraceHook {
        ledger: &env.gov.ledger,
    };
    if let Err(e) = ledger.after_write(&outcome) {
        // Every accepted change is in the ledger, or it did not happen.
        let undo = match &w.old {
            Some(old) => crate::fsutil::write_atomic(&w.path.abs, old),
            None => std::fs::remove_file(&w.path.abs),
        };
        let undone = if undo.is_ok() {
            "it was undone"
        } else {
            "undoing it failed too"
        };
        return c.deny(
            Denial::new(
                DenialCode::HookFailure,
                format!(
                    "The trace ledger could not record the change to {} ({e}); {undone}.",
                    w.path.rel
                ),
            )
            .with_intent(Some(&intent_id))
            .with_path(&w.path.rel),
        );
    }
    let new_hash = crate::fsutil::sha256_hex(w.new_content.as_bytes());
    c.task.update(|r| {
        r.governance
            .read_hashes
            .insert(w.path.rel.clone(), new_hash.clone());
    });
    match (IntentStatusHook {
        intents: &env.gov.intents,
    })
    .after_change(&intent_id)
    {
        Ok(true) => env.sink.emit(Event::IntentsChanged {
            intents: env.gov.intents.snapshot().view(),
        }),
        Ok(false) => {}
        Err(e) => env.notice(format!(
            "Intent {intent_id} could not be moved to IN_PROGRESS: {e}"
        )),
    }
    env.gov.intent_map_dirty();
    let ranges_text: Vec<String> = outcome
        .changes
        .ranges
        .iter()
        .map(|(s, e)| {
            if s == e {
                s.to_string()
            } else {
                format!("{s}-{e}")
            }
        })
        .collect();
    let lines = w.new_content.lines().count();
    let mut content = format!(
        "Wrote {} ({lines} lines; changed lines: {}). Recorded in the trace ledger under {intent_id} as {}.",
        w.path.rel,
        if ranges_text.is_empty() { "none (lines removed only)".into() } else { ranges_text.join(", ") },
        classified.class
    );
    if classified.class != w.mutation_class {
        content.push_str(&format!(
            " You declared {}, but the change was computed as {} ({}); both are recorded.",
            w.mutation_class, classified.class, classified.reason
        ));
    }
    if !approval.rejected_hunks.is_empty() {
        content.push_str(&format!(
            " The user accepted hunks {:?} and rejected hunks {:?}: the file holds only the accepted changes. Read it before editing it again.",
            approval.accepted_hunks, approval.rejected_hunks
        ));
    }
    if approval.edited {
        content.push_str(" The user edited your change before accepting it. Read the file to see what was written.");
    }
    let summary = format!("wrote {} lines", lines);
    c.succeed(summary, content, String::new())
}

async fn run_command(
    c: Call<'_>,
    cmd: crate::hooks::CommandAction,
    approval: ApprovalRecord,
    cancel: &CancellationToken,
) -> CallResult {
    let env = c.env;
    let root = env.gov.root().to_path_buf();
    let before = {
        let root = root.clone();
        tokio::task::spawn_blocking(move || command::snapshot(&root))
            .await
            .unwrap_or_default()
    };
    let (task_id, call_id) = (c.task.id.clone(), c.call.id.clone());
    let sink = env.sink.clone();
    let run = command::run(&cmd, &env.gov.scrubbed_env, cancel, |chunk| {
        sink.emit(Event::ToolCallOutput {
            task_id: task_id.clone(),
            call_id: call_id.clone(),
            chunk: chunk.to_string(),
        })
    })
    .await;
    if let Some(e) = run.spawn_error {
        return c.fail(ToolError::Failed(e));
    }
    let after = {
        let root = root.clone();
        tokio::task::spawn_blocking(move || command::snapshot(&root))
            .await
            .unwrap_or_default()
    };
    let changed = command::changed_files(&before, &after);
    let governance = c.task.governance();
    let intent_id = governance.selected_intent.clone().unwrap_or_default();
    let snapshot = env.gov.intents.snapshot();
    let (in_scope, out_of_scope): (Vec<String>, Vec<String>) =
        changed.into_iter().partition(|rel| {
            protected_reason(rel).is_none()
                && snapshot.doc.get(&intent_id).is_some_and(|i| i.owns(rel))
        });
    let outcome = CommandOutcome {
        task_id: c.task.id.clone(),
        intent_id: intent_id.clone(),
        model_id: env.provider.model_id(),
        call_id: c.call.id.clone(),
        command: cmd.command.clone(),
        cwd: cmd.cwd.rel.clone(),
        exit_code: run.exit_code,
        timed_out: run.timed_out,
        changed_in_scope: in_scope.clone(),
        changed_out_of_scope: out_of_scope.clone(),
        output_tail: run
            .output
            .chars()
            .rev()
            .take(4000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect(),
        approval,
    };
    if let Err(e) = (TraceHook {
        ledger: &env.gov.ledger,
    })
    .after_command(&outcome)
    {
        env.notice(format!(
            "The trace ledger could not record the files changed by `{}`: {e}",
            cmd.command
        ));
    }
    if !run.cancelled {
        if let Err(e) = (LessonHook { root: &root }).after_command(&outcome) {
            env.notice(format!(
                "Could not record a lesson for the failed command: {e}"
            ));
        }
    }
    if !out_of_scope.is_empty() {
        env.notice(format!(
            "`{}` changed files outside the scope of {intent_id}: {}",
            cmd.command,
            out_of_scope.join(", ")
        ));
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
        command::truncate_for_model(&run.output)
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
    let failed = run.cancelled || run.timed_out || run.exit_code != Some(0);
    let mut c = c;
    c.view.output = ui_output(&run.output);
    let status_kind = if failed {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Succeeded
    };
    c.finish(status_kind, status, content, failed)
}

//! Asking the person (or `--approve` headless) about one planned action, and applying what they
//! decided to it: rejected hunks are left out, an edited text replaces the model's.

use tokio_util::sync::CancellationToken;

use super::orchestrator::Card;
use super::Interaction as _;
use crate::hooks::command_policy::{CommandClass, CommandNeeds};
use crate::hooks::{Action, AskReason, Denial, DenialCode, IntentChange, TaskGovernance};
use crate::orchestration::intents::IntentsSnapshot;
use crate::orchestration::ledger::{now_rfc3339, ApprovalRecord};
use crate::protocol::{
    ApprovalDecision, ApprovalDetail, ApprovalOutcome, ApprovalRequest, Approver, CommandGrants,
    Event, TaskStatus, ToolCallStatus,
};

/// The record of an action no one needed to approve.
pub fn by_policy() -> ApprovalRecord {
    record(&Approver::Policy, Vec::new(), Vec::new(), false)
}

fn record(by: &Approver, accepted: Vec<u32>, rejected: Vec<u32>, edited: bool) -> ApprovalRecord {
    ApprovalRecord {
        by: by.clone(),
        at: now_rfc3339(),
        accepted_hunks: accepted,
        rejected_hunks: rejected,
        edited,
        user_hooks: Vec::new(),
    }
}

/// The card the approvals panel shows for `action`.
fn detail(
    reason: &AskReason,
    action: &Action,
    intents: &IntentsSnapshot,
    card: &Card<'_>,
    confined: bool,
) -> Option<ApprovalDetail> {
    let root = card.env.gov.root();
    Some(match (reason, action) {
        (AskReason::UserHook, _) => {
            let arguments = serde_json::from_str::<serde_json::Value>(&card.call.arguments)
                .and_then(|v| serde_json::to_string_pretty(&v))
                .unwrap_or_else(|_| card.call.arguments.clone());
            ApprovalDetail::ToolCall {
                tool: card.call.name.clone(),
                target: card.view.target.clone(),
                arguments: crate::text::ellipsize(&arguments, 4_000).into_owned(),
            }
        }
        (
            AskReason::Intents,
            Action::Intents(IntentChange::ExpandScope {
                intent_id,
                globs,
                reason,
            }),
        ) => ApprovalDetail::ScopeExpansion {
            intent_id: intent_id.clone(),
            owned_scope: intents
                .doc
                .get(intent_id)
                .map(|i| i.owned_scope.clone())
                .unwrap_or_default(),
            globs: globs.clone(),
            reason: reason.clone(),
            preview: crate::tools::walk::glob_previews(root, globs),
        },
        (AskReason::Intents, Action::Intents(IntentChange::Propose { intent, reason })) => {
            ApprovalDetail::NewIntent {
                intent: intent.clone(),
                reason: reason.clone(),
            }
        }
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
        (AskReason::External, Action::External(e)) => ApprovalDetail::McpCall {
            server: e.server.clone(),
            source: e.source,
            tool: e.tool.clone(),
            description: e.description.clone(),
            arguments: serde_json::to_string_pretty(&e.arguments).unwrap_or_default(),
            annotations: e.annotations.clone(),
            writes_workspace: e.writes_workspace,
            unconfined: e.unconfined,
        },
        (AskReason::Command(class), Action::Command(cmd)) => ApprovalDetail::Command {
            command: crate::redact::Redactor::global()
                .redact(&cmd.command)
                .into_owned(),
            cwd: cmd.cwd.display().to_string(),
            destructive: class.class == CommandClass::Destructive,
            reasons: class.reasons.clone(),
            needs: CommandGrants {
                network: class.needs.network,
                write_git: class.needs.write_git,
            },
            confined,
            background: cmd.background,
        },
        _ => return None,
    })
}

/// Waits for the decision; on approval returns how it was approved (and `action` may change).
/// `hook_reasons` says why the person's own hooks ask, if they do.
pub(super) async fn ask(
    card: &mut Card<'_>,
    intents: &IntentsSnapshot,
    governance: &TaskGovernance,
    reason: AskReason,
    action: &mut Action,
    hook_reasons: Vec<String>,
    cancel: &CancellationToken,
) -> Result<ApprovalRecord, Denial> {
    let confined = card.env.gov.confinement.is_confined();
    let Some(detail) = detail(&reason, action, intents, card, confined) else {
        return Err(Denial::new(
            DenialCode::HookFailure,
            "an approval was requested for an action that cannot be approved",
        ));
    };
    let hunk_count = match &detail {
        ApprovalDetail::Write { hunks, .. } => hunks.len() as u32,
        _ => 0,
    };
    let request = ApprovalRequest {
        approval_id: uuid::Uuid::new_v4().to_string(),
        call_id: card.call.id.clone(),
        intent: governance
            .selected_intent
            .as_deref()
            .and_then(|id| intents.doc.get(id))
            .map(|i| i.view()),
        detail,
        hook_reasons,
    };
    let approval_id = request.approval_id.clone();
    let (env, task) = (card.env, card.task);
    card.view.status = ToolCallStatus::WaitingForApproval;
    card.emit();
    task.set_status(env.sink.as_ref(), TaskStatus::WaitingForApproval);
    let asking = super::attention::Asking { env, task };
    let decision = asking.approve(&task.id, request, cancel).await;
    task.set_status(env.sink.as_ref(), TaskStatus::Running);
    card.view.status = ToolCallStatus::Running;
    let by = env.interaction.approver();
    let (result, outcome) = apply(decision, action, hunk_count, &by, governance, task);
    env.sink.emit(Event::ApprovalResolved {
        task_id: task.id.clone(),
        approval_id,
        outcome,
    });
    result
}

/// The decision applied to the action, and a line saying what was decided.
fn apply(
    decision: ApprovalDecision,
    action: &mut Action,
    hunk_count: u32,
    by: &Approver,
    governance: &TaskGovernance,
    task: &super::TaskHandle,
) -> (Result<ApprovalRecord, Denial>, ApprovalOutcome) {
    match decision {
        ApprovalDecision::Reject { reason } => {
            let reason = reason.trim();
            let message = if reason.is_empty() {
                "The user rejected this action.".to_string()
            } else {
                format!("The user rejected this action: {reason}")
            };
            (
                Err(Denial::new(DenialCode::RejectedByUser, message)
                    .with_intent(governance.selected_intent.as_deref())),
                ApprovalOutcome::Rejected {
                    reason: reason.to_string(),
                },
            )
        }
        // "Always" is for one exact command; an MCP call is approved once, every time.
        ApprovalDecision::AlwaysAllow if matches!(action, Action::External(_)) => (
            Ok(record(by, Vec::new(), Vec::new(), false)),
            ApprovalOutcome::ApprovedThisCallOnly,
        ),
        ApprovalDecision::AlwaysAllow => {
            if let Action::Command(cmd) = action {
                task.always_allow(&cmd.command);
            }
            (
                Ok(record(by, (0..hunk_count).collect(), Vec::new(), false)),
                ApprovalOutcome::ApprovedAlways,
            )
        }
        ApprovalDecision::Approve {
            rejected_hunks,
            edited_content,
            grant,
        } => {
            if let Action::Intents(change) = action {
                return edit_intent_change(change, edited_content, by);
            }
            if let Action::Command(cmd) = action {
                // Only what the person ticked on the card; never more than that.
                let grant = grant.unwrap_or_default();
                cmd.granted = CommandNeeds {
                    network: grant.network,
                    write_git: grant.write_git,
                };
                let outcome = match grant.network || grant.write_git {
                    true => ApprovalOutcome::ApprovedWithGrants { grants: grant },
                    false => ApprovalOutcome::Approved,
                };
                return (Ok(record(by, Vec::new(), Vec::new(), false)), outcome);
            }
            let Action::Write(w) = action else {
                return (
                    Ok(record(by, Vec::new(), Vec::new(), false)),
                    ApprovalOutcome::Approved,
                );
            };
            let rejected: Vec<u32> = rejected_hunks
                .into_iter()
                .filter(|h| *h < hunk_count)
                .collect();
            let accepted: Vec<u32> = (0..hunk_count).filter(|h| !rejected.contains(h)).collect();
            let old = w.old_text();
            let edited = edited_content.is_some();
            let final_text = match edited_content {
                Some(text) => text,
                None => crate::diff::apply_selected(&old, &w.new_content, &rejected),
            };
            if final_text == old && w.old.is_some() {
                return (
                    Err(Denial::new(
                        DenialCode::RejectedByUser,
                        "The user rejected every hunk of this change; nothing was written.",
                    )),
                    ApprovalOutcome::RejectedEveryHunk,
                );
            }
            w.new_content = final_text;
            let outcome = if edited {
                ApprovalOutcome::ApprovedAfterEdit
            } else if rejected.is_empty() {
                ApprovalOutcome::Approved
            } else {
                ApprovalOutcome::ApprovedSomeHunks {
                    accepted: accepted.len() as u32,
                    of: hunk_count,
                }
            };
            (Ok(record(by, accepted, rejected, edited)), outcome)
        }
    }
}

/// An approved intent change, with the globs as the person edited them (one per line).
fn edit_intent_change(
    change: &mut IntentChange,
    edited: Option<String>,
    by: &Approver,
) -> (Result<ApprovalRecord, Denial>, ApprovalOutcome) {
    let Some(text) = edited else {
        return (
            Ok(record(by, Vec::new(), Vec::new(), false)),
            ApprovalOutcome::Approved,
        );
    };
    let globs: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if let Some(bad) = globs
        .iter()
        .find_map(|g| crate::orchestration::intents::compile_glob(g).err())
    {
        return (
            Err(Denial::new(
                DenialCode::RejectedByUser,
                format!("The user's edit of the scope does not compile ({bad}); nothing changed."),
            )),
            ApprovalOutcome::RejectedBadScope,
        );
    }
    match change {
        IntentChange::ExpandScope { globs: g, .. } => *g = globs,
        IntentChange::Propose { intent, .. } => intent.owned_scope = globs,
    }
    (
        Ok(record(by, Vec::new(), Vec::new(), true)),
        ApprovalOutcome::ApprovedAfterScopeEdit,
    )
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

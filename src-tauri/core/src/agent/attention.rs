//! The person is needed: a task waits for their approval or their answer, or stopped until they
//! act (a paused task). Every such wait passes here, and is said in two places: to the
//! interaction (the window tells a person who is elsewhere: a desktop notification, the taskbar
//! entry; headless, nothing) and to the person's own `Notification` hooks (advisory, and only
//! hooks they confirmed).
//!
//! Headless, nobody waits: `--approve` decides approvals as the person said in advance, so they
//! are not announced; a question goes unanswered and a paused run stops for the person, so
//! those run the hooks (awaited, so that they finish before `mandate run` exits).

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{AgentEnv, Interaction, TaskHandle};
use crate::protocol::{ApprovalDecision, ApprovalDetail, ApprovalRequest, Approver};

/// What the person is needed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Waiting {
    Approval,
    Question,
    /// Stopped until the person acts (its budget, or condensing that keeps failing).
    Paused,
}

impl Waiting {
    /// Mandate's name for it (also matched by a Notification hook's matcher).
    pub fn name(self) -> &'static str {
        match self {
            Waiting::Approval => "approval",
            Waiting::Question => "question",
            Waiting::Paused => "paused",
        }
    }

    /// The Claude Code contract's `notification_type` nearest to it.
    pub fn notification_type(self) -> &'static str {
        match self {
            Waiting::Approval => "permission_prompt",
            Waiting::Question => "elicitation_dialog",
            Waiting::Paused => "idle_prompt",
        }
    }
}

/// One wait, as the desktop and the hooks are told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonNeeded {
    pub task_id: String,
    /// The task's title (its first message, shortened).
    pub title: String,
    pub waiting: Waiting,
    /// What waits, in a line: the action to approve, the question, why the task paused.
    pub what: String,
}

/// The longest `what` said (a question or a command can be long; the window shows it whole).
const MAX_WHAT_CHARS: usize = 240;

impl PersonNeeded {
    pub(super) fn new(task: &TaskHandle, waiting: Waiting, what: &str) -> PersonNeeded {
        let what = crate::redact::Redactor::global().redact(what.trim());
        let line = what.split_whitespace().collect::<Vec<_>>().join(" ");
        PersonNeeded {
            task_id: task.id.clone(),
            title: crate::text::ellipsize(&task.summary().title, 80).into_owned(),
            waiting,
            what: crate::text::ellipsize(&line, MAX_WHAT_CHARS).into_owned(),
        }
    }

    /// The sentence a Notification hook reads as `message`.
    pub fn message(&self) -> String {
        match self.waiting {
            Waiting::Approval => format!("Mandate needs your approval: {}", self.what),
            Waiting::Question => format!("Mandate asks: {}", self.what),
            Waiting::Paused => format!("Mandate paused the task: {}", self.what),
        }
    }
}

/// The action an approval card asks about, in a line.
pub fn approval_what(detail: &ApprovalDetail) -> String {
    match detail {
        ApprovalDetail::Write { path, new_file, .. } => match new_file {
            true => format!("create {path}"),
            false => format!("write {path}"),
        },
        ApprovalDetail::Command { command, .. } => format!("run `{command}`"),
        ApprovalDetail::Continue { reason } => reason.clone(),
        ApprovalDetail::ScopeExpansion {
            intent_id, globs, ..
        } => format!("widen {intent_id} to {}", globs.join(", ")),
        ApprovalDetail::NewIntent { intent, .. } => {
            format!("start the intent {} ({})", intent.id, intent.name)
        }
        ApprovalDetail::McpCall { server, tool, .. } => format!("call {tool} on {server}"),
        ApprovalDetail::ToolCall { tool, target, .. } if target.is_empty() => {
            format!("use {tool}")
        }
        ApprovalDetail::ToolCall { tool, target, .. } => format!("use {tool} on {target}"),
        ApprovalDetail::UserHooks { .. } => "run your hooks, new or changed".into(),
    }
}

/// The person is needed for `waiting` on `task`: the interaction and the hooks are told.
pub(super) async fn needed(env: &AgentEnv, task: &TaskHandle, waiting: Waiting, what: &str) {
    let need = PersonNeeded::new(task, waiting, what);
    tracing::info!(task = %need.task_id, waiting = need.waiting.name(), "the person is needed");
    env.interaction.person_needed(&need);
    super::hook_steps::notification(env, task, &need).await;
}

/// The interaction a task waits on: every approval and question goes through it, so each wait
/// is announced once and withdrawn when it ends.
pub(super) struct Asking<'a> {
    pub env: &'a AgentEnv,
    pub task: &'a TaskHandle,
}

#[async_trait]
impl Interaction for Asking<'_> {
    async fn approve(
        &self,
        task_id: &str,
        request: ApprovalRequest,
        cancel: &CancellationToken,
    ) -> ApprovalDecision {
        let waits = self.env.interactive;
        if waits {
            let what = approval_what(&request.detail);
            needed(self.env, self.task, Waiting::Approval, &what).await;
        }
        let decision = self.env.interaction.approve(task_id, request, cancel).await;
        if waits {
            self.env.interaction.person_not_needed(task_id);
        }
        decision
    }

    async fn ask(
        &self,
        task_id: &str,
        call_id: &str,
        question: &str,
        options: &[String],
        cancel: &CancellationToken,
    ) -> Option<String> {
        needed(self.env, self.task, Waiting::Question, question).await;
        let answer = self
            .env
            .interaction
            .ask(task_id, call_id, question, options, cancel)
            .await;
        self.env.interaction.person_not_needed(task_id);
        answer
    }

    fn approver(&self) -> Approver {
        self.env.interaction.approver()
    }

    fn person_needed(&self, need: &PersonNeeded) {
        self.env.interaction.person_needed(need);
    }

    fn person_not_needed(&self, task_id: &str) {
        self.env.interaction.person_not_needed(task_id);
    }
}

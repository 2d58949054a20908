//! The agent: a task's turn loop, one straight path per tool call, and task persistence.
//! The GUI and the headless runner drive the same code; they differ only in their
//! [`EventSink`] (where events go) and [`Interaction`] (who answers approvals and questions).
//!
//! Files, from the bottom up: `governance` (what the tasks of a workspace share), `store` and
//! `task` (a task's record and the named changes to it), `env` (a run's dependency bundle),
//! `approval` and `orchestrator` (one tool call), `attention` (every wait for the person),
//! `turn` (the loop).

mod approval;
pub mod attention;
mod budget;
mod check_steps;
mod code_context;
mod context_steps;
mod env;
mod fetch_url;
mod governance;
mod hook_steps;
mod ledger_check;
mod live;
mod mentions;
mod mode_env;
mod model_turn;
mod orchestrator;
mod store;
mod subtask;
mod task;
mod turn;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use approval::language_of;
pub use attention::{PersonNeeded, Waiting};
pub use check_steps::{LastCheck, ProjectCheck};
pub use context_steps::condense_task;
pub use env::{AgentEnv, ProfileSource, ProfileUnavailable};
pub use governance::Governance;
pub use live::LiveTasks;
pub use mentions::{attach_all as attach_mentions, mentionables, Attached};
pub use mode_env::model_for_task;
pub use orchestrator::{dispatch, CallResult};
pub use store::{StoreError, TaskRecord, TaskStore, TurnMark};
pub use task::{check_selectable, SelectError, TaskHandle};
pub use turn::{run_task, TaskEnd};

use crate::protocol::{ApprovalDecision, ApprovalRequest, Event};

/// Where host events go: the UI channel, JSON lines on stdout, a test's vector.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
}

/// Who decides when the hooks ask: a person in the GUI, or the `--approve` flag headless.
#[async_trait]
pub trait Interaction: Send + Sync {
    /// Waits for a decision; a cancelled task gets a rejection.
    async fn approve(
        &self,
        task_id: &str,
        request: ApprovalRequest,
        cancel: &CancellationToken,
    ) -> ApprovalDecision;

    /// The user's answer, or None when nobody can answer (headless).
    async fn ask(
        &self,
        task_id: &str,
        call_id: &str,
        question: &str,
        options: &[String],
        cancel: &CancellationToken,
    ) -> Option<String>;

    /// Who approves, as recorded in the ledger: a person in the window, or headless.
    fn approver(&self) -> crate::protocol::Approver;

    /// A task waits for the person ([`attention`]): the window tells them if they are
    /// elsewhere. Headless, nobody is there to tell.
    fn person_needed(&self, _need: &PersonNeeded) {}

    /// What the task waited for is over (decided, answered, or the task runs again).
    fn person_not_needed(&self, _task_id: &str) {}
}

#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "context_tests.rs"]
mod context_tests;

#[cfg(test)]
#[path = "mode_tests.rs"]
mod mode_tests;

#[cfg(test)]
#[path = "attention_tests.rs"]
mod attention_tests;

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
pub(crate) mod script_model;

#[cfg(test)]
#[path = "subtask_tests.rs"]
mod subtask_tests;

#[cfg(test)]
#[path = "mode_profile_tests.rs"]
mod mode_profile_tests;

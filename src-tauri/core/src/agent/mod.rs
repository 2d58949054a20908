//! The agent: a task's turn loop, tool dispatch through the hooks, and task persistence.
//! The GUI and the headless runner drive the same code; they differ only in their
//! [`EventSink`] (where events go) and [`Interaction`] (who answers approvals and questions).

mod command;
mod dispatch;
mod governance;
mod store;
mod task;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use dispatch::{dispatch, CallResult};
pub use governance::{Governance, PathLocks};
pub use store::{TaskRecord, TaskStore};
pub use task::{run_task, AgentEnv, TaskEnd, TaskHandle};

use crate::orchestration::intents::Intent;
use crate::protocol::{ApprovalDecision, ApprovalRequest, Event, TraceChange};

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

    /// Who approves, as recorded in the ledger: `user` or `headless`.
    fn approver(&self) -> &'static str;
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The `<intent_context>` block: exactly one intent, curated, with its recent trace history.
pub fn intent_context(intent: &Intent, history: &[TraceChange]) -> String {
    let list = |tag: &str, item: &str, values: &[String]| {
        if values.is_empty() {
            return format!("  <{tag}/>\n");
        }
        let inner: String = values
            .iter()
            .map(|v| format!("    <{item}>{}</{item}>\n", xml_escape(v)))
            .collect();
        format!("  <{tag}>\n{inner}  </{tag}>\n")
    };
    let mut out = String::from("<intent_context>\n");
    out.push_str(&format!("  <id>{}</id>\n", xml_escape(&intent.id)));
    out.push_str(&format!("  <name>{}</name>\n", xml_escape(&intent.name)));
    out.push_str(&format!(
        "  <status>{}</status>\n",
        crate::orchestration::intents::status_str(intent.status)
    ));
    out.push_str(&list("constraints", "constraint", &intent.constraints));
    out.push_str(&list("owned_scope", "path", &intent.owned_scope));
    out.push_str(&list(
        "acceptance_criteria",
        "criterion",
        &intent.acceptance_criteria,
    ));
    if history.is_empty() {
        out.push_str("  <recent_history/>\n");
    } else {
        out.push_str("  <recent_history>\n");
        for change in history.iter().rev().take(10) {
            let ranges: Vec<String> = change
                .ranges
                .iter()
                .map(|r| format!("{}-{}", r.start_line, r.end_line))
                .collect();
            out.push_str(&format!(
                "    <change file=\"{}\" lines=\"{}\" at=\"{}\" class=\"{}\"/>\n",
                xml_escape(&change.path),
                ranges.join(","),
                xml_escape(&change.timestamp),
                xml_escape(&change.mutation_class)
            ));
        }
        out.push_str("  </recent_history>\n");
    }
    out.push_str("</intent_context>");
    out
}

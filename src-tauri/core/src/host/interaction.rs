//! Approvals and questions answered by a person in the window: the task emits a request event
//! and waits on a one-shot channel that the matching `decide_approval` / `answer_question`
//! request completes. A person who is elsewhere is told ([`super::attention`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::agent::{EventSink, Interaction};
use crate::protocol::{ApprovalDecision, ApprovalRequest, Event};

#[derive(Default)]
pub struct Pending {
    approvals: Mutex<HashMap<(String, String), oneshot::Sender<ApprovalDecision>>>,
    questions: Mutex<HashMap<(String, String), oneshot::Sender<String>>>,
}

impl Pending {
    /// Delivers a decision; false when nothing waits for it (decided already, or stopped).
    pub fn decide(&self, task_id: &str, approval_id: &str, decision: ApprovalDecision) -> bool {
        let sender = self
            .approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(task_id.to_string(), approval_id.to_string()));
        sender.is_some_and(|s| s.send(decision).is_ok())
    }

    pub fn answer(&self, task_id: &str, call_id: &str, answer: String) -> bool {
        let sender = self
            .questions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(task_id.to_string(), call_id.to_string()));
        sender.is_some_and(|s| s.send(answer).is_ok())
    }
}

pub struct GuiInteraction {
    pub pending: Arc<Pending>,
    pub sink: Arc<dyn EventSink>,
    /// Tells a person who is elsewhere that a task waits for them.
    pub attention: Arc<super::attention::Attention>,
}

#[async_trait]
impl Interaction for GuiInteraction {
    async fn approve(
        &self,
        task_id: &str,
        request: ApprovalRequest,
        cancel: &CancellationToken,
    ) -> ApprovalDecision {
        let (tx, rx) = oneshot::channel();
        let key = (task_id.to_string(), request.approval_id.clone());
        self.pending
            .approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), tx);
        self.sink.emit(Event::ApprovalRequested {
            task_id: task_id.to_string(),
            request,
        });
        let decision = tokio::select! {
            d = rx => d.ok(),
            _ = cancel.cancelled() => None,
        };
        self.pending
            .approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        decision.unwrap_or(ApprovalDecision::Reject {
            reason: "The task was stopped before anyone decided.".into(),
        })
    }

    async fn ask(
        &self,
        task_id: &str,
        call_id: &str,
        question: &str,
        options: &[String],
        cancel: &CancellationToken,
    ) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        let key = (task_id.to_string(), call_id.to_string());
        self.pending
            .questions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), tx);
        self.sink.emit(Event::QuestionAsked {
            task_id: task_id.to_string(),
            call_id: call_id.to_string(),
            question: question.to_string(),
            options: options.to_vec(),
        });
        let answer = tokio::select! {
            a = rx => a.ok(),
            _ = cancel.cancelled() => None,
        };
        self.pending
            .questions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        answer
    }

    fn approver(&self) -> crate::protocol::Approver {
        crate::protocol::Approver::User
    }

    fn person_needed(&self, need: &crate::agent::PersonNeeded) {
        self.attention.needed(need);
    }

    fn person_not_needed(&self, task_id: &str) {
        self.attention.not_needed(task_id);
    }
}

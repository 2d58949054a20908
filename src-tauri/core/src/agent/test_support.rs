//! What the agent's tests share: a sink that keeps every event, and a person who answers every
//! approval the same way and remembers what they were shown.

use std::sync::Mutex;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{EventSink, Interaction};
use crate::protocol::{ApprovalDecision, ApprovalRequest, Event};

#[derive(Default)]
pub(super) struct Events(pub(super) Mutex<Vec<Event>>);

impl EventSink for Events {
    fn emit(&self, event: Event) {
        self.0.lock().expect("events").push(event);
    }
}

/// A person who answers every approval with `decision` and remembers what they were shown.
pub(super) struct Person {
    pub(super) decision: ApprovalDecision,
    pub(super) shown: Mutex<Vec<ApprovalRequest>>,
}

impl Person {
    /// Says no to everything (the window's person, gone for lunch).
    pub(super) fn away() -> Self {
        Self {
            decision: ApprovalDecision::Reject {
                reason: "nobody is here".into(),
            },
            shown: Mutex::default(),
        }
    }
}

#[async_trait]
impl Interaction for Person {
    async fn approve(
        &self,
        _: &str,
        request: ApprovalRequest,
        _: &CancellationToken,
    ) -> ApprovalDecision {
        self.shown.lock().expect("shown").push(request);
        self.decision.clone()
    }
    async fn ask(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &[String],
        _: &CancellationToken,
    ) -> Option<String> {
        None
    }
    fn approver(&self) -> crate::protocol::Approver {
        crate::protocol::Approver::User
    }
}

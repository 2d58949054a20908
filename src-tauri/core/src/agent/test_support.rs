//! What the tests of a tool call share (the agent's, and those of tools from elsewhere, such as
//! MCP servers): a model that is never asked, a sink that keeps every event, and a person who
//! answers every approval the same way and remembers what they were shown.

use std::sync::Mutex;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{EventSink, Interaction};
use crate::llm::{LlmError, ModelRequest, ModelStream, Provider};
use crate::protocol::{ApprovalDecision, ApprovalRequest, Event};

/// A provider for tests that dispatch tool calls themselves: it never answers.
pub(crate) struct NoModel;

#[async_trait]
impl Provider for NoModel {
    fn model_id(&self) -> String {
        "test/none".into()
    }
    async fn stream(&self, _: &ModelRequest) -> Result<ModelStream, LlmError> {
        Err(LlmError::Cancelled)
    }
    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        Ok(Vec::new())
    }
}

#[derive(Default)]
pub(crate) struct Events(pub(crate) Mutex<Vec<Event>>);

impl EventSink for Events {
    fn emit(&self, event: Event) {
        self.0.lock().expect("events").push(event);
    }
}

/// A person who answers every approval with `decision` and remembers what they were shown.
pub(crate) struct Person {
    pub(crate) decision: ApprovalDecision,
    pub(crate) shown: Mutex<Vec<ApprovalRequest>>,
}

impl Person {
    /// Says no to everything (the window's person, gone for lunch).
    pub(crate) fn away() -> Self {
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

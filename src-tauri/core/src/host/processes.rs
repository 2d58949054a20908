//! The background processes in the window: a task's list, the person's Stop, and their end
//! with their task, their workspace and Mandate.

use std::sync::Arc;
use std::time::Duration;

use super::{err, Host};
use crate::protocol::{IpcError, IpcErrorCode, ProcessStopper, Reply, Request};

/// How long Mandate's exit waits for its processes to end and their last changes to be looked at.
const AT_EXIT: Duration = Duration::from_secs(10);

impl Host {
    pub(super) async fn handle_processes(&self, request: Request) -> Result<Reply, IpcError> {
        let gov = self.governance();
        match request {
            Request::ListProcesses { task_id } => Ok(Reply::Processes {
                processes: gov.processes.list(&task_id),
            }),
            Request::StopProcess { process_id } => {
                let process = gov.processes.find(&process_id).ok_or_else(|| {
                    err(
                        IpcErrorCode::NotFound,
                        format!("there is no background process `{process_id}`"),
                    )
                })?;
                gov.processes.stop(&process, ProcessStopper::Person).await;
                Ok(Reply::Processes {
                    processes: gov.processes.list(&process.task_id),
                })
            }
            _ => Err(err(
                IpcErrorCode::Internal,
                "this request is not a request about processes",
            )),
        }
    }

    /// A deleted task's processes end, and are forgotten.
    pub(super) fn end_processes_of(&self, task_id: &str) {
        let (gov, id) = (self.governance(), task_id.to_string());
        self.runtime.spawn(async move {
            gov.processes.end_task(&id, ProcessStopper::Task).await;
            gov.processes.forget_task(&id);
        });
    }

    /// Mandate is exiting: every background process ends and what it changed last is looked
    /// at (bounded; whatever is left dies with Mandate's process anyway).
    pub fn end_processes(self: &Arc<Self>) {
        let (gov, runtime) = (self.governance(), self.runtime.clone());
        // From a thread of its own: the caller may be inside a runtime, where blocking on
        // another is refused.
        let ending = std::thread::spawn(move || {
            runtime.block_on(async move {
                tokio::time::timeout(AT_EXIT, gov.processes.end_all(ProcessStopper::Mandate)).await
            })
        });
        if !matches!(ending.join(), Ok(Ok(()))) {
            tracing::warn!("background processes did not all end in time at exit");
        }
    }
}

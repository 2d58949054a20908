//! `stop_process`: ends a background process and everything it started, and says how it
//! ended, its last output and what it changed. A read as the gate sees it: ending a process
//! only takes away, so no mode or intent state may keep the model from stopping its own.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::read_process_output::{output_for_model, status_words};
use super::{AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::{ProcessStopper, ToolKind};

/// Stop a background process (SIGTERM to it and everything it started, SIGKILL a few seconds
/// later if they have not ended). Returns how it ended, its last output, and what it changed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The process id execute_command gave (`p1`).
    pub process_id: String,
}

pub struct StopProcess;

#[async_trait]
impl AgentTool for StopProcess {
    type Args = Args;
    type Work = String;
    const NAME: &'static str = "stop_process";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "Stop a background process and everything it started (process_id).";

    fn plan(&self, args: Args, _: &ToolCx<'_>) -> Result<Plan<String>, ToolError> {
        let id = args.process_id.trim().to_string();
        if id.is_empty() {
            return Err(ToolError::InvalidArguments("process_id is empty".into()));
        }
        Ok(Plan {
            target: id.clone(),
            action: Action::Meta,
            work: id,
        })
    }

    async fn run(&self, _: Action, id: String, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let table = &cx.gov.processes;
        let process = table
            .get(&cx.task.id, &id)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let already = process.has_ended();
        table.stop(&process, ProcessStopper::Model).await;
        let reading = process.read(None);
        let status = status_words(&reading.view.status);
        let content = match already {
            true => format!("Process {id} had already ended: it {status}."),
            false => format!("Process {id} (`{}`) {status}.", reading.view.command),
        };
        Ok(ToolOutput {
            content: format!("{content}\n{}", output_for_model(&reading)),
            summary: format!("{id} {status}"),
            display: reading.since.text,
            ..ToolOutput::default()
        })
    }
}

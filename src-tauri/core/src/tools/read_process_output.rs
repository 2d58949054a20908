//! `read_process_output`: what a background process printed since the model last read it, how
//! it stands, and what Mandate found of the files it changed.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::processes::Reading;
use crate::protocol::{ProcessStatus, ProcessStopper, ToolKind};

/// At most this long a read waits for new output.
const MAX_WAIT: u64 = 30;

/// Read what a background process (started with execute_command and background: true) printed
/// since your last read of it, and whether it still runs or how it ended. It also says which
/// files it changed (recorded under your intent) or changed out of scope (put back).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The process id execute_command gave (`p1`).
    pub process_id: String,
    /// Read from this byte offset of its output instead (0: from the start of what is kept).
    pub since: Option<u64>,
    /// Wait up to this many seconds (at most 30) for new output first (default 0).
    pub wait_seconds: Option<u64>,
}

pub struct ReadProcessOutput;

#[async_trait]
impl AgentTool for ReadProcessOutput {
    type Args = Args;
    type Work = Args;
    const NAME: &'static str = "read_process_output";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "Read what a background process printed since your last read (process_id; since and wait_seconds optional), and how it stands.";

    fn plan(&self, args: Args, _: &ToolCx<'_>) -> Result<Plan<Args>, ToolError> {
        if args.process_id.trim().is_empty() {
            return Err(ToolError::InvalidArguments("process_id is empty".into()));
        }
        Ok(Plan {
            target: args.process_id.trim().to_string(),
            action: Action::Meta,
            work: args,
        })
    }

    async fn run(&self, _: Action, args: Args, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let table = &cx.gov.processes;
        let process = table
            .get(&cx.task.id, &args.process_id)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let wait = Duration::from_secs(args.wait_seconds.unwrap_or(0).min(MAX_WAIT));
        let from = args.since.unwrap_or_else(|| process.read_at());
        tokio::select! {
            _ = process.wait_for_output(from, wait) => {}
            _ = cx.cancel.cancelled() => {}
        }
        table.look_now(cx.gov, &process).await;
        let reading = process.read(args.since);
        let status = status_words(&reading.view.status);
        Ok(ToolOutput {
            content: format!(
                "Process {} (`{}`) {status}.\n{}",
                process.id,
                reading.view.command,
                output_for_model(&reading)
            ),
            summary: format!("{} {status}", process.id),
            display: reading.since.text,
            ..ToolOutput::default()
        })
    }
}

/// How it stands, after "it": "is running", "exited with code 1", "was stopped by you".
pub(super) fn status_words(status: &ProcessStatus) -> String {
    let by = |by: &ProcessStopper| match by {
        ProcessStopper::Person => "by the user",
        ProcessStopper::Model => "by you",
        ProcessStopper::Task => "because its task ended",
        ProcessStopper::Mandate => "because Mandate closed",
        ProcessStopper::Timeout => "at the end of its time limit",
        ProcessStopper::Governance => {
            "because Mandate could not hold it still to look at what it changed"
        }
    };
    match status {
        ProcessStatus::Running => "is running".into(),
        ProcessStatus::Stopping { by: who } => format!("is being stopped {}", by(who)),
        ProcessStatus::Exited { code: Some(c) } => format!("exited with code {c}"),
        ProcessStatus::Exited { code: None } => "was ended by a signal".into(),
        ProcessStatus::Stopped { by: who } => format!("was stopped {}", by(who)),
    }
}

/// Its output since the last read (start and end when long) and the notes on its changes.
pub(super) fn output_for_model(reading: &Reading) -> String {
    let since = &reading.since;
    let mut text = String::new();
    if since.missed > 0 {
        text.push_str(&format!(
            "[{} bytes of output before this were dropped: only the last megabyte is kept]\n",
            since.missed
        ));
    }
    if since.text.is_empty() {
        text.push_str("No new output.");
    } else {
        text.push_str("Output:\n");
        text.push_str(&crate::text::head_and_tail(&since.text, 2_000, 10_000));
    }
    text.push_str(&format!("\n(Output read up to byte {}.)", since.next));
    for note in &reading.notes {
        text.push('\n');
        text.push_str(note);
    }
    text
}

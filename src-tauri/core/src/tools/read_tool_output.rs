//! `read_tool_output`: the whole output of an earlier call whose result was cut to fit the
//! model's context window (kept with the task), by line range.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;

/// At most this many lines come back at once.
const MAX_LINES: usize = 400;

/// Read more of an earlier tool call's output that was cut to fit the context window: the
/// whole output is kept with the task. Give the call id the cut result named, and a line range.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The id of the call whose output was cut.
    pub call_id: String,
    /// First line to read (1-based).
    pub start_line: Option<u64>,
    /// Last line to read (1-based, inclusive).
    pub end_line: Option<u64>,
}

pub struct ReadToolOutput;

pub struct Work {
    call_id: String,
    start: usize,
    end: Option<usize>,
}

#[async_trait]
impl AgentTool for ReadToolOutput {
    type Args = Args;
    type Work = Work;
    const NAME: &'static str = "read_tool_output";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "Read lines of an earlier tool call's output that was cut to fit the context window (the whole output is kept with the task).";

    fn plan(&self, args: Args, _: &ToolCx<'_>) -> Result<Plan<Work>, ToolError> {
        let call_id = args.call_id.trim().to_string();
        if call_id.is_empty() {
            return Err(ToolError::InvalidArguments("call_id is empty".into()));
        }
        let start = match args.start_line {
            Some(0) => {
                return Err(ToolError::InvalidArguments(
                    "start_line is 1-based; 0 is not a line".into(),
                ))
            }
            Some(n) => n.min(usize::MAX as u64) as usize,
            None => 1,
        };
        let end = args.end_line.map(|n| n.min(usize::MAX as u64) as usize);
        if end.is_some_and(|e| e < start) {
            return Err(ToolError::InvalidArguments(
                "end_line is before start_line".into(),
            ));
        }
        Ok(Plan {
            target: call_id.clone(),
            action: Action::Meta,
            work: Work {
                call_id,
                start,
                end,
            },
        })
    }

    async fn run(&self, _: Action, work: Work, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let store = cx.task.store();
        let task_id = cx.task.id.clone();
        let call_id = work.call_id.clone();
        let text = blocking("read_tool_output", move || {
            store.load_output(&task_id, &call_id).map_err(|e| {
                ToolError::Failed(format!(
                    "no kept output for call `{call_id}` ({e}); only outputs that were cut to fit the context window are kept"
                ))
            })
        })
        .await?;
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len();
        if work.start > total.max(1) {
            return Err(ToolError::InvalidArguments(format!(
                "start_line {} is past the end: the output has {total} lines",
                work.start
            )));
        }
        let asked_end = work.end.unwrap_or(total).min(total);
        let end = asked_end.min(work.start + MAX_LINES - 1);
        let mut out = String::new();
        for (n, line) in lines.iter().enumerate().take(end).skip(work.start - 1) {
            out.push_str(&format!("{} | {line}\n", n + 1));
        }
        if end < asked_end {
            out.push_str(&format!(
                "[lines {}–{end} of {total}; read on with start_line {}]\n",
                work.start,
                end + 1
            ));
        }
        Ok(ToolOutput::text(
            format!("read lines {}–{end} of {total}", work.start),
            out,
        ))
    }
}

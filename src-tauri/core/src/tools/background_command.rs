//! `execute_command` with `background: true`: the command starts in the sandbox any command gets
//! (the same gate, approval and grants came before) and is handed to the workspace's process
//! table (`crate::processes`); the call returns with its id and what it printed in its first
//! seconds, or how it ended if it ended then.

use std::time::Duration;

use super::execute_command::Ground;
use super::read_process_output::{output_for_model, status_words};
use super::{keep_owned_files, RunCx, ToolError, ToolOutput};
use crate::hooks::CommandAction;
use crate::processes::{Adopted, Record, Rules};
use crate::protocol::ProcessStatus;
use crate::redact::Redactor;
use crate::sandbox::{kept_names, start_background};

/// How long the call waits for the first output (or an early end) before it returns.
const FIRST_LOOK: Duration = Duration::from_secs(2);

pub(super) async fn start(cmd: CommandAction, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
    let table = &cx.gov.processes;
    table
        .check_room(&cx.task.id)
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    let ground = Ground::of(cx)?;
    let kept = keep_owned_files(cx.gov, ground.intent.clone(), &ground.owned_scope).await?;
    let context = ground.context(cx, &cmd);
    let named = kept_names(&context);
    let started = start_background(&cmd, &context)
        .await
        .map_err(|e| ToolError::Failed(format!("the command did not start: {e}")))?;
    let command = Redactor::global().redact(&cmd.command).into_owned();
    let rules = Rules {
        owns: ground.owns.clone(),
        ignore: ground.ignore.clone(),
        build_outputs: ground
            .policy
            .confinement()
            .build_output_names()
            .into_iter()
            .map(str::to_string)
            .collect(),
        write_git: cmd.granted.write_git,
        named,
        intent: ground.intent.clone(),
        owned_scope: ground.owned_scope.clone(),
    };
    let record = Record {
        task_id: cx.task.id.clone(),
        intent_id: ground.intent_id.clone(),
        model_id: cx.model_id.to_string(),
        call_id: cx.call_id.to_string(),
        approval: cx.approval.clone(),
        extra: cx.trace_extra(),
        process_id: String::new(),
        command: command.clone(),
        cwd: cmd.cwd.rel.clone(),
        network: cmd.granted.network,
    };
    let about = Adopted {
        task_id: cx.task.id.clone(),
        command: command.clone(),
        cwd: cmd.cwd.rel.clone(),
        timeout: cmd.timeout,
        rules,
        record,
        kept,
    };
    let process = table.adopt(cx.gov, cx.sink.clone(), started, about);
    tokio::select! {
        _ = process.wait_ended(FIRST_LOOK) => {}
        _ = cx.cancel.cancelled() => {}
    }
    let reading = process.read(None);
    let id = &process.id;
    let status = reading.view.status;
    let output = output_for_model(&reading);
    let (summary, content, failed) = match status {
        ProcessStatus::Running | ProcessStatus::Stopping { .. } => (
            format!("running in the background as {id}"),
            format!(
                "Started in the background as process {id} (`{command}`), confined as any command. It runs until you stop it (stop_process), its task ends, or Mandate closes (at most {} s). Read what it prints with read_process_output (process_id \"{id}\"); the changes it makes are found and governed as a command's are.\n{output}",
                cmd.timeout.as_secs()
            ),
            false,
        ),
        ended => (
            format!("ended at once: it {}", status_words(&ended)),
            format!(
                "Process {id} (`{command}`) was started in the background but ended at once: it {}.\n{output}",
                status_words(&ended)
            ),
            ended != ProcessStatus::Exited { code: Some(0) },
        ),
    };
    Ok(ToolOutput {
        content,
        summary,
        display: reading.since.text,
        failed,
        ..ToolOutput::default()
    })
}

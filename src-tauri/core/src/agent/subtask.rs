//! Subtasks: a task hands part of its work to a child task (`new_task`) and waits for it. The
//! child has its own conversation and mode, works under the parent's intent or a narrower one,
//! and within every intent above it (checked on each write: see `TaskGovernance::within`).
//! Its `attempt_completion` result answers the parent's call; a child that fails, is stopped or
//! pauses at its budget answers it with an error that says so. Stopping the parent stops the
//! child. Children in read-only modes started in the same answer run side by side.
//!
//! In the window a child may wait for the person (it answered without a tool): the parent keeps
//! waiting until the child completes, fails or is stopped, whichever run of it that is.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{dispatch, AgentEnv, CallResult, TaskEnd, TaskHandle};
use crate::llm::ToolCall;
use crate::protocol::{TaskStatus, UiMessage};
use crate::tools::SubtaskSpec;

/// How deep subtasks may nest (a task, its child, the child's child...).
pub const MAX_DEPTH: usize = 4;

/// How many read-only subtasks run at once (more wait their turn, in order).
const SIDE_BY_SIDE: usize = 4;

/// `first` (a `new_task` call's result, with its subtask) and the `new_task` calls right after
/// it in the same answer (`rest`, dispatched here): their children run, side by side when all
/// are read-only, one after the other otherwise. Returns one result per call, in order.
pub(super) async fn delegate(
    env: &Arc<AgentEnv>,
    task: &TaskHandle,
    calls: &[ToolCall],
    first: CallResult,
    cancel: &CancellationToken,
) -> Vec<CallResult> {
    let mut results = vec![first];
    for call in calls.iter().skip(1) {
        if call.name != "new_task" || cancel.is_cancelled() {
            break;
        }
        results.push(dispatch(env, task, call, cancel).await);
    }
    let specs: Vec<(usize, SubtaskSpec)> = results
        .iter_mut()
        .enumerate()
        .filter_map(|(n, r)| r.subtask.take().map(|s| (n, s)))
        .collect();
    let side_by_side = specs.len() > 1 && specs.iter().all(|(_, s)| s.read_only());
    task.set_status(env.sink.as_ref(), TaskStatus::WaitingForSubtask);
    let answers: Vec<(usize, CallResult)> = if side_by_side {
        let runs = specs.into_iter().map(|(n, spec)| async move {
            (n, run_child(env, task, &calls[n], spec, cancel).await)
        });
        futures_util::stream::iter(runs)
            .buffered(SIDE_BY_SIDE)
            .collect()
            .await
    } else {
        let mut answers = Vec::new();
        for (n, spec) in specs {
            let answer = match cancel.is_cancelled() {
                true => error("Not run: the task was stopped before this subtask started."),
                false => run_child(env, task, &calls[n], spec, cancel).await,
            };
            answers.push((n, answer));
        }
        answers
    };
    for (n, answer) in answers {
        results[n] = answer;
    }
    task.set_status(env.sink.as_ref(), TaskStatus::Running);
    results
}

fn error(content: impl Into<String>) -> CallResult {
    CallResult {
        content: content.into(),
        is_error: true,
        completed: None,
        subtask: None,
    }
}

/// How many tasks stand above `task`, itself included.
fn depth(env: &AgentEnv, task: &TaskHandle) -> usize {
    let mut depth = 1;
    let mut parent = task.summary().parent_id;
    while let Some(id) = parent {
        depth += 1;
        parent = env.tasks.get(&id).and_then(|t| t.summary().parent_id);
        if depth > MAX_DEPTH + 1 {
            break;
        }
    }
    depth
}

/// Starts one child, waits for its end, and says it to the parent's model and transcript.
async fn run_child(
    env: &Arc<AgentEnv>,
    parent: &TaskHandle,
    call: &ToolCall,
    spec: SubtaskSpec,
    cancel: &CancellationToken,
) -> CallResult {
    if depth(env, parent) >= MAX_DEPTH {
        return error(format!(
            "Not started: subtasks nest at most {MAX_DEPTH} deep, and this task is already that deep. Do the work here, or complete and say what is left."
        ));
    }
    let sink = env.sink.as_ref();
    let child = TaskHandle::create(
        env.store.clone(),
        &env.gov.root().display().to_string(),
        &spec.message,
        &env.provider.model_id(),
    );
    let intent = spec
        .intent_id
        .clone()
        .or_else(|| parent.governance().selected_intent);
    child.set_mode(&spec.mode);
    // Its runs go where the parent's do, whoever resumes it (the window, after a restart).
    child.set_profile(parent.summary().profile);
    child.set_parent(parent, &call.id, intent.clone());
    if !spec.todos.is_empty() {
        child.set_todos(spec.todos.clone(), false);
    }
    child.link_cancel(Some(cancel));
    env.tasks.insert(child.clone());
    child.checkpoint(sink).await;
    child.emit_summary(sink);
    let card = |status: TaskStatus, result: Option<String>| UiMessage::Subtask {
        id: format!("subtask-{}", child.id),
        task_id: child.id.clone(),
        title: child.summary().title,
        mode: spec.mode.name.clone(),
        status,
        result_safe_html: result.map(|r| crate::markdown::render(&r)),
    };
    parent.post_replacing(sink, card(TaskStatus::Running, None));

    child.brief(format!(
        "[You are a subtask of the task “{}”{}. Work only on what this message asks. When it is done, call attempt_completion: its result is all the parent task receives, so say there what you did and found.]",
        parent.summary().title,
        match &intent {
            Some(id) => format!(", under intent {id}"),
            None => String::new(),
        }
    ));
    // A mode on a profile of its own (Settings) runs the child there.
    let child_env = super::mode_env::on_mode_profile(env.clone(), &child).await;
    let mut ended = child.watch_end();
    spawn_run(child_env, child.clone(), spec.message.clone());
    let end = wait_for(env, &child, &mut ended, cancel).await;
    child.link_cancel(None);

    let (status, content, is_error, shown) = match &end {
        TaskEnd::Completed(result) => (
            TaskStatus::Completed,
            format!(
                "The subtask {} ({} mode) completed. Its result:\n{result}",
                child.id, spec.mode.name
            ),
            false,
            result.clone(),
        ),
        TaskEnd::Failed(why) => (
            TaskStatus::Failed,
            format!(
                "The subtask {} failed: {why}\nDecide whether to retry it differently, do the work another way, or report it.",
                child.id
            ),
            true,
            format!("Failed: {why}"),
        ),
        TaskEnd::Paused(why) => (
            TaskStatus::Paused,
            format!("The subtask {} stopped at its budget: {why}", child.id),
            true,
            format!("Paused at its budget: {why}"),
        ),
        _ => (
            TaskStatus::Cancelled,
            format!(
                "The subtask {} was stopped before it completed (by the person, or because this task was stopped). Do not assume its work was done; check the files it may have changed.",
                child.id
            ),
            true,
            "Stopped before it completed.".to_string(),
        ),
    };
    parent.post_replacing(sink, card(status, Some(shown)));
    CallResult {
        content,
        is_error,
        completed: None,
        subtask: None,
    }
}

/// What the subtasks a task was waiting for when Mandate stopped answer its `new_task` calls:
/// a completed one its result, any other that it did not finish (by call id).
pub(super) fn after_restart(
    env: &AgentEnv,
    task: &TaskHandle,
) -> std::collections::HashMap<String, (String, bool)> {
    let mut answers = std::collections::HashMap::new();
    let waiting = matches!(
        task.record().conversation.last(),
        Some(crate::llm::ChatMessage::Assistant { tool_calls, .. })
            if tool_calls.iter().any(|c| c.name == "new_task")
    );
    if !waiting {
        return answers;
    }
    for summary in env.store.list() {
        if summary.parent_id.as_deref() != Some(task.id.as_str()) {
            continue;
        }
        let Ok(child) = env.store.load(&summary.id) else {
            continue;
        };
        let Some(call_id) = child.parent_call_id.clone() else {
            continue;
        };
        let answer = match (summary.status, completion_of(&child.conversation)) {
            (TaskStatus::Completed, Some(result)) => (
                format!("The subtask {} completed. Its result:\n{result}", summary.id),
                false,
            ),
            _ => (
                format!(
                    "The subtask {} did not finish: Mandate stopped while it ran. It is in the task list as it was left; start a new subtask if the work is still needed, and check the files it may have changed.",
                    summary.id
                ),
                true,
            ),
        };
        answers.insert(call_id, answer);
    }
    answers
}

/// The result of a task's last `attempt_completion` call.
fn completion_of(conversation: &[crate::llm::ChatMessage]) -> Option<String> {
    conversation.iter().rev().find_map(|m| match m {
        crate::llm::ChatMessage::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .find(|c| c.name == "attempt_completion")
            .and_then(|c| serde_json::from_str::<serde_json::Value>(&c.arguments).ok())
            .and_then(|v| v["result"].as_str().map(str::to_string)),
        _ => None,
    })
}

/// Starts a run of `task` on its own (outside the parent's future, which waits on its end).
fn spawn_run(env: Arc<AgentEnv>, task: Arc<TaskHandle>, text: String) {
    let run: futures_util::future::BoxFuture<'static, TaskEnd> =
        Box::pin(super::run_task(env, task, Some(text)));
    tokio::spawn(run);
}

/// The child's end that answers the parent: completed, failed or stopped; in an unattended run,
/// also paused or idle (no one could go on with it). Stopping the parent stops the child.
async fn wait_for(
    env: &AgentEnv,
    child: &Arc<TaskHandle>,
    ended: &mut tokio::sync::watch::Receiver<Option<TaskEnd>>,
    cancel: &CancellationToken,
) -> TaskEnd {
    let answers = |end: &TaskEnd| match end {
        TaskEnd::Completed(_) | TaskEnd::Failed(_) | TaskEnd::Cancelled => true,
        TaskEnd::Paused(_) | TaskEnd::Idle => !env.interactive,
        TaskEnd::AlreadyRunning => false,
    };
    loop {
        tokio::select! {
            changed = ended.changed() => {
                if changed.is_err() {
                    return TaskEnd::Failed("the subtask's run was lost".into());
                }
                let end = ended.borrow_and_update().clone();
                if let Some(end) = end.filter(|e| answers(e)) {
                    return end;
                }
            }
            _ = cancel.cancelled() => {
                child.cancel();
                if child.is_running() {
                    // Its run ends at the next step (its token is a child of ours).
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), ended.changed()).await;
                } else {
                    // Waiting for the person: it is stopped here.
                    child.set_outcome(TaskStatus::Cancelled, None);
                    child.checkpoint(env.sink.as_ref()).await;
                    child.emit_summary(env.sink.as_ref());
                }
                return TaskEnd::Cancelled;
            }
        }
    }
}

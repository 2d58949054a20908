//! A task's turn loop: ask the model, stream its answer, run its tool calls one at a time
//! through the orchestrator, feed the results back, until it completes, fails, is stopped, or (in
//! the GUI) answers without a tool and waits for the user.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::mode_env::{env_for_mode, on_mode_profile};
use super::{dispatch, AgentEnv, TaskHandle};
use crate::llm::ChatMessage;
use crate::protocol::{
    ApprovalDecision, ApprovalDetail, ApprovalRequest, Event, NoticeLevel, TaskStatus, UiMessage,
};

/// How a run of the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEnd {
    Completed(String),
    /// Waiting for the user's next message.
    Idle,
    Failed(String),
    Cancelled,
    AlreadyRunning,
    /// At its budget: raising it and retrying goes on.
    Paused(String),
}

/// Runs the task until it needs the user or ends. `user_text` is a new message to add first.
pub async fn run_task(
    env: Arc<AgentEnv>,
    task: Arc<TaskHandle>,
    user_text: Option<String>,
) -> TaskEnd {
    use tracing::Instrument;
    let env = env_for_mode(env, &task);
    let span = tracing::info_span!("task", id = %task.id, model = %env.provider.model_id());
    let end = run_task_inner(env, task, user_text)
        .instrument(span.clone())
        .await;
    span.in_scope(|| tracing::info!(end = ?end_kind(&end), "task run ended"));
    end
}

fn end_kind(end: &TaskEnd) -> &'static str {
    match end {
        TaskEnd::Completed(_) => "completed",
        TaskEnd::Idle => "idle",
        TaskEnd::Failed(_) => "failed",
        TaskEnd::Cancelled => "cancelled",
        TaskEnd::AlreadyRunning => "already running",
        TaskEnd::Paused(_) => "paused at its budget",
    }
}

async fn run_task_inner(
    env: Arc<AgentEnv>,
    task: Arc<TaskHandle>,
    user_text: Option<String>,
) -> TaskEnd {
    let Some(cancel) = task.begin_run() else {
        return TaskEnd::AlreadyRunning;
    };
    super::check_steps::at_run_start(&env, &task, &cancel);
    let end = match open_run(&env, &task, user_text, &cancel).await {
        Some(end) => end,
        None => turn_loop(&env, &task, &cancel).await,
    };

    // A task that ends takes its background processes with it; one waiting for the person
    // (its turn handed back, paused at its budget) keeps them.
    if matches!(
        end,
        TaskEnd::Completed(_) | TaskEnd::Failed(_) | TaskEnd::Cancelled
    ) {
        let by = crate::protocol::ProcessStopper::Task;
        env.gov.processes.end_task(&task.id, by).await;
    }
    let (status, error) = match &end {
        TaskEnd::Completed(_) => (TaskStatus::Completed, None),
        TaskEnd::Idle | TaskEnd::AlreadyRunning => (TaskStatus::Idle, None),
        TaskEnd::Failed(m) => (TaskStatus::Failed, Some(m.clone())),
        TaskEnd::Cancelled => (TaskStatus::Cancelled, None),
        TaskEnd::Paused(m) => (TaskStatus::Paused, Some(m.clone())),
    };
    task.set_outcome(status, error);
    task.checkpoint(env.sink.as_ref()).await;
    task.emit_summary(env.sink.as_ref());
    if let TaskEnd::Paused(why) = &end {
        super::attention::needed(&env, &task, super::Waiting::Paused, why).await;
    }
    task.end_run();
    task.publish_end(&end);
    let gov = env.gov.clone();
    match tokio::task::spawn_blocking(move || gov.flush_intent_map()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => env.notice(format!(
            "Could not update .orchestration/intent_map.md: {e}"
        )),
        Err(e) => env.notice(format!(
            "Could not update .orchestration/intent_map.md: {e}"
        )),
    }
    end
}

/// The start of a run: the task marked running, what is broken said, the person's message
/// added (after their SessionStart and UserPromptSubmit hooks). `Some` when the run ends here
/// (a hook refused the message).
async fn open_run(
    env: &AgentEnv,
    task: &TaskHandle,
    user_text: Option<String>,
    cancel: &CancellationToken,
) -> Option<TaskEnd> {
    let first_run = task.record().conversation.is_empty();
    // Whatever it waited for (a pause) is over: it runs again.
    env.interaction.person_not_needed(&task.id);
    task.mark_running(env.provider.model_id());
    task.emit_summary(env.sink.as_ref());
    say_what_is_broken(env);
    let confinement = &env.gov.confinement;
    if !confinement.is_confined() && task.first_unconfined_notice() {
        env.sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: format!(
                "Commands are not confined on this system ({}): every command waits for your approval.",
                confinement.gaps.first().map(String::as_str).unwrap_or("no Landlock")
            ),
        });
    }
    super::ledger_check::check_at_start(env, task, cancel).await;
    super::hook_steps::say_state(env).await;
    let session = match first_run {
        true => super::hook_steps::session_started(env, task, cancel).await,
        false => None,
    };
    if let Some(text) = user_text {
        match super::hook_steps::prompt_submitted(env, task, &text, cancel).await {
            Ok(context) => {
                // A subtask's first message is its parent model's, not the person's.
                let by_person = !(first_run && task.parent_task().is_some());
                let mentioned = match super::mentions::checked(env, &text, by_person).await {
                    Ok(mentioned) => mentioned,
                    Err(why) => {
                        add_error(env, task, why.0.clone());
                        return Some(match env.interactive {
                            true => TaskEnd::Idle,
                            false => TaskEnd::Failed(why.0),
                        });
                    }
                };
                // `/NAME` of the person's commands: the message stays as typed, the command's
                // text goes with it to the model.
                let mut ignored = Vec::new();
                let commands = crate::modes::commands::load_commands(
                    env.gov.root(),
                    env.gov.config_dir(),
                    &mut ignored,
                );
                let expanded = match crate::modes::commands::expand_message(&text, &commands) {
                    (expanded, Some(_)) => Some(expanded),
                    (_, None) => None,
                };
                let map = super::code_context::repo_map(env, task, &text).await;
                let context = [
                    expanded,
                    mentioned,
                    task.take_briefing(),
                    session,
                    context,
                    map,
                ]
                .into_iter()
                .flatten()
                .reduce(|a, b| format!("{a}\n{b}"));
                task.begin_turn(env.sink.as_ref(), text, context);
            }
            Err(why) => {
                add_error(env, task, why.clone());
                return Some(match env.interactive {
                    true => TaskEnd::Idle,
                    false => TaskEnd::Failed(why),
                });
            }
        }
    }
    let subtasks = super::subtask::after_restart(env, task);
    task.repair_interrupted_calls(
        &crate::hooks::Denial::new(
            crate::hooks::DenialCode::HookFailure,
            "This call was interrupted before it ran (Mandate stopped). Check the current state, then retry it if it is still needed.",
        )
        .to_tool_error(),
        &subtasks,
    );
    task.checkpoint(env.sink.as_ref()).await;
    None
}

/// A damaged intents file is said out loud at the start of every run, not found out later.
fn say_what_is_broken(env: &AgentEnv) {
    if let Some(error) = env.gov.intents.snapshot().error {
        env.sink.emit(Event::Notice {
            level: NoticeLevel::Error,
            message: format!(
                "The intents file {} is broken: {error} The agent cannot select an intent that does not load until it is fixed.",
                crate::orchestration::intents::INTENTS_FILE
            ),
        });
    }
}

pub(super) fn add_error(env: &AgentEnv, task: &TaskHandle, message: String) {
    task.post(
        env.sink.as_ref(),
        UiMessage::Error {
            id: uuid::Uuid::new_v4().to_string(),
            message,
        },
    );
}

/// Same tool with the same arguments, in a row.
fn signature(call: &crate::llm::ToolCall) -> String {
    let args: serde_json::Value =
        serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
    format!("{}:{}", call.name, args)
}

/// What the loop keeps across turns: the same call in a row, failures in a row, and how many
/// times the person's Stop hooks sent the agent back.
#[derive(Default)]
struct Streak {
    last_signature: String,
    repeats: u32,
    mistakes: u32,
    sent_back: u32,
    /// How many times the project's check sent the agent back (`check_steps`).
    check_rounds: u32,
}

/// After this many times in a row that a Stop hook sends the agent back, the next one fails
/// the task instead.
const MAX_SENT_BACK: u32 = 3;

enum Flow {
    Next,
    End(TaskEnd),
}

async fn turn_loop(env: &Arc<AgentEnv>, task: &TaskHandle, cancel: &CancellationToken) -> TaskEnd {
    let mut turns = 0u32;
    let mut streak = Streak::default();
    // A switch of mode takes the next turn to the mode's profile and model.
    let mut env = env.clone();
    let slug = |task: &TaskHandle| task.governance().mode.map(|m| m.slug);
    let mut mode = slug(task);
    loop {
        if slug(task) != mode {
            mode = slug(task);
            env = env_for_mode(on_mode_profile(env, task).await, task);
            task.mark_running(env.provider.model_id());
            task.emit_summary(env.sink.as_ref());
        }
        let env = &env;
        if let Some(max) = env.max_turns {
            if turns >= max {
                let m = format!("The task reached the limit of {max} turns without completing.");
                add_error(env, task, m.clone());
                return TaskEnd::Failed(m);
            }
        }
        turns += 1;
        if let Some(why) = super::budget::exceeded(env, task) {
            add_error(env, task, why.clone());
            return TaskEnd::Paused(why);
        }
        let turn = match super::model_turn::model_turn(env, task, cancel).await {
            Ok(t) => t,
            Err(end) => return end,
        };
        let mut calls = turn.tool_calls.clone();
        let cut = match turn.cut_at_output_limit() {
            true => Some(output_cut(env, task, &mut calls).await),
            false => None,
        };
        if turn.tool_calls.is_empty() && cut.is_none() {
            if env.interactive {
                let rounds = &mut streak.check_rounds;
                let Some(note) = super::check_steps::at_turn_end(env, task, rounds, cancel).await
                else {
                    return TaskEnd::Idle;
                };
                task.push_conversation(ChatMessage::user(note));
                task.checkpoint(env.sink.as_ref()).await;
                continue;
            }
            streak.mistakes += 1;
            task.push_conversation(ChatMessage::user("[You answered without using a tool. If the task is done, call attempt_completion with the result; otherwise continue with the next tool.]"));
        }
        if let Flow::End(end) = run_calls(env, task, &calls, &mut streak, cancel).await {
            return end;
        }
        if let Some(Some(result)) = cut {
            task.push_conversation(result);
            task.checkpoint(env.sink.as_ref()).await;
        }
        if streak.repeats >= 3 || streak.mistakes >= 3 {
            let reason = if streak.repeats >= 3 {
                format!(
                    "The agent made the same call {} times in a row.",
                    streak.repeats
                )
            } else {
                format!(
                    "The agent's last {} steps failed or were refused.",
                    streak.mistakes
                )
            };
            if !ask_to_continue(env, task, &reason, cancel).await {
                let m = format!("{reason} The task was stopped.");
                add_error(env, task, m.clone());
                return TaskEnd::Failed(m);
            }
            streak.repeats = 0;
            streak.mistakes = 0;
            streak.last_signature.clear();
        }
    }
}

/// The answer was cut at the output limit: said plainly, the cut call (the last one) taken out
/// of `calls` and answered with an error that asks for a continuation or a smaller write; an
/// answer without a call is asked to go on. Returns the cut call's result, to follow the others.
async fn output_cut(
    env: &AgentEnv,
    task: &TaskHandle,
    calls: &mut Vec<crate::llm::ToolCall>,
) -> Option<ChatMessage> {
    let max = super::context_steps::window(env).await.max_tokens();
    env.sink.emit(Event::OutputCut {
        task_id: task.id.clone(),
        max_tokens: max,
    });
    let cut = calls.pop();
    task.post(
        env.sink.as_ref(),
        UiMessage::Notice {
            id: uuid::Uuid::new_v4().to_string(),
            text: match &cut {
                Some(c) => format!(
                    "The model's answer was cut at its output limit ({max} tokens) while it wrote a {} call; that call was not run, and the model was asked to split the work.",
                    c.name
                ),
                None => format!(
                    "The model's answer was cut at its output limit ({max} tokens); it was asked to continue."
                ),
            },
        },
    );
    match cut {
        Some(c) => Some(ChatMessage::ToolResult {
            call_id: c.id.clone(),
            name: c.name.clone(),
            content: crate::hooks::Denial::new(
                crate::hooks::DenialCode::InvalidArguments,
                format!(
                    "Not run: your answer was cut at the output limit ({max} tokens) while you wrote this call, so its arguments are incomplete. \
Make smaller calls: write a long file in parts (write_to_file with the first part, then apply_diff to add the rest), or edit only the lines that change."
                ),
            )
            .to_tool_error(),
            is_error: true,
        }),
        None => {
            task.push_conversation(ChatMessage::user(format!(
                    "[Your answer was cut at the output limit ({max} tokens). Continue exactly where you stopped; keep each answer shorter.]"
                )));
            None
        }
    }
}

/// The turn's tool calls, one at a time through the orchestrator (the subtasks that
/// `new_task` calls start, several at a time when they only read).
async fn run_calls(
    env: &Arc<AgentEnv>,
    task: &TaskHandle,
    calls: &[crate::llm::ToolCall],
    streak: &mut Streak,
    cancel: &CancellationToken,
) -> Flow {
    let mut i = 0;
    while i < calls.len() {
        if cancel.is_cancelled() {
            skip_calls(task, &calls[i..], "the user stopped the task");
            task.checkpoint(env.sink.as_ref()).await;
            return Flow::End(TaskEnd::Cancelled);
        }
        let result = dispatch(env, task, &calls[i], cancel).await;
        let results = match result.subtask.is_some() {
            true => super::subtask::delegate(env, task, &calls[i..], result, cancel).await,
            false => vec![result],
        };
        for result in results {
            let call = &calls[i];
            i += 1;
            let content = super::context_steps::fit_result(env, task, call, result.content).await;
            task.push_conversation(ChatMessage::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error: result.is_error,
            });
            task.checkpoint(env.sink.as_ref()).await;
            if let Some(done) = result.completed {
                return complete(env, task, &calls[i..], done, streak, cancel).await;
            }
            let sig = signature(call);
            streak.repeats = if sig == streak.last_signature {
                streak.repeats + 1
            } else {
                1
            };
            streak.last_signature = sig;
            streak.mistakes = if result.is_error {
                streak.mistakes + 1
            } else {
                0
            };
        }
        if cancel.is_cancelled() {
            skip_calls(task, &calls[i..], "the user stopped the task");
            task.checkpoint(env.sink.as_ref()).await;
            return Flow::End(TaskEnd::Cancelled);
        }
    }
    Flow::Next
}

/// The agent completed: the person's Stop hooks may send it back, a bounded number of times.
async fn complete(
    env: &AgentEnv,
    task: &TaskHandle,
    rest: &[crate::llm::ToolCall],
    done: String,
    streak: &mut Streak,
    cancel: &CancellationToken,
) -> Flow {
    let rounds = &mut streak.check_rounds;
    if let Some(note) = super::check_steps::at_turn_end(env, task, rounds, cancel).await {
        skip_calls(task, rest, "the task tried to complete first");
        task.push_conversation(ChatMessage::user(note));
        task.checkpoint(env.sink.as_ref()).await;
        return Flow::Next;
    }
    let objection = super::hook_steps::stopping(env, task, &done, streak.sent_back > 0, cancel);
    let Some(reason) = objection.await else {
        skip_calls(task, rest, "the task was completed first");
        return Flow::End(TaskEnd::Completed(done));
    };
    skip_calls(task, rest, "the task tried to complete first");
    if streak.sent_back >= MAX_SENT_BACK {
        let m = format!(
            "The task did not complete: your Stop hooks sent the agent back {MAX_SENT_BACK} times in a row and still object ({reason})."
        );
        add_error(env, task, m.clone());
        return Flow::End(TaskEnd::Failed(m));
    }
    streak.sent_back += 1;
    env.notice(format!("The task is not finished yet, say {reason}."));
    task.push_conversation(ChatMessage::user(format!(
            "[The task may not end yet, say {reason}. Continue the work, then call attempt_completion again.]"
        )));
    task.checkpoint(env.sink.as_ref()).await;
    Flow::Next
}

fn skip_calls(task: &TaskHandle, calls: &[crate::llm::ToolCall], why: &str) {
    for call in calls {
        task.push_conversation(ChatMessage::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: format!("Not run: {why}."),
            is_error: true,
        });
    }
}

async fn ask_to_continue(
    env: &AgentEnv,
    task: &TaskHandle,
    reason: &str,
    cancel: &CancellationToken,
) -> bool {
    let outcomes = (
        crate::protocol::ApprovalOutcome::Continue,
        crate::protocol::ApprovalOutcome::Stop,
    );
    let go_on = ask_person(env, task, reason.to_string(), outcomes, cancel).await;
    if go_on {
        task.push_conversation(ChatMessage::user(format!(
            "[{reason} The user lets you go on: change your approach instead of repeating it.]"
        )));
    }
    go_on
}

/// Puts a yes/no question about the task itself (not a tool call) to the person, with the
/// task waiting meanwhile; `outcomes` are what the window is told for yes and for no. A
/// cancelled task is a no.
pub(super) async fn ask_person(
    env: &AgentEnv,
    task: &TaskHandle,
    reason: String,
    (yes, no): (
        crate::protocol::ApprovalOutcome,
        crate::protocol::ApprovalOutcome,
    ),
    cancel: &CancellationToken,
) -> bool {
    let request = ApprovalRequest {
        approval_id: uuid::Uuid::new_v4().to_string(),
        call_id: String::new(),
        intent: None,
        detail: ApprovalDetail::Continue { reason },
        hook_reasons: Vec::new(),
    };
    let approval_id = request.approval_id.clone();
    task.set_status(env.sink.as_ref(), TaskStatus::WaitingForApproval);
    let asking = super::attention::Asking { env, task };
    let decision = super::Interaction::approve(&asking, &task.id, request, cancel).await;
    task.set_status(env.sink.as_ref(), TaskStatus::Running);
    let yes_said = !matches!(decision, ApprovalDecision::Reject { .. }) && !cancel.is_cancelled();
    env.sink.emit(Event::ApprovalResolved {
        task_id: task.id.clone(),
        approval_id,
        outcome: if yes_said { yes } else { no },
    });
    yes_said
}

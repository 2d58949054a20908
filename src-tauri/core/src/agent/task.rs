//! A task's turn loop: ask the model, stream its answer, run its tool calls one at a time
//! through governance, feed the results back, until it completes, fails, is stopped, or (in the
//! GUI) answers without a tool and waits for the user.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::store::{TaskRecord, TaskStore};
use super::{dispatch, EventSink, Governance, Interaction};
use crate::hooks::TaskGovernance;
use crate::llm::{collect_turn, ChatMessage, LlmError, ModelRequest, Provider};
use crate::markdown::StreamingRenderer;
use crate::orchestration::ledger::now_rfc3339;
use crate::prompt::{self, PromptContext};
use crate::protocol::{
    ApprovalDecision, ApprovalDetail, ApprovalPolicy, ApprovalRequest, Event, NoticeLevel,
    TaskStatus, TaskSummary, UiMessage, Usage,
};
use crate::tools::Tool;

/// Everything a running task uses, fixed for the duration of one run.
pub struct AgentEnv {
    pub gov: Arc<Governance>,
    pub provider: Arc<dyn Provider>,
    pub sink: Arc<dyn EventSink>,
    pub interaction: Arc<dyn Interaction>,
    pub store: Arc<TaskStore>,
    pub tools: Arc<Vec<Box<dyn Tool>>>,
    pub approval: ApprovalPolicy,
    pub custom_instructions: String,
    pub max_turns: Option<u32>,
    /// GUI: an answer without a tool call hands the turn back to the user.
    pub interactive: bool,
    pub render_interval: Duration,
    pub max_tokens: u32,
}

impl AgentEnv {
    pub fn notice(&self, message: String) {
        self.sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message,
        });
    }
}

/// How a run of the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEnd {
    Completed(String),
    /// Waiting for the user's next message.
    Idle,
    Failed(String),
    Cancelled,
    AlreadyRunning,
}

/// A task in memory; its record is saved at every checkpoint.
pub struct TaskHandle {
    pub id: String,
    record: Mutex<TaskRecord>,
    store: Arc<TaskStore>,
    cancel: Mutex<CancellationToken>,
    running: AtomicBool,
}

impl TaskHandle {
    pub fn new(record: TaskRecord, store: Arc<TaskStore>) -> Arc<Self> {
        Arc::new(Self {
            id: record.summary.id.clone(),
            record: Mutex::new(record),
            store,
            cancel: Mutex::new(CancellationToken::new()),
            running: AtomicBool::new(false),
        })
    }

    /// A new task for `objective`.
    pub fn create(
        store: Arc<TaskStore>,
        workspace: &str,
        objective: &str,
        model: &str,
    ) -> Arc<Self> {
        let now = now_rfc3339();
        let id = uuid::Uuid::new_v4().to_string();
        let title: String = objective
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(80)
            .collect();
        let record = TaskRecord {
            format: 1,
            workspace: workspace.to_string(),
            summary: TaskSummary {
                id: id.clone(),
                title: if title.is_empty() {
                    "New task".into()
                } else {
                    title
                },
                status: TaskStatus::Idle,
                intent_id: None,
                model: model.to_string(),
                usage: Usage::default(),
                created_at: now.clone(),
                updated_at: now,
                error: None,
            },
            conversation: Vec::new(),
            messages: Vec::new(),
            governance: TaskGovernance {
                task_id: id,
                ..TaskGovernance::default()
            },
            objective: objective.to_string(),
        };
        Self::new(record, store)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TaskRecord> {
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the record in memory (saved at the next checkpoint).
    pub fn update<R>(&self, f: impl FnOnce(&mut TaskRecord) -> R) -> R {
        let mut record = self.lock();
        let r = f(&mut record);
        record.summary.updated_at = now_rfc3339();
        r
    }

    /// Saves the record; a failure is reported, never fatal to the task.
    pub fn checkpoint(&self, sink: &dyn EventSink) {
        let record = self.lock().clone();
        if let Err(e) = self.store.save(&record) {
            sink.emit(Event::Notice {
                level: NoticeLevel::Error,
                message: format!(
                    "{e}. The task goes on, but this step may be lost if Mandate stops."
                ),
            });
        }
    }

    pub fn governance(&self) -> TaskGovernance {
        self.lock().governance.clone()
    }

    pub fn summary(&self) -> TaskSummary {
        self.lock().summary.clone()
    }

    pub fn record(&self) -> TaskRecord {
        self.lock().clone()
    }

    /// Appends a message to the transcript and shows it in the UI (one id for both).
    pub fn post(&self, sink: &dyn EventSink, message: UiMessage) {
        self.update(|r| r.messages.push(message.clone()));
        sink.emit(Event::MessageAdded {
            task_id: self.id.clone(),
            message,
        });
    }

    pub fn emit_summary(&self, env: &AgentEnv) {
        env.sink.emit(Event::TaskUpdated {
            task: self.summary(),
        });
    }

    pub fn set_status(&self, env: &AgentEnv, status: TaskStatus) {
        self.update(|r| r.summary.status = status);
        self.emit_summary(env);
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// Stops the current run (the model request, a running command, a pending approval).
    pub fn cancel(&self) {
        self.cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .cancel();
    }

    fn begin_run(&self) -> Option<CancellationToken> {
        if self.running.swap(true, Ordering::SeqCst) {
            return None;
        }
        let token = CancellationToken::new();
        *self.cancel.lock().unwrap_or_else(|p| p.into_inner()) = token.clone();
        Some(token)
    }

    fn end_run(&self) {
        self.running.store(false, Ordering::SeqCst);
    }
}

/// Runs the task until it needs the user or ends. `user_text` is a new message to add first.
pub async fn run_task(
    env: Arc<AgentEnv>,
    task: Arc<TaskHandle>,
    user_text: Option<String>,
) -> TaskEnd {
    let Some(cancel) = task.begin_run() else {
        return TaskEnd::AlreadyRunning;
    };
    if let Some(text) = user_text {
        task.update(|r| {
            r.conversation
                .push(ChatMessage::User { text: text.clone() })
        });
        task.post(
            env.sink.as_ref(),
            UiMessage::User {
                id: uuid::Uuid::new_v4().to_string(),
                text,
            },
        );
    }
    repair_interrupted_calls(&task);
    task.update(|r| {
        r.summary.status = TaskStatus::Running;
        r.summary.error = None;
        r.summary.model = env.provider.model_id();
    });
    task.emit_summary(&env);
    task.checkpoint(env.sink.as_ref());

    let end = turn_loop(&env, &task, &cancel).await;

    let (status, error) = match &end {
        TaskEnd::Completed(_) => (TaskStatus::Completed, None),
        TaskEnd::Idle | TaskEnd::AlreadyRunning => (TaskStatus::Idle, None),
        TaskEnd::Failed(m) => (TaskStatus::Failed, Some(m.clone())),
        TaskEnd::Cancelled => (TaskStatus::Cancelled, None),
    };
    task.update(|r| {
        r.summary.status = status;
        r.summary.error = error;
    });
    task.checkpoint(env.sink.as_ref());
    task.emit_summary(&env);
    task.end_run();
    let gov = env.gov.clone();
    let _ = tokio::task::spawn_blocking(move || gov.flush_intent_map()).await;
    end
}

/// A process killed mid-call leaves tool calls without results; the API needs one for each.
fn repair_interrupted_calls(task: &TaskHandle) {
    task.update(|r| {
        let Some(ChatMessage::Assistant { tool_calls, .. }) = r.conversation.last() else {
            return;
        };
        let missing: Vec<(String, String)> = tool_calls.iter().map(|c| (c.id.clone(), c.name.clone())).collect();
        for (call_id, name) in missing {
            r.conversation.push(ChatMessage::ToolResult {
                call_id,
                name,
                content: crate::hooks::Denial::new(
                    crate::hooks::DenialCode::HookFailure,
                    "This call was interrupted before it ran (Mandate stopped). Check the current state, then retry it if it is still needed.",
                )
                .to_tool_error(),
                is_error: true,
            });
        }
    });
}

fn add_error(env: &AgentEnv, task: &TaskHandle, message: String) {
    task.post(
        env.sink.as_ref(),
        UiMessage::Error {
            id: uuid::Uuid::new_v4().to_string(),
            message,
        },
    );
}

fn build_request(env: &AgentEnv, task: &TaskHandle) -> ModelRequest {
    let record = task.record();
    let intents = env.gov.intents.snapshot();
    let active = record
        .governance
        .selected_intent
        .as_deref()
        .and_then(|id| intents.doc.get(id));
    let history = match active {
        Some(i) => {
            crate::orchestration::trace::intent_changes(env.gov.root(), &i.id).unwrap_or_default()
        }
        None => Vec::new(),
    };
    let rules = prompt::load_rules(env.gov.root());
    let lessons = crate::orchestration::lessons::read_recent(env.gov.root(), 6_000);
    let tool_names: Vec<&str> = env.tools.iter().map(|t| t.name()).collect();
    let date = now_rfc3339();
    let system = prompt::build(&PromptContext {
        root: env.gov.root(),
        intents: &intents,
        active_intent: active,
        recent_history: &history,
        rules: &rules,
        lessons: lessons.as_deref(),
        os: std::env::consts::OS,
        shell: "sh",
        date: &date[..10.min(date.len())],
        objective: &record.objective,
        custom_instructions: &env.custom_instructions,
        tool_names: &tool_names,
    });
    ModelRequest {
        system,
        messages: record.conversation,
        tools: env.tools.iter().map(|t| t.spec()).collect(),
        max_tokens: env.max_tokens,
    }
}

/// Same tool with the same arguments, in a row.
fn signature(call: &crate::llm::ToolCall) -> String {
    let args: serde_json::Value =
        serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
    format!("{}:{}", call.name, args)
}

async fn turn_loop(env: &AgentEnv, task: &TaskHandle, cancel: &CancellationToken) -> TaskEnd {
    let mut turns = 0u32;
    let (mut last_signature, mut repeats, mut mistakes) = (String::new(), 0u32, 0u32);
    loop {
        if let Some(max) = env.max_turns {
            if turns >= max {
                let m = format!("The task reached the limit of {max} turns without completing.");
                add_error(env, task, m.clone());
                return TaskEnd::Failed(m);
            }
        }
        turns += 1;
        let turn = match model_turn(env, task, cancel).await {
            Ok(t) => t,
            Err(end) => return end,
        };
        if turn.tool_calls.is_empty() {
            if env.interactive {
                return TaskEnd::Idle;
            }
            mistakes += 1;
            task.update(|r| {
                r.conversation.push(ChatMessage::User {
                    text: "[You answered without using a tool. If the task is done, call attempt_completion with the result; otherwise continue with the next tool.]".into(),
                })
            });
        }
        let calls = turn.tool_calls.clone();
        for (i, call) in calls.iter().enumerate() {
            if cancel.is_cancelled() {
                skip_calls(task, &calls[i..], "the user stopped the task");
                task.checkpoint(env.sink.as_ref());
                return TaskEnd::Cancelled;
            }
            let result = dispatch(env, task, call, cancel).await;
            task.update(|r| {
                r.conversation.push(ChatMessage::ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: result.content.clone(),
                    is_error: result.is_error,
                })
            });
            task.checkpoint(env.sink.as_ref());
            if let Some(done) = result.completed {
                skip_calls(task, &calls[i + 1..], "the task was completed first");
                return TaskEnd::Completed(done);
            }
            let sig = signature(call);
            repeats = if sig == last_signature {
                repeats + 1
            } else {
                1
            };
            last_signature = sig;
            mistakes = if result.is_error { mistakes + 1 } else { 0 };
            if cancel.is_cancelled() {
                skip_calls(task, &calls[i + 1..], "the user stopped the task");
                task.checkpoint(env.sink.as_ref());
                return TaskEnd::Cancelled;
            }
        }
        if repeats >= 3 || mistakes >= 3 {
            let reason = if repeats >= 3 {
                format!("The agent made the same call {repeats} times in a row.")
            } else {
                format!("The agent's last {mistakes} steps failed or were refused.")
            };
            if !ask_to_continue(env, task, &reason, cancel).await {
                let m = format!("{reason} The task was stopped.");
                add_error(env, task, m.clone());
                return TaskEnd::Failed(m);
            }
            repeats = 0;
            mistakes = 0;
            last_signature.clear();
        }
    }
}

fn skip_calls(task: &TaskHandle, calls: &[crate::llm::ToolCall], why: &str) {
    task.update(|r| {
        for call in calls {
            r.conversation.push(ChatMessage::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: format!("Not run: {why}."),
                is_error: true,
            });
        }
    });
}

async fn ask_to_continue(
    env: &AgentEnv,
    task: &TaskHandle,
    reason: &str,
    cancel: &CancellationToken,
) -> bool {
    let request = ApprovalRequest {
        approval_id: uuid::Uuid::new_v4().to_string(),
        call_id: String::new(),
        intent: None,
        detail: ApprovalDetail::Continue {
            reason: reason.to_string(),
        },
    };
    let approval_id = request.approval_id.clone();
    task.set_status(env, TaskStatus::WaitingForApproval);
    let decision = env.interaction.approve(&task.id, request, cancel).await;
    task.set_status(env, TaskStatus::Running);
    let go_on = !matches!(decision, ApprovalDecision::Reject { .. });
    env.sink.emit(Event::ApprovalResolved {
        task_id: task.id.clone(),
        approval_id,
        outcome: if go_on {
            "continue".into()
        } else {
            "stop".into()
        },
    });
    if go_on {
        task.update(|r| {
            r.conversation.push(ChatMessage::User {
                text: format!("[{reason} The user lets you go on: change your approach instead of repeating it.]"),
            })
        });
    }
    go_on
}

/// One request to the model, streamed into the UI. Errors end the run.
async fn model_turn(
    env: &AgentEnv,
    task: &TaskHandle,
    cancel: &CancellationToken,
) -> Result<crate::llm::AssistantTurn, TaskEnd> {
    let request = build_request(env, task);
    let message_id = uuid::Uuid::new_v4().to_string();
    env.sink.emit(Event::MessageAdded {
        task_id: task.id.clone(),
        message: UiMessage::Assistant {
            id: message_id.clone(),
            safe_html: String::new(),
            complete: false,
        },
    });
    let mut renderer = StreamingRenderer::new(env.render_interval);
    let started = tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(LlmError::Cancelled),
        s = env.provider.stream(&request) => s,
    };
    let collected = match started {
        Ok(stream) => collect_turn(stream, cancel, |delta| {
            renderer.push(delta);
            if let Some(update) = renderer.update_if_due(Instant::now()) {
                env.sink.emit(Event::MessageDelta {
                    task_id: task.id.clone(),
                    message_id: message_id.clone(),
                    stable_safe_html: update.stable_html,
                    safe_html: update.tail_html,
                    reset: update.reset,
                });
            }
        })
        .await
        .map_err(|f| f.error),
        Err(e) => Err(e),
    };
    let html = renderer.finish();
    match collected {
        Ok(turn) => {
            env.sink.emit(Event::MessageFinished {
                task_id: task.id.clone(),
                message_id: message_id.clone(),
                safe_html: html.clone(),
                complete: true,
            });
            task.update(|r| {
                if !turn.text.trim().is_empty() {
                    r.messages.push(UiMessage::Assistant {
                        id: message_id.clone(),
                        safe_html: html.clone(),
                        complete: true,
                    });
                }
                r.conversation.push(ChatMessage::Assistant {
                    text: turn.text.clone(),
                    tool_calls: turn.tool_calls.clone(),
                });
                r.summary.usage.input_tokens += turn.usage.input_tokens;
                r.summary.usage.output_tokens += turn.usage.output_tokens;
                if let Some(cost) = turn.usage.cost_usd {
                    r.summary.usage.cost_usd = Some(r.summary.usage.cost_usd.unwrap_or(0.0) + cost);
                }
            });
            task.emit_summary(env);
            task.checkpoint(env.sink.as_ref());
            Ok(turn)
        }
        Err(error) => {
            // The partial answer is shown as cut off and never enters the conversation.
            env.sink.emit(Event::MessageFinished {
                task_id: task.id.clone(),
                message_id: message_id.clone(),
                safe_html: html.clone(),
                complete: false,
            });
            if !renderer.text().trim().is_empty() {
                task.update(|r| {
                    r.messages.push(UiMessage::Assistant {
                        id: message_id,
                        safe_html: html,
                        complete: false,
                    })
                });
            }
            if error == LlmError::Cancelled {
                add_error(env, task, "Stopped. The partial answer above was not kept; send a message or retry to go on.".into());
                task.checkpoint(env.sink.as_ref());
                return Err(TaskEnd::Cancelled);
            }
            let message = error.to_string();
            add_error(env, task, message.clone());
            task.checkpoint(env.sink.as_ref());
            Err(TaskEnd::Failed(message))
        }
    }
}

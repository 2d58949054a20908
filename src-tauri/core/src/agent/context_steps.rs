//! The turn loop's side of the context window: the window of this run's model, the request
//! rebuilt to fit it, condensing (automatic at the threshold, by hand, and to recover from a
//! provider's context-length error), and the gauge the window shows.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{AgentEnv, TaskEnd, TaskHandle};
use crate::context::{
    condense, fit, history, tokens, Condensation, LearnedWindows, ModelWindow, WindowSource,
};
use crate::llm::{collect_turn, ChatMessage, LlmError, ModelRequest};
use crate::orchestration::ledger::now_rfc3339;
use crate::protocol::{ContextView, Event, UiMessage};

/// Failures in a row after which condensing asks the person before it tries again.
const MAX_FAILURES: u32 = 3;
/// Automatic condensing waits this many model turns after the last one.
const TURNS_BETWEEN: u32 = 2;

/// The window of this run's model: worked out once per run (the provider is asked only when
/// nothing else knows the model).
pub(super) async fn window(env: &AgentEnv) -> ModelWindow {
    if let Some(w) = lock(&env.context.resolved).clone() {
        return w;
    }
    let model_id = env.provider.model_id();
    let model = model_id
        .split_once('/')
        .map_or(model_id.as_str(), |(_, m)| m);
    let over = &env.context.model_override;
    let learned = env
        .context
        .learned
        .get(&LearnedWindows::key(&model_id, &env.provider.base_url()));
    let known = over.context_window.is_some() || crate::llm::model_facts(model).is_some();
    let info = match known {
        true => Default::default(),
        false => tokio::time::timeout(Duration::from_secs(10), env.provider.model_info())
            .await
            .unwrap_or_default(),
    };
    let w = ModelWindow::resolve(model, over, learned, &info);
    tracing::info!(
        window = w.context_window,
        source = w.source.as_str(),
        "model window"
    );
    *lock(&env.context.resolved) = Some(w.clone());
    w
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the summary message carries besides the summary.
struct CarriedOwned {
    persons: Vec<String>,
    intent_context: Option<String>,
}

fn carried(env: &AgentEnv, task: &TaskHandle) -> CarriedOwned {
    let record = task.record();
    let mut persons: Vec<String> = record.turns.iter().map(|t| t.text.clone()).collect();
    if persons.is_empty() && !record.objective.is_empty() {
        persons.push(record.objective.clone());
    }
    let intent_context = record.governance.selected_intent.as_deref().and_then(|id| {
        let snapshot = env.gov.intents.snapshot();
        snapshot
            .doc
            .get(id)
            .map(|i| crate::tools::intent_context(i, &[]))
    });
    CarriedOwned {
        persons,
        intent_context,
    }
}

/// The messages to send now, from the task's whole conversation.
fn messages(env: &AgentEnv, task: &TaskHandle, window: &ModelWindow) -> Vec<ChatMessage> {
    let record = task.record();
    let c = carried(env, task);
    history::for_request(
        &record.conversation,
        record.context.current(),
        &history::Carried {
            persons_messages: &c.persons,
            intent_context: c.intent_context.as_deref(),
            persons_budget: window.usable_input() / 8,
        },
    )
}

/// The request to send, its estimate, and what the gauge says of it.
pub(super) struct Prepared {
    pub request: ModelRequest,
    pub estimate: u64,
}

/// The request for the next model turn: condensed first when the conversation reached the
/// threshold (or, with `limit`, until its estimate is below `limit`).
pub(super) async fn prepare(
    env: &AgentEnv,
    task: &TaskHandle,
    base: &ModelRequest,
    limit: Option<u64>,
    cancel: &CancellationToken,
) -> Result<Prepared, TaskEnd> {
    let w = window(env).await;
    task.set_fixed_tokens(tokens::text(&base.system) + tokens::tools(&base.tools));
    let mut request = fill(env, task, base, &w);
    let mut estimate = tokens::request(&request);
    let last = task.record().context.last;
    let in_use = tokens::in_use(estimate, last);
    publish(env, task, &w, in_use);
    let usable = w.usable_input();
    let hard = limit.map(|l| l.min(usable)).unwrap_or(usable);
    let over_hard = match limit {
        Some(l) => estimate > l,
        None => in_use > usable,
    };
    let state = task.record().context;
    let due = in_use >= w.threshold(env.context.threshold_percent)
        && state.turns_since_condense >= TURNS_BETWEEN;
    if (due || over_hard) && state.failures < MAX_FAILURES {
        let target = if over_hard { Some(hard) } else { None };
        match condense_now(env, task, base, &w, true, target, cancel).await {
            Ok(()) => {}
            Err(Failure::Cancelled) => return Err(TaskEnd::Cancelled),
            Err(Failure::Refused(why)) => tracing::info!(%why, "not condensed"),
        }
    }
    if task.record().context.failures >= MAX_FAILURES {
        let reason = format!(
            "Condensing the conversation failed {MAX_FAILURES} times in a row. Go on without a summary (the oldest turns are left out of what is sent when the window is full)?"
        );
        let yes = (
            crate::protocol::ApprovalOutcome::Continue,
            crate::protocol::ApprovalOutcome::Stop,
        );
        if !super::turn::ask_person(env, task, reason, yes, cancel).await {
            return Err(TaskEnd::Paused(
                "Condensing failed three times in a row; the task waits. Retry to go on, or condense by hand.".into(),
            ));
        }
        task.update_context(|s| s.failures = 0);
    }
    request = fill(env, task, base, &w);
    estimate = tokens::request(&request);
    let fits = |e: u64| match limit {
        Some(l) => e <= l,
        None => tokens::in_use(e, task.record().context.last) <= usable,
    };
    if !fits(estimate) {
        drop_oldest(env, task, &w, base, hard);
        request = fill(env, task, base, &w);
        estimate = tokens::request(&request);
    }
    publish(
        env,
        task,
        &w,
        tokens::in_use(estimate, task.record().context.last),
    );
    Ok(Prepared { request, estimate })
}

/// The base request (system prompt and tools) with the messages and the limits of the window.
fn fill(env: &AgentEnv, task: &TaskHandle, base: &ModelRequest, w: &ModelWindow) -> ModelRequest {
    let mut messages = messages(env, task, w);
    // The todo list rides on the newest message, as the editors people come from send it: it
    // outlives condensing, and the cached prefix before that message stays the same.
    let summary = task.summary();
    if let Some(reminder) = crate::tools::todo_reminder(&summary.todos, summary.todos_edited) {
        match messages.last_mut() {
            Some(ChatMessage::User { text, .. }) => {
                text.push_str("\n\n");
                text.push_str(&reminder);
            }
            Some(ChatMessage::ToolResult { content, .. }) => {
                content.push_str("\n\n");
                content.push_str(&reminder);
            }
            _ => {}
        }
    }
    ModelRequest {
        system: base.system.clone(),
        messages,
        tools: base.tools.clone(),
        max_tokens: w.max_tokens(),
        thinking_budget: w.request_thinking(),
        reasoning_effort: env.context.reasoning_effort.clone(),
        cache: true,
        forbid_tools: false,
        context_window: Some(w.context_window),
    }
}

/// The gauge in the task header.
fn publish(env: &AgentEnv, task: &TaskHandle, w: &ModelWindow, used: u64) {
    task.set_context_view(ContextView {
        used_tokens: used,
        window_tokens: w.context_window,
        usable_tokens: w.usable_input(),
        threshold_tokens: w.threshold(env.context.threshold_percent),
        window_source: w.source.as_str().to_string(),
        condensations: task.record().context.condensations.len() as u32,
    });
    task.emit_summary(env.sink.as_ref());
}

/// A tool result measured before it enters the conversation: over its budget, cut to head and
/// tail; the whole of anything but a file kept with the task for `read_tool_output`.
pub(super) async fn fit_result(
    env: &AgentEnv,
    task: &TaskHandle,
    call: &crate::llm::ToolCall,
    content: String,
) -> String {
    let w = window(env).await;
    // A quarter of the usable input at most, and small enough that after a condensing at
    // least three more results fit below the threshold: a small window must not condense
    // at every turn.
    let after_condensing = task.fixed_tokens() + u64::from(w.max_tokens()) / 2;
    let room = w
        .threshold(env.context.threshold_percent)
        .saturating_sub(after_condensing)
        / 3;
    let budget = fit::budget(&w).min(room.max(256));
    let path = (call.name == "read_file")
        .then(|| serde_json::from_str::<serde_json::Value>(&call.arguments).ok())
        .flatten()
        .and_then(|a| a.get("path").and_then(|p| p.as_str()).map(str::to_string));
    let rest = match &path {
        Some(p) => fit::Rest::File { path: p },
        None => fit::Rest::Kept { call_id: &call.id },
    };
    let Some(cut) = fit::fit(&content, budget, rest) else {
        return content;
    };
    if path.is_none() {
        let (store, id, call_id) = (task.store(), task.id.clone(), call.id.clone());
        let kept =
            tokio::task::spawn_blocking(move || store.save_output(&id, &call_id, &content)).await;
        if !matches!(kept, Ok(Ok(()))) {
            env.notice(format!(
                "The whole output of call {} could not be kept with the task; the model sees only its head and tail.",
                call.id
            ));
        }
    }
    cut
}

/// After a model turn: the provider's count beside the estimate, for the next correction.
pub(super) fn measured(task: &TaskHandle, estimate: u64, turn: &crate::llm::AssistantTurn) {
    let answer = tokens::message(&ChatMessage::Assistant {
        text: turn.text.clone(),
        tool_calls: turn.tool_calls.clone(),
        thinking: turn.thinking.clone(),
    });
    let actual = turn.usage.total();
    task.update_context(|s| {
        s.turns_since_condense += 1;
        if actual > 0 {
            s.last = Some(tokens::Measured {
                estimate: estimate + answer,
                actual,
            });
        }
    });
}

enum Failure {
    Cancelled,
    Refused(String),
}

/// Condenses the conversation: the model summarizes what lies between the last cut and a new
/// one; the newest turns stay verbatim. `target` (estimated tokens) is a size the request
/// must get under. A failure is counted (three in a row ask the person).
async fn condense_now(
    env: &AgentEnv,
    task: &TaskHandle,
    base: &ModelRequest,
    w: &ModelWindow,
    automatic: bool,
    target: Option<u64>,
    cancel: &CancellationToken,
) -> Result<(), Failure> {
    let record = task.record();
    let previous = record.context.current().cloned();
    let from = previous.as_ref().map_or(0, |c| c.at);
    let usable = w.usable_input();
    let keep = tokens::to_estimate(target.unwrap_or(usable) / 6, record.context.last);
    let cut = history::choose_cut(&record.conversation, from, keep);
    if cut <= from {
        return Err(Failure::Refused("nothing new to condense".into()));
    }
    let size = |task: &TaskHandle| {
        tokens::in_use(
            tokens::request(&fill(env, task, base, w)),
            task.record().context.last,
        )
    };
    let before = size(task);
    // Never when it would not shrink: with the longest summary allowed in place of what is
    // condensed, the request must be smaller than it is now.
    let longest = Condensation {
        at: cut,
        summary: "x".repeat(w.max_tokens() as usize * 2),
        tokens_before: 0,
        tokens_after: 0,
        cost_usd: None,
        created_at: String::new(),
        message_id: String::new(),
        summarized: true,
    };
    task.update_context(|s| s.condensations.push(longest));
    let projected = size(task);
    task.update_context(|s| {
        s.condensations.pop();
    });
    if projected >= before {
        return Err(Failure::Refused(format!(
            "a summary would not make the conversation smaller ({before} tokens now)"
        )));
    }
    env.sink.emit(Event::Condensing {
        task_id: task.id.clone(),
        automatic,
    });
    // Asked at the end of the request the task would send now, the summary costs a cache
    // read; when that does not fit, the part to condense is laid out as text.
    let current = fill(env, task, base, w);
    let request = condense::in_place(&current, w, before).unwrap_or_else(|| {
        condense::request(
            &condense::Input {
                previous_summary: previous.as_ref().map(|c| c.summary.as_str()),
                messages: &record.conversation[from..cut],
                objective: &record.objective,
            },
            w,
        )
    });
    let started = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(Failure::Cancelled),
        s = env.provider.stream(&request) => s,
    };
    let turn = match started {
        Ok(stream) => collect_turn(stream, cancel, |_| {})
            .await
            .map_err(|f| f.error),
        Err(e) => Err(e),
    };
    let turn = match turn {
        Ok(t) => t,
        Err(LlmError::Cancelled) => return Err(Failure::Cancelled),
        Err(e) => {
            return Err(failed(
                env,
                task,
                format!("the summary request failed: {e}"),
            ))
        }
    };
    task.add_usage(&turn.usage);
    let summary = match condense::check(&turn.text, turn.cut_at_output_limit()) {
        // Like the conversation, the summary never holds a secret Mandate knows: it is sent
        // to the model and shown in the window.
        Ok(s) => crate::redact::Redactor::global().redact(&s).into_owned(),
        Err(why) => return Err(failed(env, task, why.to_string())),
    };
    let c = Condensation {
        at: cut,
        summary,
        tokens_before: before,
        tokens_after: 0,
        cost_usd: turn.usage.cost_usd,
        created_at: now_rfc3339(),
        message_id: uuid::Uuid::new_v4().to_string(),
        summarized: true,
    };
    task.update_context(|s| s.condensations.push(c.clone()));
    let after = size(task);
    if after >= before {
        task.update_context(|s| {
            s.condensations.pop();
        });
        return Err(failed(
            env,
            task,
            format!(
                "the summary would not make the conversation smaller ({before} → {after} tokens)"
            ),
        ));
    }
    task.update_context(|s| {
        if let Some(last) = s.condensations.last_mut() {
            last.tokens_after = after;
        }
        s.turns_since_condense = 0;
        s.failures = 0;
    });
    task.post(
        env.sink.as_ref(),
        UiMessage::Condensed {
            id: c.message_id.clone(),
            tokens_before: before,
            tokens_after: after,
            cost_usd: c.cost_usd,
            summary_safe_html: crate::markdown::render(&c.summary),
            automatic,
        },
    );
    task.checkpoint(env.sink.as_ref()).await;
    Ok(())
}

fn failed(env: &AgentEnv, task: &TaskHandle, why: String) -> Failure {
    task.update_context(|s| s.failures += 1);
    env.notice(format!("The conversation could not be condensed: {why}."));
    Failure::Refused(why)
}

/// The deterministic fallback: the oldest exchanges are left out of what is sent (the previous
/// summary, the person's messages and the intent are kept) until the request fits `budget`.
fn drop_oldest(
    env: &AgentEnv,
    task: &TaskHandle,
    w: &ModelWindow,
    base: &ModelRequest,
    budget: u64,
) {
    let record = task.record();
    let previous = record.context.current().cloned();
    let from = previous.as_ref().map_or(0, |c| c.at);
    let fixed = tokens::text(&base.system) + tokens::tools(&base.tools) + 1_000;
    let room = tokens::to_estimate(budget, record.context.last).saturating_sub(fixed);
    let cut = history::drop_oldest(&record.conversation, from, room);
    if cut <= from {
        return;
    }
    let note = format!(
        "[{} older messages were left out of what is sent to fit the model's context window; no summary of them could be made.]",
        cut - from
    );
    let (summary, summarized) = match &previous {
        Some(p) => (format!("{}\n\n{note}", p.summary), p.summarized),
        None => (note, false),
    };
    let before = tokens::messages(&messages(env, task, w));
    let c = Condensation {
        at: cut,
        summary,
        tokens_before: before,
        tokens_after: 0,
        cost_usd: None,
        created_at: now_rfc3339(),
        message_id: uuid::Uuid::new_v4().to_string(),
        summarized,
    };
    task.update_context(|s| s.condensations.push(c.clone()));
    let after = tokens::messages(&messages(env, task, w));
    task.update_context(|s| {
        if let Some(last) = s.condensations.last_mut() {
            last.tokens_after = after;
        }
    });
    task.post(
        env.sink.as_ref(),
        UiMessage::Notice {
            id: c.message_id,
            text: format!(
                "The oldest {} messages were left out of what is sent to the model ({before} → {after} estimated tokens): no summary could be made. The whole conversation is kept.",
                cut - from
            ),
        },
    );
}

/// What a context-length error teaches: the window it names (kept for this model; when it
/// names none, three fifths of what was sent is assumed for this run), and the size in
/// estimated tokens the messages of the next try must get under. The next request as a whole
/// (input and output reserved) is strictly smaller than the one refused.
pub(super) fn learn_from(
    env: &AgentEnv,
    task: &TaskHandle,
    sent: &ModelRequest,
    sent_estimate: u64,
    limit: Option<u64>,
    requested: Option<u64>,
) -> u64 {
    if let (Some(real), true) = (requested, sent_estimate > 0) {
        // The provider counted the refused request: the best correction there is.
        let real = real.saturating_sub(u64::from(sent.max_tokens)).max(1);
        task.update_context(|s| {
            s.last = Some(tokens::Measured {
                estimate: sent_estimate,
                actual: real,
            })
        });
    }
    let last = task.record().context.last;
    let sent_total = tokens::in_use(sent_estimate, last) + u64::from(sent.max_tokens);
    let window = match limit {
        Some(limit) => {
            let key = LearnedWindows::key(&env.provider.model_id(), &env.provider.base_url());
            if let Err(e) = env.context.learned.learn(&key, limit) {
                tracing::warn!(error = %e, "could not keep the learned window");
            }
            limit
        }
        None => sent_total * 3 / 5,
    };
    let mut resolved = lock(&env.context.resolved);
    let usable = match resolved.as_mut() {
        Some(w) => {
            if window < w.context_window {
                w.context_window = window.max(crate::context::window::MIN_WINDOW);
                w.source = WindowSource::Learned;
                w.max_output = w.max_output.min(w.context_window / 2);
            }
            w.usable_input()
        }
        None => window / 2,
    };
    let new_max = resolved
        .as_ref()
        .map_or(sent.max_tokens, |w| w.max_tokens());
    let target = tokens::to_estimate(usable, last);
    match new_max < sent.max_tokens {
        true => target,
        false => target.min(sent_estimate * 9 / 10),
    }
}

/// Condenses the task's conversation at the person's request (the header's button, `/compact`).
pub async fn condense_task(env: Arc<AgentEnv>, task: Arc<TaskHandle>) -> TaskEnd {
    let Some(cancel) = task.begin_run() else {
        return TaskEnd::AlreadyRunning;
    };
    let w = window(&env).await;
    let base = super::model_turn::base_request(&env, &task).await;
    let end = match condense_now(&env, &task, &base, &w, false, None, &cancel).await {
        Ok(()) => TaskEnd::Idle,
        Err(Failure::Cancelled) => TaskEnd::Cancelled,
        Err(Failure::Refused(why)) => {
            task.post(
                env.sink.as_ref(),
                UiMessage::Notice {
                    id: uuid::Uuid::new_v4().to_string(),
                    text: format!("Not condensed: {why}."),
                },
            );
            TaskEnd::Idle
        }
    };
    // A person's request is not an automatic failure streak.
    task.update_context(|s| s.failures = s.failures.min(MAX_FAILURES - 1));
    let used = tokens::in_use(
        tokens::request(&fill(&env, &task, &base, &w)),
        task.record().context.last,
    );
    publish(&env, &task, &w, used);
    task.checkpoint(env.sink.as_ref()).await;
    task.end_run();
    end
}

//! The person's own hooks at their places in a task: before and after a tool call (from the
//! orchestrator), when a message is sent, when the task would end, and at its first run (from
//! the turn loop). The rules are in [`crate::user_hooks`]; this file asks the person to confirm
//! changed hooks, runs them with the task's context and turns what they said into Mandate's
//! decisions, notices and context for the model.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::{AgentEnv, EventSink, Governance, PersonNeeded, TaskHandle};
use crate::hooks::{Action, Denial, DenialCode};
use crate::llm::ToolCall;
use crate::protocol::{
    ApprovalDecision, ApprovalDetail, ApprovalOutcome, ApprovalRequest, Event, NoticeLevel,
    TaskStatus, ToolKind,
};
use crate::tools::ToolOutput;
use crate::user_hooks::{
    self as uh, names, Common, EventReport, HookConfig, HookEvent, HookPlace, HooksState, Said,
    Trust,
};

/// Whether the hooks run now.
enum Ready {
    /// None configured, or the person declined these.
    Nothing,
    Run(Arc<HookConfig>),
    /// Not run, and tools that change things and that they would have checked are refused:
    /// the configuration does not load (`None`: every such tool) or is not confirmed.
    Refuse(Option<Arc<HookConfig>>, String),
}

const REFUSED: &str = "Tools that change files or run commands are refused until then.";

async fn state(env: &AgentEnv) -> Result<HooksState, String> {
    // Unchanged since last read (the usual case): no trip off the async worker.
    if let Some(kept) = env.gov.user_hooks.state_if_kept() {
        return Ok(kept);
    }
    let gov = env.gov.clone();
    tokio::task::spawn_blocking(move || gov.user_hooks.state())
        .await
        .map_err(|e| format!("Reading your hooks failed: {e}. {REFUSED}"))
}

fn unconfirmed(hooks: Arc<HookConfig>) -> Ready {
    Ready::Refuse(
        Some(hooks),
        format!("Your hooks are new or changed since you last confirmed them, so they were not run: confirm them in the window, or run `mandate run --trust-hooks`. {REFUSED}"),
    )
}

/// What the hooks' state means without asking anyone; `Err`: the person must confirm these
/// hooks (this fingerprint) first.
fn settled(
    state: Result<HooksState, String>,
    interactive: bool,
) -> Result<Ready, (Arc<HookConfig>, String)> {
    Ok(match state {
        Err(why) => Ready::Refuse(None, why),
        Ok(HooksState::None) => Ready::Nothing,
        Ok(HooksState::Broken(e)) => Ready::Refuse(
            None,
            format!("Your hooks configuration does not load: {e}. {REFUSED}"),
        ),
        Ok(HooksState::Ready {
            hooks,
            trust,
            fingerprint,
        }) => match trust {
            Trust::Confirmed => Ready::Run(hooks),
            Trust::Declined => Ready::Nothing,
            Trust::Unconfirmed if !interactive => unconfirmed(hooks),
            Trust::Unconfirmed => return Err((hooks, fingerprint)),
        },
    })
}

async fn ready(env: &AgentEnv, task: &TaskHandle, cancel: &CancellationToken) -> Ready {
    match settled(state(env).await, env.interactive) {
        Ok(ready) => ready,
        Err(_) => confirm(env, task, cancel).await,
    }
}

/// Asks the person (one card at a time for all tasks) whether to run the hooks as they are.
async fn confirm(env: &AgentEnv, task: &TaskHandle, cancel: &CancellationToken) -> Ready {
    let _one_card = tokio::select! {
        guard = env.gov.user_hooks.asking.lock() => guard,
        _ = cancel.cancelled() => return Ready::Refuse(None, "The task was stopped.".into()),
    };
    // Another task's card may have been answered meanwhile.
    let (hooks, fingerprint) = match settled(state(env).await, true) {
        Ok(ready) => return ready,
        Err(asked) => asked,
    };
    let gov = env.gov.clone();
    let scripts_of = hooks.clone();
    let scripts = tokio::task::spawn_blocking(move || {
        let root = gov.user_hooks.root();
        uh::code::trace(root, &scripts_of)
            .shown(&root.canonicalize().unwrap_or_else(|_| root.to_path_buf()))
    })
    .await
    .unwrap_or_default();
    let request = ApprovalRequest {
        approval_id: uuid::Uuid::new_v4().to_string(),
        call_id: String::new(),
        intent: None,
        detail: ApprovalDetail::UserHooks {
            hooks: uh::views(&hooks),
            scripts,
            ignored: hooks.ignored.clone(),
        },
        hook_reasons: Vec::new(),
    };
    let approval_id = request.approval_id.clone();
    task.set_status(env.sink.as_ref(), TaskStatus::WaitingForApproval);
    let asking = super::attention::Asking { env, task };
    let decision = super::Interaction::approve(&asking, &task.id, request, cancel).await;
    task.set_status(env.sink.as_ref(), TaskStatus::Running);
    if cancel.is_cancelled() {
        return Ready::Refuse(None, "The task was stopped.".into());
    }
    let yes = !matches!(decision, ApprovalDecision::Reject { .. });
    env.sink.emit(Event::ApprovalResolved {
        task_id: task.id.clone(),
        approval_id,
        outcome: if yes {
            ApprovalOutcome::HooksConfirmed
        } else {
            ApprovalOutcome::HooksNotRun
        },
    });
    if !yes {
        env.gov.user_hooks.decline(&fingerprint);
        env.notice("Your hooks will not run until they change or Mandate restarts.".into());
        return Ready::Nothing;
    }
    let gov = env.gov.clone();
    let saved = tokio::task::spawn_blocking(move || gov.user_hooks.confirm(&fingerprint)).await;
    if let Ok(Err(e)) = saved {
        env.notice(format!(
            "{e}. They run in this session; you will be asked again next time."
        ));
    }
    Ready::Run(hooks)
}

/// Said at the start of every run: hooks that cannot run, and what Mandate ignores.
pub(super) async fn say_state(env: &AgentEnv) {
    let (level, message) = match state(env).await {
        Err(why) => (NoticeLevel::Error, why),
        Ok(HooksState::Broken(e)) => (
            NoticeLevel::Error,
            format!("Your hooks configuration does not load: {e}. {REFUSED}"),
        ),
        Ok(HooksState::Ready { hooks, trust, .. }) => {
            if !hooks.ignored.is_empty() {
                env.sink.emit(Event::Notice {
                    level: NoticeLevel::Info,
                    message: format!("Not run by Mandate: {}.", hooks.ignored.join("; ")),
                });
            }
            match trust {
                Trust::Unconfirmed if !env.interactive => match unconfirmed(hooks) {
                    Ready::Refuse(_, why) => (NoticeLevel::Error, why),
                    _ => return,
                },
                _ => return,
            }
        }
        Ok(HooksState::None) => return,
    };
    env.sink.emit(Event::Notice { level, message });
}

async fn run(
    env: &AgentEnv,
    event: HookEvent,
    hooks: &[&uh::HookSpec],
    input: &Value,
    cancel: &CancellationToken,
) -> EventReport {
    run_in(&env.gov, env.sink.as_ref(), event, hooks, input, cancel).await
}

/// [`run`] with only what it uses (for hooks that outlive the step that started them).
async fn run_in(
    gov: &Governance,
    sink: &dyn EventSink,
    event: HookEvent,
    hooks: &[&uh::HookSpec],
    input: &Value,
    cancel: &CancellationToken,
) -> EventReport {
    let policy = gov
        .policy()
        .unwrap_or_else(|_| Arc::new(crate::hooks::command_policy::CommandPolicy::builtin()));
    let place = HookPlace {
        root: gov.root(),
        confinement: &gov.confinement,
        app_dirs: &gov.app_dirs,
        settings: policy.confinement(),
        redactor: crate::redact::Redactor::global(),
    };
    let report = uh::run_event(event, hooks, input, &place, cancel).await;
    for answer in &report.answers {
        tracing::info!(event = event.name(), hook = %answer.name, said = ?answer.said, failed = answer.failure.is_some(), "user hook");
    }
    for message in report.messages() {
        sink.emit(Event::Notice {
            level: NoticeLevel::Info,
            message,
        });
    }
    report
}

fn input(env: &AgentEnv, task: &TaskHandle, event: HookEvent, fields: Value) -> Value {
    let intent = task.governance().selected_intent;
    let common = Common {
        session_id: &task.id,
        cwd: env.gov.root(),
        intent_id: intent.as_deref(),
    };
    let fields = match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    uh::event_input(event, &common, fields)
}

/// Failures that did not decide anything, told to the person.
fn report_failures(env: &AgentEnv, report: &EventReport, fail_closed: bool, went_on: &str) {
    for line in report.failures(fail_closed).1 {
        env.notice(format!("{}; {went_on}.", upper_first(&line)));
    }
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

/// What the person's PreToolUse hooks added to a call Mandate's gate allowed or asked about.
#[derive(Debug, Default)]
pub(super) struct PreHooks {
    /// Who ran (recorded in the ledger with an approved change).
    pub ran: Vec<String>,
    /// Why a hook wants the person to approve (empty: none asks).
    pub asks: Vec<String>,
    /// For the model, added to the call's result.
    pub context: Option<String>,
    /// Who asked or added context, for the card's summary.
    pub deciders: Vec<String>,
}

/// The PreToolUse hooks on a call; a refusal carries the hooks' context for the model.
pub(super) async fn before_tool(
    env: &AgentEnv,
    task: &TaskHandle,
    call: &ToolCall,
    kind: ToolKind,
    args: &Value,
    action: &Action,
    cancel: &CancellationToken,
) -> Result<PreHooks, (Denial, Option<String>)> {
    let changes = kind != ToolKind::Read;
    let intent = task.governance().selected_intent;
    let names = names::match_names(&call.name);
    let hooks = match ready(env, task, cancel).await {
        Ready::Nothing => return Ok(PreHooks::default()),
        Ready::Run(hooks) => hooks,
        Ready::Refuse(hooks, why) => {
            let concerned =
                hooks.is_none_or(|h| !h.matching(HookEvent::PreToolUse, &names).is_empty());
            return match changes && concerned {
                true => Err((
                    Denial::new(DenialCode::HookFailure, why).with_intent(intent.as_deref()),
                    None,
                )),
                false => Ok(PreHooks::default()),
            };
        }
    };
    let matched = hooks.matching(HookEvent::PreToolUse, &names);
    if matched.is_empty() {
        return Ok(PreHooks::default());
    }
    let (tool_name, tool_input) = names::tool_name_and_input(&call.name, args, action);
    let fields = json!({
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": call.id,
        "mandate_tool_name": call.name,
    });
    let input = input(env, task, HookEvent::PreToolUse, fields);
    let report = run(env, HookEvent::PreToolUse, &matched, &input, cancel).await;
    let went_on = if changes {
        "it is advisory, so the call went on"
    } else {
        "reads go on when a hook fails"
    };
    report_failures(env, &report, changes, went_on);
    let context = report.context(HookEvent::PreToolUse);
    let denied = report.reasons(Said::Block);
    if !denied.is_empty() {
        let message = format!("Denied by {}.", denied.join("; "));
        return Err((
            Denial::new(DenialCode::HookDenied, message).with_intent(intent.as_deref()),
            context,
        ));
    }
    let (failing, _) = report.failures(changes);
    if !failing.is_empty() {
        let message = format!(
            "{}; the call was not made (a hook that fails denies a tool that changes things unless its entry says \"advisory\": true).",
            upper_first(&failing.join("; "))
        );
        env.notice(message.clone());
        return Err((
            Denial::new(DenialCode::HookFailure, message).with_intent(intent.as_deref()),
            context,
        ));
    }
    Ok(PreHooks {
        ran: report.ran(),
        asks: report.reasons(Said::Ask),
        context,
        deciders: report.deciders(),
    })
}

/// A call that passed the gate, with what its PreToolUse hooks said.
pub(super) struct Hooked<'a> {
    pub call: &'a ToolCall,
    pub args: &'a Value,
    /// As approved (the person may have edited it).
    pub action: Action,
    pub pre: PreHooks,
}

impl Hooked<'_> {
    /// After the call ran: the PostToolUse hooks (they cannot undo it; what they say is added
    /// to what the model reads), the PreToolUse hooks' context, and who decided on the card.
    pub(super) async fn after(
        self,
        env: &AgentEnv,
        task: &TaskHandle,
        output: &mut ToolOutput,
        cancel: &CancellationToken,
    ) {
        self.post_tool_use(env, task, output, cancel).await;
        output.content = with_context(&output.content, self.pre.context);
        if !self.pre.deciders.is_empty() {
            output.summary = format!(
                "{} (your hooks: {})",
                output.summary,
                self.pre.deciders.join(", ")
            );
        }
    }

    async fn post_tool_use(
        &self,
        env: &AgentEnv,
        task: &TaskHandle,
        output: &mut ToolOutput,
        cancel: &CancellationToken,
    ) {
        let Ready::Run(hooks) = ready(env, task, cancel).await else {
            return;
        };
        let (call, action) = (self.call, &self.action);
        let matched = hooks.matching(HookEvent::PostToolUse, &names::match_names(&call.name));
        if matched.is_empty() {
            return;
        }
        let (tool_name, tool_input) = names::tool_name_and_input(&call.name, self.args, action);
        let response = names::tool_response(
            &call.name,
            action,
            &output.content,
            &output.display,
            &output.summary,
            output.failed,
        );
        let fields = json!({
            "tool_name": tool_name,
            "tool_input": tool_input,
            "tool_response": response,
            "tool_use_id": call.id,
            "mandate_tool_name": call.name,
        });
        let input = input(env, task, HookEvent::PostToolUse, fields);
        let report = run(env, HookEvent::PostToolUse, &matched, &input, cancel).await;
        report_failures(env, &report, false, "the call had already run");
        let blocked = report.reasons(Said::Block);
        if !blocked.is_empty() {
            let feedback = format!(
                "After this call (which ran and was not undone), {}.",
                blocked.join("; ")
            );
            output.content = with_context(&output.content, Some(feedback.clone()));
            output.summary = format!("{} — {feedback}", output.summary);
        }
        output.content = with_context(&output.content, report.context(HookEvent::PostToolUse));
    }
}

/// The UserPromptSubmit hooks: context to send with the message, or why it is not sent.
pub(super) async fn prompt_submitted(
    env: &AgentEnv,
    task: &TaskHandle,
    prompt: &str,
    cancel: &CancellationToken,
) -> Result<Option<String>, String> {
    let Ready::Run(hooks) = ready(env, task, cancel).await else {
        return Ok(None);
    };
    let matched = hooks.matching(HookEvent::UserPromptSubmit, &[]);
    if matched.is_empty() {
        return Ok(None);
    }
    let input = input(
        env,
        task,
        HookEvent::UserPromptSubmit,
        json!({"prompt": prompt}),
    );
    let report = run(env, HookEvent::UserPromptSubmit, &matched, &input, cancel).await;
    report_failures(env, &report, false, "your message was sent");
    let blocked = report.reasons(Said::Block);
    if !blocked.is_empty() {
        return Err(format!(
            "Your message was not sent: {}.",
            blocked.join("; ")
        ));
    }
    Ok(report.context(HookEvent::UserPromptSubmit))
}

/// The Stop hooks when the agent completes: why it must go on, if a hook says so.
pub(super) async fn stopping(
    env: &AgentEnv,
    task: &TaskHandle,
    result: &str,
    already_sent_back: bool,
    cancel: &CancellationToken,
) -> Option<String> {
    let Ready::Run(hooks) = ready(env, task, cancel).await else {
        return None;
    };
    let matched = hooks.matching(HookEvent::Stop, &[]);
    if matched.is_empty() {
        return None;
    }
    let fields = json!({
        "stop_hook_active": already_sent_back,
        "last_assistant_message": result,
    });
    let input = input(env, task, HookEvent::Stop, fields);
    let report = run(env, HookEvent::Stop, &matched, &input, cancel).await;
    report_failures(env, &report, false, "the task may end");
    let blocked = report.reasons(Said::Block);
    (!blocked.is_empty()).then(|| blocked.join("; "))
}

/// The SessionStart hooks at a task's first run: context for the conversation.
pub(super) async fn session_started(
    env: &AgentEnv,
    task: &TaskHandle,
    cancel: &CancellationToken,
) -> Option<String> {
    let Ready::Run(hooks) = ready(env, task, cancel).await else {
        return None;
    };
    let matched = hooks.matching(HookEvent::SessionStart, &["startup"]);
    if matched.is_empty() {
        return None;
    }
    let input = input(
        env,
        task,
        HookEvent::SessionStart,
        json!({"source": "startup"}),
    );
    let report = run(env, HookEvent::SessionStart, &matched, &input, cancel).await;
    report_failures(env, &report, false, "the task goes on");
    report.context(HookEvent::SessionStart)
}

/// The Notification hooks when the person is needed (advisory: nothing waits on what they
/// say). Only hooks the person confirmed run, and this never asks: the card that waits may be
/// the confirmation itself. In the window they run in the background, so the card or question
/// is not held up; headless they are awaited, so that they end before the run does.
pub(super) async fn notification(env: &AgentEnv, task: &TaskHandle, need: &PersonNeeded) {
    let Ok(HooksState::Ready {
        hooks,
        trust: Trust::Confirmed,
        ..
    }) = state(env).await
    else {
        return;
    };
    let names = [need.waiting.notification_type(), need.waiting.name()];
    if hooks.matching(HookEvent::Notification, &names).is_empty() {
        return;
    }
    let fields = json!({
        "message": need.message(),
        "notification_type": need.waiting.notification_type(),
        "mandate_waiting": need.waiting.name(),
        "mandate_task_title": need.title,
    });
    let input = input(env, task, HookEvent::Notification, fields);
    let (gov, sink) = (env.gov.clone(), env.sink.clone());
    let work = async move {
        let matched = hooks.matching(HookEvent::Notification, &names);
        let event = HookEvent::Notification;
        let cancel = CancellationToken::new();
        let report = run_in(&gov, sink.as_ref(), event, &matched, &input, &cancel).await;
        for line in report.failures(false).1 {
            sink.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!("{}; it is only a notification.", upper_first(&line)),
            });
        }
    };
    match env.interactive {
        true => drop(tokio::spawn(work)),
        false => work.await,
    }
}

/// `content` with the hooks' context after it (inside a JSON error, as `hook_context`).
pub(super) fn with_context(content: &str, context: Option<String>) -> String {
    let Some(context) = context.filter(|c| !c.is_empty()) else {
        return content.to_string();
    };
    if let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(content) {
        let merged = match map.get("hook_context").and_then(Value::as_str) {
            Some(earlier) => format!("{earlier}\n{context}"),
            None => context,
        };
        map.insert("hook_context".into(), Value::String(merged));
        return Value::Object(map).to_string();
    }
    if content.is_empty() {
        context
    } else {
        format!("{content}\n\n{context}")
    }
}

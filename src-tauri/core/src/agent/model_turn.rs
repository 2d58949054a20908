//! One request to the model: the system prompt (kept byte for byte while what it is made of
//! does not change, so prompt caches hit), the history fitted to the window, the answer
//! streamed into the window, and a context-length refusal answered by sending less.

use std::hash::{Hash, Hasher};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::turn::add_error;
use super::{context_steps, AgentEnv, TaskEnd, TaskHandle};
use crate::llm::{collect_turn, LlmError, ModelRequest, ThinkingBlock};
use crate::markdown::StreamingRenderer;
use crate::orchestration::ledger::now_rfc3339;
use crate::prompt::{self, PromptContext};
use crate::protocol::{Event, UiMessage};

/// Context-length refusals answered by sending less before the task stops.
const MAX_CONTEXT_RETRIES: u32 = 3;

/// The window never shows a secret Mandate holds, even one the model wrote out.
fn redact(html: String) -> String {
    match crate::redact::Redactor::global().redact(&html) {
        std::borrow::Cow::Borrowed(_) => html,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

/// What the prompt reads from disk: the intents, the active intent's history, rules, lessons.
struct PromptInputs {
    intents: crate::orchestration::intents::IntentsSnapshot,
    history: Vec<crate::protocol::TraceChange>,
    rules: Vec<(String, String)>,
    lessons: Option<String>,
    modes: crate::modes::LoadedModes,
    /// The rules of the task's mode.
    mode_rules: Vec<(String, String)>,
    skills: Vec<crate::modes::commands::Skill>,
    commands: Vec<crate::modes::commands::SlashCommand>,
}

impl PromptInputs {
    /// Reads everything (blocking); a ledger that cannot be read costs only the history.
    fn load(
        gov: &super::Governance,
        selected: Option<&str>,
        mode: Option<&str>,
        worked_on: &[String],
    ) -> (Self, Option<String>) {
        let intents = gov.intents.snapshot();
        let (history, problem) = match selected.and_then(|id| intents.doc.get(id)) {
            Some(i) => match crate::orchestration::trace::intent_changes(gov.root(), &i.id) {
                Ok(h) => (h, None),
                Err(e) => (
                    Vec::new(),
                    Some(format!(
                        "The trace ledger could not be read for the intent's history: {e}"
                    )),
                ),
            },
            None => (Vec::new(), None),
        };
        let config = gov.config_dir();
        // What cannot be read is said where the modes' problems are (Settings, `mandate run`).
        let mut ignored = Vec::new();
        let inputs = Self {
            skills: crate::modes::commands::load_skills(gov.root(), config, &mut ignored),
            commands: crate::modes::commands::load_commands(gov.root(), config, &mut ignored),
            modes: crate::modes::load_modes(gov.root(), config),
            mode_rules: mode
                .map(|slug| crate::modes::mode_rules(gov.root(), config, slug))
                .unwrap_or_default(),
            rules: prompt::load_rules(gov.root(), config, worked_on),
            lessons: crate::orchestration::lessons::read_recent(gov.root(), 6_000),
            intents,
            history,
        };
        (inputs, problem)
    }
}

/// The system prompt and the tools (the messages are the context's to fill).
pub(super) async fn base_request(env: &AgentEnv, task: &TaskHandle) -> ModelRequest {
    let record = task.record();
    let gov = env.gov.clone();
    let selected = record.governance.selected_intent.clone();
    let mode = record.summary.mode.clone();
    let mut worked_on: Vec<String> = record.governance.read_hashes.keys().cloned().collect();
    worked_on.sort();
    let (inputs, problem) = match tokio::task::spawn_blocking(move || {
        PromptInputs::load(&gov, selected.as_deref(), mode.as_deref(), &worked_on)
    })
    .await
    {
        Ok(loaded) => loaded,
        Err(e) => (
            PromptInputs {
                intents: env.gov.intents.snapshot(),
                history: Vec::new(),
                rules: Vec::new(),
                lessons: None,
                modes: Default::default(),
                mode_rules: Vec::new(),
                skills: Vec::new(),
                commands: Vec::new(),
            },
            Some(format!("Reading the workspace for the prompt failed: {e}")),
        ),
    };
    if let Some(problem) = problem {
        env.notice(problem);
    }
    let active = record
        .governance
        .selected_intent
        .as_deref()
        .and_then(|id| inputs.intents.doc.get(id));
    let mode = current_mode(env, task, &record, &inputs.modes);
    let policy = task.governance().mode;
    let offered: Vec<&dyn crate::tools::Tool> = env
        .tools
        .iter()
        .map(|t| t.as_ref())
        .filter(|t| crate::modes::offers(policy.as_ref(), t.name()))
        .collect();
    let tool_names: Vec<&str> = offered.iter().map(|t| t.name()).collect();
    let date = now_rfc3339();
    // What the prompt is made of, less what changes with every write (the intent's recent
    // history): while this is the same, the same prompt is sent. A new lesson (rare: a failed
    // command, record_lesson) is worth a cache miss.
    let key = {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (
            active.map(|i| format!("{i:?}")),
            inputs.intents.doc.open_ids(),
            &inputs.rules,
            &inputs.lessons,
            crate::text::prefix(&date, 10),
            &record.objective,
            &env.custom_instructions,
            &tool_names,
            record.context.condensations.len(),
            mode.map(|m| format!("{m:?}")),
            &inputs.mode_rules,
            format!("{:?}{:?}", inputs.skills, inputs.commands),
        )
            .hash(&mut h);
        h.finish()
    };
    let tools = offered.iter().map(|t| t.spec()).collect();
    if let Some(system) = task.cached_system(key) {
        return ModelRequest {
            system,
            tools,
            ..ModelRequest::default()
        };
    }
    let system = prompt::build(&PromptContext {
        root: env.gov.root(),
        intents: &inputs.intents,
        active_intent: active,
        recent_history: &inputs.history,
        rules: &inputs.rules,
        lessons: inputs.lessons.as_deref(),
        os: std::env::consts::OS,
        shell: "sh",
        date: crate::text::prefix(&date, 10),
        objective: &record.objective,
        custom_instructions: &env.custom_instructions,
        tool_names: &tool_names,
        mode,
        modes: &inputs.modes.modes,
        mode_rules: &inputs.mode_rules,
        skills: &inputs.skills,
        commands: &inputs.commands,
    });
    task.cache_system(key, system.clone());
    ModelRequest {
        system,
        tools,
        ..ModelRequest::default()
    }
}

/// One request to the model, streamed into the UI. Errors end the run; a context-length
/// refusal is answered by condensing (or leaving out the oldest turns) and sending again,
/// strictly smaller each time, at most three times.
pub(super) async fn model_turn(
    env: &AgentEnv,
    task: &TaskHandle,
    cancel: &CancellationToken,
) -> Result<crate::llm::AssistantTurn, TaskEnd> {
    let base = base_request(env, task).await;
    let mut prepared = context_steps::prepare(env, task, &base, None, cancel).await?;
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
    let mut attempt = 0u32;
    let started = loop {
        let started = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(LlmError::Cancelled),
            s = env.provider.stream(&prepared.request) => s,
        };
        let Err(LlmError::ContextTooLong {
            limit,
            requested,
            message,
            ..
        }) = &started
        else {
            break started;
        };
        if attempt >= MAX_CONTEXT_RETRIES {
            break Err(LlmError::BadRequest {
                status: 400,
                message: too_long_at_last(*limit, message),
            });
        }
        attempt += 1;
        let target = context_steps::learn_from(
            env,
            task,
            &prepared.request,
            prepared.estimate,
            *limit,
            *requested,
        );
        env.sink.emit(Event::ContextRetry {
            task_id: task.id.clone(),
            attempt,
            limit_tokens: *limit,
            message: message.clone(),
        });
        let smaller = context_steps::prepare(env, task, &base, Some(target), cancel).await?;
        let total = |p: &context_steps::Prepared| p.estimate + u64::from(p.request.max_tokens);
        if total(&smaller) >= total(&prepared) {
            break Err(LlmError::BadRequest {
                status: 400,
                message: too_long_at_last(*limit, message),
            });
        }
        prepared = smaller;
    };
    let collected = match started {
        Ok(stream) => collect_turn(stream, cancel, |delta| {
            renderer.push(delta);
            if let Some(update) = renderer.update_if_due(Instant::now()) {
                env.sink.emit(Event::MessageDelta {
                    task_id: task.id.clone(),
                    message_id: message_id.clone(),
                    stable_safe_html: redact(update.stable_html),
                    safe_html: redact(update.tail_html),
                    reset: update.reset,
                });
            }
        })
        .await
        .map_err(|f| f.error),
        Err(e) => Err(e),
    };
    let html = redact(renderer.finish());
    match collected {
        Ok(turn) => {
            context_steps::measured(task, prepared.estimate, &turn);
            show_thinking(env, task, &turn.thinking);
            env.sink.emit(Event::MessageFinished {
                task_id: task.id.clone(),
                message_id: message_id.clone(),
                safe_html: html.clone(),
                complete: true,
            });
            let shown = (!turn.text.trim().is_empty()).then(|| UiMessage::Assistant {
                id: message_id.clone(),
                safe_html: html.clone(),
                complete: true,
            });
            task.push_turn(&turn, shown);
            task.emit_summary(env.sink.as_ref());
            task.checkpoint(env.sink.as_ref()).await;
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
                task.push_message(UiMessage::Assistant {
                    id: message_id,
                    safe_html: html,
                    complete: false,
                });
            }
            if error == LlmError::Cancelled {
                add_error(env, task, "Stopped. The partial answer above was not kept; send a message or retry to go on.".into());
                task.checkpoint(env.sink.as_ref()).await;
                return Err(TaskEnd::Cancelled);
            }
            let message = error.to_string();
            add_error(env, task, message.clone());
            task.checkpoint(env.sink.as_ref()).await;
            Err(TaskEnd::Failed(message))
        }
    }
}

/// The task stops: what happened, and what the person can do.
fn too_long_at_last(limit: Option<u64>, message: &str) -> String {
    let window = match limit {
        Some(l) => format!("the model's window of {l} tokens"),
        None => "the model's context window".to_string(),
    };
    format!(
        "The conversation still did not fit {window} after {MAX_CONTEXT_RETRIES} tries, each smaller than the last (the provider said: {message}). \
The whole conversation is kept. Condense it by hand and retry, set a smaller context window for this model in Settings, or start a new task from a summary of this one."
    )
}

/// The model's reasoning, shown collapsed before its answer (never in the ledger).
fn show_thinking(env: &AgentEnv, task: &TaskHandle, thinking: &[ThinkingBlock]) {
    if thinking.is_empty() {
        return;
    }
    let text = thinking
        .iter()
        .map(|b| match b {
            ThinkingBlock::Thinking { text, .. } => text.trim().to_string(),
            ThinkingBlock::Redacted { .. } => "[reasoning the provider keeps encrypted]".into(),
        })
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    if text.is_empty() {
        return;
    }
    let text = crate::redact::Redactor::global().redact(&text).into_owned();
    task.post(
        env.sink.as_ref(),
        UiMessage::Thinking {
            id: uuid::Uuid::new_v4().to_string(),
            text,
        },
    );
}

/// The task's mode as its file says now: a changed mode file counts from this turn (its
/// policy is what the gate holds the task to); a mode that is gone keeps the task under the
/// rules it last had, and the person is told.
fn current_mode<'m>(
    env: &AgentEnv,
    task: &TaskHandle,
    record: &super::store::TaskRecord,
    modes: &'m crate::modes::LoadedModes,
) -> Option<&'m crate::modes::Mode> {
    let slug = record.summary.mode.as_deref()?;
    match modes.get(slug) {
        Some(mode) => {
            if record.governance.mode.as_ref() != Some(&mode.policy()) {
                task.set_mode(mode);
            }
            Some(mode)
        }
        None => {
            env.notice(format!(
                "The task's mode `{slug}` is no longer defined; the task keeps the rules that mode had."
            ));
            None
        }
    }
}

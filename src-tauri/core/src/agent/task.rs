//! A task in memory: its record (conversation, transcript, governance state), saved at every
//! checkpoint, and the named changes other modules make to it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::store::{TaskRecord, TaskStore};
use super::{EventSink, Interaction};
use crate::hooks::TaskGovernance;
use crate::llm::{AssistantTurn, ChatMessage};
use crate::orchestration::intents::{Intent, IntentsSnapshot};
use crate::orchestration::ledger::now_rfc3339;
use crate::protocol::{
    Event, IntentStatus, NoticeLevel, TaskStatus, TaskSummary, UiMessage, Usage,
};

/// Why an intent cannot be selected, in words for the model and the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("There is no intent `{id}`. {listing}")]
    Unknown { id: String, listing: String },
    #[error("Intent `{id}` is DONE and cannot be selected. {listing}")]
    Done { id: String, listing: String },
    #[error("{0}")]
    Broken(String),
}

/// Whether `id` may be selected now: the one rule for the tool and the window.
pub fn check_selectable(intents: &IntentsSnapshot, id: &str) -> Result<(), SelectError> {
    let listing = if intents.doc.open_ids().is_empty() {
        "There are no selectable intents; ask the user to create one.".to_string()
    } else {
        format!("Valid ids: {}.", intents.doc.open_ids_listed(50))
    };
    match intents.doc.get(id) {
        None => match crate::hooks::broken_intents_file(intents) {
            // The file does not load: say so, never "there is no such intent".
            Some(problem) => Err(SelectError::Broken(problem)),
            None => Err(SelectError::Unknown {
                id: id.to_string(),
                listing,
            }),
        },
        Some(i) if i.status == IntentStatus::Done => Err(SelectError::Done {
            id: id.to_string(),
            listing,
        }),
        Some(_) => Ok(()),
    }
}

/// The conversation never holds a secret Mandate knows: it is stored and sent to the model.
/// (A call already made with the original arguments is not affected.)
fn redacted(message: ChatMessage) -> ChatMessage {
    let r = crate::redact::Redactor::global();
    let clean = |s: String| match r.redact(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(o) => o,
    };
    match message {
        ChatMessage::User { text, images } => ChatMessage::User {
            text: clean(text),
            images,
        },
        ChatMessage::Assistant {
            text,
            tool_calls,
            thinking,
        } => ChatMessage::Assistant {
            text: clean(text),
            // Signed reasoning must go back byte for byte; it is never shown to a person
            // outside the task, and a changed block would be refused by the provider.
            thinking,
            tool_calls: tool_calls
                .into_iter()
                .map(|mut c| {
                    c.arguments = clean(c.arguments);
                    c
                })
                .collect(),
        },
        ChatMessage::ToolResult {
            call_id,
            name,
            content,
            is_error,
        } => ChatMessage::ToolResult {
            call_id,
            name,
            content: clean(content),
            is_error,
        },
    }
}

/// Adds one request's tokens and cost to a task's (cache reads and writes counted as input
/// too, and what the cache saved).
pub(crate) fn add_usage(total: &mut Usage, add: &crate::llm::TokenUsage, model_id: &str) {
    total.input_tokens += add.input_tokens + add.cache_read_tokens + add.cache_write_tokens;
    total.output_tokens += add.output_tokens;
    total.cache_read_tokens += add.cache_read_tokens;
    total.cache_write_tokens += add.cache_write_tokens;
    if let Some(cost) = add.cost_usd {
        total.cost_usd = Some(total.cost_usd.unwrap_or(0.0) + cost);
    }
    let model = model_id.split_once('/').map_or(model_id, |(_, m)| m);
    if let Some(saved) = crate::llm::cache_savings(model, add).filter(|s| *s > 0.0) {
        total.cache_saved_usd = Some(total.cache_saved_usd.unwrap_or(0.0) + saved);
    }
}

pub struct TaskHandle {
    pub id: String,
    record: Mutex<TaskRecord>,
    store: Arc<TaskStore>,
    cancel: Mutex<CancellationToken>,
    running: AtomicBool,
    /// The task's private temporary directory for commands, made on first use, removed with it.
    temp_dir: Mutex<Option<tempfile::TempDir>>,
    /// Whether the person was told this task's commands are not confined.
    told_unconfined: AtomicBool,
    /// The system prompt as last sent, and what it was made from: it stays the same, byte for
    /// byte, while that does not change, so the provider's prompt cache keeps hitting.
    system_prompt: Mutex<Option<(u64, String)>>,
    /// Estimated tokens of the system prompt and tools last sent (what every request carries).
    fixed_tokens: std::sync::atomic::AtomicU64,
    /// What the model reads after the person's next message, unseen by them (a subtask's note).
    briefing: Mutex<Option<String>>,
    /// Images the person attached to the message the next run begins with.
    attached: Mutex<(Vec<crate::llm::ImageData>, Vec<crate::protocol::ImageView>)>,
    /// A subtask's, while its parent waits: the parent's run token, so stopping the parent
    /// stops the subtask's runs too.
    linked: Mutex<Option<CancellationToken>>,
    /// How the last run ended (what a parent waiting for this subtask watches).
    ended: tokio::sync::watch::Sender<Option<super::TaskEnd>>,
}

impl TaskHandle {
    pub fn new(record: TaskRecord, store: Arc<TaskStore>) -> Arc<Self> {
        Arc::new(Self {
            id: record.summary.id.clone(),
            record: Mutex::new(record),
            store,
            cancel: Mutex::new(CancellationToken::new()),
            running: AtomicBool::new(false),
            temp_dir: Mutex::new(None),
            told_unconfined: AtomicBool::new(false),
            system_prompt: Mutex::new(None),
            fixed_tokens: std::sync::atomic::AtomicU64::new(0),
            briefing: Mutex::new(None),
            attached: Mutex::default(),
            linked: Mutex::new(None),
            ended: tokio::sync::watch::channel(None).0,
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
        let title = objective.split_whitespace().collect::<Vec<_>>().join(" ");
        let title = crate::text::first_chars(&title, 80).to_string();
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
                context: None,
                mode: None,
                todos: Vec::new(),
                todos_edited: false,
                parent_id: None,
                profile: None,
            },
            conversation: Vec::new(),
            messages: Vec::new(),
            governance: TaskGovernance {
                task_id: id,
                ..TaskGovernance::default()
            },
            objective: objective.to_string(),
            turns: Vec::new(),
            context: Default::default(),
            parent_call_id: None,
        };
        Self::new(record, store)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TaskRecord> {
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the record in memory (saved at the next checkpoint).
    fn update<R>(&self, f: impl FnOnce(&mut TaskRecord) -> R) -> R {
        let mut record = self.lock();
        let r = f(&mut record);
        record.summary.updated_at = now_rfc3339();
        r
    }

    /// Saves the record (off the async workers: it fsyncs); a failure is reported, never fatal
    /// to the task.
    pub async fn checkpoint(&self, sink: &dyn EventSink) {
        let record = self.lock().clone();
        let store = self.store.clone();
        let saved =
            tokio::task::spawn_blocking(move || store.save(&record).map_err(|e| e.to_string()))
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
        if let Err(e) = saved {
            sink.emit(Event::Notice {
                level: NoticeLevel::Error,
                message: format!(
                    "{e}. The task goes on, but this step may be lost if Mandate stops."
                ),
            });
        }
    }

    /// Where the task's history (and its kept outputs) live.
    pub fn store(&self) -> Arc<TaskStore> {
        self.store.clone()
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

    // ---- governance ------------------------------------------------------------------------

    /// Takes `id` for this task (after [`check_selectable`]); returns the intent.
    pub fn select_intent(
        &self,
        intents: &IntentsSnapshot,
        id: &str,
    ) -> Result<Intent, SelectError> {
        check_selectable(intents, id)?;
        let intent = intents
            .doc
            .get(id)
            .cloned()
            .ok_or_else(|| SelectError::Unknown {
                id: id.to_string(),
                listing: String::new(),
            })?;
        self.update(|r| {
            r.governance.selected_intent = Some(id.to_string());
            r.summary.intent_id = Some(id.to_string());
        });
        Ok(intent)
    }

    /// Puts the task in `mode` (its policy gates every later call).
    pub fn set_mode(&self, mode: &crate::modes::Mode) {
        self.update(|r| {
            r.governance.mode = Some(mode.policy());
            r.summary.mode = Some(mode.slug.clone());
        });
    }

    /// Replaces the todo list: by the model (`by_person` false) or the person, whose edit the
    /// model is told of until it writes the list again.
    pub fn set_todos(&self, todos: Vec<crate::protocol::TodoItem>, by_person: bool) {
        self.update(|r| {
            r.summary.todos = todos;
            r.summary.todos_edited = by_person;
        });
    }

    /// Makes this new task a subtask of `parent`, started by its call `call_id`: it works under
    /// `intent` and, like every task above it, within the parent's intents.
    pub fn set_parent(&self, parent: &TaskHandle, call_id: &str, intent: Option<String>) {
        let above = parent.governance();
        self.update(|r| {
            r.summary.parent_id = Some(parent.id.clone());
            r.parent_call_id = Some(call_id.to_string());
            r.governance.parent_task = Some(parent.id.clone());
            r.governance.within = above
                .within
                .iter()
                .chain(&above.selected_intent)
                .cloned()
                .collect();
            r.governance.within.dedup();
            r.summary.intent_id = intent.clone();
            r.governance.selected_intent = intent;
        });
    }

    /// The task that started this one, for a subtask.
    pub fn parent_task(&self) -> Option<String> {
        self.lock().governance.parent_task.clone()
    }

    /// Posts `message`, or replaces the one with its id (a subtask's card as it ends).
    pub fn post_replacing(&self, sink: &dyn EventSink, message: UiMessage) {
        let id = |m: &UiMessage| match m {
            UiMessage::Subtask { id, .. } => Some(id.clone()),
            _ => None,
        };
        let key = id(&message);
        self.update(|r| {
            match r
                .messages
                .iter_mut()
                .find(|m| key.is_some() && id(m) == key)
            {
                Some(old) => *old = message.clone(),
                None => r.messages.push(message.clone()),
            }
        });
        sink.emit(Event::MessageAdded {
            task_id: self.id.clone(),
            message,
        });
    }

    /// How runs of this task end from now on (the current value included).
    pub fn watch_end(&self) -> tokio::sync::watch::Receiver<Option<super::TaskEnd>> {
        self.ended.subscribe()
    }

    /// Context for the model to read with the next message (see `briefing`).
    pub(super) fn brief(&self, note: String) {
        *self.briefing.lock().unwrap_or_else(|p| p.into_inner()) = Some(note);
    }

    pub(super) fn take_briefing(&self) -> Option<String> {
        self.briefing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The provider profile the task runs on (see `profiles`).
    pub fn set_profile(&self, id: Option<String>) {
        self.update(|r| r.summary.profile = id);
    }

    /// Images that go with the person's next message (`begin_turn` takes them).
    pub fn attach_images(&self, images: Vec<crate::images::Prepared>) {
        let split = images.into_iter().map(|a| (a.data, a.view)).unzip();
        *self.attached.lock().unwrap_or_else(|p| p.into_inner()) = split;
    }

    /// Runs of this task stop when `parent` is cancelled (None: no longer).
    pub(super) fn link_cancel(&self, parent: Option<&CancellationToken>) {
        *self.linked.lock().unwrap_or_else(|p| p.into_inner()) = parent.cloned();
    }

    /// The task was deleted: a parent waiting for it goes on, told it was stopped.
    pub fn abandon(&self) {
        self.publish_end(&super::TaskEnd::Cancelled);
    }

    pub(super) fn publish_end(&self, end: &super::TaskEnd) {
        self.ended.send_replace(Some(end.clone()));
    }

    /// The person took the intent away from the task.
    pub fn clear_intent(&self) {
        self.update(|r| {
            r.governance.selected_intent = None;
            r.summary.intent_id = None;
        });
    }

    /// The bytes this task last read or wrote at `rel` (for the stale guard).
    pub fn record_read(&self, rel: &str, hash: String) {
        self.update(|r| {
            r.governance.read_hashes.insert(rel.to_string(), hash);
        });
    }

    /// Runs `command` without asking again for the rest of the task.
    pub fn always_allow(&self, command: &str) {
        self.update(|r| {
            r.governance
                .always_allowed_commands
                .insert(command.trim().to_string());
        });
    }

    // ---- transcript and conversation -------------------------------------------------------

    /// Appends a message to the transcript and shows it in the UI (one id for both).
    pub fn post(&self, sink: &dyn EventSink, message: UiMessage) {
        self.push_message(message.clone());
        sink.emit(Event::MessageAdded {
            task_id: self.id.clone(),
            message,
        });
    }

    /// The person's message starts a turn: it enters the conversation and the transcript under
    /// one id, and where it sits is remembered so the turn can be taken back. `context` (from
    /// the person's hooks) follows the message in the conversation only.
    pub fn begin_turn(&self, sink: &dyn EventSink, text: String, context: Option<String>) {
        let id = uuid::Uuid::new_v4().to_string();
        let sent = match context {
            Some(context) => format!("{text}\n\n{context}"),
            None => text.clone(),
        };
        let (images, views) =
            std::mem::take(&mut *self.attached.lock().unwrap_or_else(|p| p.into_inner()));
        self.update(|r| {
            r.turns.push(super::store::TurnMark {
                message_id: id.clone(),
                text: text.clone(),
                conversation_at: r.conversation.len(),
                messages_at: r.messages.len(),
            });
            r.conversation
                .push(ChatMessage::User { text: sent, images });
        });
        let images = views;
        self.post(sink, UiMessage::User { id, text, images });
    }

    /// Takes the task back to before the turn `message_id` (see `TaskRecord::rewind_to`).
    pub fn rewind_to(&self, message_id: &str) -> Option<String> {
        self.update(|r| r.rewind_to(message_id))
    }

    /// Appends a message to the transcript that the UI already shows.
    pub fn push_message(&self, message: UiMessage) {
        self.update(|r| r.messages.push(message));
    }

    pub fn push_conversation(&self, message: ChatMessage) {
        let message = redacted(message);
        self.update(|r| r.conversation.push(message));
    }

    /// The model's finished turn, with its usage added to the task's.
    pub fn push_turn(&self, turn: &AssistantTurn, shown: Option<UiMessage>) {
        self.update(|r| {
            if let Some(message) = shown {
                r.messages.push(message);
            }
            r.conversation.push(redacted(ChatMessage::Assistant {
                text: turn.text.clone(),
                tool_calls: turn.tool_calls.clone(),
                thinking: turn.thinking.clone(),
            }));
            add_usage(&mut r.summary.usage, &turn.usage, &r.summary.model);
        });
    }

    /// Changes what the task remembers of its context (saved at the next checkpoint).
    pub fn update_context<R>(&self, f: impl FnOnce(&mut crate::context::ContextState) -> R) -> R {
        self.update(|r| f(&mut r.context))
    }

    /// The gauge's figures, shown with the task's summary.
    pub fn set_context_view(&self, view: crate::protocol::ContextView) {
        self.update(|r| r.summary.context = Some(view));
    }

    /// A request made for the task itself (a summary) adds its tokens and cost to the task's.
    pub fn add_usage(&self, usage: &crate::llm::TokenUsage) {
        self.update(|r| {
            let model = r.summary.model.clone();
            add_usage(&mut r.summary.usage, usage, &model)
        });
    }

    /// The system prompt this task last sent, if it was made for `key`.
    pub fn cached_system(&self, key: u64) -> Option<String> {
        let cache = self.system_prompt.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .as_ref()
            .filter(|(k, _)| *k == key)
            .map(|(_, s)| s.clone())
    }

    /// What every request of this task carries before its messages (estimated tokens).
    pub fn fixed_tokens(&self) -> u64 {
        self.fixed_tokens.load(Ordering::Relaxed)
    }

    pub fn set_fixed_tokens(&self, tokens: u64) {
        self.fixed_tokens.store(tokens, Ordering::Relaxed);
    }

    pub fn cache_system(&self, key: u64, system: String) {
        *self.system_prompt.lock().unwrap_or_else(|p| p.into_inner()) = Some((key, system));
    }

    /// A plain answer (no tool call) at the end of the conversation is dropped, so that a retry
    /// asks for it again.
    pub fn drop_plain_answer(&self) {
        self.update(|r| {
            if let Some(ChatMessage::Assistant { tool_calls, .. }) = r.conversation.last() {
                if tool_calls.is_empty() {
                    r.conversation.pop();
                }
            }
        });
    }

    /// A process killed mid-call leaves tool calls without results; the API needs one for each.
    pub fn repair_interrupted_calls(
        &self,
        result: &str,
        known: &std::collections::HashMap<String, (String, bool)>,
    ) {
        self.update(|r| {
            let Some(ChatMessage::Assistant { tool_calls, .. }) = r.conversation.last() else {
                return;
            };
            let missing: Vec<(String, String)> = tool_calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone()))
                .collect();
            for (call_id, name) in missing {
                let (content, is_error) = known
                    .get(&call_id)
                    .cloned()
                    .unwrap_or_else(|| (result.to_string(), true));
                r.conversation.push(ChatMessage::ToolResult {
                    call_id,
                    name,
                    content,
                    is_error,
                });
            }
        });
    }

    // ---- status ----------------------------------------------------------------------------

    pub fn emit_summary(&self, sink: &dyn EventSink) {
        sink.emit(Event::TaskUpdated {
            task: self.summary(),
        });
    }

    pub fn set_status(&self, sink: &dyn EventSink, status: TaskStatus) {
        self.update(|r| r.summary.status = status);
        self.emit_summary(sink);
    }

    /// Running with `model`, the last error cleared.
    pub fn mark_running(&self, model: String) {
        self.update(|r| {
            r.summary.status = TaskStatus::Running;
            r.summary.error = None;
            r.summary.model = model;
        });
    }

    pub fn set_outcome(&self, status: TaskStatus, error: Option<String>) {
        self.update(|r| {
            r.summary.status = status;
            r.summary.error = error;
        });
    }

    /// Asks the person (or the runner) a question and waits, with the task's status saying so.
    pub async fn ask(
        &self,
        interaction: &dyn Interaction,
        sink: &dyn EventSink,
        call_id: &str,
        question: &str,
        options: &[String],
        cancel: &CancellationToken,
    ) -> Option<String> {
        self.set_status(sink, TaskStatus::WaitingForAnswer);
        let answer = interaction
            .ask(&self.id, call_id, question, options, cancel)
            .await;
        self.set_status(sink, TaskStatus::Running);
        answer
    }

    /// The task's private temporary directory for commands (made on first use).
    pub fn temp_dir(&self) -> std::io::Result<std::path::PathBuf> {
        let mut dir = self.temp_dir.lock().unwrap_or_else(|p| p.into_inner());
        if dir.is_none() {
            *dir = Some(crate::sandbox::private_temp_dir()?);
        }
        Ok(dir
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_default())
    }

    /// True the first time only (per task and process): say once that commands are unconfined.
    pub fn first_unconfined_notice(&self) -> bool {
        !self.told_unconfined.swap(true, Ordering::SeqCst)
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

    /// Claims the task for one run; None when it is running already.
    pub fn begin_run(&self) -> Option<CancellationToken> {
        if self.running.swap(true, Ordering::SeqCst) {
            return None;
        }
        let token = match &*self.linked.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        };
        *self.cancel.lock().unwrap_or_else(|p| p.into_inner()) = token.clone();
        Some(token)
    }

    pub fn end_run(&self) {
        self.running.store(false, Ordering::SeqCst);
    }
}

//! `new_task`: hand part of the work to a subtask, in a mode of its own, with its own
//! conversation. The call only checks and describes the subtask; the turn loop starts it and
//! waits (see `agent::subtask`). A subtask works under its parent's intent, or under an intent
//! whose scope lies inside it: it never reaches wider than its parent.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::orchestration::intents::Intent;
use crate::protocol::{TodoItem, ToolKind};

/// Start a subtask: a new task in the given mode that does one well-defined part of the work
/// with a fresh conversation, then reports back. You wait until it finishes; its
/// attempt_completion result is this call's result. Several subtasks in read-only modes (e.g.
/// ask) started in the same answer run side by side.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The slug of the subtask's mode (one the prompt lists, e.g. code, ask, debug).
    pub mode: String,
    /// Everything the subtask needs to know: it does not see this conversation. Say what to do,
    /// what is known, where to look, and what its completion should report.
    pub message: String,
    /// Its starting todo list, as update_todo_list takes it ([ ] / [-] / [x] lines).
    #[serde(default)]
    pub todos: Option<String>,
    /// An intent whose owned scope lies inside your intent's, to narrow the subtask further;
    /// leave it out to give the subtask your intent.
    #[serde(default)]
    pub intent_id: Option<String>,
}

/// A subtask as checked, for the turn loop to start.
#[derive(Debug, Clone, PartialEq)]
pub struct SubtaskSpec {
    pub mode: crate::modes::Mode,
    pub message: String,
    pub todos: Vec<TodoItem>,
    /// Its own intent (None: the parent's).
    pub intent_id: Option<String>,
}

impl SubtaskSpec {
    /// A subtask whose mode can change nothing (no edit, command or MCP tools): such subtasks
    /// may run side by side.
    pub fn read_only(&self) -> bool {
        use crate::modes::Group;
        ![Group::Edit, Group::Command, Group::Mcp]
            .iter()
            .any(|g| self.mode.groups.contains(g))
    }
}

pub struct NewTask;

pub struct Work {
    slug: String,
    message: String,
    todos: Vec<TodoItem>,
    intent_id: Option<String>,
}

/// At most this much of the message (the subtask's whole briefing).
const MAX_MESSAGE: usize = 100_000;

#[async_trait]
impl AgentTool for NewTask {
    type Args = Args;
    type Work = Work;
    const NAME: &'static str = "new_task";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "Start a subtask in a mode (its own conversation, your intent or a narrower one); you wait for its result.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<Work>, ToolError> {
        let slug = args.mode.trim().to_string();
        if slug.is_empty() {
            return Err(ToolError::InvalidArguments(
                "mode is empty: name one of the modes the prompt lists".into(),
            ));
        }
        let message = args.message.trim().to_string();
        if message.is_empty() {
            return Err(ToolError::InvalidArguments(
                "message is empty: the subtask sees only this message, so say what it must do"
                    .into(),
            ));
        }
        if message.len() > MAX_MESSAGE {
            return Err(ToolError::InvalidArguments(format!(
                "message is {} bytes; at most {MAX_MESSAGE}",
                message.len()
            )));
        }
        let todos = match args.todos.as_deref().map(str::trim) {
            None | Some("") => Vec::new(),
            Some(text) => super::update_todo_list::parse_todos(text)
                .map_err(|e| ToolError::InvalidArguments(format!("todos: {e}")))?,
        };
        let intent_id = args
            .intent_id
            .map(|i| i.trim().to_string())
            .filter(|i| !i.is_empty());
        if let Some(id) = &intent_id {
            check_narrower(cx, id)?;
        }
        Ok(Plan {
            target: slug.clone(),
            action: Action::Meta,
            work: Work {
                slug,
                message,
                todos,
                intent_id,
            },
        })
    }

    async fn run(&self, _: Action, work: Work, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let modes = crate::modes::load_modes(cx.gov.root(), cx.gov.config_dir());
        let Some(mode) = modes.get(&work.slug).cloned() else {
            let known: Vec<&str> = modes.modes.iter().map(|m| m.slug.as_str()).collect();
            return Err(ToolError::InvalidArguments(format!(
                "there is no mode `{}`; modes: {}",
                work.slug,
                known.join(", ")
            )));
        };
        let summary = format!("subtask in {} mode", mode.name);
        Ok(ToolOutput {
            subtask: Some(SubtaskSpec {
                mode,
                message: work.message,
                todos: work.todos,
                intent_id: work.intent_id,
            }),
            ..ToolOutput::text(summary, "The subtask is starting.")
        })
    }
}

/// A subtask's own intent must be selectable and lie inside the parent's: each of its globs is
/// tried on a path it matches, which the parent's intent must own too. (Every write of the
/// subtask is checked against the parent's intent as well, so a glob that passes here yet
/// reaches further still cannot write there.)
fn check_narrower(cx: &ToolCx<'_>, id: &str) -> Result<(), ToolError> {
    crate::agent::check_selectable(cx.intents, id).map_err(|e| ToolError::Failed(e.to_string()))?;
    let Some(child) = cx.intents.doc.get(id) else {
        return Err(ToolError::Failed(format!("there is no intent `{id}`")));
    };
    let Some(parent_id) = cx.task.selected_intent.as_deref() else {
        return Err(ToolError::Failed(format!(
            "you have no intent selected, so a subtask cannot be given {id}: select your intent first (a subtask's intent must lie inside yours), or leave intent_id out"
        )));
    };
    if parent_id == id {
        return Ok(());
    }
    let Some(parent) = cx.intents.doc.get(parent_id) else {
        return Err(ToolError::Failed(format!(
            "your intent {parent_id} is no longer in the intents file"
        )));
    };
    let wider: Vec<&str> = child
        .owned_scope
        .iter()
        .filter(|glob| !inside(parent, child, glob))
        .map(String::as_str)
        .collect();
    match wider.is_empty() {
        true => Ok(()),
        false => Err(ToolError::Denied(
            crate::hooks::Denial::new(
                crate::hooks::DenialCode::ScopeViolation,
                format!(
                    "{id} reaches outside your intent {parent_id} ({} is not inside {}): a subtask may only get your intent or a narrower one",
                    wider.join(", "),
                    parent.owned_scope.join(", ")
                ),
            )
            .with_intent(Some(parent_id)),
        )),
    }
}

/// Whether `glob` of `child` lies inside `parent`'s scope, judged on a path it matches.
fn inside(parent: &Intent, child: &Intent, glob: &str) -> bool {
    // A glob with no simple sample: the write-time check decides.
    match crate::hooks::sample_path(glob) {
        Some(sample) if child.owns(&sample) => parent.owns(&sample),
        _ => true,
    }
}

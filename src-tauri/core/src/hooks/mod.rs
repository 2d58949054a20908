//! The deterministic middleware between the agent and the user's code.
//!
//! Every tool call becomes an [`Action`]; ordered pre-hooks each return Allow, Deny or Ask, and
//! the first that is not Allow wins. A hook that errors, panics or overruns its time budget denies
//! a mutating action (fail closed). Post-hooks follow up on what was recorded; their failures
//! become notices.

pub mod command_policy;
mod gate;
pub mod ignore_list;
mod post;
mod scope;
pub mod stale;

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use gate::{broken_intents_file, IntentGate};
pub use post::{
    CommandOutcome, Consequence, IntentMapHook, IntentStatusHook, LessonHook, PostContext,
    PostEffect, PostHook,
};
pub use scope::ScopeGuard;
pub use stale::StaleGuard;

use crate::orchestration::intents::IntentsSnapshot;
use crate::protocol::{ApprovalPolicy, ToolKind};
use crate::workspace::{ResolvedPath, Workspace};
use command_policy::{Classification, CommandClass, CommandPolicy};

/// The standardized error codes the model receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DenialCode {
    NoActiveIntent,
    ScopeViolation,
    StaleFile,
    ProtectedPath,
    RejectedByUser,
    CommandBlocked,
    InvalidArguments,
    HookFailure,
    /// The person's own hook denied the call.
    HookDenied,
    /// The task's mode does not allow this kind of action, or this file.
    ModeRestricted,
}

/// A refusal, sent to the model as `{"error":{"code","message",...}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub code: DenialCode,
    pub message: String,
    pub intent_id: Option<String>,
    pub path: Option<String>,
    /// For a scope violation: the intent's owned scope, so the model can ask for exactly more.
    pub owned_scope: Option<Vec<String>>,
}

impl Denial {
    pub fn new(code: DenialCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            intent_id: None,
            path: None,
            owned_scope: None,
        }
    }

    pub fn with_owned_scope(mut self, scope: &[String]) -> Self {
        self.owned_scope = Some(scope.to_vec());
        self
    }

    pub fn with_intent(mut self, id: Option<&str>) -> Self {
        self.intent_id = id.map(str::to_string);
        self
    }

    pub fn with_path(mut self, path: &str) -> Self {
        self.path = Some(path.to_string());
        self
    }

    /// The JSON tool error the model sees.
    pub fn to_tool_error(&self) -> String {
        let mut error = serde_json::json!({"code": self.code, "message": self.message});
        if let Some(id) = &self.intent_id {
            error["intent_id"] = id.clone().into();
        }
        if let Some(path) = &self.path {
            error["path"] = path.clone().into();
        }
        if let Some(scope) = &self.owned_scope {
            error["owned_scope"] = scope.clone().into();
        }
        serde_json::json!({ "error": error }).to_string()
    }

    pub fn code_str(&self) -> String {
        serde_json::to_value(self.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// A full replacement of one file's content, worked out before anything is written.
#[derive(Debug, Clone)]
pub struct WriteAction {
    pub path: ResolvedPath,
    /// The file's bytes when the call was planned; None for a new file.
    pub old: Option<Vec<u8>>,
    pub new_content: String,
    /// The intent the model cites.
    pub intent_id: String,
    pub mutation_class: crate::protocol::MutationClass,
}

impl WriteAction {
    pub fn old_hash(&self) -> Option<String> {
        self.old.as_deref().map(crate::fsutil::sha256_hex)
    }
    pub fn old_text(&self) -> String {
        self.old
            .as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone)]
pub struct CommandAction {
    pub command: String,
    pub cwd: ResolvedPath,
    pub timeout: Duration,
    /// What the person granted on the approval card; nothing for a command no one approved.
    pub granted: command_policy::CommandNeeds,
    /// Left running in the background (`crate::processes`): `timeout` is then how long it may
    /// run before it is stopped.
    pub background: bool,
}

/// A change to the intents the agent asks for: only a person can make it.
#[derive(Debug, Clone, PartialEq)]
pub enum IntentChange {
    /// Add globs to an intent's owned scope.
    ExpandScope {
        intent_id: String,
        globs: Vec<String>,
        reason: String,
    },
    /// A new intent (NOT_STARTED), for planned work.
    Propose {
        intent: crate::protocol::IntentDraft,
        reason: String,
    },
}

/// A call to a tool of an MCP server: an effect outside what Mandate can see, check or undo.
#[derive(Debug, Clone)]
pub struct ExternalAction {
    pub server: String,
    pub source: crate::protocol::McpSource,
    /// The server's name for the tool.
    pub tool: String,
    /// The server's description of the tool.
    pub description: String,
    /// For the person's card only; the ledger keeps only [`Self::args_sha256`].
    pub arguments: serde_json::Value,
    /// SHA-256 (hex) of the arguments' canonical JSON.
    pub args_sha256: String,
    pub annotations: crate::protocol::McpAnnotations,
    /// The server declares the tool read-only and the person trusts its hints: the call runs
    /// as a read (no intent, no approval). Otherwise it is mutating.
    pub read_only: bool,
    /// The person allowed the server to write in the workspace: what the call changes there is
    /// found, recorded when the intent owns it, undone otherwise.
    pub writes_workspace: bool,
    /// The server runs outside any confinement (the person's consent, or a machine without
    /// Landlock): the call asks a person even when its tool is declared read-only, as a
    /// command does where nothing confines it.
    pub unconfined: bool,
}

/// What a tool call would do, as the hooks see it.
#[derive(Debug, Clone)]
pub enum Action {
    Read {
        path: ResolvedPath,
    },
    Write(WriteAction),
    /// Always asks a person, whatever the approval settings.
    Intents(IntentChange),
    Command(CommandAction),
    /// A tool of an MCP server. Unless read-only, it needs an intent and always asks a person;
    /// one of a server running unconfined always asks.
    External(ExternalAction),
    /// No effect on files or processes (selecting an intent, asking, completing, lessons).
    Meta,
}

impl Action {
    /// An MCP call that is not read-only: mutating whatever kind its tool reports.
    pub fn is_mutating_external(&self) -> bool {
        matches!(self, Action::External(e) if !e.read_only)
    }
}

/// Why a human must decide, for the approval panel.
#[derive(Debug, Clone, PartialEq)]
pub enum AskReason {
    Write,
    Intents,
    /// A mutating MCP tool: always a person's decision.
    External,
    Command(Classification),
    /// The person's hook asks about a call Mandate has no card for (a read, a question).
    UserHook,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow,
    Deny(Denial),
    Ask(AskReason),
}

/// What a hook may look at: the workspace, the intents now, and this task's state.
pub struct HookContext<'a> {
    pub workspace: &'a Workspace,
    pub intents: &'a IntentsSnapshot,
    pub task: &'a TaskGovernance,
    pub approval: ApprovalPolicy,
    pub policy: &'a CommandPolicy,
    pub ignore: &'a ignore_list::IntentIgnore,
    /// Whether commands run confined by the kernel here.
    pub confined: bool,
}

/// Per-task governance state: the intent it holds, what it has read, commands always allowed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskGovernance {
    pub task_id: String,
    pub selected_intent: Option<String>,
    /// SHA-256 of the raw bytes this task last read or wrote, per workspace-relative path.
    pub read_hashes: HashMap<String, String>,
    pub always_allowed_commands: HashSet<String>,
    /// The task's mode (None: no mode narrows the task, as before modes existed).
    #[serde(default)]
    pub mode: Option<crate::modes::ModePolicy>,
    /// A subtask's: the task that started it (recorded with each of its changes).
    #[serde(default)]
    pub parent_task: Option<String>,
    /// A subtask's: the intents of the tasks above it. Its writes must lie in each of them as
    /// well as in its own intent, so a subtask can never reach wider than its parent.
    #[serde(default)]
    pub within: Vec<String>,
}

impl TaskGovernance {
    /// The first intent above this task (see `within`) that does not own `rel`, with its scope
    /// in words; None when every one owns it (or none bounds the task). An intent that is no
    /// longer in the file owns nothing.
    pub fn outside_bounds(&self, intents: &IntentsSnapshot, rel: &str) -> Option<(String, String)> {
        self.within.iter().find_map(|id| match intents.doc.get(id) {
            Some(intent) if intent.owns(rel) => None,
            Some(intent) => Some((id.clone(), intent.owned_scope.join(", "))),
            None => Some((
                id.clone(),
                "nothing: it is no longer in the intents file".into(),
            )),
        })
    }

    /// The globs a command of this task may be given to write: its intent's, narrowed by every
    /// intent above it (see `within`) to the globs that lie inside both (judged on a path each
    /// matches). The writes found after the command are still checked exactly.
    pub fn command_scope(&self, intents: &IntentsSnapshot) -> Vec<String> {
        let own = self
            .selected_intent
            .as_deref()
            .and_then(|id| intents.doc.get(id));
        let mut scope = own.map(|i| i.owned_scope.clone()).unwrap_or_default();
        for id in &self.within {
            let Some(outer) = intents.doc.get(id) else {
                return Vec::new();
            };
            let inner = crate::orchestration::intents::compile_scope(&scope).ok();
            let inside = |glob: &String, set: &dyn Fn(&str) -> bool| {
                sample_path(glob).is_some_and(|p| set(&p))
            };
            let mut narrowed: Vec<String> = scope
                .iter()
                .filter(|g| inside(g, &|p| outer.owns(p)))
                .cloned()
                .collect();
            narrowed.extend(
                outer
                    .owned_scope
                    .iter()
                    .filter(|g| inside(g, &|p| inner.as_ref().is_some_and(|s| s.is_match(p))))
                    .cloned(),
            );
            narrowed.sort();
            narrowed.dedup();
            scope = narrowed;
        }
        scope
    }

    /// Whether the task may change `rel`: its intent owns it, and so does every intent above.
    pub fn owns(&self, intents: &IntentsSnapshot, rel: &str) -> bool {
        let own = self
            .selected_intent
            .as_deref()
            .and_then(|id| intents.doc.get(id));
        own.is_some_and(|i| i.owns(rel)) && self.outside_bounds(intents, rel).is_none()
    }
}

/// A path `glob` matches, to judge whether the glob lies inside another scope: `**`, `*` and `?`
/// become a name. None for a glob with classes or alternatives (no simple sample).
pub fn sample_path(glob: &str) -> Option<String> {
    if glob.contains(['[', '{']) {
        return None;
    }
    let sample: String = glob
        .trim()
        .trim_start_matches("./")
        .replace("**", "x")
        .chars()
        .map(|c| if matches!(c, '*' | '?') { 'x' } else { c })
        .collect();
    let sample = sample.trim_end_matches('/');
    (!sample.is_empty()).then(|| sample.to_string())
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

pub trait PreHook: Send + Sync {
    fn name(&self) -> &'static str;
    fn check(
        &self,
        cx: &HookContext<'_>,
        kind: ToolKind,
        action: &Action,
    ) -> Result<Decision, HookError>;
}

/// The ordered pre-hooks and post-hooks.
pub struct HookEngine {
    pre: Vec<Arc<dyn PreHook>>,
    post: Vec<Arc<dyn PostHook>>,
    budget: Duration,
}

/// What the post-hooks did: whether the intents changed, and what went wrong.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PostReport {
    pub intents_changed: bool,
    pub problems: Vec<String>,
}

impl Default for HookEngine {
    fn default() -> Self {
        Self::standard()
    }
}

impl HookEngine {
    /// Gate, scope, stale, command policy and approval, in that order.
    pub fn standard() -> Self {
        Self {
            pre: vec![
                Arc::new(crate::modes::ModeGuard),
                Arc::new(IntentGate),
                Arc::new(ScopeGuard),
                Arc::new(StaleGuard),
                Arc::new(CommandPolicyHook),
                Arc::new(ApprovalHook),
            ],
            post: vec![
                Arc::new(IntentStatusHook),
                Arc::new(IntentMapHook),
                Arc::new(LessonHook),
            ],
            budget: Duration::from_millis(250),
        }
    }

    pub fn with_hooks(pre: Vec<Arc<dyn PreHook>>, budget: Duration) -> Self {
        Self {
            pre,
            post: Vec::new(),
            budget,
        }
    }

    /// Runs every post-hook on every consequence; a failure (or a panic) is reported, never fatal.
    pub fn post(&self, cx: &PostContext<'_>, consequences: &[Consequence]) -> PostReport {
        let mut report = PostReport::default();
        for what in consequences {
            for hook in &self.post {
                match catch_unwind(AssertUnwindSafe(|| hook.after(cx, what))) {
                    Ok(Ok(PostEffect::IntentsChanged)) => report.intents_changed = true,
                    Ok(Ok(PostEffect::Nothing)) => {}
                    Ok(Err(e)) => report.problems.push(e.to_string()),
                    Err(_) => report
                        .problems
                        .push(format!("the {} post-hook crashed", hook.name())),
                }
            }
        }
        report
    }

    /// Runs the pre-hooks; the first non-Allow decision wins.
    pub fn pre(&self, cx: &HookContext<'_>, kind: ToolKind, action: &Action) -> Decision {
        let mutating = kind != ToolKind::Read || action.is_mutating_external();
        for hook in &self.pre {
            let started = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| hook.check(cx, kind, action)));
            let overran = started.elapsed() > self.budget;
            let failure = match result {
                Ok(Ok(_)) if overran => Some(format!(
                    "the {} hook took longer than {} ms",
                    hook.name(),
                    self.budget.as_millis()
                )),
                Ok(Ok(Decision::Allow)) => None,
                Ok(Ok(decision)) => return decision,
                Ok(Err(e)) => Some(format!("the {} hook failed: {e}", hook.name())),
                Err(_) => Some(format!("the {} hook crashed", hook.name())),
            };
            if let Some(reason) = failure {
                if mutating {
                    return Decision::Deny(Denial::new(
                        DenialCode::HookFailure,
                        format!("{reason}; the action was not performed (hooks fail closed)."),
                    ));
                }
            }
        }
        Decision::Allow
    }
}

/// Classifies commands; blocks any that name Mandate's own files.
struct CommandPolicyHook;

impl PreHook for CommandPolicyHook {
    fn name(&self) -> &'static str {
        "command policy"
    }
    fn check(
        &self,
        cx: &HookContext<'_>,
        _: ToolKind,
        action: &Action,
    ) -> Result<Decision, HookError> {
        let Action::Command(cmd) = action else {
            return Ok(Decision::Allow);
        };
        // A destructive line that reaches a protected path, by the path a word resolves to
        // (`.orch*`, `x/../.orchestration`, a symlink), not by its spelling, is refused. The
        // kernel refuses such writes anyway; this tells the model why.
        let (classification, target) =
            cx.policy
                .classify_in(&cmd.command, cx.workspace.root(), &cmd.cwd.abs);
        if let Some(target) = target {
            return Ok(Decision::Deny(
                Denial::new(
                    DenialCode::CommandBlocked,
                    format!(
                        "Commands may not change `{}` (`{}` reaches it): intents, the ignore list, the trace ledger, the person's hooks, the workspace's MCP servers, modes and rules are changed only by the user.",
                        target.name, target.word
                    ),
                )
                .with_intent(cx.task.selected_intent.as_deref()),
            ));
        }
        let always = cx.task.always_allowed_commands.contains(cmd.command.trim());
        let ask = match classification.class {
            // Without confinement by the kernel, nothing runs without a person.
            _ if !cx.confined => true,
            CommandClass::Destructive => !always,
            CommandClass::Safe => cx.approval.ask_before_safe_commands && !always,
        };
        Ok(if ask {
            Decision::Ask(AskReason::Command(classification))
        } else {
            Decision::Allow
        })
    }
}

/// Writes ask a human unless the user turned that off.
struct ApprovalHook;

impl PreHook for ApprovalHook {
    fn name(&self) -> &'static str {
        "approval"
    }
    fn check(
        &self,
        cx: &HookContext<'_>,
        _: ToolKind,
        action: &Action,
    ) -> Result<Decision, HookError> {
        Ok(match action {
            Action::Write(_) if cx.approval.ask_before_writes => Decision::Ask(AskReason::Write),
            Action::Intents(_) => Decision::Ask(AskReason::Intents),
            // Whatever the approval settings: Mandate cannot show, check or undo its effect.
            // Unconfined, a "read-only" tool is only the server's word: it asks too.
            Action::External(e) if !e.read_only || e.unconfined => {
                Decision::Ask(AskReason::External)
            }
            _ => Decision::Allow,
        })
    }
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;

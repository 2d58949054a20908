//! Approval cards and the person's decisions on them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{
    DiffTag, GlobPreview, IntentDraft, IntentView, McpAnnotations, McpSource, MutationClass,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ApprovalRequest {
    pub approval_id: String,
    pub call_id: String,
    pub intent: Option<IntentView>,
    pub detail: ApprovalDetail,
    /// Why the person's own hooks ask for this approval (`your hook `name`: reason`), shown on
    /// the card; empty when only Mandate asks.
    #[serde(default)]
    pub hook_reasons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalDetail {
    Write {
        path: String,
        new_file: bool,
        language: String,
        old_text: String,
        new_text: String,
        hunks: Vec<DiffHunk>,
        mutation_class: MutationClass,
    },
    Command {
        command: String,
        cwd: String,
        destructive: bool,
        reasons: Vec<String>,
        /// What the command policy says it needs beyond the confinement (pre-ticked on the card).
        needs: CommandGrants,
        /// Whether it will run confined by the kernel (false: nothing stops it but this card).
        confined: bool,
        /// It keeps running in the background (a dev server, a watcher) until it is stopped,
        /// its task ends, or Mandate closes.
        #[serde(default)]
        background: bool,
    },
    /// The agent repeated itself or kept failing; go on?
    Continue { reason: String },
    /// The agent asks for a wider owned scope; approving may edit the globs (one per line in
    /// `edited_content`).
    ScopeExpansion {
        intent_id: String,
        owned_scope: Vec<String>,
        globs: Vec<String>,
        reason: String,
        /// Which workspace files each requested glob matches now.
        preview: Vec<GlobPreview>,
    },
    /// The agent proposes a new intent for planned work; approving may edit its owned scope (one
    /// glob per line in `edited_content`).
    NewIntent { intent: IntentDraft, reason: String },
    /// A call to a tool of an MCP server: it acts outside what Mandate can see or undo.
    McpCall {
        server: String,
        source: McpSource,
        tool: String,
        /// The server's description of the tool (the server's words, not Mandate's).
        description: String,
        /// The arguments, pretty-printed JSON.
        arguments: String,
        /// What the server claims about the tool; hints, not guarantees.
        annotations: McpAnnotations,
        /// The person allowed the server to write in the workspace: the call's changes there
        /// are found, recorded when the intent owns them and undone otherwise.
        writes_workspace: bool,
        /// The server runs outside any confinement (the person allowed it, or the machine
        /// offers none): it can read and write whatever the person can, unseen by Mandate.
        unconfined: bool,
    },
    /// A call with no card of its own (a read, a question) that the person's hook wants them to
    /// approve (`hook_reasons` says why).
    ToolCall {
        tool: String,
        target: String,
        /// The call's arguments as pretty JSON, shortened.
        arguments: String,
    },
    /// The person's hooks are new or changed since they last confirmed them: run them?
    UserHooks {
        hooks: Vec<UserHookView>,
        /// Workspace files the hooks' commands name, whose contents were confirmed with them.
        scripts: Vec<String>,
        /// What is configured but not run by Mandate.
        ignored: Vec<String>,
    },
}

/// One of the person's hooks, as the confirmation card shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct UserHookView {
    /// `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop` or `SessionStart`.
    pub event: String,
    /// `*` for every tool.
    pub matcher: String,
    pub name: String,
    /// The shell command, or what Mandate cannot run.
    pub command: String,
    /// The file it comes from.
    pub source: String,
    pub advisory: bool,
    pub network: bool,
    pub timeout_seconds: f64,
}

/// Rights a command may be given beyond its confinement: the network, writing `.git/`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct CommandGrants {
    pub network: bool,
    pub write_git: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DiffHunk {
    pub index: u32,
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    pub lines: Vec<DiffLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DiffLine {
    pub tag: DiffTag,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum ApprovalDecision {
    /// Accept, optionally leaving out some hunks or writing the user's edited text instead.
    Approve {
        rejected_hunks: Vec<u32>,
        edited_content: Option<String>,
        /// Commands: what the person allows it beyond the confinement (none when absent).
        #[serde(default)]
        #[ts(optional)]
        grant: Option<CommandGrants>,
    },
    Reject {
        reason: String,
    },
    /// Commands only: run this exact command without asking again in this task.
    AlwaysAllow,
}

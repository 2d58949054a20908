//! The only types that cross the boundary between the untrusted webview and the host.
//!
//! Plain data, no logic: the UI sends a [`Request`] through the one `request` command and gets a
//! [`Reply`] or an [`IpcError`]; the host pushes [`Event`]s through the one subscription channel.
//! Inbound structs reject unknown fields so a typo in the UI is an error, not a silent no-op.
//! HTML only ever travels in fields named `safe_html`, produced by `markdown::render`.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

mod approvals;
mod history;
mod intents;
mod mcp;
mod processes;
mod settings;
mod tasks;
mod trace;
mod typescript;
mod undo;
mod values;

pub use approvals::*;
pub use history::*;
pub use intents::*;
pub use mcp::*;
pub use processes::*;
pub use settings::*;
pub use tasks::*;
pub use trace::*;
pub use typescript::typescript_declarations;
pub use undo::*;
pub use values::*;

/// A request from the UI. Tagged by `type`, snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Everything the window needs to draw itself after (re)loading.
    GetState,
    SaveSettings {
        settings: SettingsUpdate,
    },
    /// Stores the key in the OS keyring; it never comes back.
    SetApiKey {
        provider: ProviderKind,
        api_key: String,
        /// The profile the key is for (absent: the default one).
        #[serde(default)]
        #[ts(optional)]
        profile: Option<String>,
    },
    ClearApiKey {
        provider: ProviderKind,
        #[serde(default)]
        #[ts(optional)]
        profile: Option<String>,
    },
    /// The person lets a profile's key go to the origin the profile points at now.
    MoveProfileKey {
        profile: String,
    },
    DeleteProfile {
        profile: String,
    },
    /// Models offered by a profile's provider (absent: the default one), where it lists them.
    ListModels {
        #[serde(default)]
        #[ts(optional)]
        profile: Option<String>,
    },
    StartTask {
        text: String,
        /// The mode the task starts in (its slug); none: Code.
        #[serde(default)]
        #[ts(optional)]
        mode: Option<String>,
        /// Ids of images attached with `AttachImage` (or dropped on the window).
        #[serde(default)]
        #[ts(as = "Option<Vec<String>>", optional)]
        images: Vec<String>,
        /// The provider profile the task runs on (absent: the default one).
        #[serde(default)]
        #[ts(optional)]
        profile: Option<String>,
    },
    /// Every mode the workspace offers (built in, global, `.roomodes`, `.claude/agents`).
    ListModes,
    /// The person's slash commands, for the message box's autocomplete.
    ListCommands,
    /// What an `@` in the message box may name: the workspace's files and folders matching
    /// `query` (best first), `git-changes` and `problems`.
    ListMentionables {
        query: String,
    },
    /// What the `@` mentions of a message would attach, sized (for the chips above the box).
    PreviewMentions {
        text: String,
    },
    /// What Settings lists: the rule files, modes, skills and commands read, and what could not be.
    ListInstructions,
    /// Puts a task in another mode: the person's choice, from the mode picker.
    SetTaskMode {
        task_id: String,
        mode: String,
    },
    /// The person's edit of a task's todo list (the whole list as it should be).
    SetTodos {
        task_id: String,
        todos: Vec<TodoItem>,
    },
    SendMessage {
        task_id: String,
        text: String,
        /// Ids of images attached with `AttachImage` (or dropped on the window) to send with it.
        #[serde(default)]
        #[ts(as = "Option<Vec<String>>", optional)]
        images: Vec<String>,
    },
    /// An image pasted into the message box: its bytes as base64. The host decodes and
    /// re-encodes it and keeps it until the message is sent.
    AttachImage {
        name: String,
        data_base64: String,
    },
    CancelTask {
        task_id: String,
    },
    /// Runs the last turn again after a failure or a stop.
    RetryTask {
        task_id: String,
    },
    /// Condenses the task's conversation now (the header's button, `/compact`).
    CondenseTask {
        task_id: String,
    },
    AnswerQuestion {
        task_id: String,
        call_id: String,
        answer: String,
    },
    DecideApproval {
        task_id: String,
        approval_id: String,
        decision: ApprovalDecision,
    },
    ListTasks,
    OpenTask {
        task_id: String,
    },
    DeleteTask {
        task_id: String,
    },
    /// The tasks of the history that match: words of the conversation, intent, dates, cost.
    SearchHistory {
        query: HistoryQuery,
    },
    /// Writes a task out as Markdown, in Mandate's data directory, and returns it.
    ExportTask {
        task_id: String,
    },
    /// The background processes of a task, as they stand.
    ListProcesses {
        task_id: String,
    },
    /// The person stops a background process (and everything it started).
    StopProcess {
        process_id: String,
    },
    SelectIntent {
        task_id: String,
        intent_id: Option<String>,
    },
    ListIntents,
    SaveIntent {
        original_id: Option<String>,
        intent: IntentDraft,
    },
    DeleteIntent {
        id: String,
    },
    ReorderIntents {
        ids: Vec<String>,
    },
    SetIntentStatus {
        id: String,
        status: IntentStatus,
    },
    /// Which workspace files each glob matches, for the scope editor.
    PreviewScope {
        globs: Vec<String>,
    },
    IntentTrace {
        intent_id: String,
    },
    Blame {
        path: String,
    },
    VerifyTrace,
    ChangeDiff {
        record_id: String,
        path: String,
    },
    /// Opens an http(s) link in the system browser after the host checks it.
    OpenExternal {
        url: String,
    },
    /// Where the command policy comes from and how it judges `command` (empty: no command).
    CheckCommand {
        command: String,
    },
    /// What taking back `scope` would do, file by file; nothing changes yet.
    PreviewUndo {
        scope: UndoScope,
    },
    /// Applies a preview: only the files listed, without their rejected hunks.
    ApplyUndo {
        preview_id: String,
        files: Vec<UndoFileChoice>,
    },
    /// Opens a workspace file in the editor chosen in Settings, at `line` (1-based). The host
    /// picks the program; files outside the workspace are refused.
    OpenInEditor {
        path: String,
        line: Option<u32>,
    },
    /// Switches the window to another workspace: `None` asks the person with a folder picker,
    /// `Some` must be one of the settings' `recent_workspaces`. Refused while a task runs.
    OpenWorkspace {
        path: Option<String>,
    },
    /// Model servers running on this machine (Ollama, LM Studio, llama.cpp), with their models.
    DiscoverLocalServers,
    /// The MCP servers of this workspace and of Settings, with status and tools; servers that
    /// may run and are not running are started.
    ListMcpServers,
    /// Adds (or replaces) a server in Settings. Secret values do not go here but through
    /// `set_mcp_secret`, referenced in a value as `${keyring:NAME}`.
    SaveMcpServer {
        name: String,
        server: McpServerInput,
    },
    RemoveMcpServer {
        name: String,
    },
    /// Stores a secret a server's definition references, in the keyring.
    SetMcpSecret {
        server: String,
        name: String,
        value: String,
    },
    ClearMcpSecret {
        server: String,
        name: String,
    },
    /// Consent to start a workspace's server, for exactly the definition shown (its hash).
    GrantMcpConsent {
        name: String,
        definition_hash: String,
    },
    RevokeMcpConsent {
        name: String,
    },
    /// Whether a server's read-only hints are believed; untrusted, every tool of it is mutating.
    SetMcpTrust {
        name: String,
        trusted: bool,
    },
    RestartMcpServer {
        name: String,
    },
    /// Allows (or no longer allows) a stdio server to write in this workspace, for exactly
    /// the definition shown (its hash): a changed command, argument or variable takes the
    /// grant back. Its calls are then watched (see `McpServerView::may_write_workspace`).
    SetMcpWorkspaceWrite {
        name: String,
        definition_hash: String,
        allowed: bool,
    },
    /// Allows (or no longer allows) a stdio server to run outside any confinement, for
    /// exactly the definition shown (its hash) and the code it runs now: a change to either
    /// takes it back. Every call of it then asks (see `McpServerView::runs_unconfined`).
    SetMcpUnconfined {
        name: String,
        definition_hash: String,
        allowed: bool,
    },
    /// A text block for a bug report: version, system, confinement, provider and settings
    /// (never a key), and the end of the log.
    Diagnostics,
}

/// The answer to one [`Request`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    Ok,
    State {
        state: AppState,
    },
    Settings {
        settings: SettingsView,
    },
    Models {
        models: Vec<String>,
    },
    Commands {
        commands: Vec<CommandInfo>,
    },
    Mentionables {
        items: Vec<String>,
    },
    Mentions {
        mentions: Vec<MentionView>,
    },
    Image {
        image: ImageView,
    },
    Instructions {
        view: InstructionsView,
    },
    Modes {
        modes: Vec<ModeInfo>,
        /// Mode files or entries that could not be read, each naming the file.
        problems: Vec<String>,
    },
    Task {
        task: TaskSummary,
    },
    Tasks {
        tasks: Vec<TaskSummary>,
    },
    Processes {
        processes: Vec<ProcessView>,
    },
    TaskDetail {
        task: TaskSummary,
        messages: Vec<UiMessage>,
    },
    History {
        results: HistoryResults,
    },
    TaskExport {
        export: TaskExport,
    },
    Intents {
        intents: IntentsView,
    },
    ScopePreview {
        globs: Vec<GlobPreview>,
    },
    IntentTrace {
        changes: Vec<TraceChange>,
    },
    Blame {
        blame: FileBlame,
    },
    Verify {
        report: VerifyReport,
    },
    Diff {
        diff: ChangeDiffView,
    },
    CommandCheck {
        check: CommandCheck,
    },
    UndoPreview {
        preview: UndoPreview,
    },
    UndoApplied {
        result: UndoResult,
    },
    LocalServers {
        servers: Vec<LocalServer>,
    },
    McpServers {
        overview: McpOverview,
    },
    Diagnostics {
        text: String,
    },
}

/// A refused or failed request: a stable code and a sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct IpcError {
    pub code: IpcErrorCode,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum IpcErrorCode {
    /// Not valid JSON, an unknown `type`, a missing or unknown field.
    MalformedRequest,
    NotFound,
    InvalidInput,
    Conflict,
    Keyring,
    Provider,
    Io,
    Internal,
}

impl IpcError {
    pub fn new(code: IpcErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for IpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for IpcError {}

/// Something the host tells the UI without being asked. Tagged by `type`, snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// Files dropped on the window, read by the host: the images it could attach, and why the
    /// others could not be.
    ImagesDropped {
        images: Vec<ImageView>,
        errors: Vec<String>,
    },
    TaskUpdated {
        task: TaskSummary,
    },
    TaskDeleted {
        task_id: String,
    },
    /// A complete message appended to a task's transcript.
    MessageAdded {
        task_id: String,
        message: UiMessage,
    },
    /// The assistant message so far, re-rendered (coalesced, not per token) and sent as a
    /// change: `stable_safe_html` is appended to the finished part of the message (cleared first
    /// when `reset`), `safe_html` replaces its unfinished tail.
    MessageDelta {
        task_id: String,
        message_id: String,
        stable_safe_html: String,
        safe_html: String,
        reset: bool,
    },
    /// The assistant message is complete (`complete: true`) or was cut off (`complete: false`).
    MessageFinished {
        task_id: String,
        message_id: String,
        safe_html: String,
        complete: bool,
    },
    ToolCallStarted {
        task_id: String,
        call: ToolCallView,
    },
    ToolCallOutput {
        task_id: String,
        call_id: String,
        chunk: String,
    },
    ToolCallFinished {
        task_id: String,
        call: ToolCallView,
    },
    ApprovalRequested {
        task_id: String,
        request: ApprovalRequest,
    },
    ApprovalResolved {
        task_id: String,
        approval_id: String,
        outcome: ApprovalOutcome,
    },
    QuestionAsked {
        task_id: String,
        call_id: String,
        question: String,
        options: Vec<String>,
    },
    IntentsChanged {
        intents: IntentsView,
    },
    SettingsChanged {
        settings: SettingsView,
    },
    /// The trace ledger's chain was checked again (after it changed): what is wrong, or None.
    LedgerChecked {
        problem: Option<String>,
    },
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// An MCP server started, stopped, failed, or its tools changed.
    McpServersChanged {
        overview: McpOverview,
    },
    /// The task's conversation is being condensed (a `Condensed` message follows, or an error).
    Condensing {
        task_id: String,
        automatic: bool,
    },
    /// A request did not fit the model's window; it is sent again, smaller.
    ContextRetry {
        task_id: String,
        attempt: u32,
        /// The window the provider's error named, where it named one.
        limit_tokens: Option<u64>,
        message: String,
    },
    /// The model's answer was cut at its output limit; a cut tool call was not run.
    OutputCut {
        task_id: String,
        max_tokens: u32,
    },
    /// A background process started, stopped or ended (the view as it stands now).
    ProcessChanged {
        process: ProcessView,
    },
    /// What a background process printed (redacted), in order.
    ProcessOutput {
        task_id: String,
        process_id: String,
        chunk: String,
    },
    /// The person clicked Mandate's desktop notification about this task: the window shows it.
    ShowTask {
        task_id: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AppState {
    pub workspace: String,
    pub version: String,
    pub settings: SettingsView,
    pub tasks: Vec<TaskSummary>,
    pub intents: IntentsView,
    /// Why the trace ledger cannot be trusted (a broken chain, a malformed line), in words that
    /// name the file and the line; None when it holds.
    pub ledger_problem: Option<String>,
}

#[cfg(test)]
mod tests;

//! The only types that cross the boundary between the untrusted webview and the host.
//!
//! Plain data, no logic: the UI sends a [`Request`] through the one `request` command and gets a
//! [`Reply`] or an [`IpcError`]; the host pushes [`Event`]s through the one subscription channel.
//! Inbound structs reject unknown fields so a typo in the UI is an error, not a silent no-op.
//! HTML only ever travels in fields named `safe_html`, produced by `markdown::render`.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

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
    },
    ClearApiKey {
        provider: ProviderKind,
    },
    /// Models offered by the configured provider, where it lists them.
    ListModels,
    StartTask {
        text: String,
    },
    SendMessage {
        task_id: String,
        text: String,
    },
    CancelTask {
        task_id: String,
    },
    /// Runs the last turn again after a failure or a stop.
    RetryTask {
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
    Task {
        task: TaskSummary,
    },
    Tasks {
        tasks: Vec<TaskSummary>,
    },
    TaskDetail {
        task: TaskSummary,
        messages: Vec<UiMessage>,
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
        outcome: String,
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

// ---- settings -------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Anthropic Messages API.
    Anthropic,
    /// Any OpenAI-compatible Chat Completions API (OpenAI, OpenRouter, Ollama, LM Studio, ...).
    Openai,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai => "openai",
        }
    }
}

/// Which actions wait for a human. Destructive commands always ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct ApprovalPolicy {
    pub ask_before_writes: bool,
    pub ask_before_safe_commands: bool,
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        Self {
            ask_before_writes: true,
            ask_before_safe_commands: false,
        }
    }
}

/// Settings as the UI sees them: never the key itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SettingsView {
    pub provider: ProviderKind,
    /// A label for the provider preset: anthropic, openai, openrouter, ollama, lmstudio, custom.
    pub preset: String,
    pub base_url: String,
    pub model: String,
    pub api_key_set: bool,
    /// Where the key comes from: `keyring`, `env:NAME` or `none`.
    pub api_key_source: String,
    pub custom_instructions: String,
    pub approval: ApprovalPolicy,
    /// Why the keyring cannot be used, when it cannot.
    pub keyring_error: Option<String>,
    /// The provider needs an API key and none is set (a server on this machine needs none).
    pub needs_key: bool,
    /// The editor file paths open in: `auto` (the first detected) or one of `editors`.
    pub editor: String,
    pub editors: Vec<EditorOption>,
    /// Workspaces opened before, most recent first (existing folders only).
    pub recent_workspaces: Vec<String>,
    /// How commands are confined on this machine.
    pub confinement: ConfinementView,
    /// The cap on what one task may spend (none when both are None).
    pub budget: Budget,
}

/// The confinement commands run under, as Settings shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ConfinementView {
    /// False: nothing but a person's approval stops a command.
    pub confined: bool,
    /// One line: `landlock ABI 7 + bwrap`, `landlock ABI 7 only`, `none`.
    pub summary: String,
    /// What this confinement does not stop, in the user's words.
    pub gaps: Vec<String>,
}

/// An editor Mandate can open files in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct EditorOption {
    pub id: String,
    pub label: String,
    /// Found on this machine (its program is on the PATH).
    pub detected: bool,
}

/// A model server found on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LocalServer {
    /// The settings preset it matches: `ollama`, `lmstudio` or `llamacpp`.
    pub preset: String,
    pub label: String,
    /// OpenAI-compatible base URL, up to and including `/v1`.
    pub base_url: String,
    pub models: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct SettingsUpdate {
    pub provider: ProviderKind,
    pub preset: String,
    pub base_url: String,
    pub model: String,
    pub custom_instructions: String,
    pub approval: ApprovalPolicy,
    /// `auto` or the id of one of `SettingsView::editors`.
    pub editor: String,
    /// The cap on what one task may spend; absent is no cap.
    #[serde(default)]
    #[ts(optional)]
    pub budget: Option<Budget>,
}

// ---- tasks and messages ---------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Idle,
    Running,
    WaitingForApproval,
    WaitingForAnswer,
    Completed,
    Failed,
    Cancelled,
    /// Stopped at its cost or token budget; raising the budget and retrying goes on.
    Paused,
}

/// A cap on what a task (or all tasks of an intent) may spend; None is no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// In US dollars, when the model's price is known.
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TaskSummary {
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    pub intent_id: Option<String>,
    pub model: String,
    pub usage: Usage,
    pub created_at: String,
    pub updated_at: String,
    /// The last error, in words for the user.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UiMessage {
    User {
        id: String,
        text: String,
    },
    Assistant {
        id: String,
        safe_html: String,
        complete: bool,
    },
    Tool {
        id: String,
        call: ToolCallView,
    },
    Error {
        id: String,
        message: String,
    },
    Notice {
        id: String,
        text: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Mutate,
    Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    Running,
    WaitingForApproval,
    Succeeded,
    Denied,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ToolCallView {
    pub call_id: String,
    pub tool: String,
    pub kind: ToolKind,
    /// What it acts on: a path, a command, an intent id.
    pub target: String,
    pub status: ToolCallStatus,
    /// One line on the outcome (or the denial code and message).
    pub summary: String,
    /// Command output or result text, truncated for display.
    pub output: String,
    /// The workspace file the call acts on (reads and writes), to open in the editor.
    #[serde(default)]
    pub path: Option<String>,
    /// Where in `path` to open it (a write: its first changed line), 1-based.
    #[serde(default)]
    pub line: Option<u32>,
    /// Workspace files the call changed and recorded in the ledger: what undoing it takes back.
    #[serde(default)]
    pub changed_paths: Vec<String>,
}

// ---- approvals ------------------------------------------------------------------------------

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
        mutation_class: String,
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
    /// ' ' context, '+' added, '-' removed.
    pub tag: String,
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

// ---- MCP servers ----------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum McpSource {
    /// The workspace's `.mcp.json`.
    Project,
    /// Added in Settings (Mandate's own `mcp.json`).
    Settings,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum McpTransportKind {
    Stdio,
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum McpStatus {
    /// May run; not started yet (servers start with a task or when Settings are opened).
    Stopped,
    /// A workspace's server the person has not agreed to run (in this definition).
    NeedsConsent,
    /// `"disabled": true` in its definition.
    Disabled,
    /// The definition is not valid (see `error`).
    Invalid,
    Starting,
    Ready,
    /// It stopped; started again after a pause (see `error`).
    Restarting,
    Failed,
}

/// What a server declares about a tool (MCP tool annotations). Hints, not guarantees.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpAnnotations {
    pub title: Option<String>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpToolView {
    /// The server's name for the tool.
    pub tool: String,
    /// The name the model calls it by; empty when the tool is hidden.
    pub model_name: String,
    pub description: String,
    pub annotations: McpAnnotations,
    /// Runs as a read (no intent, no approval): the server declares it read-only and the
    /// person trusts the server's hints.
    pub runs_as_read: bool,
    /// Why the model is not given this tool (a broken schema, a name collision).
    pub hidden: Option<String>,
}

/// A server as Settings define it (the `.mcp.json` entry, typed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpServerInput {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<McpVariable>,
        startup_timeout_sec: Option<u32>,
        tool_timeout_sec: Option<u32>,
    },
    Http {
        url: String,
        headers: Vec<McpVariable>,
        startup_timeout_sec: Option<u32>,
        tool_timeout_sec: Option<u32>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct McpVariable {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpSecretView {
    pub name: String,
    /// Whether the keyring holds a value for it (never the value).
    pub set: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpServerView {
    pub name: String,
    pub source: McpSource,
    /// None when the definition is invalid.
    pub transport: Option<McpTransportKind>,
    /// The command line (an argv, quoted) or the URL: what consent is given to.
    pub target: String,
    /// What the definition sets besides the command: environment variables (stdio) or headers
    /// (http), as written, with secret references unresolved. Shown for consent: a variable
    /// such as `LD_PRELOAD` changes what the command runs.
    pub variables: Vec<McpVariable>,
    /// SHA-256 of the definition; consent names it.
    pub definition_hash: String,
    pub status: McpStatus,
    pub error: Option<String>,
    pub trusts_read_only_hints: bool,
    pub secrets: Vec<McpSecretView>,
    pub tools: Vec<McpToolView>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpOverview {
    pub servers: Vec<McpServerView>,
    /// Problems with a whole file (`.mcp.json` not JSON, Mandate's `mcp.json` broken).
    pub problems: Vec<String>,
}

// ---- intents --------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IntentStatus {
    NotStarted,
    InProgress,
    Done,
    Blocked,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct IntentView {
    pub id: String,
    pub name: String,
    pub status: IntentStatus,
    pub owned_scope: Vec<String>,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    /// The `budget` key of the intent: a cap over all tasks that hold it.
    pub budget: Option<Budget>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct IntentDraft {
    pub id: String,
    pub name: String,
    pub status: IntentStatus,
    pub owned_scope: Vec<String>,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    /// The intent's own budget; absent or None removes it.
    #[serde(default)]
    #[ts(optional)]
    pub budget: Option<Budget>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct IntentsView {
    /// Workspace-relative path of the intents file.
    pub path: String,
    pub exists: bool,
    pub intents: Vec<IntentView>,
    /// Why the file on disk does not load (the last good version stays in use).
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct GlobPreview {
    pub glob: String,
    pub error: Option<String>,
    /// The first matching files, workspace-relative.
    pub matches: Vec<String>,
    pub total: u32,
}

// ---- trace ----------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LineRange {
    pub start_line: u32,
    pub end_line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TraceChange {
    pub record_id: String,
    pub timestamp: String,
    pub path: String,
    pub ranges: Vec<LineRange>,
    pub model: String,
    pub contributor: String,
    pub tool: String,
    pub task_id: String,
    pub mutation_class: String,
    /// Who approved, or "policy" when no approval was needed.
    pub approval: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct FileBlame {
    pub path: String,
    pub lines: Vec<BlameLine>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct BlameLine {
    pub line: u32,
    pub text: String,
    /// None when no recorded change covers this line now.
    pub origin: Option<LineOrigin>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LineOrigin {
    pub intent_id: String,
    pub record_id: String,
    pub task_id: String,
    pub model: String,
    pub contributor: String,
    pub approval: String,
    pub timestamp: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The range still hashes to what was recorded, where it was recorded.
    Intact,
    /// The same text is elsewhere in the file.
    Moved,
    /// The text is gone: someone edited it after the record.
    Changed,
    /// The file no longer exists.
    Missing,
    /// The hash chain does not hold: a record was edited, removed or reordered.
    Tampered,
    /// A line of the ledger is not a valid record.
    Malformed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct VerifyFinding {
    pub kind: FindingKind,
    /// 1-based line of the ledger.
    pub ledger_line: u32,
    pub record_id: Option<String>,
    pub path: Option<String>,
    pub range: Option<LineRange>,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct VerifyReport {
    pub records: u32,
    pub ranges: u32,
    pub intact: u32,
    pub moved: u32,
    /// Replaced later by another recorded change to the same file.
    pub superseded: u32,
    pub changed: u32,
    pub missing: u32,
    pub tampered: u32,
    pub malformed: u32,
    /// Every finding that is not `intact`.
    pub findings: Vec<VerifyFinding>,
    /// True when the chain holds and no record is malformed (edits by people are not tampering).
    pub chain_ok: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ChangeDiffView {
    pub record_id: String,
    pub path: String,
    pub hunks: Vec<DiffHunk>,
    /// False when the text before the change was not kept.
    pub available: bool,
}

/// The command policy in use and its verdict on one command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CommandCheck {
    /// `.orchestration/command_policy.yaml`, or `built-in` when the workspace has none.
    pub source: String,
    /// Why the workspace policy does not load (commands are then refused).
    pub error: Option<String>,
    /// None when no command was given or the policy does not load.
    pub destructive: Option<bool>,
    pub reasons: Vec<String>,
}

// ---- undo -----------------------------------------------------------------------------------

/// What to take back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum UndoScope {
    Call {
        task_id: String,
        call_id: String,
    },
    /// The turn that starts with this message of the person's, and everything after it; the
    /// conversation is rewound so the message can be edited and sent again.
    Turn {
        task_id: String,
        message_id: String,
    },
    Task {
        task_id: String,
    },
    /// An intent's changes, optionally only since a time (RFC 3339).
    Intent {
        intent_id: String,
        since: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct UndoFileChoice {
    pub path: String,
    /// Hunks of the preview to leave out.
    pub rejected_hunks: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UndoAction {
    /// Put back as it was before.
    Restore,
    /// Changed since: the change is taken out, the other edits kept.
    Merge,
    /// Created by the change: removed.
    Remove,
    /// Removed by the change: comes back.
    Recreate,
    /// Already as before.
    Nothing,
    /// Undoing would overwrite someone's edit: left alone (see the reason).
    Conflict,
    /// The earlier version is not known: left alone (see the reason).
    Unavailable,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct UndoFileView {
    pub path: String,
    pub action: UndoAction,
    pub reason: Option<String>,
    pub language: String,
    /// The file now → after the undo, with three lines of context.
    pub hunks: Vec<DiffHunk>,
    pub old_text: String,
    pub new_text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct UndoPreview {
    pub preview_id: String,
    /// What is taken back, in words.
    pub scope: String,
    /// How many recorded changes are taken back.
    pub records: u32,
    pub files: Vec<UndoFileView>,
    /// A turn: the conversation goes back to before its message.
    pub rewinds: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UndoOutcome {
    Undone,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct UndoFileOutcome {
    pub path: String,
    pub outcome: UndoOutcome,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct UndoResult {
    pub files: Vec<UndoFileOutcome>,
    /// For a turn: the message to put back in the composer.
    pub rewound_text: Option<String>,
}

/// TypeScript declarations of every boundary type, for the UI's type-checked JS.
pub fn typescript_declarations() -> String {
    let cfg = ts_rs::Config::new().with_large_int("number");
    let decls = [
        Request::decl(&cfg),
        Reply::decl(&cfg),
        IpcError::decl(&cfg),
        IpcErrorCode::decl(&cfg),
        Event::decl(&cfg),
        NoticeLevel::decl(&cfg),
        AppState::decl(&cfg),
        ProviderKind::decl(&cfg),
        ApprovalPolicy::decl(&cfg),
        SettingsView::decl(&cfg),
        SettingsUpdate::decl(&cfg),
        ConfinementView::decl(&cfg),
        EditorOption::decl(&cfg),
        LocalServer::decl(&cfg),
        TaskStatus::decl(&cfg),
        Usage::decl(&cfg),
        Budget::decl(&cfg),
        TaskSummary::decl(&cfg),
        UiMessage::decl(&cfg),
        ToolKind::decl(&cfg),
        ToolCallStatus::decl(&cfg),
        ToolCallView::decl(&cfg),
        ApprovalRequest::decl(&cfg),
        ApprovalDetail::decl(&cfg),
        UserHookView::decl(&cfg),
        CommandGrants::decl(&cfg),
        DiffHunk::decl(&cfg),
        DiffLine::decl(&cfg),
        ApprovalDecision::decl(&cfg),
        IntentStatus::decl(&cfg),
        IntentView::decl(&cfg),
        IntentDraft::decl(&cfg),
        IntentsView::decl(&cfg),
        GlobPreview::decl(&cfg),
        LineRange::decl(&cfg),
        TraceChange::decl(&cfg),
        FileBlame::decl(&cfg),
        BlameLine::decl(&cfg),
        LineOrigin::decl(&cfg),
        FindingKind::decl(&cfg),
        VerifyFinding::decl(&cfg),
        VerifyReport::decl(&cfg),
        ChangeDiffView::decl(&cfg),
        CommandCheck::decl(&cfg),
        UndoScope::decl(&cfg),
        UndoFileChoice::decl(&cfg),
        UndoAction::decl(&cfg),
        UndoFileView::decl(&cfg),
        UndoPreview::decl(&cfg),
        UndoOutcome::decl(&cfg),
        UndoFileOutcome::decl(&cfg),
        UndoResult::decl(&cfg),
        McpSource::decl(&cfg),
        McpTransportKind::decl(&cfg),
        McpStatus::decl(&cfg),
        McpAnnotations::decl(&cfg),
        McpToolView::decl(&cfg),
        McpServerInput::decl(&cfg),
        McpVariable::decl(&cfg),
        McpSecretView::decl(&cfg),
        McpServerView::decl(&cfg),
        McpOverview::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from src-tauri/core/src/protocol.rs by `make ts`. Do not edit.\n\n",
    );
    for decl in decls {
        out.push_str("export ");
        out.push_str(&decl);
        out.push_str("\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn requests_parse_from_tagged_json() {
        let req: Request =
            serde_json::from_str(r#"{"type":"start_task","text":"hi"}"#).expect("valid request");
        assert_eq!(req, Request::StartTask { text: "hi".into() });
        let req: Request = serde_json::from_str(r#"{"type":"get_state"}"#).expect("unit variant");
        assert_eq!(req, Request::GetState);
    }

    #[test]
    fn unknown_fields_and_types_are_rejected() {
        for bad in [
            r#"{"type":"start_task","text":"hi","extra":1}"#,
            r#"{"type":"launch_missiles"}"#,
            r#"{"text":"hi"}"#,
            r#"{"type":"save_settings","settings":{"provider":"openai","preset":"x","base_url":"u","model":"m","custom_instructions":"","approval":{"ask_before_writes":true,"ask_before_safe_commands":false},"editor":"auto","api_key":"k"}}"#,
            r#"{"type":"open_in_editor","path":"a.rs","line":-1}"#,
            r#"{"type":"open_in_editor","path":"a.rs","line":1,"program":"sh"}"#,
            r#"{"type":"decide_approval","task_id":"t","approval_id":"a","decision":{"decision":"reject","reason":"no","x":1}}"#,
        ] {
            assert!(
                serde_json::from_str::<Request>(bad).is_err(),
                "accepted: {bad}"
            );
        }
    }

    #[test]
    fn typescript_declarations_are_current() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/js/protocol.d.ts");
        let generated = typescript_declarations();
        if std::env::var_os("UPDATE_TS").is_some() {
            std::fs::write(&path, &generated).expect("write protocol.d.ts");
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == generated,
            "ui/js/protocol.d.ts is out of date: run `make ts`"
        );
    }
}

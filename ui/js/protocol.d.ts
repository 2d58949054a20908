// Generated from src-tauri/core/src/protocol/ by `make ts`. Do not edit.

export type Request = { "type": "get_state" } | { "type": "save_settings", settings: SettingsUpdate, } | { "type": "set_api_key", provider: ProviderKind, api_key: string, 
/**
 * The profile the key is for (absent: the default one).
 */
profile?: string, } | { "type": "clear_api_key", provider: ProviderKind, profile?: string, } | { "type": "move_profile_key", profile: string, } | { "type": "delete_profile", profile: string, } | { "type": "list_models", profile?: string, } | { "type": "start_task", text: string, 
/**
 * The mode the task starts in (its slug); none: Code.
 */
mode?: string, 
/**
 * Ids of images attached with `AttachImage` (or dropped on the window).
 */
images?: Array<string>, 
/**
 * The provider profile the task runs on (absent: the default one).
 */
profile?: string, } | { "type": "list_modes" } | { "type": "list_commands" } | { "type": "list_mentionables", query: string, } | { "type": "preview_mentions", text: string, } | { "type": "list_instructions" } | { "type": "set_task_mode", task_id: string, mode: string, } | { "type": "set_todos", task_id: string, todos: Array<TodoItem>, } | { "type": "send_message", task_id: string, text: string, 
/**
 * Ids of images attached with `AttachImage` (or dropped on the window) to send with it.
 */
images?: Array<string>, } | { "type": "attach_image", name: string, data_base64: string, } | { "type": "cancel_task", task_id: string, } | { "type": "retry_task", task_id: string, } | { "type": "condense_task", task_id: string, } | { "type": "answer_question", task_id: string, call_id: string, answer: string, } | { "type": "decide_approval", task_id: string, approval_id: string, decision: ApprovalDecision, } | { "type": "list_tasks" } | { "type": "open_task", task_id: string, } | { "type": "delete_task", task_id: string, } | { "type": "search_history", query: HistoryQuery, } | { "type": "export_task", task_id: string, } | { "type": "list_processes", task_id: string, } | { "type": "stop_process", process_id: string, } | { "type": "select_intent", task_id: string, intent_id: string | null, } | { "type": "list_intents" } | { "type": "save_intent", original_id: string | null, intent: IntentDraft, } | { "type": "delete_intent", id: string, } | { "type": "reorder_intents", ids: Array<string>, } | { "type": "set_intent_status", id: string, status: IntentStatus, } | { "type": "preview_scope", globs: Array<string>, } | { "type": "intent_trace", intent_id: string, } | { "type": "blame", path: string, } | { "type": "verify_trace" } | { "type": "change_diff", record_id: string, path: string, } | { "type": "open_external", url: string, } | { "type": "check_command", command: string, } | { "type": "preview_undo", scope: UndoScope, } | { "type": "apply_undo", preview_id: string, files: Array<UndoFileChoice>, } | { "type": "open_in_editor", path: string, line: number | null, } | { "type": "open_workspace", path: string | null, } | { "type": "discover_local_servers" } | { "type": "list_mcp_servers" } | { "type": "save_mcp_server", name: string, server: McpServerInput, } | { "type": "remove_mcp_server", name: string, } | { "type": "set_mcp_secret", server: string, name: string, value: string, } | { "type": "clear_mcp_secret", server: string, name: string, } | { "type": "grant_mcp_consent", name: string, definition_hash: string, } | { "type": "revoke_mcp_consent", name: string, } | { "type": "set_mcp_trust", name: string, trusted: boolean, } | { "type": "restart_mcp_server", name: string, } | { "type": "set_mcp_workspace_write", name: string, definition_hash: string, allowed: boolean, } | { "type": "set_mcp_unconfined", name: string, definition_hash: string, allowed: boolean, } | { "type": "diagnostics" };

export type Reply = { "type": "ok" } | { "type": "state", state: AppState, } | { "type": "settings", settings: SettingsView, } | { "type": "models", models: Array<string>, } | { "type": "commands", commands: Array<CommandInfo>, } | { "type": "mentionables", items: Array<string>, } | { "type": "mentions", mentions: Array<MentionView>, } | { "type": "image", image: ImageView, } | { "type": "instructions", view: InstructionsView, } | { "type": "modes", modes: Array<ModeInfo>, 
/**
 * Mode files or entries that could not be read, each naming the file.
 */
problems: Array<string>, } | { "type": "task", task: TaskSummary, } | { "type": "tasks", tasks: Array<TaskSummary>, } | { "type": "processes", processes: Array<ProcessView>, } | { "type": "task_detail", task: TaskSummary, messages: Array<UiMessage>, } | { "type": "history", results: HistoryResults, } | { "type": "task_export", export: TaskExport, } | { "type": "intents", intents: IntentsView, } | { "type": "scope_preview", globs: Array<GlobPreview>, } | { "type": "intent_trace", changes: Array<TraceChange>, } | { "type": "blame", blame: FileBlame, } | { "type": "verify", report: VerifyReport, } | { "type": "diff", diff: ChangeDiffView, } | { "type": "command_check", check: CommandCheck, } | { "type": "undo_preview", preview: UndoPreview, } | { "type": "undo_applied", result: UndoResult, } | { "type": "local_servers", servers: Array<LocalServer>, } | { "type": "mcp_servers", overview: McpOverview, } | { "type": "diagnostics", text: string, };

export type IpcError = { code: IpcErrorCode, message: string, };

export type IpcErrorCode = "malformed_request" | "not_found" | "invalid_input" | "conflict" | "keyring" | "provider" | "io" | "internal";

export type Event = { "type": "images_dropped", images: Array<ImageView>, errors: Array<string>, } | { "type": "task_updated", task: TaskSummary, } | { "type": "task_deleted", task_id: string, } | { "type": "message_added", task_id: string, message: UiMessage, } | { "type": "message_delta", task_id: string, message_id: string, stable_safe_html: string, safe_html: string, reset: boolean, } | { "type": "message_finished", task_id: string, message_id: string, safe_html: string, complete: boolean, } | { "type": "tool_call_started", task_id: string, call: ToolCallView, } | { "type": "tool_call_output", task_id: string, call_id: string, chunk: string, } | { "type": "tool_call_finished", task_id: string, call: ToolCallView, } | { "type": "approval_requested", task_id: string, request: ApprovalRequest, } | { "type": "approval_resolved", task_id: string, approval_id: string, outcome: ApprovalOutcome, } | { "type": "question_asked", task_id: string, call_id: string, question: string, options: Array<string>, } | { "type": "intents_changed", intents: IntentsView, } | { "type": "settings_changed", settings: SettingsView, } | { "type": "ledger_checked", problem: string | null, } | { "type": "notice", level: NoticeLevel, message: string, } | { "type": "mcp_servers_changed", overview: McpOverview, } | { "type": "condensing", task_id: string, automatic: boolean, } | { "type": "context_retry", task_id: string, attempt: number, 
/**
 * The window the provider's error named, where it named one.
 */
limit_tokens: number | null, message: string, } | { "type": "output_cut", task_id: string, max_tokens: number, } | { "type": "process_changed", process: ProcessView, } | { "type": "process_output", task_id: string, process_id: string, chunk: string, } | { "type": "show_task", task_id: string, };

export type NoticeLevel = "info" | "warning" | "error";

export type AppState = { workspace: string, version: string, settings: SettingsView, tasks: Array<TaskSummary>, intents: IntentsView, 
/**
 * Why the trace ledger cannot be trusted (a broken chain, a malformed line), in words that
 * name the file and the line; None when it holds.
 */
ledger_problem: string | null, };

export type ProviderKind = "anthropic" | "openai";

export type ApprovalPolicy = { ask_before_writes: boolean, ask_before_safe_commands: boolean, 
/**
 * The agent's `switch_mode` takes effect without asking the person.
 */
switch_modes_without_asking: boolean, };

export type SettingsView = { provider: ProviderKind, 
/**
 * A label for the provider preset: anthropic, openai, openrouter, ollama, lmstudio, custom.
 */
preset: string, base_url: string, model: string, api_key_set: boolean, 
/**
 * Where the key comes from: `keyring`, `env:NAME` or `none`.
 */
api_key_source: string, custom_instructions: string, approval: ApprovalPolicy, 
/**
 * Why the keyring cannot be used, when it cannot.
 */
keyring_error: string | null, 
/**
 * The provider needs an API key and none is set (a server on this machine needs none).
 */
needs_key: boolean, 
/**
 * The editor file paths open in: `auto` (the first detected) or one of `editors`.
 */
editor: string, editors: Array<EditorOption>, 
/**
 * Workspaces opened before, most recent first (existing folders only).
 */
recent_workspaces: Array<string>, 
/**
 * How commands are confined on this machine.
 */
confinement: ConfinementView, 
/**
 * The cap on what one task may spend (none when both are None).
 */
budget: Budget, 
/**
 * Condensing and the models' windows as the person set them.
 */
context: ContextSettings, 
/**
 * The embeddings endpoint for code search, if any.
 */
code_search: CodeSearchSettings, 
/**
 * Every provider profile; the fields above describe the default one.
 */
profiles: Array<ProfileView>, default_profile: string, 
/**
 * The profile each mode runs on, where the person named one (its slug → a profile id).
 */
mode_profiles: { [key in string]: string }, notifications: boolean, };

export type SettingsUpdate = { provider: ProviderKind, preset: string, base_url: string, model: string, custom_instructions: string, approval: ApprovalPolicy, 
/**
 * `auto` or the id of one of `SettingsView::editors`.
 */
editor: string, 
/**
 * The cap on what one task may spend; absent is no cap.
 */
budget?: Budget, 
/**
 * Condensing and per-model windows; absent keeps what is set.
 */
context?: ContextSettings, 
/**
 * The embeddings endpoint for code search; absent keeps what is set.
 */
code_search?: CodeSearchSettings, 
/**
 * The profile the provider fields above are for (absent: the default one); an id not
 * known yet makes a new profile.
 */
profile?: string, 
/**
 * Its name (a new profile needs one).
 */
profile_name?: string, 
/**
 * Makes this profile the default one for new tasks.
 */
default_profile?: string, 
/**
 * The profile each mode runs on (its slug → a profile id); absent keeps what is set.
 */
mode_profiles?: { [key in string]: string }, 
/**
 * Desktop notifications when Mandate waits; absent keeps what is set.
 */
notifications?: boolean, };

export type ConfinementView = { 
/**
 * False: nothing but a person's approval stops a command.
 */
confined: boolean, 
/**
 * One line: `landlock ABI 7 + bwrap`, `landlock ABI 7 only`, `none`.
 */
summary: string, 
/**
 * What this confinement does not stop, in the user's words.
 */
gaps: Array<string>, };

export type EditorOption = { id: string, label: string, 
/**
 * Found on this machine (its program is on the PATH).
 */
detected: boolean, };

export type LocalServer = { 
/**
 * The settings preset it matches: `ollama`, `lmstudio` or `llamacpp`.
 */
preset: string, label: string, 
/**
 * OpenAI-compatible base URL, up to and including `/v1`.
 */
base_url: string, models: Array<string>, };

export type TaskStatus = "idle" | "running" | "waiting_for_approval" | "waiting_for_answer" | "waiting_for_subtask" | "completed" | "failed" | "cancelled" | "paused";

export type Usage = { 
/**
 * Every input token sent, cached or not.
 */
input_tokens: number, output_tokens: number, 
/**
 * In US dollars, when the model's price is known (condensing calls included).
 */
cost_usd: number | null, 
/**
 * Input tokens read from the provider's prompt cache (part of `input_tokens`).
 */
cache_read_tokens: number, 
/**
 * Input tokens written to the prompt cache (part of `input_tokens`).
 */
cache_write_tokens: number, 
/**
 * What cache reads saved against the full input price, when the price is known.
 */
cache_saved_usd: number | null, };

export type Budget = { max_cost_usd: number | null, max_tokens: number | null, };

export type ContextView = { 
/**
 * Tokens the next request holds (the last usage plus an estimate of what was added).
 */
used_tokens: number, 
/**
 * The model's whole window.
 */
window_tokens: number, 
/**
 * What input may use: the window less the output reserved and a margin.
 */
usable_tokens: number, 
/**
 * Where automatic condensing starts.
 */
threshold_tokens: number, 
/**
 * Where the window figure comes from: `settings`, `provider`, `table`, `learned`, `default`.
 */
window_source: string, 
/**
 * How many times the conversation was condensed.
 */
condensations: number, };

export type ContextSettings = { 
/**
 * Condense automatically when the conversation reaches this share of the usable input
 * (percent, 10 to 95).
 */
threshold_percent: number, 
/**
 * Per model (`provider/model`, as recorded in the ledger): window, output and thinking.
 */
models: Array<ModelOverride>, };

export type ModelPrices = { input: number, output: number, cache_read: number | null, cache_write: number | null, };

export type ProviderProfile = { 
/**
 * Stable: lower-case letters, digits and `-` (the keyring entry is named by it).
 */
id: string, name: string, provider: ProviderKind, preset: string, base_url: string, model: string, 
/**
 * The origin the key was given for (Mandate sets it; a key goes nowhere else).
 */
key_origin?: string, };

export type ProfileView = { profile: ProviderProfile, api_key_set: boolean, key_elsewhere: string | null, };

export type CodeSearchSettings = { 
/**
 * Up to and including `/v1`, e.g. `http://127.0.0.1:11434/v1`.
 */
embeddings_base_url: string, embeddings_model: string, };

export type ModelOverride = { 
/**
 * `provider/model`, e.g. `anthropic/claude-sonnet-4-5` or `openai/llama3.2`.
 */
model: string, context_window: number | null, max_output: number | null, 
/**
 * Anthropic extended thinking budget in tokens (0 or None: off).
 */
thinking_budget: number | null, 
/**
 * Its prices, instead of the table's (or where the table knows none).
 */
prices?: ModelPrices, };

export type TaskSummary = { id: string, title: string, status: TaskStatus, intent_id: string | null, model: string, usage: Usage, created_at: string, updated_at: string, 
/**
 * The last error, in words for the user.
 */
error: string | null, 
/**
 * How full the model's window is (known once the task has asked the model).
 */
context: ContextView | null, 
/**
 * The slug of the task's mode (None: a task from before modes, or none chosen).
 */
mode: string | null, 
/**
 * The task's todo list (`update_todo_list`, or the person's edits).
 */
todos: Array<TodoItem>, 
/**
 * The person changed the list since the model last wrote it (the model is told).
 */
todos_edited: boolean, 
/**
 * The task that started this one with `new_task` (None: the person started it).
 */
parent_id: string | null, 
/**
 * The provider profile it runs on (None: a task from before profiles: the default one).
 */
profile: string | null, };

export type HistoryQuery = { 
/**
 * Words that must all appear, in any case, in the task's title, the person's messages,
 * the agent's answers, the tools' targets (paths, commands) or its intent's id and name.
 * Taken literally (no patterns); empty: any task.
 */
text: string, 
/**
 * An intent's id, or words of its name.
 */
intent: string | null, 
/**
 * Tasks still active at or after this moment: RFC 3339, or a day `YYYY-MM-DD` (its
 * start, UTC).
 */
since: string | null, 
/**
 * Tasks started at or before this moment: RFC 3339, or a day (its end, UTC).
 */
until: string | null, 
/**
 * Tasks that cost at least this (US dollars); a task of unknown cost does not.
 */
min_cost_usd: number | null, 
/**
 * Tasks that cost at most this; a task of unknown cost does not.
 */
max_cost_usd: number | null, };

export type HistoryField = "title" | "person" | "agent" | "tool" | "intent";

export type HistorySnippet = { field: HistoryField, before: string, matched: string, after: string, };

export type HistoryHit = { task: TaskSummary, 
/**
 * The intent's name in the intents file now, when it is still there.
 */
intent_name: string | null, 
/**
 * Where the first word was found; None when no words were asked for.
 */
snippet: HistorySnippet | null, };

export type HistoryResults = { 
/**
 * Newest first, at most a few hundred.
 */
hits: Array<HistoryHit>, 
/**
 * How many tasks matched (more than `hits` when the list was cut).
 */
total: number, 
/**
 * How many tasks were searched.
 */
searched: number, };

export type TaskExport = { markdown: string, 
/**
 * The file the host wrote it to (in Mandate's data directory, out of the agent's reach).
 */
path: string, };

export type UiMessage = { "kind": "user", id: string, text: string, 
/**
 * Images the person attached (their previews; the model got the images themselves).
 */
images?: Array<ImageView>, } | { "kind": "assistant", id: string, safe_html: string, complete: boolean, } | { "kind": "tool", id: string, call: ToolCallView, } | { "kind": "error", id: string, message: string, } | { "kind": "notice", id: string, text: string, } | { "kind": "thinking", id: string, text: string, } | { "kind": "condensed", id: string, tokens_before: number, tokens_after: number, cost_usd: number | null, summary_safe_html: string, 
/**
 * True when Mandate condensed at the threshold; false when the person asked.
 */
automatic: boolean, } | { "kind": "subtask", id: string, task_id: string, title: string, mode: string, status: TaskStatus, 
/**
 * Its `attempt_completion` result, or why it did not complete.
 */
result_safe_html: string | null, };

export type ToolKind = "read" | "mutate" | "command";

export type ToolCallStatus = "running" | "waiting_for_approval" | "succeeded" | "denied" | "failed";

export type ToolCallView = { call_id: string, tool: string, kind: ToolKind, 
/**
 * What it acts on: a path, a command, an intent id.
 */
target: string, status: ToolCallStatus, 
/**
 * One line on the outcome (or the denial code and message).
 */
summary: string, 
/**
 * Command output or result text, truncated for display.
 */
output: string, 
/**
 * The workspace file the call acts on (reads and writes), to open in the editor.
 */
path: string | null, 
/**
 * Where in `path` to open it (a write: its first changed line), 1-based.
 */
line: number | null, 
/**
 * Workspace files the call changed and recorded in the ledger: what undoing it takes back.
 */
changed_paths: Array<string>, 
/**
 * The call runs in a program outside any confinement (an MCP server the person allowed
 * to run unconfined, or any stdio server where the machine offers no confinement): it
 * can read and write whatever the person can; what it changes in the workspace is found
 * after the call, recorded in scope and undone out of it, and Mandate cannot see what it
 * does elsewhere.
 */
unconfined: boolean, };

export type ApprovalRequest = { approval_id: string, call_id: string, intent: IntentView | null, detail: ApprovalDetail, 
/**
 * Why the person's own hooks ask for this approval (`your hook `name`: reason`), shown on
 * the card; empty when only Mandate asks.
 */
hook_reasons: Array<string>, };

export type ApprovalDetail = { "kind": "write", path: string, new_file: boolean, language: string, old_text: string, new_text: string, hunks: Array<DiffHunk>, mutation_class: MutationClass, } | { "kind": "command", command: string, cwd: string, destructive: boolean, reasons: Array<string>, 
/**
 * What the command policy says it needs beyond the confinement (pre-ticked on the card).
 */
needs: CommandGrants, 
/**
 * Whether it will run confined by the kernel (false: nothing stops it but this card).
 */
confined: boolean, 
/**
 * It keeps running in the background (a dev server, a watcher) until it is stopped,
 * its task ends, or Mandate closes.
 */
background: boolean, } | { "kind": "continue", reason: string, } | { "kind": "scope_expansion", intent_id: string, owned_scope: Array<string>, globs: Array<string>, reason: string, 
/**
 * Which workspace files each requested glob matches now.
 */
preview: Array<GlobPreview>, } | { "kind": "new_intent", intent: IntentDraft, reason: string, } | { "kind": "mcp_call", server: string, source: McpSource, tool: string, 
/**
 * The server's description of the tool (the server's words, not Mandate's).
 */
description: string, 
/**
 * The arguments, pretty-printed JSON.
 */
arguments: string, 
/**
 * What the server claims about the tool; hints, not guarantees.
 */
annotations: McpAnnotations, 
/**
 * The person allowed the server to write in the workspace: the call's changes there
 * are found, recorded when the intent owns them and undone otherwise.
 */
writes_workspace: boolean, 
/**
 * The server runs outside any confinement (the person allowed it, or the machine
 * offers none): it can read and write whatever the person can, unseen by Mandate.
 */
unconfined: boolean, } | { "kind": "tool_call", tool: string, target: string, 
/**
 * The call's arguments as pretty JSON, shortened.
 */
arguments: string, } | { "kind": "user_hooks", hooks: Array<UserHookView>, 
/**
 * Workspace files the hooks' commands name, whose contents were confirmed with them.
 */
scripts: Array<string>, 
/**
 * What is configured but not run by Mandate.
 */
ignored: Array<string>, };

export type UserHookView = { 
/**
 * `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop` or `SessionStart`.
 */
event: string, 
/**
 * `*` for every tool.
 */
matcher: string, name: string, 
/**
 * The shell command, or what Mandate cannot run.
 */
command: string, 
/**
 * The file it comes from.
 */
source: string, advisory: boolean, network: boolean, timeout_seconds: number, };

export type CommandGrants = { network: boolean, write_git: boolean, };

export type DiffHunk = { index: number, old_start: number, old_lines: number, new_start: number, new_lines: number, lines: Array<DiffLine>, };

export type DiffLine = { tag: DiffTag, text: string, };

export type DiffTag = " " | "+" | "-";

export type MutationClass = "AST_REFACTOR" | "INTENT_EVOLUTION" | "EXTERNAL_ACTION" | string & {};

export type Contributor = "human" | "ai" | "mixed" | "unknown" | string & {};

export type Approver = "user" | "policy" | "headless" | string & {};

export type ApprovalOutcome = { "kind": "approved" } | { "kind": "approved_with_grants", grants: CommandGrants, } | { "kind": "approved_this_call_only" } | { "kind": "approved_always" } | { "kind": "approved_after_edit" } | { "kind": "approved_after_scope_edit" } | { "kind": "approved_some_hunks", accepted: number, of: number, } | { "kind": "rejected", reason: string, } | { "kind": "rejected_every_hunk" } | { "kind": "rejected_bad_scope" } | { "kind": "continue" } | { "kind": "stop" } | { "kind": "hooks_confirmed" } | { "kind": "hooks_not_run" } | { "kind": "ledger_accepted" } | { "kind": "ledger_refused" };

export type ApprovalDecision = { "decision": "approve", rejected_hunks: Array<number>, edited_content: string | null, 
/**
 * Commands: what the person allows it beyond the confinement (none when absent).
 */
grant?: CommandGrants, } | { "decision": "reject", reason: string, } | { "decision": "always_allow" };

export type IntentStatus = "NOT_STARTED" | "IN_PROGRESS" | "DONE" | "BLOCKED";

export type IntentView = { id: string, name: string, status: IntentStatus, owned_scope: Array<string>, constraints: Array<string>, acceptance_criteria: Array<string>, 
/**
 * The `budget` key of the intent: a cap over all tasks that hold it.
 */
budget: Budget | null, };

export type IntentDraft = { id: string, name: string, status: IntentStatus, owned_scope: Array<string>, constraints: Array<string>, acceptance_criteria: Array<string>, 
/**
 * The intent's own budget; absent or None removes it.
 */
budget?: Budget, };

export type IntentsView = { 
/**
 * Workspace-relative path of the intents file.
 */
path: string, exists: boolean, intents: Array<IntentView>, 
/**
 * Why the file on disk does not load (the last good version stays in use).
 */
error: string | null, };

export type GlobPreview = { glob: string, error: string | null, 
/**
 * The first matching files, workspace-relative.
 */
matches: Array<string>, total: number, };

export type LineRange = { start_line: number, end_line: number, };

export type TraceChange = { record_id: string, timestamp: string, path: string, ranges: Array<LineRange>, model: string, contributor: Contributor, tool: string, task_id: string, mutation_class: MutationClass, 
/**
 * Who let it through (`policy` when no approval was needed).
 */
approved_by: Approver, 
/**
 * The approval in words: who, when, hunks left out, edited.
 */
approval: string, };

export type FileBlame = { path: string, lines: Array<BlameLine>, };

export type BlameLine = { line: number, text: string, 
/**
 * None when no recorded change covers this line now.
 */
origin: LineOrigin | null, };

export type LineOrigin = { intent_id: string, record_id: string, task_id: string, model: string, contributor: Contributor, approved_by: Approver, 
/**
 * The approval in words: who, when, hunks left out, edited.
 */
approval: string, timestamp: string, };

export type FindingKind = "intact" | "moved" | "changed" | "missing" | "tampered" | "malformed";

export type VerifyFinding = { kind: FindingKind, 
/**
 * 1-based line of the ledger.
 */
ledger_line: number, record_id: string | null, path: string | null, range: LineRange | null, detail: string, };

export type VerifyReport = { records: number, ranges: number, intact: number, moved: number, 
/**
 * Replaced later by another recorded change to the same file.
 */
superseded: number, changed: number, missing: number, tampered: number, malformed: number, 
/**
 * Every finding that is not `intact`.
 */
findings: Array<VerifyFinding>, 
/**
 * True when the chain holds and no record is malformed (edits by people are not tampering).
 */
chain_ok: boolean, };

export type ChangeDiffView = { record_id: string, path: string, hunks: Array<DiffHunk>, 
/**
 * False when the text before the change was not kept.
 */
available: boolean, };

export type CommandCheck = { 
/**
 * `.orchestration/command_policy.yaml`, or `built-in` when the workspace has none.
 */
source: string, 
/**
 * Why the workspace policy does not load (commands are then refused).
 */
error: string | null, 
/**
 * None when no command was given or the policy does not load.
 */
destructive: boolean | null, reasons: Array<string>, };

export type UndoScope = { "kind": "call", task_id: string, call_id: string, } | { "kind": "turn", task_id: string, message_id: string, } | { "kind": "task", task_id: string, } | { "kind": "intent", intent_id: string, since: string | null, };

export type UndoFileChoice = { path: string, 
/**
 * Hunks of the preview to leave out.
 */
rejected_hunks: Array<number>, };

export type UndoAction = "restore" | "merge" | "remove" | "recreate" | "nothing" | "conflict" | "unavailable";

export type UndoFileView = { path: string, action: UndoAction, reason: string | null, language: string, 
/**
 * The file now → after the undo, with three lines of context.
 */
hunks: Array<DiffHunk>, old_text: string, new_text: string, };

export type UndoPreview = { preview_id: string, 
/**
 * What is taken back, in words.
 */
scope: string, 
/**
 * How many recorded changes are taken back.
 */
records: number, files: Array<UndoFileView>, 
/**
 * A turn: the conversation goes back to before its message.
 */
rewinds: boolean, };

export type UndoOutcome = "undone" | "skipped" | "failed";

export type UndoFileOutcome = { path: string, outcome: UndoOutcome, reason: string | null, };

export type UndoResult = { files: Array<UndoFileOutcome>, 
/**
 * For a turn: the message to put back in the composer.
 */
rewound_text: string | null, };

export type McpSource = "project" | "settings";

export type McpTransportKind = "stdio" | "http";

export type McpStatus = "stopped" | "needs_consent" | "disabled" | "invalid" | "starting" | "ready" | "restarting" | "failed";

export type McpAnnotations = { title: string | null, read_only: boolean | null, destructive: boolean | null, idempotent: boolean | null, open_world: boolean | null, };

export type McpToolView = { 
/**
 * The server's name for the tool.
 */
tool: string, 
/**
 * The name the model calls it by; empty when the tool is hidden.
 */
model_name: string, description: string, annotations: McpAnnotations, 
/**
 * Runs as a read (no intent, no approval): the server declares it read-only and the
 * person trusts the server's hints.
 */
runs_as_read: boolean, 
/**
 * Why the model is not given this tool (a broken schema, a name collision).
 */
hidden: string | null, };

export type McpServerInput = { "type": "stdio", command: string, args: Array<string>, env: Array<McpVariable>, startup_timeout_sec: number | null, tool_timeout_sec: number | null, } | { "type": "http", url: string, headers: Array<McpVariable>, startup_timeout_sec: number | null, tool_timeout_sec: number | null, };

export type McpVariable = { name: string, value: string, };

export type McpSecretView = { name: string, 
/**
 * Whether the keyring holds a value for it (never the value).
 */
set: boolean, };

export type McpGrant = { "state": "not_granted" } | { "state": "in_force" } | { "state": "stale", reason: string, } | { "state": "refused", reason: string, };

export type McpServerView = { name: string, source: McpSource, 
/**
 * None when the definition is invalid.
 */
transport: McpTransportKind | null, 
/**
 * The command line (an argv, quoted) or the URL: what consent is given to.
 */
target: string, 
/**
 * What the definition sets besides the command: environment variables (stdio) or headers
 * (http), as written, with secret references unresolved. Shown for consent: a variable
 * such as `LD_PRELOAD` changes what the command runs.
 */
variables: Array<McpVariable>, 
/**
 * SHA-256 of the definition; consent names it.
 */
definition_hash: string, status: McpStatus, error: string | null, trusts_read_only_hints: boolean, 
/**
 * The person allowed this definition to write in the workspace (stdio servers) and the
 * grant holds for the code it runs now: it is then stopped between calls and each
 * call's changes are recorded or undone.
 */
may_write_workspace: boolean, 
/**
 * What became of the grant to write in the workspace.
 */
write_grant: McpGrant, 
/**
 * The person allowed this definition (stdio) to run unconfined, and the consent holds
 * for the code it runs now: it runs outside any confinement, and every call of it asks.
 */
runs_unconfined: boolean, 
/**
 * What became of the consent to run it unconfined (needed where the machine offers no
 * confinement, or it does not start).
 */
unconfined: McpGrant, 
/**
 * How its process is confined on this machine, in a sentence (empty for HTTP servers
 * and invalid definitions).
 */
confinement: string, secrets: Array<McpSecretView>, tools: Array<McpToolView>, };

export type McpOverview = { servers: Array<McpServerView>, 
/**
 * Problems with a whole file (`.mcp.json` not JSON, Mandate's `mcp.json` broken).
 */
problems: Array<string>, };

export type ModeInfo = { slug: string, name: string, 
/**
 * When to use it, in its author's words.
 */
description: string, 
/**
 * What it allows: `read`, `edit`, `command`, `mcp`.
 */
groups: Array<string>, 
/**
 * Edits only of paths matching this (a regex), when set.
 */
edit_regex: string | null, 
/**
 * `built-in`, `global` or the file it comes from.
 */
source: string, 
/**
 * The model it runs on, when it names one.
 */
model: string | null, };

export type CommandInfo = { name: string, description: string, argument_hint: string, 
/**
 * The file it comes from.
 */
source: string, };

export type MentionView = { 
/**
 * As typed, without the `@`.
 */
mention: string, 
/**
 * Estimated tokens it adds to the request.
 */
tokens: number, error: string | null, };

export type ImageView = { 
/**
 * SHA-256 of the re-encoded image.
 */
id: string, 
/**
 * The file's name, or `pasted image`.
 */
name: string, media_type: string, width: number, height: number, 
/**
 * Size of the re-encoded image.
 */
bytes: number, 
/**
 * Estimated tokens it adds to the request.
 */
tokens: number, preview: string, };

export type InstructionsView = { 
/**
 * Rule files every task reads (a task also reads those of the folders it works in, and
 * its mode's).
 */
rules: Array<string>, modes: Array<ModeInfo>, 
/**
 * `name — file` of each skill.
 */
skills: Array<string>, commands: Array<CommandInfo>, 
/**
 * Files or entries that could not be read, each naming the file.
 */
problems: Array<string>, };

export type TodoItem = { text: string, status: TodoStatus, };

export type TodoStatus = "pending" | "in_progress" | "completed";

export type ProcessStopper = "person" | "model" | "task" | "mandate" | "timeout" | "governance";

export type ProcessStatus = { "state": "running" } | { "state": "stopping", by: ProcessStopper, } | { "state": "exited", code: number | null, } | { "state": "stopped", by: ProcessStopper, };

export type ProcessView = { 
/**
 * Short and stable within the workspace (`p1`, `p2`, …): what the model names.
 */
process_id: string, task_id: string, 
/**
 * The command line, secrets redacted.
 */
command: string, 
/**
 * Its working directory, relative to the workspace.
 */
cwd: string, started_at: string, status: ProcessStatus, 
/**
 * The end of its output (stdout and stderr interleaved, secrets redacted).
 */
output_tail: string, 
/**
 * Everything it printed so far, in bytes (the tail is the last part of it).
 */
output_bytes: number, };


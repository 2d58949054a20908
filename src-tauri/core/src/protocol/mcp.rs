//! MCP servers and their tools, as Settings show them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

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
    /// The person allowed this definition to write in the workspace (stdio servers) and the
    /// grant holds for the code it runs now: it is then stopped between calls and each
    /// call's changes are recorded or undone.
    pub may_write_workspace: bool,
    /// What became of the grant to write in the workspace.
    pub write_grant: McpGrant,
    /// The person allowed this definition (stdio) to run unconfined, and the consent holds
    /// for the code it runs now: it runs outside any confinement, and every call of it asks.
    pub runs_unconfined: bool,
    /// What became of the consent to run it unconfined (needed where the machine offers no
    /// confinement, or it does not start).
    pub unconfined: McpGrant,
    /// How its process is confined on this machine, in a sentence (empty for HTTP servers
    /// and invalid definitions).
    pub confinement: String,
    pub secrets: Vec<McpSecretView>,
    pub tools: Vec<McpToolView>,
}

/// A right the person gave a stdio server for the code it runs (to write in the workspace, to
/// run unconfined), as it stands now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpGrant {
    NotGranted,
    /// Granted, for this definition and the code it runs now.
    InForce,
    /// Granted for other code: its definition, its program or a file its command line names
    /// changed since (or it was granted before grants were bound to code). Not used; allow it
    /// again.
    Stale {
        reason: String,
    },
    /// Granted, but the code it runs is reached through the workspace (a branch or the agent
    /// could change it): never used.
    Refused {
        reason: String,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpOverview {
    pub servers: Vec<McpServerView>,
    /// Problems with a whole file (`.mcp.json` not JSON, Mandate's `mcp.json` broken).
    pub problems: Vec<String>,
}

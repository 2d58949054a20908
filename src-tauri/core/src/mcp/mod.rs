//! MCP servers behind the gate: the tools of the person's MCP servers (stdio and streamable
//! HTTP, through Mandate's own bounded client, [`rpc`]) offered to the model and governed like
//! Mandate's own.
//!
//! Decisions, in the order a call meets them:
//!
//! - **Where servers come from.** The workspace's `.mcp.json` (the format Claude Code reads) and
//!   the person's own `mcp.json` in Mandate's config directory (servers added in Settings, same
//!   format, no secrets in it; see [`user_file`]). A name defined in both is the person's.
//! - **A workspace's server is the workspace asking to run a program** (or to send the agent's
//!   data to a URL). It starts only after the person consented to exactly that definition —
//!   command, arguments, environment (values shown: `LD_PRELOAD` would change what runs), URL,
//!   headers — remembered in the person's file under the workspace's path and the definition's
//!   SHA-256; any change asks again. Headless, consent comes from that file or from
//!   `mandate run --trust-mcp NAME` for one run; an unattended run never starts an unconsented
//!   server. Settings servers need no consent: the person wrote them.
//! - **Secrets** live in the keyring, per server (and per workspace for a workspace's server),
//!   referenced as `${keyring:NAME}` / `${NAME}` / `${NAME:-default}`; never from Mandate's
//!   environment ([`refs`]). A stdio server gets an allow-listed environment, never the app's
//!   API keys ([`jail::server_environment`]).
//! - **Names**: `mcp__<server>__<tool>`, cut to what every provider accepts; collisions and
//!   tools whose input schema is not an object schema are hidden and Settings says why
//!   ([`catalog`]).
//! - **Read or mutating.** A tool the server annotates `readOnlyHint: true` runs as a read: no
//!   intent, no approval, no ledger record — the annotation is the server's claim, shown as
//!   such in Settings, and the person can mark a server untrusted so that all its tools are
//!   mutating. Every other tool is mutating ([`crate::hooks::Action::External`]): the gate wants
//!   a selected intent, and a person approves every call whatever the approval settings (the
//!   card shows the server, the tool, the arguments, the server's description and its
//!   annotations); headless, `--approve` decides. Mandate cannot see, check or undo what such a
//!   call does beyond the workspace, so there is no "always allow".
//! - **Confinement** ([`jail`]): a stdio server runs confined like a command, reading the
//!   workspace and writing nothing in it. One the person allowed to write in the workspace (per
//!   workspace and definition, in their own file) is stopped between calls and every call of it
//!   is bracketed by change detection (`watched`): in-scope changes are recorded in the call's
//!   record, out-of-scope ones (any, for a read-only call) undone and reported as
//!   `SCOPE_VIOLATION`. The grant holds only where nothing else can wake a stopped server
//!   (bubblewrap, or Landlock ABI 6+). The grant is for the code the person saw ([`grant`],
//!   [`launch`]): never for a command line that runs code from the workspace, and bound to the
//!   content of the program and of the files its command line names, checked at every start
//!   (a mismatch: it runs without the grant, and Settings ask again).
//! - **Unconfined** only by the person's word: a consent per workspace and definition, bound
//!   to the code like the grant to write (`mandate mcp allow-unconfined`, Settings). Without
//!   Landlock a stdio server starts only with it — never because of the grant to write — and
//!   the refusal says how to give it. Every call of a server running unconfined (or of any
//!   stdio server on such a machine) asks the person, a declared read too, and its card and
//!   approval say "unconfined", as a command does where nothing confines it. In the
//!   workspace it is watched as a granted server is (`watched`), over the whole workspace and
//!   with the protected files copied before each call; started to list its tools outside a
//!   call, what it changes is undone and it is refused (`starting`). What stopping it between
//!   calls does and does not guarantee without a PID namespace is said in [`jail`].
//! - **Ledger.** Every mutating call that was sent gets a record: `files` is empty for a server
//!   that cannot write in the workspace (a pseudo-path would be reported missing by
//!   `trace verify` and offered to blame and undo) and holds a watched call's (granted or
//!   unconfined) in-scope changes,
//!   mutation class `EXTERNAL_ACTION` declared, and under
//!   `metadata["dev.mandate"].mcp` the server, tool, `args_sha256`, whether it ran
//!   `unconfined`, the result's `is_error` and the outcome (`ok`, `error`, `no_answer`); the
//!   approval is in its usual place. Never the arguments: they may hold secrets.
//! - **Lifecycle** ([`server`]): servers start at a task's start (or when Settings ask), each
//!   within its start-up limit (10 s, `startupTimeoutSec` up to 120); a server that stops is
//!   restarted with a growing pause; a call waits for a restart in progress but never for a
//!   server that is down, and every call has a time limit (120 s, `toolTimeoutSec`). Dropping
//!   the hub stops them all (a stdio server's whole process group is killed).
//! - **Results** ([`result`]): text to the model, a note for images and binary resources,
//!   capped, and scrubbed of every secret Mandate holds.
//! - **Secrets.** Every secret a server's definition resolves from the keyring is registered
//!   with the process-wide redactor ([`crate::redact::Redactor::global`]) as it is read, so it
//!   is cut out of that server's results and errors ([`result::redact`]) and of everything else
//!   Mandate stores or shows, in the encodings the redactor knows.
//!
//! [`connection::server_command`] builds the one `Command` of a stdio server, confined.

pub mod catalog;
pub mod config;
pub mod connection;
pub mod grant;
mod hub;
pub mod jail;
pub mod launch;
mod launchers;
mod manage;
pub mod refs;
pub mod result;
pub mod rpc;
pub mod server;
mod starting;
mod tool;
pub mod user_file;
mod views;
mod watched;

pub use hub::{McpHub, RunTools, PROJECT_FILE};
pub use manage::ManageError;
pub use tool::{args_sha256, McpTool};

#[cfg(test)]
mod hub_tests;
#[cfg(test)]
mod unconfined_tests;
#[cfg(test)]
mod unconfined_watch_tests;

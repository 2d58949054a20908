//! The `mandate` command line: no subcommand opens the window (handled by the shell);
//! `init`, `run`, `intents` and `trace` work headless with the same host code as the GUI.

mod history;
mod init;
mod inspect;
mod mcp;
mod run;
mod run_log;
mod run_provider;
mod trace;
mod undo;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use run::run_headless;

#[derive(Debug, Parser)]
#[command(
    name = "mandate",
    version,
    about = "A governed AI coding agent beside your editor."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Workspace to open in the window (default: $WORKSPACE or the current directory).
    #[arg(long, global = true)]
    pub workspace: Option<PathBuf>,
    /// How much to log (error, warn, info, debug, trace, or a filter such as
    /// mandate_core=debug); logs go to the data directory's `logs/` (default: $MANDATE_LOG or info).
    #[arg(long, global = true, value_parser = parse_log_level)]
    pub log_level: Option<String>,
}

fn parse_log_level(level: &str) -> Result<String, crate::logging::LogError> {
    crate::logging::check_level(level).map(|()| level.to_string())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set up a workspace: intents and policy files, the ledger's git merge driver, the commit
    /// hook that anchors it and the hooks that rebuild the (untracked) intent map (idempotent).
    Init {
        /// Do not install git hooks (neither the anchor nor the intent map's).
        #[arg(long)]
        no_hook: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Open the window on DIR, or without one on the workspace opened last (else the current
    /// directory): what the desktop entry runs.
    Open { dir: Option<PathBuf> },
    /// Run one task headless, for scripts and CI.
    Run(RunArgs),
    /// Inspect and validate the intents file.
    Intents {
        #[command(subcommand)]
        action: IntentsAction,
        /// Print JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Take back an agent's changes: one tool call, a turn and after, a task, or an intent's.
    Undo(UndoArgs),
    /// Search the task history, or export a task as Markdown.
    History {
        #[command(subcommand)]
        action: history::HistoryAction,
    },
    /// MCP servers: list them with their tools, agree to run a workspace's server, store a
    /// secret a server references (in the keyring).
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Verify, blame, merge, anchor, report on, validate or export the trace ledger.
    Trace {
        #[command(subcommand)]
        action: TraceAction,
        /// Print JSON.
        #[arg(long, global = true)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Openai,
    Anthropic,
}

/// A right an approved command may be given beyond its confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GrantArg {
    /// Reach the network.
    Network,
    /// Write the repository's `.git/` (e.g. `git commit`).
    Git,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApproveArg {
    Deny,
    Allow,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A provider profile of Settings (its id or name): its server, model and key. Without
    /// it, name the server with --provider, --base-url and --model.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Provider wire format.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,
    /// Base URL as the provider documents it (OpenAI-compatible: up to and including /v1;
    /// Anthropic: the host root).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Model name (with --profile: instead of the profile's).
    #[arg(long)]
    pub model: Option<String>,
    /// Environment variable holding the API key (default: the keyring, then MANDATE_API_KEY).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// What to answer where the GUI would ask a person.
    #[arg(long, value_enum, default_value = "deny")]
    pub approve: ApproveArg,
    /// Stop (exit 1) after this many model turns.
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// Print every host event as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Continue an earlier task (its id) instead of starting a new one.
    #[arg(long)]
    pub resume: Option<String>,
    /// The mode to work in (a built-in one — code, architect, ask, debug, orchestrator — or
    /// one of `.roomodes`, `.claude/agents/`, the global modes file). New tasks: code.
    #[arg(long)]
    pub mode: Option<String>,
    /// Ask before commands the policy classifies as safe, too.
    #[arg(long)]
    pub ask_safe_commands: bool,
    /// With `--approve allow`: what approved commands may do beyond their confinement
    /// (repeatable: `--grant network --grant git`). Without it they get neither.
    #[arg(long, value_enum)]
    pub grant: Vec<GrantArg>,
    /// Stop (exit 1) when the task has cost this many US dollars (as the provider reports it,
    /// or estimated from the model's price).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop (exit 1) when the task has used this many tokens (input and output).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// The model's context window in tokens, when the provider and Mandate's table do not know
    /// it (or know it wrong); overrides Settings.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// The most the model may write in one answer, in tokens; overrides Settings and the table.
    #[arg(long, value_name = "TOKENS")]
    pub max_output: Option<u32>,
    /// Anthropic extended thinking with this budget in tokens (at least 1024; 0 turns it off).
    #[arg(long, value_name = "TOKENS")]
    pub thinking_budget: Option<u32>,
    /// OpenAI reasoning models (o-series, gpt-5): the reasoning effort asked for.
    #[arg(long, value_enum)]
    pub reasoning_effort: Option<EffortArg>,
    /// Condense the conversation automatically at this share of the usable input (10 to 95).
    #[arg(long, value_name = "PERCENT")]
    pub condense_threshold: Option<u8>,
    /// Start the workspace's MCP server NAME (from .mcp.json) for this run, without the consent
    /// recorded in Settings; repeat for several. Its command is printed first. An unattended run
    /// never starts a workspace's server without one or the other.
    #[arg(long = "trust-mcp", value_name = "NAME")]
    pub trust_mcp: Vec<String>,
    /// Run the workspace's hooks (`.mandate/hooks.json`, `.claude/settings.json`) as they are
    /// now, and remember that you confirmed them. Without it, hooks you have not confirmed (in
    /// the window or with this flag) do not run, and tools they would check are refused.
    #[arg(long)]
    pub trust_hooks: bool,
    /// Attach an image (PNG, JPEG, GIF or WebP) to the request; repeatable. It is re-encoded
    /// and sent only to a model that reads images.
    #[arg(long, value_name = "PATH")]
    pub image: Vec<std::path::PathBuf>,
    /// The request (optional with --resume).
    pub prompt: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EffortArg {
    Low,
    Medium,
    High,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// A tool call's id (as in the transcript or the ledger's tool_call_id).
    #[arg(long)]
    pub call: Option<String>,
    /// A task's id: all its changes, or with --turn, that turn and everything after it.
    #[arg(long)]
    pub task: Option<String>,
    /// With --task: the turn to go back to (1 = the first message); the conversation is
    /// rewound too.
    #[arg(long)]
    pub turn: Option<usize>,
    /// An intent's id: all its changes, or with --since, those since a time.
    #[arg(long)]
    pub intent: Option<String>,
    /// With --intent: only changes at or after this time (RFC 3339).
    #[arg(long)]
    pub since: Option<String>,
    /// Show what would be undone; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum IntentsAction {
    /// List the intents.
    List,
    /// Show one intent with its recent changes.
    Show { id: String },
    /// Check the intents file, the command policy and .intentignore; exit 1 on an error.
    Validate,
    /// Rebuild .orchestration/intent_map.md from the ledger and the files as they are (the
    /// hooks `mandate init` installs run it after each commit, merge and checkout).
    Map,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// The servers of .mcp.json and of Settings, started, with status and tools.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Agree to run the workspace's server NAME as .mcp.json defines it now (asked again when
    /// its definition changes).
    Trust {
        name: String,
        /// Do not ask (for scripts).
        #[arg(long)]
        yes: bool,
    },
    /// Take back the agreement to run the workspace's server NAME.
    Untrust { name: String },
    /// Allow the stdio server NAME, as defined now, to write in this workspace: it then runs
    /// only during calls, and what each call changes is recorded under the selected intent
    /// when the intent owns it, undone otherwise. A changed definition takes it back.
    AllowWrite {
        name: String,
        /// Do not ask (for scripts).
        #[arg(long)]
        yes: bool,
    },
    /// Take back NAME's permission to write in this workspace.
    DenyWrite { name: String },
    /// Let the stdio server NAME, as defined now and with the code it runs now, run outside
    /// any confinement in this workspace: it can then read and write anything you can, and
    /// each of its calls waits for approval (what a call changes in the workspace is still
    /// recorded in scope and undone out of it). Where the machine offers no confinement (no
    /// Landlock), a server starts only with this. A changed definition or program takes it
    /// back.
    AllowUnconfined {
        name: String,
        /// Do not ask (for scripts).
        #[arg(long)]
        yes: bool,
    },
    /// Take back NAME's permission to run unconfined: it runs confined again (or, without
    /// Landlock, not at all).
    DenyUnconfined { name: String },
    /// Store the secret NAME of SERVER in the keyring, read as one line from stdin
    /// (referenced in its definition as ${NAME} or ${keyring:NAME}).
    Secret {
        server: String,
        name: String,
        /// Remove it instead.
        #[arg(long)]
        clear: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum TraceAction {
    /// Check the hash chain, the ledger against its heads and every recorded range; with
    /// --git, also that no record anchored in the commits of RANGE (default: all of HEAD's
    /// history) was rewritten or dropped. Exit 1 on tampering.
    Verify {
        #[arg(long, value_name = "RANGE", num_args = 0..=1, default_missing_value = "HEAD")]
        git: Option<String>,
    },
    /// Which intent, task, model and approval produced each line (FILE or FILE:LINE).
    Blame { target: String },
    /// Git's merge driver for the ledger (registered by `mandate init`): merges OURS and
    /// THEIRS into OURS, keeping both sides' records and joining them with a merge record.
    Merge {
        base: std::path::PathBuf,
        ours: std::path::PathBuf,
        theirs: std::path::PathBuf,
        /// The ledger's path in the repository (git's %P).
        path: Option<String>,
    },
    /// The ledger's head as staged, as a commit trailer; with --message-file, written into
    /// that commit message (the prepare-commit-msg hook does this).
    Anchor {
        #[arg(long)]
        message_file: Option<std::path::PathBuf>,
    },
    /// Per intent, what agents changed in RANGE (BASE..END), with models, approvals, undos and
    /// the coverage of added lines by agent records.
    Report {
        range: String,
        #[arg(long, value_enum, default_value = "md")]
        format: ReportFormat,
    },
    /// Check any Agent Trace JSONL file against the specification's schema; exit 1 if a
    /// record is invalid.
    Validate {
        file: std::path::PathBuf,
        /// Unknown keys outside `metadata` are errors, not warnings.
        #[arg(long)]
        strict: bool,
    },
    /// Write the records to `.agent-trace/traces.jsonl` (the specification's reference
    /// location) for tools that read it.
    Export {
        #[arg(long)]
        output: Option<std::path::PathBuf>,
    },
}

/// Exit codes, stable for scripts and CI: 0 success; 1 the thing checked is bad (tampered,
/// invalid, a conflict, a failed task); 2 bad usage (arguments, not a repository, an unknown
/// revision); 3 it could not be checked (a file or git could not be read).
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_ERROR: i32 = 3;

/// A report piped into a reader that stops early (`| head`) ends there, quietly, as other
/// command-line tools do: SIGPIPE's default action, which Rust's runtime sets aside (a write
/// would fail and printing panic). Not for `run` and `mcp`, which write to the pipes of
/// processes they start and must outlive them; the one pipe a report writes to a process it
/// starts does not raise the signal (see `orchestration::report`).
fn end_quietly_when_the_reader_stops() {
    // SAFETY: sets a signal's disposition to its default, before any other thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The workspace for a command: the flag, else `$WORKSPACE`, else the current directory.
pub fn workspace_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("WORKSPACE").map(PathBuf::from))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Runs a headless command; returns the exit code.
pub fn run_command(command: Command, workspace: Option<PathBuf>) -> i32 {
    let root = workspace_dir(workspace);
    if !root.is_dir() {
        eprintln!(
            "mandate: the workspace {} is not a directory",
            root.display()
        );
        return EXIT_USAGE;
    }
    // Any process that opens the workspace first finishes what an interrupted writer left.
    if !matches!(
        command,
        Command::Run(_) | Command::Undo(_) | Command::Mcp { .. } | Command::Open { .. }
    ) {
        let ledger = crate::orchestration::ledger::Ledger::new(&root);
        for done in crate::journal::recover(&root, &ledger) {
            eprintln!("mandate: recovered: {done}.");
        }
    }
    if matches!(
        command,
        Command::Init { .. }
            | Command::Intents { .. }
            | Command::History { .. }
            | Command::Trace { .. }
    ) {
        end_quietly_when_the_reader_stops();
    }
    match command {
        Command::Open { .. } => {
            eprintln!("mandate: `open` starts the window, through the `mandate` binary");
            EXIT_USAGE
        }
        Command::Init { no_hook, json } => init::init(&root, !no_hook, json),
        Command::Run(args) => {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("mandate: cannot start the runtime: {e}");
                    return EXIT_FAILED;
                }
            };
            runtime.block_on(run_headless(&root, args))
        }
        Command::Mcp { action } => match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(mcp::mcp(&root, action)),
            Err(e) => {
                eprintln!("mandate: cannot start the runtime: {e}");
                EXIT_FAILED
            }
        },
        Command::Undo(args) => match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(undo::undo(&root, args)),
            Err(e) => {
                eprintln!("mandate: cannot start the runtime: {e}");
                EXIT_FAILED
            }
        },
        Command::Intents { action, json } => inspect::intents(&root, action, json),
        Command::History { action } => history::history(&root, action),
        Command::Trace { action, json } => trace::trace(&root, action, json),
    }
}

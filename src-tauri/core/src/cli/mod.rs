//! The `mandate` command line: no subcommand opens the window (handled by the shell);
//! `run`, `intents` and `trace` work headless with the same host code as the GUI.

mod inspect;
mod run;
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
    /// Verify the trace ledger or blame a file.
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
    /// Provider wire format.
    #[arg(long, value_enum)]
    pub provider: ProviderArg,
    /// Base URL as the provider documents it (OpenAI-compatible: up to and including /v1;
    /// Anthropic: the host root).
    #[arg(long)]
    pub base_url: String,
    /// Model name.
    #[arg(long)]
    pub model: String,
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
    /// Run the workspace's hooks (`.mandate/hooks.json`, `.claude/settings.json`) as they are
    /// now, and remember that you confirmed them. Without it, hooks you have not confirmed (in
    /// the window or with this flag) do not run, and tools they would check are refused.
    #[arg(long)]
    pub trust_hooks: bool,
    /// The request (optional with --resume).
    pub prompt: Vec<String>,
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
}

#[derive(Debug, Subcommand)]
pub enum TraceAction {
    /// Check the hash chain and every recorded range; exit 1 on tampering.
    Verify,
    /// Which intent, task, model and approval produced each line (FILE or FILE:LINE).
    Blame { target: String },
}

/// Exit codes: 0 success, 1 failure, 2 bad usage.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_USAGE: i32 = 2;

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
    if !matches!(command, Command::Run(_) | Command::Undo(_)) {
        let ledger = crate::orchestration::ledger::Ledger::new(&root);
        for done in crate::journal::recover(&root, &ledger) {
            eprintln!("mandate: recovered: {done}.");
        }
    }
    match command {
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
        Command::Trace { action, json } => inspect::trace(&root, action, json),
    }
}

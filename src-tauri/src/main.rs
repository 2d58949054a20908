//! The `mandate` binary: `run`, `intents` and `trace` work headless; no subcommand (or
//! `open`) opens the window (the `mandate-window` binary beside this one). This binary does not
//! link GTK or WebKit, so scripts and CI start it in milliseconds and need neither.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches};
use mandate_core::cli::{run_command, workspace_dir, Cli, Command};
use mandate_core::settings::{AppDirs, Settings};

/// What `--version` prints after the name: the package's version, and in a release build the
/// commit it was built from (`build.rs`).
const VERSION: &str = env!("MANDATE_VERSION");

fn main() {
    // WebKitWebDriver starts the app with `--automation` (the window tests); it is the window's.
    let args = std::env::args_os().filter(|a| a != "--automation");
    let matches = Cli::command().version(VERSION).get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let workspace = match cli.command {
        None => cli.workspace,
        Some(Command::Open { dir }) => dir.or(cli.workspace).or_else(last_workspace),
        Some(command) => headless(command, cli.workspace, cli.log_level.as_deref()),
    };
    let root = workspace_dir(workspace);
    if !root.is_dir() {
        eprintln!(
            "mandate: the workspace {} is not a directory",
            root.display()
        );
        std::process::exit(2);
    }
    let window = window_binary();
    // exec keeps the process (and its pid): whoever started `mandate` now holds the window.
    let mut command = std::process::Command::new(&window);
    command.arg("--workspace").arg(&root);
    if let Some(level) = &cli.log_level {
        command.arg("--log-level").arg(level);
    }
    let error = command
        .args(std::env::args_os().skip(1).filter(|a| a == "--automation"))
        .exec();
    eprintln!(
        "mandate: could not start the window ({}): {error}",
        window.display()
    );
    std::process::exit(1);
}

fn headless(command: Command, workspace: Option<PathBuf>, log_level: Option<&str>) -> ! {
    // Before any thread: keys given through the environment leave it (and
    // /proc/self/environ), and no process of this user may read this one's memory or
    // environment. (The window, started otherwise, does the same for itself.)
    let mut key_vars = vec![mandate_core::secrets::API_KEY_ENV.to_string()];
    if let Command::Run(args) = &command {
        key_vars.extend(args.api_key_env.clone());
    }
    let key_vars: Vec<&str> = key_vars.iter().map(String::as_str).collect();
    mandate_core::secrets::take_from_environment(&key_vars);
    mandate_core::sandbox::protect_this_process();
    let data = AppDirs::from_env().data;
    // Logging is a help, never a reason not to run: a failure is said once.
    let _logs = match mandate_core::logging::init(&data, log_level) {
        Ok(guard) => Some(guard),
        Err(e) => {
            eprintln!("mandate: {e}; continuing without a log file");
            None
        }
    };
    std::process::exit(run_command(command, workspace));
}

/// The workspace the window had open last, if it is still a directory (a launcher starts
/// `mandate open` in the home directory, which is rarely the project).
fn last_workspace() -> Option<PathBuf> {
    let (settings, _) = Settings::load(&AppDirs::from_env());
    settings
        .recent_workspaces
        .into_iter()
        .map(PathBuf::from)
        .find(|dir| dir.is_dir())
}

fn window_binary() -> PathBuf {
    let me = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mandate"));
    me.with_file_name("mandate-window")
}

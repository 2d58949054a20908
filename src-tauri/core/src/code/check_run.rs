//! Running the project's check confined, as the agent's commands run (`crate::sandbox`), but
//! with nothing of the workspace writable: it reads the code and writes only its own cache
//! (`CARGO_TARGET_DIR`, `GOCACHE`, … outside the workspace, kept between runs so a check
//! after a small edit is quick, and never the person's own `target/`, whose build lock it
//! would otherwise wait on) and a private temporary directory. No network, no secrets, a
//! timeout, and the whole process group killed when the task is stopped. Where Landlock works
//! without bubblewrap, a process can still change the modes and times of files it cannot
//! write: those are found after the check and set back, as after a command.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::check::{parse, CheckCommand, Problem};
use crate::hooks::command_policy::ConfinementSettings;
use crate::hooks::ignore_list::IntentIgnore;
use crate::hooks::CommandAction;
use crate::redact::Redactor;
use crate::sandbox::{
    run_confined, ChangeRules, CommandSandbox, Confinement, ConfinementLevel, SandboxError, Watch,
};

/// Where and how a check runs.
pub struct CheckPlace<'a> {
    /// The workspace root.
    pub root: &'a Path,
    pub confinement: &'a Confinement,
    /// Mandate's settings and data directories, hidden from the check.
    pub app_dirs: &'a [PathBuf],
    /// The command policy's environment rules (what passes, what is set offline).
    pub settings: &'a ConfinementSettings,
    /// The check's cache, outside the workspace (made if missing); none: a fresh one each run.
    pub cache_dir: Option<&'a Path>,
}

/// What a check found.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub problems: Vec<Problem>,
    /// The command lines that ran.
    pub lines: Vec<String>,
    pub took: Duration,
    /// What the check changed in the workspace all the same (modes, times) and was set back.
    pub undone: Vec<String>,
}

/// Why a check gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum CheckFailure {
    #[error("commands cannot be confined on this system, so the project's check is not run")]
    Unconfined,
    #[error("the project's check could not be prepared: {0}")]
    Sandbox(#[from] SandboxError),
    #[error("`{line}` did not start: {message}")]
    NotStarted { line: String, message: String },
    #[error("`{line}` did not finish within {seconds} s and was stopped")]
    TimedOut { line: String, seconds: u64 },
    #[error("`{line}` was not found (exit code 127): {tail}")]
    NotFound { line: String, tail: String },
    #[error("`{line}` failed ({status}) without naming a problem: {tail}")]
    Failed {
        line: String,
        status: String,
        tail: String,
    },
    #[error(
        "`{line}` needs to write in the workspace ({what}), and the check may only read it{hint}"
    )]
    WritesWorkspace {
        line: String,
        what: String,
        hint: &'static str,
    },
    #[error("the project's check was stopped")]
    Cancelled,
}

/// Runs `commands` one after the other; their problems together, or why there are none to
/// compare (any that fails fails the whole: half a check is no baseline).
pub async fn run(
    commands: &[CheckCommand],
    place: &CheckPlace<'_>,
    cancel: &CancellationToken,
) -> Result<Checked, CheckFailure> {
    if !place.confinement.is_confined() {
        return Err(CheckFailure::Unconfined);
    }
    let started = Instant::now();
    let temp = crate::sandbox::private_temp_dir()
        .map_err(|e| SandboxError::Spawn(format!("cannot make a temporary directory: {e}")))?;
    // Without a lasting cache, one inside the temporary directory (a cold check each time).
    let cache = place
        .cache_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| temp.path().join("cache"));
    let sandbox = sandbox(place, temp.path(), &cache)?;
    // Under bubblewrap the workspace is a read-only mount: nothing to watch.
    let watch = match place.confinement.level {
        ConfinementLevel::LandlockAndBwrap => None,
        _ => Some(Watch::start(&sandbox.workspace, place.confinement, Vec::new()).await?),
    };
    let mut checked = Checked {
        problems: Vec::new(),
        lines: Vec::new(),
        took: Duration::ZERO,
        undone: Vec::new(),
    };
    let ran = run_all(commands, place, &sandbox, cancel, &mut checked).await;
    if let Some(watch) = watch {
        let ignore = IntentIgnore::empty();
        let rules = ChangeRules {
            owns: &|_| false,
            ignore: &ignore,
            build_outputs: Vec::new(),
            write_git: false,
            confinement: place.confinement,
        };
        let found = watch.settle(&sandbox, &rules).await?;
        checked.undone = found.changes.out_of_scope_paths();
        if !checked.undone.is_empty() {
            tracing::warn!(paths = ?checked.undone, "the check changed the workspace; set back");
        }
    }
    ran?;
    checked.took = started.elapsed();
    Ok(checked)
}

async fn run_all(
    commands: &[CheckCommand],
    place: &CheckPlace<'_>,
    sandbox: &CommandSandbox,
    cancel: &CancellationToken,
    checked: &mut Checked,
) -> Result<(), CheckFailure> {
    for command in commands {
        let action = CommandAction {
            // One stream, in the order written: read apart, the two would interleave
            // mid-line and cut a problem in two.
            command: format!("{{ {}\n}} 2>&1", command.line),
            cwd: crate::workspace::ResolvedPath {
                abs: sandbox.workspace.clone(),
                rel: String::new(),
            },
            timeout: command.timeout,
            granted: Default::default(),
            background: false,
        };
        let span = tracing::info_span!("project_check", line = %command.line);
        let run = run_confined(
            &action,
            sandbox,
            place.confinement,
            Redactor::global(),
            cancel,
            |_| {},
        )
        .instrument(span.clone())
        .await;
        let line = command.line.clone();
        let tail = || crate::text::last_chars(run.output.trim(), 600).to_string();
        if run.cancelled {
            return Err(CheckFailure::Cancelled);
        }
        if let Some(message) = run.spawn_error.clone() {
            return Err(CheckFailure::NotStarted { line, message });
        }
        if run.timed_out {
            let seconds = command.timeout.as_secs();
            return Err(CheckFailure::TimedOut { line, seconds });
        }
        if run.exit_code != Some(0) {
            if let Some(what) = wants_to_write(&run.output, &sandbox.workspace, place.root) {
                let hint = match what.contains("Cargo.lock") {
                    true => ": Cargo.lock is missing or out of date; a build of your own brings it up to date",
                    false => "",
                };
                return Err(CheckFailure::WritesWorkspace { line, what, hint });
            }
        }
        let found = parse(command.tool, &run.output, place.root);
        span.in_scope(
            || tracing::info!(exit = ?run.exit_code, problems = found.len(), "check ran"),
        );
        match run.exit_code {
            Some(127) => return Err(CheckFailure::NotFound { line, tail: tail() }),
            Some(0) => {}
            _ if !found.is_empty() => {}
            code => {
                let status = code.map_or("killed by a signal".into(), |c| format!("exit code {c}"));
                return Err(CheckFailure::Failed {
                    line,
                    status,
                    tail: tail(),
                });
            }
        }
        checked.problems.extend(found);
        checked.lines.push(command.line.clone());
    }
    Ok(())
}

/// The line of `output` that says the check could not write in the workspace (`failed to
/// write …/Cargo.lock`): then it cannot work read-only, and what it found is no answer.
fn wants_to_write(output: &str, root: &Path, as_given: &Path) -> Option<String> {
    let roots = [root.to_string_lossy(), as_given.to_string_lossy()];
    let refused = [
        "failed to write",
        "Read-only file system",
        "Permission denied",
    ];
    output
        .lines()
        .find(|l| refused.iter().any(|r| l.contains(r)) && roots.iter().any(|r| l.contains(&**r)))
        .map(|l| crate::text::first_chars(l.trim(), 300).to_string())
}

/// The check's sandbox: nothing of the workspace writable, no network, the cache directory
/// and the temporary one writable, build tools' caches pointed at the first.
fn sandbox(
    place: &CheckPlace<'_>,
    temp: &Path,
    cache: &Path,
) -> Result<CommandSandbox, SandboxError> {
    let mut env = crate::sandbox::env::command_environment(
        std::env::vars(),
        place.settings,
        temp,
        false,
        Redactor::global(),
    );
    let at = |dir: &str| cache.join(dir).to_string_lossy().into_owned();
    let set = [
        ("CARGO_TARGET_DIR", at("target")),
        ("CARGO_TERM_COLOR", "never".into()),
        ("CARGO_TERM_PROGRESS_WHEN", "never".into()),
        ("GOCACHE", at("go-build")),
        ("GOFLAGS", "-buildvcs=false".into()),
        ("RUFF_CACHE_DIR", at("ruff")),
        ("MYPY_CACHE_DIR", at("mypy")),
        ("PYTHONDONTWRITEBYTECODE", "1".into()),
        ("NO_COLOR", "1".into()),
    ];
    for (name, value) in set {
        env.retain(|(n, _)| n != name);
        env.push((name.to_string(), value));
    }
    CommandSandbox::new(
        place.root,
        place.root,
        Vec::new(),
        Vec::new(),
        temp,
        false,
        false,
        place.app_dirs.to_vec(),
        env,
    )?
    .with_cache_dir(cache)
}

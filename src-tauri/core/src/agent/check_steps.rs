//! The project's check around a turn's edits (`crate::code::check`): a baseline taken before
//! the first change, the check again when a turn that changed files ends, and the problems
//! that were not there before sent back to the model (at most [`MAX_ROUNDS`] times per
//! message of the person) and shown to the person, as Roo does with the editor's diagnostics.
//!
//! The baseline starts in the background when a run begins (the model's first answer takes
//! a while anyway) and every call that may change files waits for it: a baseline that read an
//! edited file would hide the very problem the edit made. It is the last completed check of
//! the workspace; it moves to the new result once a turn ends without sending the model back,
//! so a problem reported once and left is not reported as new again.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::{AgentEnv, TaskHandle};
use crate::code::check::{self, CheckCommand, Problem};
use crate::code::check_run::{self, CheckFailure, CheckPlace, Checked};
use crate::protocol::{ToolKind, UiMessage};

/// How many times one message of the person may be sent back for new problems.
pub const MAX_ROUNDS: u32 = 2;
/// At most this many problems are listed to the model.
const MAX_LISTED: usize = 50;

/// A completed check: what it found, with what, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastCheck {
    pub problems: Vec<Problem>,
    pub lines: Vec<String>,
    pub at: SystemTime,
}

/// The check's state for one workspace (in [`super::Governance`]).
pub struct ProjectCheck {
    /// `<cache>/check/<workspace key>`: the tools' caches (in `build/`, the only place the
    /// check may write) and beside them the last result, which the check cannot forge.
    cache_dir: Mutex<Option<PathBuf>>,
    state: Mutex<State>,
    /// Held while a check runs: one at a time, and a change waits for a baseline.
    running: Arc<tokio::sync::Mutex<()>>,
}

#[derive(Default)]
struct State {
    baseline: Option<Vec<Problem>>,
    last: Option<LastCheck>,
    /// Top-level tasks whose changes (their own or their subtasks') no check has seen.
    unchecked: HashSet<String>,
    /// After a failure: the configuration file as it was then. No check runs again until it
    /// changes (or Mandate restarts); the person was told once.
    failed: Option<Option<SystemTime>>,
    /// What was said about a configuration that does not load.
    said_config: Option<String>,
}

impl ProjectCheck {
    pub fn new(root: &Path) -> ProjectCheck {
        let dir = crate::settings::AppDirs::cache_from_env()
            .map(|c| c.join("check").join(crate::settings::workspace_key(root)));
        ProjectCheck {
            cache_dir: Mutex::new(dir),
            state: Mutex::default(),
            running: Arc::default(),
        }
    }

    /// Keeps the caches and the last result in `dir` instead (tests).
    pub fn set_cache_dir(&self, dir: Option<PathBuf>) {
        *self.cache_dir.lock().unwrap_or_else(|p| p.into_inner()) = dir;
    }

    fn cache_dir(&self) -> Option<PathBuf> {
        self.cache_dir
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The last completed check of the workspace (in this process, or kept from an earlier
    /// one).
    pub fn last(&self) -> Option<LastCheck> {
        if let Some(last) = self.state().last.clone() {
            return Some(last);
        }
        let text = std::fs::read(self.cache_dir()?.join("last.json")).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// The last check's problems as `@problems` attaches them; None when none ever ran here.
    pub fn last_text(&self) -> Option<String> {
        let last = self.last()?;
        let age = last.at.elapsed().map(|d| d.as_secs()).unwrap_or(0);
        let when = match age {
            0..=59 => "just now".to_string(),
            60..=3599 => format!("{} min ago", age / 60),
            _ => format!("{} h ago", age / 3600),
        };
        let ran = last.lines.join("`, `");
        Some(match last.problems.is_empty() {
            true => format!("The project's last check (`{ran}`, {when}) found no problems."),
            false => format!(
                "The project's last check (`{ran}`, {when}) found {}:\n{}",
                check::counted(&last.problems),
                check::describe(&last.problems, 200)
            ),
        })
    }

    /// Whether the tasks `ids` changed files no check has seen since.
    fn note_change(&self, ids: impl IntoIterator<Item = String>) {
        self.state().unchecked.extend(ids);
    }

    async fn record(&self, checked: &Checked) {
        let last = LastCheck {
            problems: checked.problems.clone(),
            lines: checked.lines.clone(),
            at: SystemTime::now(),
        };
        if let (Some(dir), Ok(bytes)) = (self.cache_dir(), serde_json::to_vec(&last)) {
            // Off the async workers: the write is fsynced.
            let kept = tokio::task::spawn_blocking(move || {
                std::fs::create_dir_all(&dir)
                    .and_then(|()| crate::fsutil::write_atomic(&dir.join("last.json"), &bytes))
            });
            if let Ok(Err(e)) = kept.await {
                tracing::warn!(error = %e, "could not keep the check's result");
            }
        }
        self.state().last = Some(last);
    }
}

fn config_stamp(root: &Path) -> Option<SystemTime> {
    std::fs::metadata(root.join(check::CONFIG_FILE))
        .and_then(|m| m.modified())
        .ok()
}

/// The workspace's checks now, or None (no check, off, failed before, or a configuration
/// that does not load, said once).
fn commands(env: &AgentEnv, task: &TaskHandle) -> Option<Vec<CheckCommand>> {
    let (gov, pc) = (&env.gov, &env.gov.project_check);
    let failed = pc.state().failed;
    if let Some(stamp) = failed {
        if stamp == config_stamp(gov.root()) {
            return None;
        }
        pc.state().failed = None;
    }
    match check::commands(gov.root()) {
        Ok(commands) => (!commands.is_empty()).then_some(commands),
        Err(e) => {
            let said = e.to_string();
            let first = pc.state().said_config.replace(said.clone()) != Some(said.clone());
            if first {
                notice(
                    env,
                    task,
                    format!("{said} The project's check does not run until it is fixed."),
                );
            }
            None
        }
    }
}

async fn run(
    env: &AgentEnv,
    task: &TaskHandle,
    commands: &[CheckCommand],
    cancel: &CancellationToken,
) -> Result<Checked, CheckFailure> {
    let gov = &env.gov;
    let policy = gov
        .policy()
        .unwrap_or_else(|_| Arc::new(crate::hooks::command_policy::CommandPolicy::builtin()));
    let cache = gov.project_check.cache_dir().map(|d| d.join("build"));
    let place = CheckPlace {
        root: gov.root(),
        confinement: &gov.confinement,
        app_dirs: &gov.app_dirs,
        settings: policy.confinement(),
        cache_dir: cache.as_deref(),
    };
    let result = check_run::run(commands, &place, cancel).await;
    if let Ok(checked) = &result {
        gov.project_check.record(checked).await;
        if !checked.undone.is_empty() {
            notice(
                env,
                task,
                format!(
                    "The project's check changed the modes or times of {} (it may not change the workspace); they were set back.",
                    checked.undone.join(", ")
                ),
            );
        }
    }
    result
}

/// A failed check is said once; none runs again until its configuration changes.
fn failed(env: &AgentEnv, task: &TaskHandle, failure: CheckFailure) {
    if matches!(failure, CheckFailure::Cancelled) {
        return;
    }
    tracing::warn!(error = %failure, "the project's check failed");
    env.gov.project_check.state().failed = Some(config_stamp(env.gov.root()));
    let longer = match failure {
        CheckFailure::TimedOut { .. } => {
            " (a first check builds everything and is the slowest: a longer `timeout_seconds` there lets it finish)"
        }
        _ => "",
    };
    notice(
        env,
        task,
        format!(
            "The project's check did not give an answer: {failure}. It is not run again in this session until {} changes{longer}: set a command there, or `\"command\": \"off\"`.",
            check::CONFIG_FILE
        ),
    );
}

fn notice(env: &AgentEnv, task: &TaskHandle, text: String) {
    let text = crate::redact::Redactor::global().redact(&text).into_owned();
    task.post(
        env.sink.as_ref(),
        UiMessage::Notice {
            id: uuid::Uuid::new_v4().to_string(),
            text,
        },
    );
}

/// At the start of a run: the baseline, in the background, when the workspace has a check
/// and none ran yet. The run's stop stops it.
pub(super) fn at_run_start(
    env: &Arc<AgentEnv>,
    task: &Arc<TaskHandle>,
    cancel: &CancellationToken,
) {
    let gov = &env.gov;
    if gov.project_check.state().baseline.is_some() {
        return;
    }
    let Some(commands) = commands(env, task) else {
        return;
    };
    // Taken now, so that a change asked for meanwhile waits for it.
    let Ok(guard) = gov.project_check.running.clone().try_lock_owned() else {
        return;
    };
    let (env, task, cancel) = (env.clone(), task.clone(), cancel.clone());
    tokio::spawn(async move {
        match run(&env, &task, &commands, &cancel).await {
            Ok(checked) => {
                let mut state = env.gov.project_check.state();
                state.baseline.get_or_insert(checked.problems);
            }
            Err(failure) => failed(&env, &task, failure),
        }
        // Only now may a change go ahead: the baseline is in place (or known to be missing).
        drop(guard);
    });
}

/// Before a call of `kind`: one that may change files waits for a baseline being made.
/// False when the task was stopped meanwhile.
pub(super) async fn before_change(
    env: &AgentEnv,
    task: &TaskHandle,
    kind: ToolKind,
    cancel: &CancellationToken,
) -> bool {
    if kind == ToolKind::Read {
        return true;
    }
    let running = env.gov.project_check.running.clone();
    if running.try_lock().is_err() {
        notice(
            env,
            task,
            "The project's check is reading the code as it is before this change; the change waits for it.".into(),
        );
    }
    tokio::select! {
        _ = running.lock() => true,
        _ = cancel.cancelled() => false,
    }
}

/// After a call: whether it changed files, for the task and those above it.
pub(super) fn after_call(env: &AgentEnv, task: &TaskHandle, output: &crate::tools::ToolOutput) {
    let changed = output
        .consequences
        .iter()
        .any(|c| matches!(c, crate::tools::Consequence::Changed { .. }));
    if !changed {
        return;
    }
    let mut ids = vec![task.id.clone()];
    let mut above = task.parent_task();
    while let Some(id) = above {
        if ids.contains(&id) {
            break;
        }
        above = env.tasks.get(&id).and_then(|t| t.parent_task());
        ids.push(id);
    }
    env.gov.project_check.note_change(ids);
}

/// When a turn ends (the model answered without a call, or completed): the check, if the
/// task changed files since the last one; the note for the model when it finds new problems
/// and `rounds` (this message's) allow another, None to let the turn end.
pub(super) async fn at_turn_end(
    env: &AgentEnv,
    task: &TaskHandle,
    rounds: &mut u32,
    cancel: &CancellationToken,
) -> Option<String> {
    let pc = &env.gov.project_check;
    // A subtask's changes are its parent's turn's: checked when that ends.
    if task.parent_task().is_some() {
        return None;
    }
    let changed = pc.state().unchecked.remove(&task.id);
    if !changed {
        // Sent back, and ended without another change: what it left is the baseline now.
        if *rounds > 0 {
            let mut state = pc.state();
            state.baseline = state.last.as_ref().map(|l| l.problems.clone());
        }
        return None;
    }
    let commands = commands(env, task)?;
    let _running = tokio::select! {
        g = pc.running.lock() => g,
        _ = cancel.cancelled() => {
            pc.note_change([task.id.clone()]);
            return None;
        }
    };
    let result = run(env, task, &commands, cancel).await;
    let checked = match result {
        Ok(checked) => checked,
        Err(failure) => {
            // What the check did not see stays to be checked.
            pc.note_change([task.id.clone()]);
            failed(env, task, failure);
            return None;
        }
    };
    let before = pc.state().baseline.clone();
    let Some(before) = before else {
        pc.state().baseline = Some(checked.problems);
        return None;
    };
    let new = check::new_problems(&before, &checked.problems);
    if new.is_empty() || *rounds >= MAX_ROUNDS {
        pc.state().baseline = Some(checked.problems.clone());
    }
    if new.is_empty() {
        return None;
    }
    let ran = checked.lines.join("`, `");
    let counted = check::counted(&new);
    let first = new
        .iter()
        .min_by_key(|p| p.severity)
        .map(|p| format!(" First: {}", p.describe()))
        .unwrap_or_default();
    if *rounds >= MAX_ROUNDS {
        notice(
            env,
            task,
            format!("The project's check (`{ran}`) still finds new problems after the agent's changes ({counted}); it was told {MAX_ROUNDS} times and is not sent back again.{first}"),
        );
        return None;
    }
    *rounds += 1;
    notice(
        env,
        task,
        format!("The project's check (`{ran}`) found new problems after the agent's changes ({counted}); the agent was told.{first}"),
    );
    let next = match env.interactive {
        true => "Fix them, then answer again.",
        false => "Fix them, then call attempt_completion again.",
    };
    Some(format!(
        "[Project check: after your changes, `{ran}` reports new problems ({counted}); those that were there before your changes are left out:\n{}\n{next} If one should stay as it is, say why.]",
        check::describe(&new, MAX_LISTED)
    ))
}

#[cfg(test)]
#[path = "check_steps_tests.rs"]
mod tests;

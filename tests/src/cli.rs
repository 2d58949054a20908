//! Running the `mandate` binary headless and reading what it printed.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::app::{mandate_bin, UserDirs};

pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// `--json` output: one event per line.
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    pub fn task_id(&self) -> Option<String> {
        self.events_of("task_updated")
            .first()
            .and_then(|e| e["task"]["id"].as_str().map(str::to_string))
    }
}

/// Runs `mandate ARGS` in `dirs`'s user directories with extra environment; kills it after 60 s.
pub async fn mandate(args: &[&str], dirs: &UserDirs, env: &[(&str, &str)]) -> Output {
    mandate_within(args, dirs, env, Duration::from_secs(60)).await
}

/// [`mandate`] for long runs: killed after `limit`.
pub async fn mandate_within(
    args: &[&str],
    dirs: &UserDirs,
    env: &[(&str, &str)],
    limit: Duration,
) -> Output {
    let mut cmd = tokio::process::Command::new(mandate_bin());
    cmd.args(args);
    finish_within(cmd, dirs, env, limit).await
}

/// The unprivileged user [`mandate_as_nobody`] runs as.
pub const NOBODY: u32 = 65534;

/// [`mandate`] as uid and gid 65534 with no other group (`setpriv`, when the tests run as root,
/// who reads every file whatever its mode), with `dirs`'s home as its home; as it is otherwise.
/// What it must write (the workspace, `dirs`) has to be given to that user first
/// ([`give_to_nobody`]).
pub async fn mandate_as_nobody(args: &[&str], dirs: &UserDirs, env: &[(&str, &str)]) -> Output {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let mut cmd = if unsafe { libc::geteuid() } == 0 {
        let mut cmd = tokio::process::Command::new("setpriv");
        cmd.args([
            format!("--reuid={NOBODY}"),
            format!("--regid={NOBODY}"),
            "--clear-groups".to_string(),
        ])
        .arg(mandate_bin());
        cmd
    } else {
        tokio::process::Command::new(mandate_bin())
    };
    cmd.args(args).env("HOME", dirs.home.path());
    finish(cmd, dirs, env).await
}

/// Gives `path` and everything beneath it to [`NOBODY`] (when running as root).
pub fn give_to_nobody(path: &Path) {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY)).expect("chown");
    let meta = std::fs::symlink_metadata(path).expect("stat");
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).expect("read dir") {
            give_to_nobody(&entry.expect("entry").path());
        }
    }
}

async fn finish(cmd: tokio::process::Command, dirs: &UserDirs, env: &[(&str, &str)]) -> Output {
    finish_within(cmd, dirs, env, Duration::from_secs(60)).await
}

async fn finish_within(
    mut cmd: tokio::process::Command,
    dirs: &UserDirs,
    env: &[(&str, &str)],
    limit: Duration,
) -> Output {
    cmd.envs(dirs.env())
        .env("MANDATE_RETRY_BASE_MS", "5")
        .env_remove("MANDATE_API_KEY")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("spawn mandate");
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("mandate did not finish within {limit:?}"))
        .expect("wait for mandate");
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `mandate run` against an OpenAI-compatible server with `--json`.
pub async fn run_openai(
    ws: &Path,
    base_url: &str,
    extra: &[&str],
    prompt: &str,
    dirs: &UserDirs,
) -> Output {
    run_openai_with_env(ws, base_url, extra, prompt, dirs, &[]).await
}

/// [`run_openai`] with variables added to the runner's environment.
pub async fn run_openai_with_env(
    ws: &Path,
    base_url: &str,
    extra: &[&str],
    prompt: &str,
    dirs: &UserDirs,
    env: &[(&str, &str)],
) -> Output {
    let args = run_args(ws, base_url, extra, prompt);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    mandate(&args, dirs, env).await
}

/// [`run_openai`] as [`mandate_as_nobody`] runs it.
pub async fn run_openai_as_nobody(
    ws: &Path,
    base_url: &str,
    extra: &[&str],
    prompt: &str,
    dirs: &UserDirs,
) -> Output {
    let args = run_args(ws, base_url, extra, prompt);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    mandate_as_nobody(&args, dirs, &[]).await
}

fn run_args(ws: &Path, base_url: &str, extra: &[&str], prompt: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--workspace",
        &ws.display().to_string(),
        "--provider",
        "openai",
        "--base-url",
        &format!("{base_url}/v1"),
        "--model",
        "test-model",
        "--json",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(extra.iter().map(|a| a.to_string()));
    args.push(prompt.to_string());
    args
}

/// The task record saved in the user's data directory.
pub fn task_record(dirs: &UserDirs, task_id: &str) -> Value {
    let tasks = dirs.data().join("tasks");
    for entry in std::fs::read_dir(&tasks).expect("tasks dir").flatten() {
        let file = entry.path().join(format!("{task_id}.json"));
        if let Ok(text) = std::fs::read_to_string(&file) {
            return serde_json::from_str(&text).expect("task json");
        }
    }
    panic!("no saved task {task_id} under {}", tasks.display());
}

/// Ledger records of a workspace.
pub fn ledger(ws: &Path) -> Vec<Value> {
    std::fs::read_to_string(ws.join(".orchestration/agent_trace.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("ledger line is JSON"))
        .collect()
}

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
    let mut cmd = tokio::process::Command::new(mandate_bin());
    cmd.args(args)
        .envs(dirs.env())
        .env("MANDATE_RETRY_BASE_MS", "5")
        .env_remove("MANDATE_API_KEY")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("spawn mandate");
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("mandate did not finish within 60 s")
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
    let ws = ws.display().to_string();
    let base = format!("{base_url}/v1");
    let mut args = vec![
        "run",
        "--workspace",
        &ws,
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--model",
        "test-model",
        "--json",
    ];
    args.extend_from_slice(extra);
    args.push(prompt);
    mandate(&args, dirs, env).await
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

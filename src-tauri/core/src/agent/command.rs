//! Running a shell command for the agent.
//!
//! The governed path is [`run_governed`] (in `crate::sandbox`, re-exported here): snapshot,
//! sandbox, `bash --noprofile --norc -c LINE` confined by the kernel, changes found, sorted and
//! (out of scope) undone, output redacted. What follows in this file is the earlier entry
//! point, kept while the dispatcher moves over: `run` starts the same shell, unconfined, with
//! a deny-listed environment, and `snapshot`/`changed_files` look at files `.gitignore` does
//! not hide.

use std::collections::HashMap;
use std::path::Path;
use std::time::SystemTime;

use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::hooks::CommandAction;
use crate::redact::Redactor;

// The governed entry points, here for the dispatcher.
pub use crate::sandbox::CommandRun;
#[allow(unused_imports)]
pub use crate::sandbox::{run_confined, run_governed, CommandContext, GovernedRun};

/// File stamps of the workspace (respecting .gitignore, without `.git/`).
pub type Snapshot = HashMap<String, (u64, Option<SystemTime>)>;

pub fn snapshot(root: &Path) -> Snapshot {
    let mut out = HashMap::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        out.insert(
            rel.to_string_lossy().into_owned(),
            (meta.len(), meta.modified().ok()),
        );
    }
    out
}

/// Files created, changed or deleted between two snapshots, sorted.
pub fn changed_files(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut changed: Vec<String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .chain(before.keys().filter(|k| !after.contains_key(*k)).cloned())
        .collect();
    changed.sort();
    changed.dedup();
    changed
}

/// Runs the command unconfined in `bash --noprofile --norc -c` (the shell the command policy
/// parses), without the variables named in `scrubbed_env`; output is redacted of the
/// secrets registered with [`Redactor::global`]. Prefer [`run_governed`].
pub async fn run(
    action: &CommandAction,
    scrubbed_env: &[String],
    cancel: &CancellationToken,
    on_output: impl FnMut(&str),
) -> CommandRun {
    let mut cmd = Command::new(crate::sandbox::bash());
    cmd.args(["--noprofile", "--norc", "-c", &action.command])
        .current_dir(&action.cwd.abs)
        .process_group(0);
    for name in scrubbed_env {
        cmd.env_remove(name);
    }
    crate::sandbox::drive(cmd, action.timeout, cancel, on_output, Redactor::global()).await
}

/// The output as the model sees it: the head and the tail when it is long.
pub fn truncate_for_model(output: &str) -> String {
    const HEAD: usize = 2_000;
    const TAIL: usize = 8_000;
    if output.len() <= HEAD + TAIL {
        return output.to_string();
    }
    let mut head_end = HEAD;
    while !output.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = output.len() - TAIL;
    while !output.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[… {} bytes omitted …]\n{}",
        &output[..head_end],
        tail_start - head_end,
        &output[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::Workspace;
    use std::time::Duration;

    fn action(ws: &Workspace, command: &str, timeout: Duration) -> CommandAction {
        CommandAction {
            command: command.into(),
            cwd: ws.resolve(".").expect("root"),
            timeout,
        }
    }

    #[tokio::test]
    async fn streams_output_and_reports_exit_code() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = Workspace::new(tmp.path()).expect("ws");
        let mut chunks = String::new();
        let run = run(
            &action(
                &ws,
                "echo out; echo err >&2; exit 3",
                Duration::from_secs(10),
            ),
            &[],
            &CancellationToken::new(),
            |c| chunks.push_str(c),
        )
        .await;
        assert_eq!(run.exit_code, Some(3));
        assert!(run.output.contains("out") && run.output.contains("err"));
        assert_eq!(chunks, run.output);
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = Workspace::new(tmp.path()).expect("ws");
        let marker = tmp.path().join("survived");
        let cmd = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let started = std::time::Instant::now();
        let run = run(
            &action(&ws, &cmd, Duration::from_millis(300)),
            &[],
            &CancellationToken::new(),
            |_| {},
        )
        .await;
        assert!(run.timed_out);
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(!marker.exists(), "a child of the command outlived the kill");
    }

    #[tokio::test]
    async fn api_keys_are_not_passed_to_commands() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = Workspace::new(tmp.path()).expect("ws");
        std::env::set_var("MANDATE_TEST_SECRET_VAR", "sk-hidden");
        let run = run(
            &action(
                &ws,
                "echo \"[$MANDATE_TEST_SECRET_VAR]\"",
                Duration::from_secs(5),
            ),
            &["MANDATE_TEST_SECRET_VAR".to_string()],
            &CancellationToken::new(),
            |_| {},
        )
        .await;
        assert_eq!(run.output.trim(), "[]");
    }

    #[test]
    fn snapshots_find_created_changed_and_deleted_files() {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("a"), "1").expect("w");
        std::fs::write(tmp.path().join("b"), "1").expect("w");
        let before = snapshot(tmp.path());
        std::fs::write(tmp.path().join("a"), "22").expect("w");
        std::fs::remove_file(tmp.path().join("b")).expect("rm");
        std::fs::write(tmp.path().join("c"), "1").expect("w");
        assert_eq!(
            changed_files(&before, &snapshot(tmp.path())),
            vec!["a", "b", "c"]
        );
    }
}

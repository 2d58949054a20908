//! Running a shell command for the agent: its own process group (so a timeout or a stop kills
//! everything it started), output streamed as it comes, and a before/after look at the workspace
//! to report the files it changed.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::hooks::CommandAction;

/// What came of a command.
#[derive(Debug, Clone)]
pub struct CommandRun {
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    /// Everything it printed (stdout and stderr interleaved), capped.
    pub output: String,
    pub spawn_error: Option<String>,
}

const MAX_KEPT_OUTPUT: usize = 1024 * 1024;

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

/// Runs the command; `on_output` receives chunks as they arrive.
pub async fn run(
    action: &CommandAction,
    scrubbed_env: &[String],
    cancel: &CancellationToken,
    mut on_output: impl FnMut(&str),
) -> CommandRun {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&action.command)
        .current_dir(&action.cwd.abs)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for name in scrubbed_env {
        cmd.env_remove(name);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return CommandRun {
                exit_code: None,
                timed_out: false,
                cancelled: false,
                output: String::new(),
                spawn_error: Some(format!("could not start `sh`: {e}")),
            }
        }
    };
    let pgid = child.id().map(|p| p as i32);
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut output = String::new();
    let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
    let deadline = tokio::time::sleep(action.timeout);
    tokio::pin!(deadline);
    let (mut timed_out, mut cancelled) = (false, false);
    let mut keep = |text: &str, output: &mut String| {
        on_output(text);
        if output.len() < MAX_KEPT_OUTPUT {
            output.push_str(text);
        }
    };
    while stdout.is_some() || stderr.is_some() {
        tokio::select! {
            n = read_some(&mut stdout, &mut out_buf) => match n {
                Some(n) => keep(&String::from_utf8_lossy(&out_buf[..n]), &mut output),
                None => stdout = None,
            },
            n = read_some(&mut stderr, &mut err_buf) => match n {
                Some(n) => keep(&String::from_utf8_lossy(&err_buf[..n]), &mut output),
                None => stderr = None,
            },
            _ = &mut deadline => { timed_out = true; break; }
            _ = cancel.cancelled() => { cancelled = true; break; }
        }
    }
    if timed_out || cancelled {
        kill_group(pgid);
    }
    let status = tokio::select! {
        s = child.wait() => s.ok(),
        _ = tokio::time::sleep(Duration::from_secs(5)) => { kill_group(pgid); child.wait().await.ok() }
    };
    // Children that outlive the shell (`sleep 100 &`) would keep pipes open; end the group.
    kill_group(pgid);
    CommandRun {
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        cancelled,
        output,
        spawn_error: None,
    }
}

async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    match reader {
        Some(r) => match r.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid.filter(|p| *p > 1) {
        // SAFETY: killpg only sends a signal; a group that is already gone makes it fail harmlessly.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
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

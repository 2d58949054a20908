//! Running one hook command: `bash -c COMMAND` confined like the agent's commands, with the
//! event's JSON on stdin and stdout and stderr read apart.
//!
//! What a hook may do: read what a command may read; write nothing in the workspace, only a
//! private temporary directory (`TMPDIR`, removed afterwards); no network unless its entry says
//! `"network": true`; an allow-listed environment plus `CLAUDE_PROJECT_DIR` and
//! `MANDATE_PROJECT_DIR` (the workspace root), and the workspace root as its working directory.
//! Every outcome is bounded: a hook that outlives its timeout, prints more than 1 MiB on a
//! stream, or is stopped with the task is killed with everything it started (its process
//! group; under bubblewrap its PID namespace), and that is a failure. A hook that never reads
//! its stdin is not waited for. Processes it leaves behind are killed when it exits.

use std::path::{Path, PathBuf};

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::hooks::command_policy::ConfinementSettings;
use crate::redact::Redactor;
use crate::sandbox::{CommandSandbox, ConfinedCommand, Confinement, Io};

/// More than this on stdout or stderr is a failure (and the hook is killed).
pub const MAX_STREAM_BYTES: usize = 1024 * 1024;
/// How long what is left in the pipes is read after the hook exited (a process that left the
/// hook's session may hold them open).
const DRAIN: Duration = Duration::from_secs(2);

/// Where and how hooks run in this workspace.
pub struct HookPlace<'a> {
    /// The workspace root: the working directory, `CLAUDE_PROJECT_DIR`, read-only.
    pub root: &'a Path,
    pub confinement: &'a Confinement,
    /// Mandate's settings and data directories, hidden from hooks as from commands.
    pub app_dirs: &'a [PathBuf],
    /// The command policy's environment rules (the same allow-list as commands).
    pub settings: &'a ConfinementSettings,
    pub redactor: &'a Redactor,
}

/// What came of one hook.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookRun {
    pub exit_code: Option<i32>,
    /// Redacted of every secret Mandate knows.
    pub stdout: String,
    pub stderr: String,
    /// Why it has no meaningful exit: it did not start, timed out, printed too much, was
    /// stopped, or was killed by a signal.
    pub failure: Option<String>,
}

impl HookRun {
    pub fn failed(message: impl Into<String>) -> HookRun {
        HookRun {
            failure: Some(message.into()),
            ..HookRun::default()
        }
    }
}

/// Runs `command` with `input` on stdin.
pub async fn run_hook(
    command: &str,
    network: bool,
    timeout: Duration,
    input: Vec<u8>,
    place: &HookPlace<'_>,
    cancel: &CancellationToken,
) -> HookRun {
    if !place.confinement.is_confined() {
        return HookRun::failed(
            "it was not run: this machine offers no confinement (Landlock), and hooks run only confined",
        );
    }
    let temp = match crate::sandbox::private_temp_dir() {
        Ok(t) => t,
        Err(e) => return HookRun::failed(format!("its temporary directory: {e}")),
    };
    let root = place.root.display().to_string();
    let mut env = crate::sandbox::env::command_environment(
        std::env::vars(),
        place.settings,
        temp.path(),
        network,
        place.redactor,
    );
    for name in ["CLAUDE_PROJECT_DIR", "MANDATE_PROJECT_DIR"] {
        env.retain(|(n, _)| n != name);
        env.push((name.to_string(), root.clone()));
    }
    let env_path: Vec<(String, String)> =
        env.iter().filter(|(n, _)| n == "PATH").cloned().collect();
    let sandbox = CommandSandbox::new(
        place.root,
        place.root,
        Vec::new(),
        Vec::new(),
        temp.path(),
        network,
        false,
        place.app_dirs.to_vec(),
        env,
    );
    // What the line runs from outside the workspace (a script kept under `/tmp`) is shown to
    // it; one inside a hidden path is refused here, with the reason.
    let programs = hook_programs(place.root, command, &env_path);
    let command = sandbox
        .and_then(|s| s.with_programs(programs))
        .and_then(|s| ConfinedCommand::command(&s, place.confinement, command));
    let mut cmd = match command {
        Ok(c) => c,
        Err(e) => return HookRun::failed(e.to_string()),
    };
    cmd.stdin(Io::Piped).stdout(Io::Piped).stderr(Io::Piped);
    let run = match crate::sandbox::spawn(cmd) {
        Ok(child) => drive(child, input, timeout, cancel).await,
        Err(e) => HookRun::failed(format!("it could not start: {e}")),
    };
    HookRun {
        stdout: place.redactor.redact(&run.stdout).into_owned(),
        stderr: place.redactor.redact(&run.stderr).into_owned(),
        ..run
    }
}

/// The files a hook's line may run: the words written as paths, and the others found as
/// programs on its `PATH`.
fn hook_programs(root: &Path, command: &str, env: &[(String, String)]) -> Vec<PathBuf> {
    super::trust::command_words(root, command)
        .into_iter()
        .filter_map(|word| {
            if word.contains('/') {
                Some(PathBuf::from(word))
            } else {
                crate::sandbox::find_program(&word, env, root)
            }
        })
        .collect()
}

/// One stream, kept up to [`MAX_STREAM_BYTES`].
struct Capture {
    bytes: Vec<u8>,
    overflow: bool,
}

impl Capture {
    fn new() -> Capture {
        Capture {
            bytes: Vec::new(),
            overflow: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        if self.bytes.len() + chunk.len() > MAX_STREAM_BYTES {
            self.overflow = true;
        } else {
            self.bytes.extend_from_slice(chunk);
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

async fn drive(
    mut child: crate::sandbox::ConfinedChild,
    input: Vec<u8>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> HookRun {
    let pgid = child.id().map(|p| p as i32);
    // Written beside the reading: a hook that reads slowly or not at all blocks only this.
    let stdin = child.stdin.take();
    let writer = tokio::spawn(async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        }
    });
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let (mut out, mut err) = (Capture::new(), Capture::new());
    let (mut out_buf, mut err_buf) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut status = None;
    let failure = loop {
        if out.overflow || err.overflow {
            break Some(format!(
                "it printed more than {} MiB on {} and was killed",
                MAX_STREAM_BYTES / (1024 * 1024),
                if out.overflow { "stdout" } else { "stderr" }
            ));
        }
        tokio::select! {
            n = read_some(&mut stdout, &mut out_buf) => match n {
                Some(n) => out.push(&out_buf[..n]),
                None => stdout = None,
            },
            n = read_some(&mut stderr, &mut err_buf) => match n {
                Some(n) => err.push(&err_buf[..n]),
                None => stderr = None,
            },
            s = child.wait() => { status = Some(s); break None; }
            _ = &mut deadline => break Some(format!(
                "it did not finish within {} s and was killed",
                timeout.as_secs_f64()
            )),
            _ = cancel.cancelled() => break Some("it was stopped with the task".to_string()),
        }
    };
    // Whatever it started dies with it.
    crate::sandbox::kill_group(pgid);
    if failure.is_none() {
        let drained = tokio::time::timeout(DRAIN, async {
            while stdout.is_some() || stderr.is_some() {
                tokio::select! {
                    n = read_some(&mut stdout, &mut out_buf) => match n {
                        Some(n) => out.push(&out_buf[..n]),
                        None => stdout = None,
                    },
                    n = read_some(&mut stderr, &mut err_buf) => match n {
                        Some(n) => err.push(&err_buf[..n]),
                        None => stderr = None,
                    },
                }
            }
        });
        let _ = drained.await;
    }
    writer.abort();
    let status = match status {
        Some(s) => s.ok(),
        None => tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .ok()
            .and_then(Result::ok),
    };
    let failure = failure.or_else(|| {
        if out.overflow || err.overflow {
            return Some(format!(
                "it printed more than {} MiB",
                MAX_STREAM_BYTES / (1024 * 1024)
            ));
        }
        match status.map(|s| (s.code(), std::os::unix::process::ExitStatusExt::signal(&s))) {
            Some((Some(_), _)) => None,
            Some((None, Some(signal))) => Some(format!("it was killed by signal {signal}")),
            _ => Some("its exit status is unknown".to_string()),
        }
    });
    HookRun {
        exit_code: status.and_then(|s| s.code()),
        stdout: out.text(),
        stderr: err.text(),
        failure,
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

//! One live connection to a server ([`super::rpc`]): a child process on stdin/stdout, or
//! streamable HTTP. Connecting includes `initialize` and listing the tools,
//! both within the server's start-up time limit.
//!
//! A stdio server is a program run confined ([`super::jail`]) with an allow-listed environment
//! (never Mandate's API keys or session addresses), in the workspace, in a process group of its
//! own that is killed with it. [`server_command`] is the one place that builds its `Command`.

use std::collections::VecDeque;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::catalog::ToolInfo;
use super::jail::{Jail, Place};
use super::rpc::{Peer, Session};
use super::starting::StartingWatch;
use crate::sandbox::{CommandSandbox, ConfinedCommand, Confinement};

/// How many pages of `tools/list` are followed (a server that pages forever is cut off).
const MAX_TOOL_PAGES: usize = 16;
const STDERR_TAIL: usize = 4096;

/// A definition with its secret references resolved: what is actually started.
#[derive(Clone)]
pub enum Resolved {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("could not start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("it did not answer `initialize` within {} s{}", .limit.as_secs(), tail_note(.stderr))]
    Timeout { limit: Duration, stderr: String },
    #[error("`initialize` failed: {error}{}", tail_note(.stderr))]
    Initialize { error: String, stderr: String },
    #[error("listing its tools failed: {0}")]
    ListTools(String),
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Confinement(String),
    /// A stdio server on a machine without confinement, and no consent (in force) from the
    /// person to run it unconfined.
    #[error("this machine offers no confinement (no Landlock), so it would run unconfined, free to read and write anything you can; {}it is not started unless you allow that (Settings → MCP servers, or `mandate mcp allow-unconfined {server}`), and then each of its calls waits for your approval", lapse_note(.lapse))]
    Unconfined {
        server: String,
        /// Why the consent the person gave no longer holds (its code changed).
        lapse: Option<String>,
    },
}

fn lapse_note(lapse: &Option<String>) -> String {
    match lapse {
        Some(why) => format!("your consent to run it unconfined no longer holds ({why}), so "),
        None => String::new(),
    }
}

fn tail_note(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!(" (its last output: {})", tail.trim())
    }
}

/// The last bytes a stdio server wrote to stderr, for error messages.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    pub fn text(&self) -> String {
        let buf = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let bytes: Vec<u8> = buf.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn push(&self, chunk: &[u8]) {
        let mut buf = self.0.lock().unwrap_or_else(|p| p.into_inner());
        buf.extend(chunk);
        while buf.len() > STDERR_TAIL {
            buf.pop_front();
        }
    }
}

/// Process groups of the stdio servers alive now, killed at exit too: the window's shell ends
/// the process without dropping the host, and a server must not outlive Mandate.
static LIVE_GROUPS: Mutex<std::collections::BTreeSet<i32>> =
    Mutex::new(std::collections::BTreeSet::new());
static AT_EXIT: std::sync::Once = std::sync::Once::new();

extern "C" fn kill_live_groups() {
    // At exit another thread may hold the lock; never wait for it there.
    if let Ok(groups) = LIVE_GROUPS.try_lock() {
        for group in groups.iter() {
            // SAFETY: kill(2) on a process group this process started; no memory is touched.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
    }
}

/// The child of a stdio server: its whole process group is killed when this is dropped.
pub struct ChildGuard {
    child: crate::sandbox::ConfinedChild,
    group: Option<i32>,
    /// The server's private temporary directory, removed after it is killed.
    _temp: Option<tempfile::TempDir>,
}

impl ChildGuard {
    fn new(child: crate::sandbox::ConfinedChild, temp: Option<tempfile::TempDir>) -> Self {
        let group = child.id().and_then(|id| i32::try_from(id).ok());
        if let Some(group) = group {
            AT_EXIT.call_once(|| {
                // SAFETY: registers a plain function with no captured state.
                unsafe {
                    libc::atexit(kill_live_groups);
                }
            });
            LIVE_GROUPS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(group);
        }
        Self {
            child,
            group,
            _temp: temp,
        }
    }

    /// The process group (the server's pid).
    pub fn group(&self) -> Option<i32> {
        self.group
    }

    /// How the process ended, if it has.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub async fn wait_briefly(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(limit, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            // The group this child leads (its own session); the watchdog forgets it too.
            crate::sandbox::kill_group(Some(group));
            LIVE_GROUPS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&group);
        }
        let _ = self.child.start_kill();
    }
}

/// A connected, initialized server.
pub struct Connection {
    pub service: Session,
    pub tools: Vec<Result<ToolInfo, (String, String)>>,
    pub child: Option<ChildGuard>,
    pub stderr: StderrTail,
    /// A stdio server's confinement (stopped between calls when it may write).
    pub jail: Option<Arc<Jail>>,
}

impl Connection {
    pub fn peer(&self) -> Peer {
        self.service.peer().clone()
    }
}

/// THE ONE PLACE a stdio server's `Command` is built: the program (an argv, never a shell) in
/// the workspace, confined by `sandbox` under `confinement` with exactly its environment, in a
/// session and process group of its own.
pub fn server_command(
    command: &str,
    args: &[String],
    sandbox: &CommandSandbox,
    confinement: &Confinement,
) -> Result<crate::sandbox::Launch, crate::sandbox::SandboxError> {
    use crate::sandbox::Io;
    let mut cmd = ConfinedCommand::server(sandbox, confinement, command, args)?;
    cmd.stdin(Io::Piped).stdout(Io::Piped).stderr(Io::Piped);
    Ok(cmd)
}

/// Starts (or dials) the server and initializes it, within `limit`.
pub async fn connect(
    name: &str,
    resolved: &Resolved,
    place: &Place,
    limit: Duration,
) -> Result<Connection, ConnectError> {
    match resolved {
        Resolved::Stdio { command, args, env } => {
            connect_stdio(name, command, args, env, place, limit).await
        }
        Resolved::Http { url, headers } => {
            let mut map = http::HeaderMap::new();
            for (k, v) in headers {
                let name = http::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|e| ConnectError::Config(format!("header `{k}`: {e}")))?;
                let value = http::HeaderValue::from_str(v).map_err(|_| {
                    ConnectError::Config(format!(
                        "the value of header `{k}` is not a valid header value"
                    ))
                })?;
                map.insert(name, value);
            }
            let served = tokio::time::timeout(limit, super::rpc::http(url, map)).await;
            let service = match served {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => {
                    return Err(ConnectError::Initialize {
                        error: e.to_string(),
                        stderr: String::new(),
                    })
                }
                Err(_) => {
                    return Err(ConnectError::Timeout {
                        limit,
                        stderr: String::new(),
                    })
                }
            };
            finish(name, service, None, StderrTail::default(), limit).await
        }
    }
}

/// Starts a stdio server confined ([`super::jail`]); one that may write in the workspace (or
/// runs unconfined) is stopped before it is handed over, and refused if it changed anything
/// while starting ([`super::starting::Starting`]).
async fn connect_stdio(
    name: &str,
    command: &str,
    args: &[String],
    env: &[(String, String)],
    place: &Place,
    limit: Duration,
) -> Result<Connection, ConnectError> {
    let (p, own) = (place.clone(), env.to_vec());
    let (sandbox, temp) = tokio::task::spawn_blocking(move || super::jail::prepare(&p, &own))
        .await
        .map_err(|e| ConnectError::Config(e.to_string()))??;
    let watch = StartingWatch::before_spawn(place).await?;
    // Under bubblewrap a missing program would only be said by bubblewrap, on stderr.
    let Some(program) = crate::sandbox::find_program(command, &sandbox.env, &place.root) else {
        return Err(ConnectError::Spawn {
            command: super::config::printable(command, 200),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    };
    // What it runs from outside the workspace is shown to it wherever it lives (`/tmp`
    // included); one inside a hidden path is refused here, with the reason.
    let named = args
        .iter()
        .flat_map(|a| [Some(a.as_str()), a.split_once('=').map(|(_, v)| v)])
        .flatten()
        .filter(|a| a.contains('/'))
        .map(std::path::PathBuf::from);
    let sandbox = sandbox
        .with_programs(std::iter::once(program).chain(named))
        .map_err(|e| ConnectError::Config(e.to_string()))?;
    let cmd = server_command(command, args, &sandbox, &place.confinement)
        .map_err(|e| ConnectError::Config(format!("its confinement could not be prepared: {e}")))?;
    let mut child = crate::sandbox::spawn(cmd).map_err(|source| ConnectError::Spawn {
        command: super::config::printable(command, 200),
        source,
    })?;
    let stderr = StderrTail::default();
    let mut reader = None;
    if let Some(mut pipe) = child.stderr.take() {
        let tail = stderr.clone();
        reader = Some(tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.push(&buf[..n]);
            }
        }));
    }
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(ConnectError::Config(
            "the server's pipes could not be set up".into(),
        ));
    };
    let guard = ChildGuard::new(child, Some(temp));
    let jail = Arc::new(Jail::new(
        sandbox,
        place.confinement.clone(),
        place.writes_workspace,
        guard.group(),
    ));
    let starting = watch.spawned(jail.clone());
    let connected = handshake(name, stdout, stdin, guard, reader, stderr, limit).await;
    let mut conn = match connected {
        Ok(conn) => conn,
        Err(e) => return Err(starting.failed(e).await),
    };
    starting.succeeded().await?;
    conn.jail = Some(jail);
    Ok(conn)
}

/// `initialize` and the tool list of a spawned stdio server. On error its group is killed
/// (the guard is dropped); [`super::starting::Starting::failed`] makes sure it is gone.
async fn handshake(
    name: &str,
    stdout: tokio::process::ChildStdout,
    stdin: tokio::process::ChildStdin,
    guard: ChildGuard,
    reader: Option<tokio::task::JoinHandle<()>>,
    stderr: StderrTail,
    limit: Duration,
) -> Result<Connection, ConnectError> {
    let served = tokio::time::timeout(limit, super::rpc::stdio(stdout, stdin)).await;
    let service = match served {
        Ok(Ok(service)) => service,
        Ok(Err(e)) => {
            // A server that exits at start says why on stderr: read it to the end (its
            // own children may hold the pipe, so not for long).
            if let Some(reader) = reader {
                let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
            }
            return Err(ConnectError::Initialize {
                error: e.to_string(),
                stderr: stderr.text(),
            });
        }
        Err(_) => {
            return Err(ConnectError::Timeout {
                limit,
                stderr: stderr.text(),
            })
        }
    };
    finish(name, service, Some(guard), stderr, limit).await
}

async fn finish(
    name: &str,
    service: Session,
    child: Option<ChildGuard>,
    stderr: StderrTail,
    limit: Duration,
) -> Result<Connection, ConnectError> {
    let listed = tokio::time::timeout(limit, list_tools(service.peer())).await;
    let tools = match listed {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => return Err(ConnectError::ListTools(e)),
        Err(_) => {
            return Err(ConnectError::ListTools(format!(
                "no answer within {} s",
                limit.as_secs()
            )))
        }
    };
    tracing::info!(server = %name, tools = tools.len(), "MCP server ready");
    Ok(Connection {
        service,
        tools,
        child,
        stderr,
        jail: None,
    })
}

/// Every page of `tools/list` (up to a limit), each tool checked.
async fn list_tools(peer: &Peer) -> Result<Vec<Result<ToolInfo, (String, String)>>, String> {
    let mut out = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_TOOL_PAGES {
        let (tools, next) = peer.list_tools(cursor).await.map_err(|e| e.to_string())?;
        for wire in &tools {
            out.push(ToolInfo::from_wire(wire).map_err(|why| {
                let name = wire.get("name").and_then(Value::as_str).unwrap_or("?");
                (super::config::printable(name, 80), why)
            }));
            if out.len() > super::catalog::MAX_TOOLS_PER_SERVER * 2 {
                return Ok(out);
            }
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn only_allow_listed_variables_reach_a_server_and_never_a_secret() {
        let source = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LC_ALL", "C.UTF-8"),
            ("MANDATE_API_KEY", "sk-app-key-123456"),
            ("OPENAI_API_KEY", "sk-other"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/bus"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("TERM", "sk-app-key-123456"),
            ("TMPDIR", "/tmp"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let own = [("TOKEN".to_string(), "server-secret".to_string())];
        let known = crate::redact::Redactor::new();
        known.add("sk-app-key-123456");
        let env = super::super::jail::server_environment(
            source,
            &own,
            &known,
            Path::new("/tmp/mandate-cmd-x"),
            Some(Path::new("/c/mcp/srv")),
        );
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        for dropped in [
            "MANDATE_API_KEY",
            "OPENAI_API_KEY",
            "DBUS_SESSION_BUS_ADDRESS",
            "SSH_AUTH_SOCK",
            "TERM",
        ] {
            assert_eq!(get(dropped), None, "{dropped} passed");
        }
        assert_eq!(get("HOME"), Some("/home/me"));
        assert_eq!(get("TOKEN"), Some("server-secret"));
        assert_eq!(get("TMPDIR"), Some("/tmp/mandate-cmd-x"));
        assert_eq!(get("npm_config_cache"), Some("/c/mcp/srv/npm"));
        assert_eq!(get("XDG_CACHE_HOME"), Some("/c/mcp/srv/cache"));
    }

    #[test]
    fn the_command_is_an_argv_never_a_shell_line() {
        let tmp = tempfile::tempdir().expect("tmp");
        let sandbox = CommandSandbox::new(
            tmp.path(),
            tmp.path(),
            Vec::new(),
            Vec::new(),
            tmp.path(),
            true,
            false,
            Vec::new(),
            Vec::new(),
        )
        .expect("sandbox");
        let confinement = Confinement::from_parts(None, None);
        let cmd = server_command(
            "srv; rm -rf /",
            &["$(id)".to_string(), "a b".to_string()],
            &sandbox,
            &confinement,
        )
        .expect("command");
        assert_eq!(cmd.program().to_bytes(), b"srv; rm -rf /");
        let args: Vec<_> = cmd.args().map(|a| a.to_bytes()).collect();
        assert_eq!(args, [&b"$(id)"[..], b"a b"]);
    }
}

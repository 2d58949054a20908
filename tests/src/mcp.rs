//! The test MCP server (`src/bin/mcp-test-server.rs`) as the tests start it: its path for a
//! `.mcp.json`, served over streamable HTTP on 127.0.0.1, and the consent a person would give.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

/// The test server binary, built next to `mandate`.
/// The intents of the MCP tests: one intent owning `docs/**`.
pub const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Release notes
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
    constraints: []
    acceptance_criteria: []
"#;

pub fn server_bin() -> PathBuf {
    crate::app::mandate_bin().with_file_name("mcp-test-server")
}

/// A wrapper script that runs what its arguments name. The test server is named on the
/// server's command line rather than inside the script, so that its start finds it wherever
/// the checkout lives (under `/tmp`, bubblewrap shows a server what its command line names).
pub const EXEC_ARGS: &str = "#!/bin/sh\nexec \"$@\"\n";

/// Writes the workspace's `.mcp.json`.
pub fn write_project_file(ws: &Path, servers: Value) {
    std::fs::write(
        ws.join(".mcp.json"),
        serde_json::to_string_pretty(&json!({ "mcpServers": servers })).expect("json"),
    )
    .expect("write .mcp.json");
}

/// A stdio entry running the test server with `args` and `env`.
pub fn stdio_entry(args: &[&str], env: Value) -> Value {
    json!({"command": server_bin().display().to_string(), "args": args, "env": env})
}

/// The person's `mcp.json` in the config directory.
pub fn write_user_file(config: &Path, file: Value) {
    std::fs::create_dir_all(config).expect("mkdir config");
    std::fs::write(config.join("mcp.json"), file.to_string()).expect("write mcp.json");
}

/// The consent a person gives in Settings to the workspace's server `name` as defined now.
pub fn consent(ws: &Path, name: &str) -> (String, Value) {
    let text = std::fs::read_to_string(ws.join(".mcp.json")).expect("read .mcp.json");
    let parsed = mandate_core::mcp::config::parse(
        &text,
        mandate_core::mcp::config::Source::Project,
        ".mcp.json",
    );
    let def = parsed
        .servers
        .iter()
        .find(|s| s.name == name)
        .expect("the server is defined");
    let root = ws.canonicalize().expect("canonical workspace");
    (
        root.display().to_string(),
        json!({"consents": {name: def.definition_hash()}}),
    )
}

/// The workspace's server `name` as defined now.
pub fn project_def(ws: &Path, name: &str) -> mandate_core::mcp::config::ServerDef {
    let text = std::fs::read_to_string(ws.join(".mcp.json")).expect("read .mcp.json");
    mandate_core::mcp::config::parse(
        &text,
        mandate_core::mcp::config::Source::Project,
        ".mcp.json",
    )
    .servers
    .into_iter()
    .find(|s| s.name == name)
    .expect("the server is defined")
}

/// Consent to the workspace's server `name` and the grant to write in the workspace, as the
/// person gives both in Settings, for the definition as it is now and the code it runs now
/// (its values hold no secret reference).
pub fn consent_and_write_grant(ws: &Path, name: &str) -> (String, Value) {
    let (key, mut decisions) = consent(ws, name);
    decisions["writes"] = json!({ name: bound_to_code(ws, name) });
    (key, decisions)
}

/// Consent to the workspace's server `name` and to running it unconfined, as the person gives
/// both in Settings, for the definition and the code it runs as they are now.
pub fn consent_and_unconfined(ws: &Path, name: &str) -> (String, Value) {
    let (key, mut decisions) = consent(ws, name);
    decisions["unconfined"] = json!({ name: bound_to_code(ws, name) });
    (key, decisions)
}

/// A right for the workspace's server `name` bound to its definition and the code it runs
/// now, as the person's file keeps it (its values hold no secret reference).
fn bound_to_code(ws: &Path, name: &str) -> Value {
    use mandate_core::mcp::config::Transport;
    use mandate_core::mcp::connection::Resolved;
    let def = project_def(ws, name);
    let Transport::Stdio { command, args, env } = &def.transport else {
        panic!("`{name}` is not a stdio server");
    };
    let resolved = Resolved::Stdio {
        command: command.clone(),
        args: args.clone(),
        env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    };
    let root = ws.canonicalize().expect("canonical workspace");
    let grant = mandate_core::mcp::grant::grant_for(&root, &def, || Ok(resolved))
        .expect("the right can be given for the code it runs");
    serde_json::to_value(grant).expect("json")
}

/// The test server over streamable HTTP on 127.0.0.1; killed when dropped.
pub struct HttpServer {
    child: Child,
    pub url: String,
}

impl HttpServer {
    pub fn start() -> HttpServer {
        let mut child = Command::new(server_bin())
            .arg("--http")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the test MCP server");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server prints its URL");
        HttpServer {
            child,
            url: line.trim().to_string(),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The starts file of server `name` started with `MCP_TEST_STARTS=state`: in its cache
/// directory, the one place outside its temporary directory a confined server may write.
pub fn starts_file(dirs: &crate::app::UserDirs, name: &str) -> PathBuf {
    let root = dirs.cache().join("mcp");
    std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{name}-")))
        })
        .map(|dir| dir.join("state/mcp-test-starts.log"))
        .unwrap_or_else(|| root.join(format!("{name}-not-started/state/mcp-test-starts.log")))
}

/// The host's process ids of the test servers running in workspace `ws` (their working
/// directory), bubblewrap's processes included. (Inside bubblewrap's PID namespace a server
/// sees other numbers: what it writes to its starts file counts starts, it names no process.)
pub fn server_pids(ws: &Path) -> Vec<u32> {
    let Ok(ws) = ws.canonicalize() else {
        return Vec::new();
    };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == ws))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("mcp-test-server"))
        })
        .collect()
}

/// The process ids a test server wrote to its starts file.
pub fn started_pids(starts: &Path) -> Vec<u32> {
    std::fs::read_to_string(starts)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("start ")?.trim().parse().ok())
        .collect()
}

/// Waits (bounded) until none of `pids` is a live process; returns those still alive.
pub async fn wait_gone(pids: &[u32]) -> Vec<u32> {
    let alive = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(false)
    };
    for _ in 0..100 {
        if !pids.iter().any(alive) {
            return Vec::new();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    pids.iter().copied().filter(alive).collect()
}

//! The person's MCP server and hook wherever their programs live, through `mandate run`: kept
//! outside the workspace in a directory under `/tmp` (where bubblewrap gives confined
//! processes a private one), they start and work; kept in Mandate's own data directory (which
//! hooks and servers may not read), they are refused with that reason, never with a cryptic
//! start failure.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{run_openai, Output};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::mcp::{server_bin, write_project_file, INTENTS};
use mandate_tests::sse::openai;
use serde_json::{json, Value};

const LIB: &str =
    "refuse() { echo \"$1 (said by a hook kept outside the workspace)\" >&2; exit 2; }\n";
const NO_RM: &str = r#"#!/bin/sh
. "$(dirname "$0")/lib.sh"
if grep -q 'rm -rf'; then refuse "rm -rf is not allowed here"; fi
exit 0
"#;

fn call(id: &str, tool: &str, args: Value) -> mandate_tests::llm_server::Reply {
    openai::turn().tool_call(id, tool, args).reply()
}

fn install(path: &Path, text: &[u8], mode: u32) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The test server binary and a hook script (with the library it sources) copied under `dir`;
/// returns their paths.
fn programs_in(dir: &Path) -> (PathBuf, PathBuf) {
    let server = dir.join("bin/mcp-test-server");
    install(
        &server,
        &std::fs::read(server_bin()).expect("server"),
        0o755,
    );
    let hook = dir.join("hooks/no-rm.sh");
    install(&hook, NO_RM.as_bytes(), 0o755);
    install(&dir.join("hooks/lib.sh"), LIB.as_bytes(), 0o644);
    (server, hook)
}

/// A workspace whose `.mcp.json` runs `server` and whose hooks run `hook` before commands.
fn workspace_running(server: &Path, hook: &Path) -> tempfile::TempDir {
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "Bash",
        "hooks": [{"type": "command", "command": format!("'{}'", hook.display()), "name": "no-rm"}]}]}});
    let ws = workspace(
        Some(INTENTS),
        &[
            (".mandate/hooks.json", &hooks.to_string()),
            ("docs/notes.md", "notes\n"),
        ],
    );
    write_project_file(
        ws.path(),
        json!({"srv": {"command": server.display().to_string()}}),
    );
    ws
}

async fn run(ws: &tempfile::TempDir, dirs: &UserDirs) -> (ScriptedServer, Output) {
    let server = ScriptedServer::start(vec![
        call("s", "select_active_intent", json!({"intent_id": "INT-001"})),
        call("r1", "mcp__srv__lookup", json!({"key": "answer"})),
        call("rm", "execute_command", json!({"command": "rm -rf docs"})),
        call("end", "attempt_completion", json!({"result": "done"})),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow", "--trust-hooks", "--trust-mcp", "srv"],
        "go",
        dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    (server, out)
}

fn error_of(server: &ScriptedServer, id: &str) -> Value {
    let text = server.tool_result(id).unwrap_or_default();
    serde_json::from_str::<Value>(&text).unwrap_or(Value::Null)["error"].clone()
}

#[tokio::test]
async fn a_server_and_a_hook_kept_under_tmp_outside_the_workspace_start_and_work() {
    let outside = tempfile::Builder::new()
        .prefix("mandate-programs-")
        .tempdir_in("/tmp")
        .expect("tmp");
    let (server_path, hook) = programs_in(outside.path());
    let ws = workspace_running(&server_path, &hook);
    let dirs = UserDirs::new();
    let (server, out) = run(&ws, &dirs).await;
    assert_eq!(
        server.tool_result("r1").as_deref(),
        Some("the value of answer"),
        "{}",
        out.stderr
    );
    let denied = error_of(&server, "rm");
    assert_eq!(denied["code"], "HOOK_DENIED", "{denied}");
    assert_eq!(
        denied["message"],
        "Denied by your hook `no-rm`: rm -rf is not allowed here (said by a hook kept outside the workspace)."
    );
    assert!(ws.path().join("docs/notes.md").exists());
}

#[tokio::test]
async fn a_server_and_a_hook_kept_in_mandates_data_directory_are_refused_with_the_reason() {
    let dirs = UserDirs::new();
    let data = dirs.data();
    let (server_path, hook) = programs_in(&data.join("programs"));
    let ws = workspace_running(&server_path, &hook);
    let (server, out) = run(&ws, &dirs).await;
    let data = data.canonicalize().expect("data");
    let why = |program: &Path| {
        format!(
            "`{}` is inside `{}`, which commands, hooks and MCP servers may not read",
            program.canonicalize().expect("program").display(),
            data.display()
        )
    };
    let notices: Vec<String> = out
        .events_of("notice")
        .iter()
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("`srv` is unavailable") && n.contains(&why(&server_path))),
        "{notices:#?}"
    );
    assert!(
        !notices.iter().any(|n| n.contains("execvp")),
        "{notices:#?}"
    );
    let refused = error_of(&server, "rm");
    assert_eq!(refused["code"], "HOOK_FAILURE", "{refused}");
    let message = refused["message"].as_str().unwrap_or("");
    assert!(message.contains(&why(&hook)), "{message}");
    assert!(ws.path().join("docs/notes.md").exists());
}

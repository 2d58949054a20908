//! The grant to write in the workspace holds only for the code the person granted, with real
//! servers under the real confinement: a server whose script lives in the workspace cannot be
//! granted (from the command line, or by a grant stored anyway), and a granted server whose
//! program outside the workspace changed after the grant runs without it — its write refused
//! by the kernel, the workspace unchanged, and the person told why.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{mandate, run_openai};
use mandate_tests::llm_server::{Reply, ScriptedServer};
use mandate_tests::mcp::{
    consent, consent_and_write_grant, project_def, server_bin, write_project_file, write_user_file,
    EXEC_ARGS, INTENTS,
};
use mandate_tests::script::{call, done, notices, run_go, select};
use serde_json::{json, Value};

const NOTES: &str = "line one\nline two\nline three\n";

fn refused_by_the_kernel(result: &str) -> bool {
    result.starts_with("cannot write")
        && [
            "Permission denied",
            "Operation not permitted",
            "Read-only file system",
        ]
        .iter()
        .any(|why| result.contains(why))
}

fn write_notes() -> Reply {
    call(
        "w",
        "mcp__srv__write_marker",
        json!({"path": "docs/notes.md", "text": "written with a grant?\n"}),
    )
}

async fn list(ws: &std::path::Path, dirs: &UserDirs) -> Value {
    let root = ws.display().to_string();
    let out = mandate(&["mcp", "list", "--json", "--workspace", &root], dirs, &[]).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).expect("json")
}

/// A wrapper script outside the workspace that runs the test server (named by its
/// arguments): the program the person grants, bound by its content.
fn wrapper(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("srv");
    std::fs::write(&path, EXEC_ARGS).expect("write wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[tokio::test]
async fn a_server_whose_script_lives_in_the_workspace_is_never_granted() {
    let ws = workspace(
        Some(INTENTS),
        &[("docs/notes.md", NOTES), ("tools/srv.sh", EXEC_ARGS)],
    );
    let dirs = UserDirs::new();
    let bin = server_bin().display().to_string();
    write_project_file(
        ws.path(),
        json!({"srv": {"command": "/bin/sh", "args": ["tools/srv.sh", bin]}}),
    );
    let (key, decisions) = consent(ws.path(), "srv");
    write_user_file(&dirs.config(), json!({"projects": {&key: decisions}}));
    let script_path = ws
        .path()
        .canonicalize()
        .expect("canonical")
        .join("tools/srv.sh")
        .display()
        .to_string();

    // The person asks, from a terminal: refused, naming the script.
    let root = ws.path().display().to_string();
    let out = mandate(
        &["mcp", "allow-write", "srv", "--yes", "--workspace", &root],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("MCP server `srv` cannot be allowed to write in this workspace")
            && out.stderr.contains("its script `tools/srv.sh`")
            && out.stderr.contains(&script_path),
        "{}",
        out.stderr
    );
    let file = std::fs::read_to_string(dirs.config().join("mcp.json")).expect("mcp.json");
    assert!(!file.contains("\"writes\""), "{file}");

    // A grant stored anyway (a hand edit, an older version) is refused at the start.
    let mut decisions = decisions_of(&file, &key);
    decisions["writes"] = json!({"srv": {
        "definition": project_def(ws.path(), "srv").definition_hash(),
        "program": "/bin/sh",
        "code": {},
    }});
    write_user_file(&dirs.config(), json!({"projects": {&key: decisions}}));
    let overview = list(ws.path(), &dirs).await;
    let srv = &overview["servers"][0];
    assert_eq!(srv["may_write_workspace"], false, "{srv:#}");
    assert_eq!(srv["write_grant"]["state"], "refused", "{srv:#}");
    assert!(
        srv["write_grant"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains(&script_path),
        "{srv:#}"
    );

    let server = ScriptedServer::start(vec![select(), write_notes(), done()]).await;
    let out = run_go(ws.path(), &server, &["--approve", "allow"], &dirs).await;
    let result = server.tool_result("w").expect("w");
    assert!(refused_by_the_kernel(&result), "{result}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("docs/notes.md")).expect("notes"),
        NOTES
    );
    assert!(
        notices(&out).iter().any(|n| n
            .contains("runs without your grant to write in the workspace")
            && n.contains("tools/srv.sh")),
        "{:?}",
        notices(&out)
    );
}

fn decisions_of(file: &str, key: &str) -> Value {
    let file: Value = serde_json::from_str(file).expect("json");
    file["projects"][key].clone()
}

#[tokio::test]
async fn a_granted_server_whose_program_changed_after_the_grant_runs_without_it() {
    let ws = workspace(Some(INTENTS), &[("docs/notes.md", NOTES)]);
    // Under /tmp, where bubblewrap gives servers a /tmp of their own: it is shown to them.
    let outside = tempfile::tempdir().expect("tmp");
    let program = wrapper(outside.path());
    let dirs = UserDirs::new();
    write_project_file(
        ws.path(),
        json!({"srv": {"command": program.display().to_string(), "args": [server_bin().display().to_string()]}}),
    );
    let (key, decisions) = consent_and_write_grant(ws.path(), "srv");
    write_user_file(&dirs.config(), json!({"projects": {&key: decisions}}));
    let overview = list(ws.path(), &dirs).await;
    assert_eq!(overview["servers"][0]["write_grant"]["state"], "in_force");

    // The program changes between two calls of one task: its next start (the crash stops
    // it) finds the code is not what the person granted.
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    let server = ScriptedServer::start(vec![
        select(),
        call("c", "mcp__srv__crash", json!({})),
        Reply::After {
            gate: gate.clone(),
            then: Box::new(write_notes()),
        },
        done(),
    ])
    .await;
    let url = server.base_url();
    let run = run_openai(ws.path(), &url, &["--approve", "allow"], "go", &dirs);
    tokio::pin!(run);
    tokio::select! {
        out = &mut run => panic!("the run ended before the held turn: {}\n{}", out.stdout, out.stderr),
        r = server.wait_for_requests(3, std::time::Duration::from_secs(60)) => r.expect("the third request"),
    }
    let mut text = std::fs::read_to_string(&program).expect("wrapper");
    text.push_str("# changed after the grant\n");
    std::fs::write(&program, text).expect("rewrite the program");
    gate.notify_one();
    let out = run.await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);

    let result = server.tool_result("w").expect("w");
    assert!(refused_by_the_kernel(&result), "{result}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("docs/notes.md")).expect("notes"),
        NOTES
    );
    let shown = program
        .canonicalize()
        .expect("canonical")
        .display()
        .to_string();
    assert!(
        notices(&out).iter().any(
            |n| n.contains("ran without its grant to write in the workspace")
                && n.contains(&shown)
                && n.contains("changed since it was allowed")
        ),
        "{:?}",
        notices(&out)
    );
    // Settings (here the command line) say the grant is stale and why, until it is given again.
    let overview = list(ws.path(), &dirs).await;
    let srv = &overview["servers"][0];
    assert_eq!(srv["write_grant"]["state"], "stale", "{srv:#}");
    assert_eq!(srv["may_write_workspace"], false, "{srv:#}");
    assert!(
        srv["write_grant"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains(&shown),
        "{srv:#}"
    );
    let root = ws.path().display().to_string();
    let again = mandate(
        &["mcp", "allow-write", "srv", "--yes", "--workspace", &root],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(again.code, Some(0), "{}\n{}", again.stdout, again.stderr);
    let overview = list(ws.path(), &dirs).await;
    assert_eq!(overview["servers"][0]["write_grant"]["state"], "in_force");
}

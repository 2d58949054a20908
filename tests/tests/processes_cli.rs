//! Background processes under `mandate run`: one the model starts is read and governed like a
//! command, and nothing it started outlives the run — neither when the run ends, nor when the
//! runner itself is killed.

use std::time::Duration;

use mandate_tests::app::{mandate_bin, until, workspace, UserDirs};
use mandate_tests::cli::{ledger, run_openai};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::processes::{running, start_in_background};
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = "active_intents:\n  - id: INT-1\n    name: App\n    status: IN_PROGRESS\n    owned_scope: [\"src/*.rs\"]\n";

fn marker() -> String {
    format!("mandate-bg-{}", std::process::id())
}

#[tokio::test]
async fn a_background_process_is_read_governed_and_ended_with_the_run() {
    let mark = marker();
    // It prints, then writes one file the intent owns and one it does not.
    let command = format!(
        "echo serving; sleep 1; echo 'pub fn b() {{}}' > src/b.rs; echo x > src/notes.txt; echo wrote; exec -a {mark} sleep 300"
    );
    let mut script = start_in_background("INT-1", &command);
    script.extend([
        openai::turn()
            .tool_call(
                "r",
                "read_process_output",
                json!({"process_id": "p1", "wait_seconds": 10}),
            )
            .reply(),
        openai::turn()
            .tool_call("done", "attempt_completion", json!({"result": "served"}))
            .reply(),
    ]);
    let server = ScriptedServer::start(script).await;
    let ws = workspace(Some(INTENTS), &[("src/lib.rs", "pub fn a() {}\n")]);
    let dirs = UserDirs::new();
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "Serve it",
        &dirs,
    )
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    let started = server.tool_result("bg").expect("the start's result");
    assert!(started.contains("process p1"), "{started}");
    let read = server.tool_result("r").expect("the read's result");
    assert!(read.contains("serving"), "{read}");
    // The read came after it wrote (it waited for output), or the next call's result says it.
    let told: String = ["r", "done"]
        .iter()
        .filter_map(|c| server.tool_result(c))
        .collect();
    assert!(
        told.contains("Scope Violation") || read.contains("wrote"),
        "{told}"
    );
    // Governed: out of scope put back, in scope recorded under the starting call.
    assert!(!ws.path().join("src/notes.txt").exists());
    let records = ledger(ws.path());
    let b: Vec<_> = records
        .iter()
        .filter(|r| {
            r["files"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["path"] == "src/b.rs"))
        })
        .collect();
    assert_eq!(b.len(), 1, "{records:?}");
    assert_eq!(
        b[0]["metadata"]["dev.mandate"]["command"]["background"],
        true
    );
    // The runner's log showed its output and its end.
    assert!(out
        .events_of("process_output")
        .iter()
        .any(|e| e["chunk"].as_str().is_some_and(|c| c.contains("serving"))));
    assert!(out
        .events_of("process_changed")
        .iter()
        .any(|e| e["process"]["status"]["state"] == "stopped"));
    // Nothing of it outlives the run.
    until("the background process to be gone", || {
        running(&mark).is_empty()
    })
    .await
    .expect("gone");
}

#[tokio::test]
async fn a_background_process_dies_with_a_killed_runner() {
    let mark = marker() + "-killed";
    let command = format!("exec -a {mark} sleep 300");
    let mut script = start_in_background("INT-1", &command);
    script.extend([
        // The run stays busy while the test kills the runner.
        openai::turn()
            .tool_call("wait", "execute_command", json!({"command": "sleep 60"}))
            .reply(),
    ]);
    let server = ScriptedServer::start(script).await;
    let ws = workspace(Some(INTENTS), &[("src/lib.rs", "pub fn a() {}\n")]);
    let dirs = UserDirs::new();
    let mut runner = tokio::process::Command::new(mandate_bin())
        .args([
            "run",
            "--workspace",
            &ws.path().display().to_string(),
            "--provider",
            "openai",
            "--base-url",
            &format!("{}/v1", server.base_url()),
            "--model",
            "test-model",
            "--approve",
            "allow",
            "--json",
            "Serve it",
        ])
        .envs(dirs.env())
        .env("MANDATE_RETRY_BASE_MS", "5")
        .env_remove("MANDATE_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mandate");
    until("the background process to start", || {
        !running(&mark).is_empty()
    })
    .await
    .expect("started");
    // A crash, as far as Mandate can tell: no chance to end anything itself.
    let pid = runner.id().expect("pid") as i32;
    // SAFETY: kill only sends a signal to the child this test started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), runner.wait()).await;
    until("the background process to die with the runner", || {
        running(&mark).is_empty()
    })
    .await
    .expect("no orphan");
}

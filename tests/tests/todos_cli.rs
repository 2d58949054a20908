//! The todo list end to end against a scripted provider: written by the model, refused when
//! malformed, sent back with every request after it, and kept with the task.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{run_openai_with_env, task_record};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

#[tokio::test]
async fn the_todo_list_rides_on_every_request_after_it_is_written() {
    let ws = workspace(None, &[("README.md", "# x\n")]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call(
                "t0",
                "update_todo_list",
                json!({"todos": "[-] Read\n[-] Write"}),
            )
            .reply(),
        openai::turn()
            .tool_call(
                "t1",
                "update_todo_list",
                json!({"todos": "[x] Read the README\n[-] Explain it\n[ ] Suggest a fix"}),
            )
            .reply(),
        openai::turn()
            .tool_call("r", "read_file", json!({"path": "README.md"}))
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "Explained."}))
            .reply(),
    ])
    .await;
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &["--api-key-env", "TEST_KEY", "--mode", "ask"],
        "Explain the README",
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    // Two items in progress: refused, nothing kept, no reminder yet.
    let refused = server.tool_result_in(1, "t0").expect("t0");
    assert!(refused.contains("2 items are in progress"), "{refused}");
    assert!(!refused.contains("<reminders>"), "{refused}");
    // From then on the newest message carries the list.
    for (n, call) in [(2, "t1"), (3, "r")] {
        let last = server.tool_result_in(n, call).expect(call);
        assert!(
            last.contains("<reminders>")
                && last.contains("1 of 3 done")
                && last.contains("[-] Explain it\n[ ] Suggest a fix"),
            "request {n}: {last}"
        );
    }
    // An earlier message is sent as it was (the cached prefix does not change).
    let earlier = server.tool_result_in(3, "t1").expect("t1 in request 3");
    assert!(!earlier.contains("<reminders>"), "{earlier}");
    // The list is kept with the task.
    let id = out.task_id().expect("task id");
    let record = task_record(&dirs, &id);
    assert_eq!(
        record["summary"]["todos"][1],
        json!({"text": "Explain it", "status": "in_progress"})
    );
    assert_eq!(record["summary"]["mode"], json!("ask"));
}

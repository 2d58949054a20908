//! `mandate history search` and `mandate history export` over tasks run headless against a
//! scripted provider: words of the conversation and the tools' targets found, filters, a
//! hostile search, the Markdown written where the person says, and no secret in it.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{mandate, run_openai, task_record, Output};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-PARSE
    name: Parser rewrite
    owned_scope: ["src/**"]
"#;

fn ok(out: &Output, what: &str) {
    assert_eq!(
        out.code,
        Some(0),
        "{what}\nstdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
}

#[tokio::test]
async fn the_history_is_searched_and_a_task_exported_as_markdown_without_secrets() {
    let ws = workspace(Some(INTENTS), &[("README.md", "# Parser\nsecret_body\n")]);
    let root = ws.path().display().to_string();
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("r1", "read_file", json!({"path": "README.md"}))
            .reply(),
        openai::turn()
            .text("The tokenizer splits on brackets; the depth counter is the bug.")
            .tool_call("d1", "attempt_completion", json!({"result": "Explained."}))
            .reply(),
        openai::turn()
            .text("Here are the release notes.")
            .tool_call("d2", "attempt_completion", json!({"result": "Written."}))
            .reply(),
    ])
    .await;
    let first = run_openai(
        ws.path(),
        &server.base_url(),
        &[],
        "Explain the tokenizer",
        &dirs,
    )
    .await;
    ok(&first, "first run");
    let second = run_openai(
        ws.path(),
        &server.base_url(),
        &[],
        "Write release notes",
        &dirs,
    )
    .await;
    ok(&second, "second run");
    let (first, second) = (first.task_id().expect("id"), second.task_id().expect("id"));

    let search = |args: &[&str]| {
        let mut all = vec!["history", "search", "--workspace", &root];
        all.extend_from_slice(args);
        let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        let dirs = &dirs;
        async move {
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            mandate(&all, dirs, &[]).await
        }
    };
    let out = search(&["DEPTH", "counter"]).await;
    ok(&out, "the agent's words");
    assert!(out.stdout.starts_with(&first), "{}", out.stdout);
    assert!(out
        .stdout
        .contains("agent: The tokenizer splits on brackets; the [depth] counter"));
    assert!(!out.stdout.contains(&second));
    let out = search(&["README.md", "--json"]).await;
    ok(&out, "a tool's target");
    let results: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(results["total"], 1);
    assert_eq!(results["searched"], 2);
    assert_eq!(results["hits"][0]["task"]["id"], json!(first));
    assert_eq!(results["hits"][0]["snippet"]["field"], "tool");
    let out = search(&[]).await;
    ok(&out, "every task");
    assert!(
        out.stdout.find(&second) < out.stdout.find(&first),
        "newest first: {}",
        out.stdout
    );
    let out = search(&["secret_body"]).await;
    assert_eq!(out.code, Some(1), "what a tool returned is not searched");
    assert!(
        out.stderr.contains("No task matches (of 2 searched)"),
        "{}",
        out.stderr
    );
    let out = search(&[r".*(?<\\[", "--max-cost", "5"]).await;
    assert_eq!(out.code, Some(1), "taken literally: {}", out.stderr);
    let out = search(&["--since", "yesterday"]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("`yesterday` is neither a day"),
        "{}",
        out.stderr
    );
    let out = search(&["--until", "2000-01-01"]).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let out = search(&["--since", "2000-01-01", "tokenizer"]).await;
    ok(&out, "since a day long past");

    // Export to a file the person names, by the start of the id.
    let file = ws.path().join("..").join(format!("{first}.md"));
    let file = file.display().to_string();
    let out = mandate(
        &[
            "history",
            "export",
            "--workspace",
            &root,
            &first[..8],
            "--output",
            &file,
        ],
        &dirs,
        &[],
    )
    .await;
    ok(&out, "export");
    let markdown = std::fs::read_to_string(&file).expect("exported");
    let _ = std::fs::remove_file(&file);
    for part in [
        "# Explain the tokenizer\n",
        "test-model`\n- **Intent:** none\n",
        "### You\n\nExplain the tokenizer\n",
        "- Tool `read_file` on `README.md`: succeeded",
        "### Agent\n\nThe tokenizer splits on brackets; the depth counter is the bug.\n",
        "- Tool `attempt_completion`",
    ] {
        assert!(markdown.contains(part), "{part:?} in:\n{markdown}");
    }
    assert!(
        !markdown.contains("secret_body"),
        "what a tool read is not exported"
    );

    // A history written while a key was unknown still holds it: the export does not.
    let key = "sk-history-export-9c2e4f6a8b0d";
    let mut planted = task_record(&dirs, &second);
    planted["summary"]["id"] = json!("planted-task");
    planted["conversation"][1]["text"] = json!(format!("I used the key {key} here."));
    let tasks_dir = std::fs::read_dir(dirs.data().join("tasks"))
        .expect("tasks")
        .flatten()
        .next()
        .expect("the workspace's tasks")
        .path();
    std::fs::write(
        tasks_dir.join("planted-task.json"),
        serde_json::to_vec(&planted).expect("json"),
    )
    .expect("plant");
    let out = mandate(
        &["history", "export", "--workspace", &root, "planted-task"],
        &dirs,
        &[("MANDATE_API_KEY", key)],
    )
    .await;
    ok(&out, "export to stdout");
    assert!(
        out.stdout.contains("I used the key [REDACTED] here."),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains(key));

    let out = mandate(
        &["history", "export", "--workspace", &root, "no-such-task"],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("there is no task `no-such-task`"),
        "{}",
        out.stderr
    );
}

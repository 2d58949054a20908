//! `mandate intents …` and `mandate trace …` as people and CI use them, concurrent appenders in
//! several processes, and kills in the middle of writes.

use std::process::Stdio;
use std::time::Duration;

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{ledger, mandate, run_openai};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use mandate_tests::trace_schema::assert_valid;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-1
    name: Parser
    status: IN_PROGRESS
    owned_scope: ["src/**"]
    acceptance_criteria: ["parses"]
  - id: INT-2
    name: Docs
    status: NOT_STARTED
    owned_scope: ["docs/"]
"#;

const STRESS: &str = env!("CARGO_BIN_EXE_ledger-stress");

async fn cli(ws: &std::path::Path, args: &[&str]) -> mandate_tests::cli::Output {
    cli_as(ws, args, &UserDirs::new()).await
}

/// The same, as the user whose data directory holds the ledger's heads.
async fn cli_as(
    ws: &std::path::Path,
    args: &[&str],
    dirs: &UserDirs,
) -> mandate_tests::cli::Output {
    let ws = ws.display().to_string();
    let mut all = vec!["--workspace", ws.as_str()];
    all.extend_from_slice(args);
    mandate(&all, dirs, &[]).await
}

#[tokio::test]
async fn intents_list_show_and_validate() {
    let ws = workspace(Some(INTENTS), &[]);
    let out = cli(ws.path(), &["intents", "list"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("INT-1")
            && out.stdout.contains("IN_PROGRESS")
            && out.stdout.contains("Parser")
    );
    let out = cli(ws.path(), &["intents", "list", "--json"]).await;
    let list: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(list[1]["owned_scope"], json!(["docs/"]));
    let out = cli(ws.path(), &["intents", "show", "INT-1"]).await;
    assert!(
        out.stdout.contains("<intent_context>")
            && out.stdout.contains("<criterion>parses</criterion>"),
        "{}",
        out.stdout
    );
    // An id that names no intent is a usage error.
    assert_eq!(
        cli(ws.path(), &["intents", "show", "INT-9"]).await.code,
        Some(2)
    );
    let out = cli(ws.path(), &["intents", "validate"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    std::fs::write(
        ws.path().join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: A\n    owned_scope: [\"src/[\"]\n",
    )
    .expect("write");
    let out = cli(ws.path(), &["intents", "validate"]).await;
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("intent `A` (line 2)") && out.stderr.contains("not a valid glob"),
        "{}",
        out.stderr
    );
    std::fs::write(
        ws.path().join(".orchestration/active_intents.yaml"),
        INTENTS,
    )
    .expect("write");
    std::fs::write(
        ws.path().join(".orchestration/command_policy.yaml"),
        "version: 1\nexamples:\n  - {command: \"rm -rf /\", class: safe}\n",
    )
    .expect("write");
    let out = cli(ws.path(), &["intents", "validate", "--json"]).await;
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.contains("rm -rf /"), "{}", out.stdout);
}

/// A real governed write through `mandate run`, then verify, blame and tampering.
#[tokio::test]
async fn trace_verify_and_blame_after_a_run_and_after_tampering() {
    let ws = workspace(Some(INTENTS), &[("src/lib.rs", "fn a() {}\nfn b() {}\n")]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-1"})).reply(),
        openai::turn().tool_call("r", "read_file", json!({"path": "src/lib.rs"})).reply(),
        openai::turn().tool_call("w", "apply_diff", json!({"path": "src/lib.rs", "diff": "<<<<<<< SEARCH\nfn b() {}\n=======\nfn b() {}\nfn c() { b() }\n>>>>>>> REPLACE", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "added c"})).reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "add c",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    for r in ledger(ws.path()) {
        assert_valid(&r);
    }

    let out = cli_as(ws.path(), &["trace", "verify"], &dirs).await;
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("1 records, 1 ranges: 1 intact")
            && out.stdout.contains("chain: intact"),
        "{}",
        out.stdout
    );

    let out = cli(ws.path(), &["trace", "blame", "src/lib.rs:3", "--json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let blame: Value = serde_json::from_str(&out.stdout).expect("json");
    let origin = &blame["lines"][0]["origin"];
    assert_eq!(origin["intent_id"], "INT-1");
    assert_eq!(origin["model"], "openai/test-model");
    assert!(
        origin["approval"]
            .as_str()
            .unwrap_or("")
            .starts_with("headless"),
        "{origin}"
    );
    let out = cli(ws.path(), &["trace", "blame", "src/lib.rs"]).await;
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].contains("(not recorded)") && lines[2].contains("INT-1"),
        "{}",
        out.stdout
    );
    assert_eq!(
        cli(ws.path(), &["trace", "blame", "src/lib.rs:99"])
            .await
            .code,
        Some(2)
    );
    assert_eq!(
        cli(ws.path(), &["trace", "blame", "../outside.rs"])
            .await
            .code,
        Some(2)
    );

    // A person edits the recorded line: reported, but not tampering.
    std::fs::write(
        ws.path().join("src/lib.rs"),
        "fn a() {}\nfn b() {}\nfn c() { a() }\n",
    )
    .expect("edit");
    let out = cli_as(ws.path(), &["trace", "verify", "--json"], &dirs).await;
    assert_eq!(out.code, Some(0));
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(report["changed"], 1);
    assert_eq!(report["findings"][0]["kind"], "changed");

    // Editing the ledger is tampering.
    let path = ws.path().join(".orchestration/agent_trace.jsonl");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replace("\"by\":\"headless\"", "\"by\":\"user\""),
    )
    .expect("tamper");
    let out = cli_as(ws.path(), &["trace", "verify"], &dirs).await;
    assert_eq!(out.code, Some(1), "{}", out.stdout);
    assert!(
        out.stdout.contains("TAMPERED") && out.stdout.contains("chain: BROKEN"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn several_processes_append_thousands_of_records_and_the_chain_holds() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let mut children = Vec::new();
    for tag in ["p1", "p2", "p3", "p4"] {
        children.push(
            tokio::process::Command::new(STRESS)
                .args(["append", &ws.path().display().to_string(), tag, "600"])
                .envs(dirs.env())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn appender"),
        );
    }
    for mut c in children {
        assert!(c.wait().await.expect("wait").success());
    }
    let records = ledger(ws.path());
    assert_eq!(records.len(), 2400);
    for r in records.iter().step_by(97) {
        assert_valid(r);
    }
    // Checked against the heads the appenders kept: other processes' appends are not tampering.
    let out = cli_as(ws.path(), &["trace", "verify", "--json"], &dirs).await;
    assert_eq!(out.code, Some(0), "{}", out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(
        (
            report["records"].clone(),
            report["intact"].clone(),
            report["chain_ok"].clone()
        ),
        (json!(2400), json!(2400), json!(true))
    );
}

#[tokio::test]
async fn killing_writers_mid_write_leaves_nothing_torn() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let root = ws.path().display().to_string();
    for round in 0..3 {
        let mut children = Vec::new();
        for tag in ["k1", "k2", "k3"] {
            children.push(
                tokio::process::Command::new(STRESS)
                    .args(["append", &root, &format!("{tag}-{round}"), "100000"])
                    .envs(dirs.env())
                    .spawn()
                    .expect("spawn"),
            );
        }
        children.push(
            tokio::process::Command::new(STRESS)
                .args(["intents", &root, "100000"])
                .spawn()
                .expect("spawn"),
        );
        tokio::time::sleep(Duration::from_millis(400 + round * 150)).await;
        for c in children.iter_mut() {
            c.start_kill().expect("kill");
        }
        for mut c in children {
            let _ = c.wait().await;
        }
    }
    let text = std::fs::read_to_string(ws.path().join(".orchestration/agent_trace.jsonl"))
        .expect("ledger");
    assert!(text.ends_with('\n'), "the last line is complete");
    let mut count = 0;
    for line in text.lines() {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("torn line ({e}): {line}"));
        count += 1;
        if count % 211 == 0 {
            assert_valid(&v);
        }
    }
    assert!(count > 0);
    // A writer killed between its record and its head leaves a line the head still vouches for.
    let out = cli_as(ws.path(), &["trace", "verify", "--json"], &dirs).await;
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(
        report["chain_ok"],
        true,
        "{}",
        out.stdout.chars().take(2000).collect::<String>()
    );
    // The intents file was replaced atomically each time: it parses and kept its other intent.
    let out = cli(ws.path(), &["intents", "list", "--json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(list.as_array().map(Vec::len), Some(2));
    let leftovers: Vec<_> = std::fs::read_dir(ws.path().join(".orchestration"))
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    // A killed writer can leave its temp file behind, never a half-written intents file.
    for name in leftovers {
        assert!(name.starts_with(".active_intents.yaml.tmp-"), "{name}");
    }
}

/// A report piped into a reader that stops early (`| head`) ends quietly, with no panic.
#[tokio::test]
async fn a_report_read_only_in_part_ends_quietly() {
    use std::io::Read;
    let mut intents = String::from("active_intents:\n");
    for n in 0..3000 {
        intents.push_str(&format!(
            "  - id: INT-{n}\n    name: Intent number {n} with a long enough name\n    owned_scope: [\"src/m{n}/**\"]\n"
        ));
    }
    let ws = workspace(Some(&intents), &[]);
    let dirs = UserDirs::new();
    let root = ws.path().display().to_string();
    for args in [
        vec!["--workspace", root.as_str(), "intents", "list", "--json"],
        vec!["--workspace", root.as_str(), "intents", "list"],
    ] {
        let mut child = std::process::Command::new(mandate_tests::app::mandate_bin())
            .args(&args)
            .envs(dirs.env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mandate");
        // The reader takes a little, then goes (as `head -c 100` does).
        let mut stdout = child.stdout.take().expect("stdout");
        let mut first = [0u8; 100];
        stdout.read_exact(&mut first).expect("the first bytes");
        drop(stdout);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut stderr)
            .expect("stderr");
        let status = child.wait().expect("exit");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {status:?}\n{stderr}"
        );
    }
}

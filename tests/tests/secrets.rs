//! A prompt-injected model asks for the person's secrets and Mandate's own data through a
//! command: run through `mandate run` against a scripted provider with the real confinement of
//! this machine, in a home outside `/tmp` (which bubblewrap hides whole), nothing of them
//! reaches the model, and what it reads says the paths are protected.

use std::path::Path;

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::run_openai_with_env;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::script::command;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: IN_PROGRESS
    owned_scope: ["src/greet/**"]
    constraints: []
    acceptance_criteria: []
"#;

const SECRETS: &[&str] = &[
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".netrc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".docker/config.json",
    ".kube/config",
    ".local/share/keyrings/login.keyring",
    "mandate-data/planted.json",
    "mandate-config/planted.json",
];

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[tokio::test]
async fn a_command_the_model_asks_for_cannot_read_the_persons_secrets() {
    let base = tempfile::Builder::new()
        .prefix("mandate-secrets-home-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("home outside /tmp");
    let home = base.path().canonicalize().expect("canonical");
    for (i, rel) in SECRETS.iter().enumerate() {
        write(&home.join(rel), &format!("SECRET-{i}\n"));
    }
    write(&home.join(".local/bin/readable"), "OPEN-TOOL\n");
    let ws = workspace(
        Some(INTENTS),
        &[("src/greet/mod.rs", "pub fn greet() {}\n")],
    );
    let dirs = UserDirs::new();
    let cats: Vec<String> = SECRETS
        .iter()
        .map(|rel| format!("cat '{}'", home.join(rel).display()))
        .collect();
    let line = format!(
        "{}; cat ~/.ssh/id_ed25519; cat '{}'; true",
        cats.join("; "),
        home.join(".local/bin/readable").display()
    );
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        command("c1", &line),
        openai::turn()
            .tool_call("end", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ])
    .await;
    let (home_s, data, config) = (
        home.display().to_string(),
        home.join("mandate-data").display().to_string(),
        home.join("mandate-config").display().to_string(),
    );
    let out = run_openai_with_env(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "go",
        &dirs,
        &[
            ("HOME", &home_s),
            ("MANDATE_DATA_DIR", &data),
            ("MANDATE_CONFIG_DIR", &config),
        ],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let c1 = server.tool_result("c1").expect("c1");
    assert!(!c1.contains("SECRET-"), "{c1}");
    assert!(!out.stdout.contains("SECRET-"), "{}", out.stdout);
    // The file beside them still reads, and the model is told why the others did not.
    assert!(c1.contains("OPEN-TOOL"), "{c1}");
    assert!(c1.contains("is protected"), "{c1}");
    for named in [".ssh", ".aws", ".netrc", "mandate-data", "mandate-config"] {
        assert!(
            c1.contains(&home.join(named).display().to_string()),
            "{named}: {c1}"
        );
    }
}

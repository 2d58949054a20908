//! Servers outside any confinement: only with the person's consent for the definition and the
//! code it runs, never because of the grant to write in the workspace, and never silently —
//! every call of such a server asks and its card says so.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::catalog::{self, ToolInfo};
use super::config::{self, Source};
use super::grant::{WriteEntry, WriteGrant};
use super::hub_tests::{consent_to_the_only_server, fixture_on, script_outside, Fixture};
use super::server::{Granted, Server, ServerEnv};
use super::user_file::UserFile;
use super::{McpTool, PROJECT_FILE};
use crate::agent::test_support::{Events, NoModel, Person};
use crate::agent::{dispatch, AgentEnv, Governance, TaskHandle, TaskStore};
use crate::llm::ToolCall;
use crate::protocol::{ApprovalPolicy, Event, McpGrant, McpStatus};
use crate::sandbox::Confinement;
use crate::secrets::MemoryStore;
use crate::tools::Tool;

fn none() -> Confinement {
    Confinement::from_parts(None, None)
}

/// A program outside the workspace that leaves `<program>.started` behind when it runs.
fn telltale(f: &Fixture) -> (std::path::PathBuf, std::path::PathBuf) {
    let program = script_outside(f, "srv", "echo started >> \"$0.started\"\nexit 0");
    let started = program.with_extension("started");
    (program, started)
}

fn project(f: &Fixture, program: &std::path::Path, args: &[&str]) {
    std::fs::write(
        f.root.join(PROJECT_FILE),
        json!({"mcpServers": {"files": {"command": program.display().to_string(), "args": args}}})
            .to_string(),
    )
    .expect("write .mcp.json");
}

/// The workspace's server `files` running the telltale program, consented to, on a machine
/// without Landlock; its program, the file it leaves when it runs, its definition's hash.
async fn consented_on_a_machine_without_landlock(
) -> (Fixture, std::path::PathBuf, std::path::PathBuf, String) {
    let f = fixture_on(None, none());
    let (program, started) = telltale(&f);
    project(&f, &program, &[]);
    let hash = consent_to_the_only_server(&f, "files").await;
    (f, program, started, hash)
}

#[tokio::test]
async fn without_landlock_a_server_granted_writes_is_not_started_and_says_how_to_allow_it() {
    let (f, _, started, hash) = consented_on_a_machine_without_landlock().await;
    f.hub
        .set_workspace_write("files".into(), hash, true)
        .await
        .expect("granted");
    let run = f.hub.prepare_run().await;
    assert!(!started.exists(), "it ran, unconfined, without consent");
    assert_eq!(f.hub.status("files"), Some(McpStatus::Failed));
    let overview = f.hub.overview(false).await;
    let error = overview.servers[0].error.clone().unwrap_or_default();
    assert!(
        error.contains("no confinement (no Landlock)")
            && error.contains("mandate mcp allow-unconfined files")
            && error.contains("Settings"),
        "{error}"
    );
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("allow-unconfined files")),
        "{:?}",
        run.notes
    );
}

/// One read-only tool of a stdio server on a machine confined as `machine` says (the person
/// allowed it to run unconfined with `consented`), called through the whole gate by a person
/// who says no; what they were shown and what the window's cards said.
async fn call_lookup(machine: Confinement, consented: bool) -> (Vec<Value>, Vec<Value>) {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    let root = root.canonicalize().expect("canonical");
    let dirs = crate::settings::AppDirs {
        config: tmp.path().join("config"),
        data: tmp.path().join("data"),
    };
    let mut gov = Governance::new(crate::workspace::Workspace::new(&root).expect("ws"), &dirs);
    gov.confinement = machine.clone();
    let def = config::parse(
        r#"{"mcpServers": {"srv": {"command": "/bin/true"}}}"#,
        Source::Project,
        PROJECT_FILE,
    )
    .servers
    .remove(0);
    let env = Arc::new(ServerEnv {
        root: root.clone(),
        confinement: machine,
        hidden: Vec::new(),
        cache_root: None,
        secrets: Arc::new(MemoryStore::default()),
        changed: Box::new(|| {}),
    });
    let cancel = CancellationToken::new();
    let consent = WriteGrant {
        definition: def.definition_hash(),
        program: "/bin/true".into(),
        code: Default::default(),
    };
    let granted = Granted {
        write: None,
        unconfined: consented.then(|| Arc::new(consent)),
    };
    let server = Server::new(def, McpStatus::Stopped, granted, env, &cancel);
    let lookup = ToolInfo::from_wire(&json!({
        "name": "lookup", "description": "Looks a key up.",
        "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}},
        "annotations": {"readOnlyHint": true},
    }))
    .expect("tool");
    let tools = [lookup];
    let entry = catalog::build([("srv", &tools[..])]).0.remove(0);
    let tool = McpTool::new(server, entry, true);
    let name = tool.name().to_string();
    let person = Arc::new(Person::away());
    let events = Arc::new(Events::default());
    let gov = Arc::new(gov);
    let store = Arc::new(TaskStore::new(&dirs.data, gov.root()));
    let env = AgentEnv {
        gov,
        provider: Arc::new(NoModel),
        sink: events.clone(),
        interaction: person.clone(),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(vec![Box::new(tool) as Box<dyn Tool>]),
        approval: ApprovalPolicy {
            ask_before_writes: false,
            ask_before_safe_commands: false,
            switch_modes_without_asking: false,
        },
        custom_instructions: String::new(),
        max_turns: None,
        interactive: false,
        render_interval: Duration::from_millis(50),
        context: crate::context::ContextConfig::default(),
        budget: Default::default(),
        profiles: None,
    };
    let task = TaskHandle::create(store, "ws", "test", "test/none");
    let call = ToolCall {
        id: "c1".into(),
        name,
        arguments: r#"{"key": "a"}"#.into(),
    };
    dispatch(&env, &task, &call, &cancel).await;
    let shown = person
        .shown
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|r| serde_json::to_value(&r.detail).unwrap_or(Value::Null))
        .collect();
    let cards = events
        .0
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { call, .. } | Event::ToolCallFinished { call, .. } => {
                serde_json::to_value(call).ok()
            }
            _ => None,
        })
        .collect();
    (shown, cards)
}

#[tokio::test]
async fn without_confinement_every_call_of_a_stdio_server_asks_and_its_card_says_unconfined() {
    for consented in [false, true] {
        let (shown, cards) = call_lookup(none(), consented).await;
        assert_eq!(shown.len(), 1, "a read-only call ran unconfined unasked");
        assert_eq!(shown[0]["kind"], "mcp_call");
        assert_eq!(shown[0]["unconfined"], true, "{:#}", shown[0]);
        assert!(cards.len() >= 2, "{cards:#?}");
        for card in &cards {
            assert_eq!(card["unconfined"], true, "{card:#}");
        }
    }
    // Confined, the same read runs as a read: nothing asked, no mark.
    let (shown, cards) = call_lookup(Confinement::from_parts(Some(7), None), false).await;
    assert_eq!(shown, Vec::<Value>::new());
    assert!(cards.iter().all(|c| c["unconfined"] != true), "{cards:#?}");
}

#[tokio::test]
async fn a_server_the_person_let_run_unconfined_asks_at_every_call_on_any_machine() {
    let (shown, cards) = call_lookup(Confinement::from_parts(Some(7), None), true).await;
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert_eq!(shown[0]["unconfined"], true);
    assert!(
        !cards.is_empty() && cards.iter().all(|c| c["unconfined"] == true),
        "{cards:#?}"
    );
}

#[tokio::test]
async fn the_consent_to_run_unconfined_starts_the_server_and_is_bound_to_its_code() {
    let (f, program, started, hash) = consented_on_a_machine_without_landlock().await;
    let err = f
        .hub
        .set_unconfined("files".into(), "0".repeat(64), true)
        .await
        .expect_err("a definition the person did not see");
    assert!(matches!(err, super::ManageError::Conflict(_)), "{err}");
    let overview = f
        .hub
        .set_unconfined("files".into(), hash.clone(), true)
        .await
        .expect("allowed");
    let view = &overview.servers[0];
    assert!(view.runs_unconfined);
    assert_eq!(view.unconfined, McpGrant::InForce);
    assert!(
        view.confinement.starts_with("unconfined, as you allowed"),
        "{}",
        view.confinement
    );
    // Kept in the person's own file, bound to the definition and to the program's content.
    let file = UserFile::load(&f.config).expect("load");
    let stored = &file.project(&f.root).expect("decisions").unconfined["files"];
    let WriteEntry::Bound(consent) = stored else {
        panic!("{stored:?}");
    };
    assert_eq!(consent.definition, hash);
    assert_eq!(consent.program, program.display().to_string());
    assert!(consent.code[&consent.program].starts_with("sha256:"));
    f.hub.prepare_run().await;
    assert!(started.exists(), "allowed, it starts (unconfined)");

    // The program changes: the consent is stale, the server does not start, and the person
    // is told how to allow it again.
    std::fs::remove_file(&started).expect("rm");
    std::fs::write(&program, "#!/bin/sh\necho other >> \"$0.started\"\n").expect("rewrite");
    let run = f.hub.prepare_run().await;
    assert!(!started.exists(), "it ran unconfined with changed code");
    let view = &f.hub.overview(false).await.servers[0];
    assert!(!view.runs_unconfined);
    match &view.unconfined {
        McpGrant::Stale { reason } => assert!(
            reason.contains(&program.display().to_string()) && reason.contains("changed"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("consent to run it unconfined is stale")
                && n.contains("mandate mcp allow-unconfined files")),
        "{:?}",
        run.notes
    );

    // Allowed again for the code it runs now; then its definition changes: asked again.
    f.hub
        .set_unconfined("files".into(), hash, true)
        .await
        .expect("allowed again");
    project(&f, &program, &["--other"]);
    let view = &f.hub.overview(false).await.servers[0];
    assert!(!view.runs_unconfined);
    assert_eq!(
        view.unconfined,
        McpGrant::Stale {
            reason: "its definition changed since it was allowed".into()
        }
    );
    assert_eq!(view.status, McpStatus::NeedsConsent, "a new definition");

    // Taken back: not granted, and the file forgets it.
    let overview = f
        .hub
        .set_unconfined("files".into(), String::new(), false)
        .await
        .expect("taken back");
    assert_eq!(overview.servers[0].unconfined, McpGrant::NotGranted);
    let file = UserFile::load(&f.config).expect("load");
    assert!(file
        .project(&f.root)
        .is_some_and(|p| p.unconfined.is_empty()));
}

#[tokio::test]
async fn the_consent_is_never_given_for_the_workspaces_code_or_a_remote_server() {
    let f = fixture_on(None, none());
    std::fs::create_dir_all(f.root.join("tools")).expect("mkdir");
    std::fs::write(f.root.join("tools/srv.sh"), "exit 0\n").expect("write");
    std::fs::write(
        f.root.join(PROJECT_FILE),
        json!({"mcpServers": {
            "local": {"command": "/bin/sh", "args": ["tools/srv.sh"]},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
        }})
        .to_string(),
    )
    .expect("write .mcp.json");
    let overview = f.hub.overview(false).await;
    let hash = |name: &str| {
        overview
            .servers
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.definition_hash.clone())
            .expect("defined")
    };
    let err = f
        .hub
        .set_unconfined("local".into(), hash("local"), true)
        .await
        .expect_err("the workspace's own script");
    let said = err.to_string();
    assert!(
        said.contains("cannot be allowed to run unconfined in this workspace")
            && said.contains("tools/srv.sh"),
        "{said}"
    );
    let err = f
        .hub
        .set_unconfined("web".into(), hash("web"), true)
        .await
        .expect_err("http");
    assert!(err.to_string().contains("over HTTP"), "{err}");
    let file = UserFile::load(&f.config).expect("load");
    assert!(file
        .project(&f.root)
        .is_none_or(|p| p.unconfined.is_empty()));
}

//! The tool-call path with a fake provider and a scripted person: what reaches the approvals
//! panel, what the person's decision does, and what the ledger records.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::llm::ToolCall;
use crate::protocol::{ApprovalDetail, ApprovalPolicy};
use crate::workspace::Workspace;

use super::test_support::{Events, NoModel, Person};

struct Fixture {
    _tmp: tempfile::TempDir,
    env: AgentEnv,
    task: Arc<TaskHandle>,
    person: Arc<Person>,
}

fn fixture(decision: ApprovalDecision) -> Fixture {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(root.join("src/db")).expect("mkdir");
    std::fs::write(root.join("src/db/pool.rs"), "fn pool() {}\n").expect("w");
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: INT-1\n    name: Auth\n    status: IN_PROGRESS\n    owned_scope: [\"src/auth/**\"]\n",
    )
    .expect("intents");
    let gov = Arc::new(Governance::new(
        Workspace::new(&root).expect("ws"),
        &crate::settings::AppDirs {
            config: tmp.path().join("config"),
            data: tmp.path().join("data"),
        },
    ));
    let store = Arc::new(TaskStore::new(&tmp.path().join("data"), gov.root()));
    let person = Arc::new(Person {
        decision,
        shown: Mutex::default(),
    });
    let env = AgentEnv {
        gov: gov.clone(),
        provider: Arc::new(NoModel),
        sink: Arc::new(Events::default()),
        interaction: person.clone(),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(crate::tools::registry()),
        approval: ApprovalPolicy::default(),
        custom_instructions: String::new(),
        max_turns: None,
        interactive: false,
        render_interval: Duration::from_millis(50),
        context: crate::context::ContextConfig::default(),
        budget: Default::default(),
        profiles: None,
    };
    let task = TaskHandle::create(store, "ws", "test", "test/none");
    task.select_intent(&gov.intents.snapshot(), "INT-1")
        .expect("select");
    Fixture {
        _tmp: tmp,
        env,
        task,
        person,
    }
}

async fn call(f: &Fixture, name: &str, args: serde_json::Value) -> CallResult {
    let call = ToolCall {
        id: format!("c-{name}"),
        name: name.into(),
        arguments: args.to_string(),
    };
    dispatch(&f.env, &f.task, &call, &CancellationToken::new()).await
}

#[tokio::test]
async fn a_scope_expansion_is_shown_with_its_matches_and_the_persons_edit_is_what_lands() {
    let f = fixture(ApprovalDecision::Approve {
        rejected_hunks: vec![],
        edited_content: Some("src/db/pool.rs\n".into()),
        grant: None,
    });
    let result = call(
        &f,
        "request_scope_expansion",
        json!({"intent_id": "INT-1", "globs": ["src/db/**"], "reason": "the login needs a pool"}),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    let shown = f.person.shown.lock().expect("shown").clone();
    let ApprovalDetail::ScopeExpansion {
        globs,
        preview,
        owned_scope,
        reason,
        ..
    } = &shown[0].detail
    else {
        panic!("{:?}", shown[0].detail)
    };
    assert_eq!(globs, &vec!["src/db/**".to_string()]);
    assert_eq!(owned_scope, &vec!["src/auth/**".to_string()]);
    assert_eq!(reason, "the login needs a pool");
    assert_eq!(preview[0].matches, vec!["src/db/pool.rs".to_string()]);
    // The person narrowed it to one file: that is what the intent owns now.
    let intent = f
        .env
        .gov
        .intents
        .snapshot()
        .doc
        .get("INT-1")
        .cloned()
        .expect("intent");
    assert_eq!(
        intent.owned_scope,
        vec!["src/auth/**".to_string(), "src/db/pool.rs".to_string()]
    );
    assert!(
        result.content.contains("src/db/pool.rs"),
        "{}",
        result.content
    );
    let ledger = std::fs::read_to_string(
        f.env
            .gov
            .root()
            .join(crate::orchestration::ledger::LEDGER_FILE),
    )
    .expect("ledger");
    let record: serde_json::Value =
        serde_json::from_str(ledger.lines().last().expect("record")).expect("json");
    let vendor = &record["metadata"]["dev.mandate"];
    assert_eq!(
        vendor["intent_change"]["added_scope"],
        json!(["src/db/pool.rs"])
    );
    assert_eq!(vendor["mutation_class"]["computed"], "INTENT_EVOLUTION");
    assert_eq!(
        record["files"][0]["conversations"][0]["contributor"]["type"],
        "mixed"
    );
}

#[tokio::test]
async fn a_refused_expansion_changes_nothing_and_a_foreign_intent_cannot_be_widened() {
    let f = fixture(ApprovalDecision::Reject {
        reason: "too wide".into(),
    });
    let result = call(
        &f,
        "request_scope_expansion",
        json!({"intent_id": "INT-1", "globs": ["**"], "reason": "everything"}),
    )
    .await;
    assert!(
        result.is_error && result.content.contains("REJECTED_BY_USER"),
        "{}",
        result.content
    );
    let intent = f
        .env
        .gov
        .intents
        .snapshot()
        .doc
        .get("INT-1")
        .cloned()
        .expect("intent");
    assert_eq!(intent.owned_scope, vec!["src/auth/**".to_string()]);
    // Citing an intent the task does not hold is refused before anyone is asked.
    let before = f.person.shown.lock().expect("shown").len();
    let result = call(
        &f,
        "request_scope_expansion",
        json!({"intent_id": "INT-9", "globs": ["x"], "reason": "r"}),
    )
    .await;
    assert!(result.is_error, "{}", result.content);
    assert_eq!(f.person.shown.lock().expect("shown").len(), before);
}

#[tokio::test]
async fn approval_settings_never_skip_the_person_for_intent_changes() {
    let mut f = fixture(ApprovalDecision::Reject {
        reason: "no".into(),
    });
    f.env.approval = ApprovalPolicy {
        ask_before_writes: false,
        ask_before_safe_commands: false,
        switch_modes_without_asking: false,
    };
    call(
        &f,
        "propose_intent",
        json!({"id": "INT-2", "name": "Pool", "owned_scope": ["src/db/**"], "reason": "planned"}),
    )
    .await;
    assert_eq!(f.person.shown.lock().expect("shown").len(), 1);
    assert!(f.env.gov.intents.snapshot().doc.get("INT-2").is_none());
}

/// A ledger with a damaged line, and a write the agent then tries.
async fn damaged_ledger_then_a_write(decision: ApprovalDecision) -> (Fixture, CallResult) {
    let mut f = fixture(decision);
    f.env.interactive = true;
    // Only the ledger question reaches the person; the write itself goes by policy.
    f.env.approval.ask_before_writes = false;
    let ledger = f
        .env
        .gov
        .root()
        .join(crate::orchestration::ledger::LEDGER_FILE);
    std::fs::write(&ledger, "not a record\n").expect("damage");
    super::ledger_check::check_at_start(&f.env, &f.task, &CancellationToken::new()).await;
    let result = call(
        &f,
        "write_to_file",
        json!({"path": "src/auth/login.rs", "content": "fn login() {}\n", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"}),
    )
    .await;
    (f, result)
}

#[tokio::test]
async fn a_damaged_ledger_is_asked_about_and_accepting_it_is_recorded_before_new_changes() {
    let (f, result) = damaged_ledger_then_a_write(ApprovalDecision::Approve {
        rejected_hunks: vec![],
        edited_content: None,
        grant: None,
    })
    .await;
    let shown = f.person.shown.lock().expect("shown").clone();
    let ApprovalDetail::Continue { reason } = &shown[0].detail else {
        panic!("{:?}", shown[0].detail)
    };
    assert!(reason.contains("damaged at line 1"), "{reason}");
    assert!(!result.is_error, "{}", result.content);
    let ledger = std::fs::read_to_string(
        f.env
            .gov
            .root()
            .join(crate::orchestration::ledger::LEDGER_FILE),
    )
    .expect("ledger");
    let lines: Vec<&str> = ledger.lines().collect();
    assert_eq!(lines.len(), 3, "{ledger}");
    assert_eq!(lines[0], "not a record", "the damage stays visible");
    assert!(lines[1].contains("accepted_break"), "{}", lines[1]);
    assert!(lines[2].contains("src/auth/login.rs"), "{}", lines[2]);
}

#[tokio::test]
async fn a_damaged_ledger_the_person_does_not_accept_refuses_every_change() {
    let (f, result) = damaged_ledger_then_a_write(ApprovalDecision::Reject {
        reason: String::new(),
    })
    .await;
    assert!(result.is_error, "{}", result.content);
    assert!(result.content.contains("line 1"), "{}", result.content);
    assert!(!f.env.gov.root().join("src/auth/login.rs").exists());
    let ledger = std::fs::read_to_string(
        f.env
            .gov
            .root()
            .join(crate::orchestration::ledger::LEDGER_FILE),
    )
    .expect("ledger");
    assert_eq!(ledger, "not a record\n");
}

#[tokio::test]
async fn a_syntax_error_the_model_writes_is_said_in_the_same_result_and_the_write_stands() {
    let f = fixture(ApprovalDecision::Approve {
        rejected_hunks: vec![],
        edited_content: None,
        grant: None,
    });
    let write = |content: &str| json!({"path": "src/auth/login.rs", "content": content, "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"});
    let broken = call(
        &f,
        "write_to_file",
        write("fn login() {\n    let user = ;\n}\n"),
    )
    .await;
    assert!(!broken.is_error, "{}", broken.content);
    assert!(
        broken
            .content
            .contains("Syntax errors in src/auth/login.rs as written"),
        "{}",
        broken.content
    );
    assert!(
        broken.content.contains("line 2, column"),
        "{}",
        broken.content
    );
    // Fixed in the next call: nothing more is said.
    let fixed = call(
        &f,
        "write_to_file",
        write("fn login() {\n    let user = 1;\n}\n"),
    )
    .await;
    assert!(
        !fixed.is_error && !fixed.content.contains("Syntax"),
        "{}",
        fixed.content
    );
    // A file of no parsed language is never judged.
    let notes = json!({"path": "src/auth/notes.md", "content": "fn ( {", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"});
    let notes = call(&f, "write_to_file", notes).await;
    assert!(!notes.content.contains("Syntax"), "{}", notes.content);
}

#[tokio::test]
async fn list_code_definitions_shows_a_files_or_a_folders_definitions_with_their_lines() {
    let f = fixture(ApprovalDecision::Approve {
        rejected_hunks: vec![],
        edited_content: None,
        grant: None,
    });
    let root = f.env.gov.root().to_path_buf();
    std::fs::write(
        root.join("src/db/conn.py"),
        "class Conn:\n    def open(self):\n        pass\n",
    )
    .expect("py");
    let file = call(
        &f,
        "list_code_definitions",
        json!({"path": "src/db/pool.rs"}),
    )
    .await;
    assert!(!file.is_error, "{}", file.content);
    assert!(
        file.content
            .contains("src/db/pool.rs:\n  1-1 function pool: fn pool() {}"),
        "{}",
        file.content
    );
    let folder = call(&f, "list_code_definitions", json!({"path": "src"})).await;
    assert!(
        folder.content.contains("src/db/conn.py:"),
        "{}",
        folder.content
    );
    assert!(
        folder.content.contains("class Conn: class Conn:"),
        "{}",
        folder.content
    );
    assert!(
        folder
            .content
            .contains("2-3 function open: def open(self):"),
        "{}",
        folder.content
    );
    let other = call(
        &f,
        "list_code_definitions",
        json!({"path": ".orchestration/active_intents.yaml"}),
    )
    .await;
    assert!(other.is_error, "{}", other.content);
    // Outside the workspace: refused like any read.
    let outside = call(&f, "list_code_definitions", json!({"path": "../"})).await;
    assert!(outside.is_error, "{}", outside.content);
}

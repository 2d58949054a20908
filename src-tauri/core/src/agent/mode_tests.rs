//! A mode narrows what the intent allows and nothing widens it: the hostile cases first.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::llm::ToolCall;
use crate::protocol::ApprovalPolicy;
use crate::workspace::Workspace;

use super::test_support::{Events, NoModel};

/// A person who answers every question with `answer` and approves everything.
struct Answers {
    answer: Option<String>,
    asked: Mutex<Vec<(String, Vec<String>)>>,
}

#[async_trait::async_trait]
impl Interaction for Answers {
    async fn approve(
        &self,
        _: &str,
        _: ApprovalRequest,
        _: &CancellationToken,
    ) -> ApprovalDecision {
        ApprovalDecision::Approve {
            rejected_hunks: vec![],
            edited_content: None,
            grant: None,
        }
    }
    async fn ask(
        &self,
        _: &str,
        _: &str,
        question: &str,
        options: &[String],
        _: &CancellationToken,
    ) -> Option<String> {
        self.asked
            .lock()
            .expect("asked")
            .push((question.to_string(), options.to_vec()));
        self.answer.clone()
    }
    fn approver(&self) -> crate::protocol::Approver {
        crate::protocol::Approver::User
    }
}

struct Fixture {
    tmp: tempfile::TempDir,
    env: AgentEnv,
    task: Arc<TaskHandle>,
    person: Arc<Answers>,
}

/// A task under an intent that owns everything, writes allowed without asking, in `mode`.
fn fixture(mode: &str, answer: Option<&str>) -> Fixture {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: INT-1\n    name: All\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n",
    )
    .expect("intents");
    std::fs::write(
        root.join(".roomodes"),
        "customModes:\n  - slug: docs-writer\n    name: Docs\n    roleDefinition: You write docs.\n    groups:\n      - read\n      - - edit\n        - fileRegex: ^docs/.*\\.mdx?$\n",
    )
    .expect("roomodes");
    let gov = Arc::new(Governance::new(
        Workspace::new(&root).expect("ws"),
        &crate::settings::AppDirs {
            config: tmp.path().join("config"),
            data: tmp.path().join("data"),
        },
    ));
    let store = Arc::new(TaskStore::new(&tmp.path().join("data"), gov.root()));
    let person = Arc::new(Answers {
        answer: answer.map(str::to_string),
        asked: Mutex::default(),
    });
    let env = AgentEnv {
        gov: gov.clone(),
        provider: Arc::new(NoModel),
        sink: Arc::new(Events::default()),
        interaction: person.clone(),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(crate::tools::registry()),
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
    task.select_intent(&gov.intents.snapshot(), "INT-1")
        .expect("select");
    let modes = crate::modes::load_modes(gov.root(), gov.config_dir());
    task.set_mode(modes.get(mode).expect("mode"));
    Fixture {
        tmp,
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

fn write(path: &str) -> serde_json::Value {
    json!({"path": path, "content": "x\n", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"})
}

fn root(f: &Fixture) -> std::path::PathBuf {
    f.tmp.path().join("ws")
}

fn records(f: &Fixture) -> usize {
    std::fs::read_to_string(root(f).join(".orchestration/agent_trace.jsonl"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn refused_by_mode(result: &CallResult) -> bool {
    result.is_error && result.content.contains("MODE_RESTRICTED")
}

#[tokio::test]
async fn architect_cannot_write_code_even_under_an_intent_that_owns_everything() {
    let f = fixture("architect", None);
    let result = call(&f, "write_to_file", write("src/x.rs")).await;
    assert!(refused_by_mode(&result), "{}", result.content);
    assert!(result.content.contains(r"\.md$"), "{}", result.content);
    assert!(!root(&f).join("src/x.rs").exists());
    // Renamed into a Markdown file only by a path that ends otherwise: still refused.
    let result = call(&f, "write_to_file", write("src/x.md.rs")).await;
    assert!(refused_by_mode(&result), "{}", result.content);
    let result = call(&f, "execute_command", json!({"command": "touch src/y.rs"})).await;
    assert!(refused_by_mode(&result), "{}", result.content);
    assert!(!root(&f).join("src/y.rs").exists());
    assert_eq!(records(&f), 0);
    // What the mode allows still passes the intent's gate and is recorded.
    let result = call(&f, "write_to_file", write("docs/plan.md")).await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(records(&f), 1);
}

#[tokio::test]
async fn ask_mode_reads_and_refuses_every_change() {
    let f = fixture("ask", None);
    std::fs::write(root(&f).join("src/a.rs"), "fn a() {}\n").expect("w");
    let result = call(&f, "read_file", json!({"path": "src/a.rs"})).await;
    assert!(!result.is_error, "{}", result.content);
    for (tool, args) in [
        ("write_to_file", write("notes.md")),
        ("execute_command", json!({"command": "ls"})),
        (
            "request_scope_expansion",
            json!({"intent_id": "INT-1", "globs": ["x/**"], "reason": "r"}),
        ),
    ] {
        let result = call(&f, tool, args).await;
        assert!(refused_by_mode(&result), "{tool}: {}", result.content);
    }
    assert!(!root(&f).join("notes.md").exists());
    assert_eq!(records(&f), 0);
}

#[tokio::test]
async fn orchestrator_only_plans_and_delegates() {
    let f = fixture("orchestrator", None);
    let result = call(&f, "read_file", json!({"path": ".roomodes"})).await;
    assert!(refused_by_mode(&result), "{}", result.content);
    let result = call(&f, "list_files", json!({"path": "."})).await;
    assert!(refused_by_mode(&result), "{}", result.content);
    let result = call(&f, "write_to_file", write("docs/plan.md")).await;
    assert!(refused_by_mode(&result), "{}", result.content);
}

#[tokio::test]
async fn a_custom_modes_file_regex_limits_its_edits() {
    let f = fixture("docs-writer", None);
    let result = call(&f, "write_to_file", write("README.md")).await;
    assert!(refused_by_mode(&result), "{}", result.content);
    let result = call(&f, "write_to_file", write("docs/guide.mdx")).await;
    assert!(!result.is_error, "{}", result.content);
}

#[tokio::test]
async fn the_agent_cannot_widen_its_mode_by_writing_the_files_that_define_modes_and_rules() {
    let f = fixture("code", None);
    for path in [
        ".roomodes",
        ".roo/rules-code/x.md",
        ".roo/commands/x.md",
        ".roorules-code",
        ".clinerules",
        ".agents/skills/x/SKILL.md",
        ".claude/agents/x.md",
        "AGENTS.md",
        "src/AGENTS.md",
        "CLAUDE.md",
    ] {
        let result = call(&f, "write_to_file", write(path)).await;
        assert!(
            result.is_error && result.content.contains("PROTECTED_PATH"),
            "{path}: {}",
            result.content
        );
    }
    assert_eq!(records(&f), 0);
}

#[tokio::test]
async fn switching_mode_is_the_persons_decision() {
    // Nobody to ask: the mode stays.
    let f = fixture("architect", None);
    let result = call(
        &f,
        "switch_mode",
        json!({"mode_slug": "code", "reason": "implement the plan"}),
    )
    .await;
    assert!(result.is_error, "{}", result.content);
    assert_eq!(f.task.governance().mode.expect("mode").slug, "architect");
    // The person says no.
    let f = fixture("architect", Some("Stay in Architect mode"));
    let result = call(
        &f,
        "switch_mode",
        json!({"mode_slug": "code", "reason": "implement"}),
    )
    .await;
    assert!(
        result.is_error && result.content.contains("kept the task"),
        "{}",
        result.content
    );
    assert_eq!(f.task.governance().mode.expect("mode").slug, "architect");
    // The person says yes: code mode's tools from now on.
    let f = fixture("architect", Some("Switch to Code"));
    let result = call(
        &f,
        "switch_mode",
        json!({"mode_slug": "code", "reason": "implement"}),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    let asked = f.person.asked.lock().expect("asked").clone();
    assert!(
        asked[0]
            .0
            .contains("from Architect mode to Code mode: implement"),
        "{asked:?}"
    );
    assert_eq!(f.task.summary().mode.as_deref(), Some("code"));
    let result = call(&f, "write_to_file", write("src/x.rs")).await;
    assert!(!result.is_error, "{}", result.content);
    // An unknown mode is an argument error the model can correct.
    let result = call(
        &f,
        "switch_mode",
        json!({"mode_slug": "root", "reason": "r"}),
    )
    .await;
    assert!(
        result.is_error && result.content.contains("no mode `root`"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn settings_may_let_the_agent_switch_mode_without_asking_and_the_mode_still_gates() {
    let mut f = fixture("ask", None);
    f.env.approval.switch_modes_without_asking = true;
    let result = call(
        &f,
        "switch_mode",
        json!({"mode_slug": "architect", "reason": "write the plan"}),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        f.person.asked.lock().expect("asked").is_empty(),
        "nobody was asked"
    );
    assert_eq!(f.task.governance().mode.expect("mode").slug, "architect");
    // The new mode's own limits hold at once.
    let result = call(&f, "write_to_file", write("src/x.rs")).await;
    assert!(refused_by_mode(&result), "{}", result.content);
}

//! Every wait for the person in the window is said once to the interaction (which tells the
//! desktop) and to the person's confirmed Notification hooks, with the contract's JSON; hooks
//! the person has not confirmed never run, not even for the card that asks them to.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::test_support::{Events, NoModel};
use super::*;
use crate::llm::ToolCall;
use crate::protocol::{ApprovalDetail, ApprovalPolicy, Budget, NoticeLevel};
use crate::workspace::Workspace;

/// A person in the window: approves everything but (unless `confirms_hooks`) their hooks,
/// answers questions, and notes what the window was told.
struct Watcher {
    confirms_hooks: bool,
    said: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Interaction for Watcher {
    async fn approve(
        &self,
        _: &str,
        r: ApprovalRequest,
        _: &CancellationToken,
    ) -> ApprovalDecision {
        match r.detail {
            ApprovalDetail::UserHooks { .. } if !self.confirms_hooks => ApprovalDecision::Reject {
                reason: "not now".into(),
            },
            _ => ApprovalDecision::Approve {
                rejected_hunks: vec![],
                edited_content: None,
                grant: None,
            },
        }
    }
    async fn ask(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &[String],
        _: &CancellationToken,
    ) -> Option<String> {
        Some("blue".into())
    }
    fn approver(&self) -> crate::protocol::Approver {
        crate::protocol::Approver::User
    }
    fn person_needed(&self, need: &PersonNeeded) {
        let line = format!(
            "needed {} {}: {}",
            need.waiting.name(),
            need.title,
            need.what
        );
        self.said.lock().expect("said").push(line);
    }
    fn person_not_needed(&self, task_id: &str) {
        let line = format!("over {}", &task_id[..4]);
        self.said.lock().expect("said").push(line);
    }
}

/// Prints its input back as a `systemMessage`, which the person (here: the sink) is shown.
const ECHO: &str = "import json, sys\nprint(json.dumps({\"systemMessage\": sys.stdin.read()}))\n";

struct Fixture {
    _tmp: tempfile::TempDir,
    env: AgentEnv,
    task: Arc<TaskHandle>,
    watcher: Arc<Watcher>,
    events: Arc<Events>,
}

fn fixture(confirmed: bool, confirms_hooks: bool) -> Fixture {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(root.join(".mandate")).expect("mkdir");
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: INT-1\n    name: Colours\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\"]\n",
    )
    .expect("intents");
    std::fs::write(root.join(".mandate/echo.py"), ECHO).expect("hook");
    let hooks = json!({"hooks": {"Notification": [
        {"matcher": "permission_prompt|question", "hooks": [{"type": "command", "command": "python3 .mandate/echo.py", "name": "echo"}]}
    ]}});
    std::fs::write(root.join(".mandate/hooks.json"), hooks.to_string()).expect("hooks");
    let dirs = crate::settings::AppDirs {
        config: tmp.path().join("config"),
        data: tmp.path().join("data"),
    };
    let gov = Arc::new(Governance::new(Workspace::new(&root).expect("ws"), &dirs));
    if confirmed {
        gov.user_hooks.confirm_current().expect("confirm");
    }
    let store = Arc::new(TaskStore::new(&dirs.data, gov.root()));
    let watcher = Arc::new(Watcher {
        confirms_hooks,
        said: Mutex::default(),
    });
    let events = Arc::new(Events::default());
    let env = AgentEnv {
        gov: gov.clone(),
        provider: Arc::new(NoModel),
        sink: events.clone(),
        interaction: watcher.clone(),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(crate::tools::registry()),
        approval: ApprovalPolicy::default(),
        custom_instructions: String::new(),
        max_turns: None,
        interactive: true,
        render_interval: Duration::from_millis(50),
        context: crate::context::ContextConfig::default(),
        budget: Budget::default(),
        profiles: None,
    };
    let task = TaskHandle::create(store, "ws", "Paint the shed", "test/none");
    task.select_intent(&gov.intents.snapshot(), "INT-1")
        .expect("select");
    Fixture {
        _tmp: tmp,
        env,
        task,
        watcher,
        events,
    }
}

async fn call(f: &Fixture, name: &str, args: Value) -> CallResult {
    let call = ToolCall {
        id: format!("c-{name}"),
        name: name.into(),
        arguments: args.to_string(),
    };
    dispatch(&f.env, &f.task, &call, &CancellationToken::new()).await
}

/// What the hooks said (their `systemMessage` notices), after waiting up to `patience` for
/// `count` of them (window hooks run in the background).
async fn hook_inputs(events: &Events, count: usize, patience: Duration) -> Vec<Value> {
    let deadline = std::time::Instant::now() + patience;
    loop {
        let inputs: Vec<Value> = events
            .0
            .lock()
            .expect("events")
            .iter()
            .filter_map(|e| match e {
                Event::Notice {
                    level: NoticeLevel::Info,
                    message,
                } => message.strip_prefix("Your hook `echo`: "),
                _ => None,
            })
            .filter_map(|m| serde_json::from_str(m).ok())
            .collect();
        if inputs.len() >= count || std::time::Instant::now() > deadline {
            return inputs;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn said(f: &Fixture) -> Vec<String> {
    f.watcher.said.lock().expect("said").clone()
}

#[tokio::test]
async fn each_wait_is_said_to_the_window_and_to_the_confirmed_notification_hook() {
    let f = fixture(true, true);
    let id = &f.task.id[..4];
    let wrote = call(
        &f,
        "write_to_file",
        json!({"path": "src/shed.txt", "content": "blue\n", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"}),
    )
    .await;
    assert!(!wrote.is_error, "{}", wrote.content);
    let asked = call(
        &f,
        "ask_followup_question",
        json!({"question": "Which\n colour?", "options": ["blue", "red"]}),
    )
    .await;
    assert!(asked.content.contains("blue"), "{}", asked.content);
    assert_eq!(
        said(&f),
        vec![
            "needed approval Paint the shed: create src/shed.txt".to_string(),
            format!("over {id}"),
            "needed question Paint the shed: Which colour?".to_string(),
            format!("over {id}"),
        ]
    );
    let inputs = hook_inputs(&f.events, 2, Duration::from_secs(20)).await;
    let root = f.env.gov.root().to_path_buf();
    let expected = |message: &str, kind: &str, waiting: &str| {
        json!({
            "session_id": f.task.id,
            "transcript_path": null,
            "cwd": root,
            "permission_mode": "default",
            "hook_event_name": "Notification",
            "mandate_intent_id": "INT-1",
            "message": message,
            "notification_type": kind,
            "mandate_waiting": waiting,
            "mandate_task_title": "Paint the shed",
        })
    };
    let mut inputs = inputs;
    inputs.sort_by_key(|i| i["mandate_waiting"].as_str().map(str::to_string));
    assert_eq!(
        inputs,
        vec![
            expected(
                "Mandate needs your approval: create src/shed.txt",
                "permission_prompt",
                "approval"
            ),
            expected(
                "Mandate asks: Which colour?",
                "elicitation_dialog",
                "question"
            ),
        ]
    );
}

#[tokio::test]
async fn a_paused_task_is_said_and_running_again_ends_it() {
    let Fixture {
        _tmp,
        mut env,
        task,
        watcher,
        events,
    } = fixture(true, true);
    env.budget = Budget {
        max_cost_usd: None,
        max_tokens: Some(0),
    };
    let end = run_task(Arc::new(env), task.clone(), Some("go".into())).await;
    assert!(matches!(end, TaskEnd::Paused(_)), "{end:?}");
    let said = watcher.said.lock().expect("said").clone();
    let id = &task.id[..4];
    assert_eq!(said.first(), Some(&format!("over {id}")), "{said:?}");
    assert!(
        said[1].starts_with("needed paused Paint the shed: The task reached its budget"),
        "{said:?}"
    );
    // Its matcher leaves pauses out.
    let none: Vec<Value> = Vec::new();
    assert_eq!(
        hook_inputs(&events, 1, Duration::from_millis(800)).await,
        none
    );
}

#[tokio::test]
async fn an_unconfirmed_notification_hook_never_runs_not_even_for_its_own_card() {
    let f = fixture(false, false);
    let wrote = call(
        &f,
        "write_to_file",
        json!({"path": "src/shed.txt", "content": "blue\n", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"}),
    )
    .await;
    assert!(!wrote.is_error, "{}", wrote.content);
    let said = said(&f);
    assert_eq!(
        said.iter()
            .filter(|l| l.starts_with("needed"))
            .collect::<Vec<_>>(),
        vec![
            "needed approval Paint the shed: run your hooks, new or changed",
            "needed approval Paint the shed: create src/shed.txt",
        ]
    );
    let none: Vec<Value> = Vec::new();
    assert_eq!(
        hook_inputs(&f.events, 1, Duration::from_secs(2)).await,
        none
    );
}

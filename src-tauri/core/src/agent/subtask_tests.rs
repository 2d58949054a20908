//! Subtasks against a scripted model: a child never reaches wider than its parent, its result
//! answers the parent, a stopped child returns to its parent, read-only children run side by
//! side, and undoing a task takes its children's changes back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::script_model::{Script, Step};
use super::test_support::{Events, Person};
use super::*;
use crate::llm::ChatMessage;
use crate::protocol::{ApprovalPolicy, TaskStatus, UiMessage};
use crate::workspace::Workspace;

#[path = "subtask_net_tests.rs"]
mod net;

struct Setup {
    tmp: tempfile::TempDir,
    env: Arc<AgentEnv>,
    task: Arc<TaskHandle>,
    script: Arc<Script>,
}

impl Setup {
    fn root(&self) -> std::path::PathBuf {
        self.tmp.path().join("ws")
    }
    fn ledger(&self) -> Vec<Value> {
        std::fs::read_to_string(self.root().join(".orchestration/agent_trace.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
    fn children(&self) -> Vec<Arc<TaskHandle>> {
        let mut c: Vec<_> = self
            .env
            .tasks
            .all()
            .into_iter()
            .filter(|t| t.summary().parent_id.as_deref() == Some(self.task.id.as_str()))
            .collect();
        c.sort_by_key(|t| t.summary().created_at);
        c
    }
    /// The parent's result for its call named `name`.
    fn result_of(&self, name: &str) -> Vec<(String, bool)> {
        self.task
            .record()
            .conversation
            .iter()
            .filter_map(|m| match m {
                ChatMessage::ToolResult {
                    name: n,
                    content,
                    is_error,
                    ..
                } if n == name => Some((content.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }
}

fn setup(parent_mode: &str, plays: Vec<(&'static str, Vec<Step>)>) -> Setup {
    setup_with_budget(parent_mode, plays, Default::default(), false)
}

/// INT-1 owns `src/**`, INT-2 `src/a/**` (inside it), INT-3 everything (wider).
fn setup_with_budget(
    parent_mode: &str,
    plays: Vec<(&'static str, Vec<Step>)>,
    budget: crate::protocol::Budget,
    // In the window: a task that answers without a tool waits for the person.
    interactive: bool,
) -> Setup {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(root.join("src/a")).expect("mkdir");
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: INT-1\n    name: Src\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\"]\n  - id: INT-2\n    name: A\n    status: IN_PROGRESS\n    owned_scope: [\"src/a/**\"]\n  - id: INT-3\n    name: All\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n",
    )
    .expect("intents");
    let dirs = crate::settings::AppDirs {
        config: tmp.path().join("config"),
        data: tmp.path().join("data"),
    };
    let gov = Arc::new(Governance::new(Workspace::new(&root).expect("ws"), &dirs));
    let store = Arc::new(TaskStore::new(&dirs.data, gov.root()));
    let script = Arc::new(Script {
        plays,
        met: AtomicUsize::new(0),
        asked: Mutex::default(),
    });
    let env = Arc::new(AgentEnv {
        gov: gov.clone(),
        provider: script.clone(),
        sink: Arc::new(Events::default()),
        interaction: Arc::new(Person::away()),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(crate::tools::registry()),
        approval: ApprovalPolicy {
            ask_before_writes: false,
            ask_before_safe_commands: false,
            switch_modes_without_asking: false,
        },
        custom_instructions: String::new(),
        max_turns: Some(30),
        interactive,
        render_interval: Duration::from_millis(50),
        context: crate::context::ContextConfig::default(),
        budget,
        profiles: None,
    });
    let task = TaskHandle::create(store, "ws", "PARENT: split the work", "test/script");
    let modes = crate::modes::load_modes(gov.root(), gov.config_dir());
    task.set_mode(modes.get(parent_mode).expect("mode"));
    env.tasks.insert(task.clone());
    Setup {
        tmp,
        env,
        task,
        script,
    }
}

fn write(path: &str, intent: &str) -> Value {
    json!({"path": path, "content": "fn x() {}\n", "intent_id": intent, "mutation_class": "INTENT_EVOLUTION"})
}

async fn run(s: &Setup) -> TaskEnd {
    let end = run_task(
        s.env.clone(),
        s.task.clone(),
        Some("PARENT: split the work".into()),
    );
    tokio::time::timeout(Duration::from_secs(60), end)
        .await
        .expect("the parent ended")
}

#[tokio::test]
async fn an_orchestrator_hands_work_to_a_narrower_child_which_cannot_write_outside_it() {
    let s = setup(
        "orchestrator",
        vec![
            (
                "PARENT",
                vec![
                    Step::Call("select_active_intent", json!({"intent_id": "INT-1"})),
                    // The orchestrator itself may not write.
                    Step::Call("write_to_file", write("src/p.rs", "INT-1")),
                    // A child with a wider intent is refused before it starts.
                    Step::Call(
                        "new_task",
                        json!({"mode": "code", "message": "WIDE: everything", "intent_id": "INT-3"}),
                    ),
                    Step::Call(
                        "new_task",
                        json!({"mode": "code", "message": "CHILD: write src/a/x.rs", "intent_id": "INT-2", "todos": "[-] write x\n[ ] report"}),
                    ),
                    Step::Call("attempt_completion", json!({"result": "parent done"})),
                ],
            ),
            (
                "CHILD",
                vec![
                    Step::Call("write_to_file", write("src/a/x.rs", "INT-2")),
                    // Inside the parent's intent, outside its own.
                    Step::Call("write_to_file", write("src/b.rs", "INT-2")),
                    // A wider intent selected by the child does not widen it.
                    Step::Call("select_active_intent", json!({"intent_id": "INT-3"})),
                    Step::Call("write_to_file", write("other/c.rs", "INT-3")),
                    Step::Call(
                        "attempt_completion",
                        json!({"result": "CHILD RESULT: wrote x"}),
                    ),
                ],
            ),
        ],
    );
    assert_eq!(run(&s).await, TaskEnd::Completed("parent done".into()));
    let root = s.root();
    assert!(!root.join("src/p.rs").exists(), "the orchestrator wrote");
    assert!(
        root.join("src/a/x.rs").exists(),
        "the child's write in scope"
    );
    assert!(
        !root.join("src/b.rs").exists(),
        "outside the child's intent"
    );
    assert!(
        !root.join("other/c.rs").exists(),
        "outside the parent's intent"
    );
    assert!(
        s.script
            .asked
            .lock()
            .expect("asked")
            .iter()
            .all(|a| !a.contains("WIDE")),
        "a child wider than its parent started"
    );

    let results = s.result_of("new_task");
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].1 && results[0].0.contains("SCOPE_VIOLATION"),
        "{results:?}"
    );
    assert!(
        !results[1].1 && results[1].0.contains("CHILD RESULT: wrote x"),
        "{results:?}"
    );

    let children = s.children();
    assert_eq!(children.len(), 1);
    let child = &children[0];
    let summary = child.summary();
    assert_eq!(summary.status, TaskStatus::Completed);
    assert_eq!(summary.mode.as_deref(), Some("code"));
    assert_eq!(summary.todos.len(), 2);
    assert!(child.record().parent_call_id.is_some());
    let writes = child
        .record()
        .conversation
        .iter()
        .filter_map(|m| match m {
            ChatMessage::ToolResult {
                name,
                content,
                is_error,
                ..
            } if name == "write_to_file" => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert!(
        writes[1].1 && writes[1].0.contains("SCOPE_VIOLATION"),
        "{writes:?}"
    );
    assert!(
        writes[2].1 && writes[2].0.contains("its parent task works under INT-1"),
        "{writes:?}"
    );

    // The ledger ties the child's change to the child and its parent.
    let ledger = s.ledger();
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    let block = &ledger[0]["metadata"]["dev.mandate"];
    assert_eq!(block["task_id"], json!(child.id));
    assert_eq!(block["parent_task_id"], json!(s.task.id));
    assert_eq!(block["intent_id"], json!("INT-2"));

    // The parent's transcript shows the subtask and how it ended.
    let cards: Vec<_> = s
        .task
        .record()
        .messages
        .into_iter()
        .filter_map(|m| match m {
            UiMessage::Subtask {
                task_id,
                status,
                result_safe_html,
                ..
            } => Some((task_id, status, result_safe_html)),
            _ => None,
        })
        .collect();
    assert_eq!(cards.len(), 1, "one card, replaced when the subtask ended");
    assert_eq!(cards[0].0, child.id);
    assert_eq!(cards[0].1, TaskStatus::Completed);
    assert!(cards[0].2.as_deref().unwrap_or("").contains("CHILD RESULT"));

    // Undoing the parent takes the child's change back with it.
    let resolved = crate::undo::Grain::Task {
        task_id: s.task.id.clone(),
    }
    .resolve(&s.env.store)
    .expect("resolve");
    assert!(resolved.selection.whole_tasks.contains(&child.id));
}

#[tokio::test]
async fn a_stopped_child_returns_to_its_parent_saying_so() {
    let s = setup(
        "orchestrator",
        vec![
            (
                "PARENT",
                vec![
                    Step::Call("select_active_intent", json!({"intent_id": "INT-1"})),
                    Step::Call(
                        "new_task",
                        json!({"mode": "code", "message": "CHILD: work slowly"}),
                    ),
                    Step::Call("attempt_completion", json!({"result": "parent went on"})),
                ],
            ),
            ("CHILD", vec![Step::Hang]),
        ],
    );
    let stopper = {
        let (env, parent) = (s.env.clone(), s.task.id.clone());
        tokio::spawn(async move {
            for _ in 0..400 {
                let child = env
                    .tasks
                    .all()
                    .into_iter()
                    .find(|t| t.summary().parent_id.as_deref() == Some(parent.as_str()));
                if let Some(child) = child.filter(|c| c.is_running()) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    child.cancel();
                    return;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
    };
    assert_eq!(run(&s).await, TaskEnd::Completed("parent went on".into()));
    stopper.await.expect("stopper");
    let results = s.result_of("new_task");
    assert!(
        results[0].1 && results[0].0.contains("was stopped"),
        "{results:?}"
    );
    assert_eq!(s.children()[0].summary().status, TaskStatus::Cancelled);
    // The child inherited the parent's intent.
    assert_eq!(
        s.children()[0].summary().intent_id.as_deref(),
        Some("INT-1")
    );
}

#[tokio::test]
async fn stopping_the_parent_stops_its_child() {
    let s = setup(
        "orchestrator",
        vec![
            (
                "PARENT",
                vec![Step::Call(
                    "new_task",
                    json!({"mode": "ask", "message": "CHILD: wait"}),
                )],
            ),
            ("CHILD", vec![Step::Hang]),
        ],
    );
    let parent = s.task.clone();
    let env = s.env.clone();
    tokio::spawn(async move {
        for _ in 0..400 {
            if env
                .tasks
                .all()
                .iter()
                .any(|t| t.summary().parent_id.is_some() && t.is_running())
            {
                parent.cancel();
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    });
    assert_eq!(run(&s).await, TaskEnd::Cancelled);
    let child = s.children()[0].clone();
    for _ in 0..200 {
        if !child.is_running() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(!child.is_running());
    assert_eq!(child.summary().status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn read_only_children_run_side_by_side_each_with_its_own_conversation() {
    let s = setup(
        "orchestrator",
        vec![
            (
                "PARENT",
                vec![
                    Step::Calls(vec![
                        (
                            "new_task",
                            json!({"mode": "ask", "message": "ASK-ONE: look at a"}),
                        ),
                        (
                            "new_task",
                            json!({"mode": "ask", "message": "ASK-TWO: look at b"}),
                        ),
                    ]),
                    Step::Call("attempt_completion", json!({"result": "both answered"})),
                ],
            ),
            (
                "ASK-ONE",
                vec![Step::Meet(
                    2,
                    "attempt_completion",
                    json!({"result": "ONE found a"}),
                )],
            ),
            (
                "ASK-TWO",
                vec![Step::Meet(
                    2,
                    "attempt_completion",
                    json!({"result": "TWO found b"}),
                )],
            ),
        ],
    );
    assert_eq!(run(&s).await, TaskEnd::Completed("both answered".into()));
    let results = s.result_of("new_task");
    assert_eq!(results.len(), 2);
    assert!(
        results[0].0.contains("ONE found a") && results[1].0.contains("TWO found b"),
        "{results:?}"
    );
    // Both children were asking the model at the same time: each waited for the other.
    let asked = s.script.asked.lock().expect("asked").clone();
    let firsts: HashMap<bool, usize> = asked.iter().fold(HashMap::new(), |mut m, a| {
        *m.entry(a.contains("ASK-")).or_default() += 1;
        m
    });
    assert_eq!(firsts.get(&true), Some(&2), "{asked:?}");
    assert!(s.script.met.load(Ordering::SeqCst) >= 2);
    // Neither child saw the other's conversation.
    for child in s.children() {
        let text = serde_json::to_string(&child.record().conversation).expect("json");
        assert!(!(text.contains("ASK-ONE") && text.contains("ASK-TWO")));
    }
}

#[tokio::test]
async fn subtasks_nest_only_so_deep() {
    let nest = json!({"mode": "orchestrator", "message": "NEST: go deeper"});
    let s = setup(
        "orchestrator",
        vec![
            ("PARENT", vec![Step::Call("new_task", nest.clone())]),
            ("NEST", vec![Step::Call("new_task", nest.clone())]),
        ],
    );
    let end = run(&s).await;
    assert!(matches!(end, TaskEnd::Completed(_)), "{end:?}");
    let deepest: Vec<String> = s
        .env
        .tasks
        .all()
        .iter()
        .flat_map(|t| t.record().conversation)
        .filter_map(|m| match m {
            ChatMessage::ToolResult { content, .. } if content.contains("nest at most") => {
                Some(content)
            }
            _ => None,
        })
        .collect();
    assert_eq!(deepest.len(), 1, "the deepest task was refused once");
    assert_eq!(s.env.tasks.all().len(), subtask::MAX_DEPTH);
}

#[tokio::test]
async fn a_task_and_its_subtasks_share_one_budget() {
    let budget = crate::protocol::Budget {
        max_cost_usd: None,
        max_tokens: Some(2500),
    };
    let s = setup_with_budget(
        "orchestrator",
        vec![
            (
                "PARENT",
                vec![
                    Step::Call("select_active_intent", json!({"intent_id": "INT-1"})),
                    Step::Call(
                        "new_task",
                        json!({"mode": "ask", "message": "CHILD: look around"}),
                    ),
                    Step::Call("attempt_completion", json!({"result": "parent done"})),
                ],
            ),
            (
                "CHILD",
                vec![
                    Step::Call("list_files", json!({"path": "."})),
                    Step::Call("attempt_completion", json!({"result": "child done"})),
                ],
            ),
        ],
        budget,
        false,
    );
    // Alone, each would stay under 2,500 tokens; together they reach it.
    let end = run(&s).await;
    assert!(matches!(end, TaskEnd::Paused(_)), "{end:?}");
    let child = s.children()[0].summary();
    assert_eq!(child.status, TaskStatus::Paused);
    assert!(
        child
            .error
            .as_deref()
            .unwrap_or("")
            .contains("and its subtasks"),
        "{child:?}"
    );
    assert!(child.usage.input_tokens < 2500);
    let results = s.result_of("new_task");
    assert!(
        results[0].1 && results[0].0.contains("stopped at its budget"),
        "{results:?}"
    );
}

#[tokio::test]
async fn after_a_restart_the_subtasks_a_parent_waited_for_answer_it_as_they_were_left() {
    let s = setup(
        "orchestrator",
        vec![(
            "PARENT",
            vec![
                Step::Hang,
                Step::Call("attempt_completion", json!({"result": "resumed"})),
            ],
        )],
    );
    let sink = s.env.sink.as_ref();
    let call = |id: &str, name: &str, args: Value| crate::llm::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    };
    let turn = |calls| crate::llm::AssistantTurn {
        tool_calls: calls,
        ..Default::default()
    };
    // Mandate stopped while the parent waited for two subtasks: one had completed, one had not.
    s.task
        .begin_turn(sink, "PARENT: split the work".into(), None);
    let ask = json!({"mode": "ask", "message": "CHILD"});
    s.task.push_turn(
        &turn(vec![
            call("n1", "new_task", ask.clone()),
            call("n2", "new_task", ask),
        ]),
        None,
    );
    s.task.checkpoint(sink).await;
    for (call_id, done) in [("n1", true), ("n2", false)] {
        let child = TaskHandle::create(s.env.store.clone(), "ws", "CHILD", "test/script");
        child.set_parent(&s.task, call_id, None);
        if done {
            let result = json!({"result": "CHILD FINISHED"});
            child.push_turn(&turn(vec![call("c", "attempt_completion", result)]), None);
            child.set_outcome(TaskStatus::Completed, None);
        }
        child.checkpoint(sink).await;
    }
    assert_eq!(
        run_task(s.env.clone(), s.task.clone(), None).await,
        TaskEnd::Completed("resumed".into())
    );
    let results = s.result_of("new_task");
    assert!(
        !results[0].1 && results[0].0.contains("CHILD FINISHED"),
        "{results:?}"
    );
    assert!(
        results[1].1 && results[1].0.contains("did not finish"),
        "{results:?}"
    );
}

#[tokio::test]
async fn in_the_window_a_parent_waits_for_a_child_that_waits_for_the_person_until_it_ends() {
    let s = setup_with_budget(
        "orchestrator",
        vec![
            (
                "PARENT",
                vec![
                    Step::Call(
                        "new_task",
                        json!({"mode": "ask", "message": "CHILD: ask the person"}),
                    ),
                    Step::Call("attempt_completion", json!({"result": "parent done"})),
                ],
            ),
            // The child answers without a tool: it waits for the person.
            ("CHILD", vec![Step::Calls(Vec::new())]),
        ],
        Default::default(),
        true,
    );
    let parent = tokio::spawn({
        let (env, task) = (s.env.clone(), s.task.clone());
        async move { run_task(env, task, Some("PARENT: split the work".into())).await }
    });
    let mut child = None;
    for _ in 0..400 {
        child = s
            .children()
            .into_iter()
            .find(|c| c.summary().status == TaskStatus::Idle && !c.is_running());
        if child.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let child = child.expect("the child waits for the person");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!parent.is_finished(), "the parent must wait for its child");
    assert_eq!(s.task.summary().status, TaskStatus::WaitingForSubtask);
    // The person deletes the child: the parent goes on, told so.
    child.abandon();
    let end = tokio::time::timeout(Duration::from_secs(30), parent)
        .await
        .expect("the parent went on")
        .expect("join");
    assert_eq!(end, TaskEnd::Completed("parent done".into()));
    let results = s.result_of("new_task");
    assert!(
        results[0].1 && results[0].0.contains("was stopped"),
        "{results:?}"
    );
}

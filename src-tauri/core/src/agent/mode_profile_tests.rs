//! A mode on a provider profile of its own (Settings → profiles by mode): a task that switches
//! to it goes on there from its next turn, a subtask started in it runs there while its parent
//! stays, and a profile that cannot be used leaves the task where it was, said.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::script_model::{Script, Step};
use super::test_support::{Events, Person};
use super::*;
use crate::llm::{LlmError, ModelRequest, ModelStream, Provider};
use crate::protocol::{ApprovalPolicy, Event};
use crate::workspace::Workspace;

/// A scripted model under a name of its own (a profile's).
struct Named {
    id: &'static str,
    script: Script,
}

impl Named {
    fn new(id: &'static str, plays: Vec<(&'static str, Vec<Step>)>) -> Arc<Named> {
        Arc::new(Named {
            id,
            script: Script {
                plays,
                met: AtomicUsize::new(0),
                asked: Mutex::default(),
            },
        })
    }

    /// The first message of each conversation that asked this model, in order.
    fn asked(&self) -> Vec<String> {
        self.script.asked.lock().expect("asked").clone()
    }
}

#[async_trait::async_trait]
impl Provider for Named {
    fn model_id(&self) -> String {
        self.id.into()
    }
    async fn stream(&self, r: &ModelRequest) -> Result<ModelStream, LlmError> {
        self.script.stream(r).await
    }
    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        Ok(Vec::new())
    }
}

/// The person's profiles: `architect` and `ask` run on profile `b`; `b` can be used or not.
struct Profiles {
    b: Option<Arc<Named>>,
}

#[async_trait::async_trait]
impl ProfileSource for Profiles {
    fn for_mode(&self, slug: &str) -> Option<String> {
        matches!(slug, "architect" | "ask").then(|| "b".to_string())
    }
    async fn provider(&self, id: &str) -> Result<Arc<dyn Provider>, ProfileUnavailable> {
        match (id, &self.b) {
            ("b", Some(b)) => Ok(b.clone()),
            _ => Err(ProfileUnavailable(
                "no API key is set for the b profile".into(),
            )),
        }
    }
}

struct Setup {
    _tmp: tempfile::TempDir,
    env: Arc<AgentEnv>,
    task: Arc<TaskHandle>,
    events: Arc<Events>,
}

fn setup(mode: &str, a: Arc<Named>, b: Option<Arc<Named>>) -> Setup {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: INT-1\n    name: All\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n",
    )
    .expect("intents");
    let dirs = crate::settings::AppDirs {
        config: tmp.path().join("config"),
        data: tmp.path().join("data"),
    };
    let gov = Arc::new(Governance::new(Workspace::new(&root).expect("ws"), &dirs));
    let store = Arc::new(TaskStore::new(&dirs.data, gov.root()));
    let events = Arc::new(Events::default());
    let env = Arc::new(AgentEnv {
        gov: gov.clone(),
        provider: a,
        sink: events.clone(),
        interaction: Arc::new(Person::away()),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(crate::tools::registry()),
        approval: ApprovalPolicy {
            ask_before_writes: false,
            ask_before_safe_commands: false,
            switch_modes_without_asking: true,
        },
        custom_instructions: String::new(),
        max_turns: Some(10),
        interactive: false,
        render_interval: Duration::from_millis(50),
        context: crate::context::ContextConfig::default(),
        budget: Default::default(),
        profiles: Some(Arc::new(Profiles { b })),
    });
    let task = TaskHandle::create(store, "ws", "WORK: the task", "test/a");
    task.select_intent(&gov.intents.snapshot(), "INT-1")
        .expect("select");
    let modes = crate::modes::load_modes(gov.root(), gov.config_dir());
    task.set_mode(modes.get(mode).expect("mode"));
    env.tasks.insert(task.clone());
    Setup {
        _tmp: tmp,
        env,
        task,
        events,
    }
}

async fn run(s: &Setup, text: &str) -> TaskEnd {
    tokio::time::timeout(
        Duration::from_secs(30),
        run_task(s.env.clone(), s.task.clone(), Some(text.into())),
    )
    .await
    .expect("the run ends")
}

fn notices(events: &Events) -> Vec<String> {
    events
        .0
        .lock()
        .expect("events")
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn switch_to_architect() -> Step {
    Step::Call(
        "switch_mode",
        json!({"mode_slug": "architect", "reason": "plan first"}),
    )
}

#[tokio::test]
async fn a_switch_to_a_mode_on_its_own_profile_takes_the_next_turn_there() {
    let a = Named::new(
        "test/a",
        vec![(
            "WORK",
            vec![
                switch_to_architect(),
                Step::Call("attempt_completion", json!({"result": "A went on"})),
            ],
        )],
    );
    let b = Named::new(
        "test/b",
        vec![(
            "WORK",
            vec![
                Step::Say("not asked first"),
                Step::Call("attempt_completion", json!({"result": "planned on B"})),
            ],
        )],
    );
    let s = setup("code", a.clone(), Some(b.clone()));
    let end = run(&s, "WORK: plan it").await;
    assert!(
        matches!(&end, TaskEnd::Completed(r) if r == "planned on B"),
        "{end:?}"
    );
    assert_eq!(
        a.asked().len(),
        1,
        "A answered only the turn before the switch"
    );
    assert_eq!(b.asked().len(), 1);
    let summary = s.task.summary();
    // The task stays on the mode's profile (a later run starts there).
    assert_eq!(summary.profile.as_deref(), Some("b"));
    assert_eq!(summary.model, "test/b");
    assert!(
        notices(&s.events)
            .iter()
            .any(|n| n.contains("runs on the b profile")),
        "{:?}",
        notices(&s.events)
    );
}

#[tokio::test]
async fn a_subtask_in_a_mode_on_its_own_profile_runs_there_and_its_parent_stays() {
    let a = Named::new(
        "test/a",
        vec![(
            "WORK",
            vec![
                Step::Call(
                    "new_task",
                    json!({"mode": "ask", "message": "CHILD: where is the parser?"}),
                ),
                Step::Call("attempt_completion", json!({"result": "parent done"})),
            ],
        )],
    );
    let b = Named::new(
        "test/b",
        vec![(
            "CHILD",
            vec![Step::Call(
                "attempt_completion",
                json!({"result": "in src/parse.rs"}),
            )],
        )],
    );
    let s = setup("orchestrator", a.clone(), Some(b.clone()));
    let end = run(&s, "WORK: split it").await;
    assert!(
        matches!(&end, TaskEnd::Completed(r) if r == "parent done"),
        "{end:?}"
    );
    assert!(
        a.asked().iter().all(|m| m.starts_with("WORK")),
        "{:?}",
        a.asked()
    );
    assert_eq!(a.asked().len(), 2);
    let child_asks = b.asked();
    assert!(
        !child_asks.is_empty() && child_asks.iter().all(|m| m.contains("CHILD")),
        "{child_asks:?}"
    );
    assert_eq!(
        s.task.summary().profile,
        None,
        "the parent stays where it was"
    );
    let child = s
        .env
        .tasks
        .all()
        .into_iter()
        .find(|t| t.summary().parent_id.is_some())
        .expect("the child");
    assert_eq!(child.summary().profile.as_deref(), Some("b"));
}

#[tokio::test]
async fn a_mode_whose_profile_cannot_be_used_leaves_the_task_where_it_was() {
    let a = Named::new(
        "test/a",
        vec![(
            "WORK",
            vec![
                switch_to_architect(),
                Step::Call("attempt_completion", json!({"result": "still on A"})),
            ],
        )],
    );
    let s = setup("code", a.clone(), None);
    let end = run(&s, "WORK: plan it").await;
    assert!(
        matches!(&end, TaskEnd::Completed(r) if r == "still on A"),
        "{end:?}"
    );
    assert_eq!(a.asked().len(), 2);
    assert_eq!(s.task.summary().profile, None);
    assert!(
        notices(&s.events)
            .iter()
            .any(|n| n.contains("cannot be used now") && n.contains("no API key")),
        "{:?}",
        notices(&s.events)
    );
}

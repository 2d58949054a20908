//! Background processes through the whole tool path (gate, approval, the kernel's confinement
//! at the level this machine offers): a server started, read, reached, stopped and reaped; one
//! that outlives its task killed with it; what one writes out of scope put back, in scope
//! recorded, and the agent's own writes meanwhile never taken for its.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::agent::script_model::{Script, Step};
use crate::agent::test_support::{Events, NoModel, Person};
use crate::agent::{dispatch, run_task, AgentEnv, CallResult, Governance, TaskHandle, TaskStore};
use crate::llm::{Provider, ToolCall};
use crate::protocol::{
    ApprovalDecision, ApprovalPolicy, CommandGrants, Event, ProcessStatus, ProcessStopper,
};
use crate::sandbox::Confinement;
use crate::workspace::Workspace;

struct Fixture {
    tmp: tempfile::TempDir,
    env: Arc<AgentEnv>,
    events: Arc<Events>,
    task: Arc<TaskHandle>,
}

/// INT-1 owns `src/*.rs`: commands may write `src/` (the kernel's grant is a directory), and
/// what they write there that is not Rust is out of scope.
fn fixture(provider: Arc<dyn Provider>, objective: &str, grant_network: bool) -> Fixture {
    fixture_at(provider, objective, grant_network, Confinement::detect())
}

/// The confinement levels this machine offers: what it detects, and Landlock alone.
fn levels() -> Vec<Confinement> {
    let mut levels = vec![Confinement::detect()];
    let landlock_only = Confinement::from_parts(crate::sandbox::landlock_abi(), None);
    if landlock_only.is_confined() && landlock_only != levels[0] {
        levels.push(landlock_only);
    }
    levels
}

fn fixture_at(
    provider: Arc<dyn Provider>,
    objective: &str,
    grant_network: bool,
    confinement: Confinement,
) -> Fixture {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(root.join("src/lib.rs"), "pub fn a() {}\n").expect("lib");
    std::fs::write(root.join("README.md"), "# app\n").expect("readme");
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: INT-1\n    name: App\n    status: IN_PROGRESS\n    owned_scope: [\"src/*.rs\"]\n",
    )
    .expect("intents");
    let mut gov = Governance::new(
        Workspace::new(&root).expect("ws"),
        &crate::settings::AppDirs {
            config: tmp.path().join("config"),
            data: tmp.path().join("data"),
        },
    );
    gov.confinement = confinement;
    let gov = Arc::new(gov);
    let store = Arc::new(TaskStore::new(&tmp.path().join("data"), gov.root()));
    let events = Arc::new(Events::default());
    let grant = grant_network.then_some(CommandGrants {
        network: true,
        write_git: false,
    });
    let env = Arc::new(AgentEnv {
        gov: gov.clone(),
        provider,
        sink: events.clone(),
        interaction: Arc::new(Person {
            decision: ApprovalDecision::Approve {
                rejected_hunks: vec![],
                edited_content: None,
                grant,
            },
            shown: Default::default(),
        }),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(crate::tools::registry()),
        // Every command asks, so that the person's grant reaches it.
        approval: ApprovalPolicy {
            ask_before_writes: false,
            ask_before_safe_commands: true,
            switch_modes_without_asking: false,
        },
        custom_instructions: String::new(),
        max_turns: Some(10),
        interactive: false,
        render_interval: Duration::from_millis(50),
        context: crate::context::ContextConfig::default(),
        budget: Default::default(),
        profiles: None,
    });
    let task = TaskHandle::create(store, "ws", objective, "test/none");
    task.select_intent(&gov.intents.snapshot(), "INT-1")
        .expect("select");
    Fixture {
        tmp,
        env,
        events,
        task,
    }
}

impl Fixture {
    fn root(&self) -> std::path::PathBuf {
        self.tmp.path().join("ws")
    }

    async fn call(&self, name: &str, args: Value) -> CallResult {
        let call = ToolCall {
            id: format!("c-{name}-{}", uuid::Uuid::new_v4().simple()),
            name: name.into(),
            arguments: args.to_string(),
        };
        dispatch(&self.env, &self.task, &call, &CancellationToken::new()).await
    }

    fn ledger(&self) -> Vec<Value> {
        std::fs::read_to_string(self.root().join(".orchestration/agent_trace.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn process(&self, id: &str) -> Arc<super::Process> {
        self.env.gov.processes.find(id).expect("process")
    }
}

/// Whether any process is still in `group`.
fn group_alive(group: i32) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .any(|e| {
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
            })
        })
}

/// The processes of `group`, for a failing test's message.
fn members(group: i32) -> String {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            rest.split_whitespace().nth(2) == Some(group.to_string().as_str())
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

fn get(port: u16) -> std::io::Result<String> {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")?;
    let mut body = String::new();
    s.read_to_string(&mut body)?;
    Ok(body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_server_is_started_read_reached_stopped_and_reaped() {
    // As when Mandate holds a provider's key: its short lines must still show as printed.
    crate::redact::Redactor::global().add("sk-processes-test-0123456789abcdefghijklmnopqrstuvwxyz");
    let f = fixture(Arc::new(NoModel), "serve", true);
    let port = free_port();
    let server = format!(
        "node -e \"require('http').createServer((q, s) => {{ console.log('ser' + 'ved', q.url); s.end('hello from the server'); }}).listen({port}, '127.0.0.1', () => console.log('listen' + 'ing on', {port}))\""
    );
    let started = f
        .call(
            "execute_command",
            json!({"command": server, "background": true}),
        )
        .await;
    assert!(!started.is_error, "{}", started.content);
    assert!(
        started.content.contains("process p1"),
        "{}",
        started.content
    );
    let p = f.process("p1");
    let group = p.group;
    assert!(group_alive(group));
    // Its first output: in the call's answer, or in the first read (the command's words are
    // split so that only its output can say them).
    let first = f
        .call(
            "read_process_output",
            json!({"process_id": "p1", "wait_seconds": 10}),
        )
        .await;
    assert!(!first.is_error, "{}", first.content);
    assert!(
        format!("{}{}", started.content, first.content).contains(&format!("listening on {port}")),
        "{}\n{}",
        started.content,
        first.content
    );
    assert!(first.content.contains("is running"), "{}", first.content);
    // Reached from outside (the person's browser would be), and its log follows.
    let body = tokio::task::spawn_blocking(move || get(port))
        .await
        .expect("join")
        .expect("the server answers");
    assert!(body.contains("hello from the server"), "{body}");
    let after = f
        .call(
            "read_process_output",
            json!({"process_id": "p1", "wait_seconds": 10}),
        )
        .await;
    assert!(after.content.contains("served /"), "{}", after.content);
    let new_output = after
        .content
        .split_once("Output:\n")
        .and_then(|(_, rest)| rest.split_once("\n(Output read up to"))
        .map(|(output, _)| output)
        .unwrap_or_default();
    assert!(
        !new_output.contains("listening on"),
        "only what is new: {}",
        after.content
    );
    assert!(
        !after.content.contains("[Mandate]"),
        "nothing to say of its changes: {}",
        after.content
    );
    // Stopped by the model: its whole group ends, and it is reaped.
    let stopped = f.call("stop_process", json!({"process_id": "p1"})).await;
    assert!(!stopped.is_error, "{}", stopped.content);
    assert!(
        stopped.content.contains("was stopped by you"),
        "{}",
        stopped.content
    );
    assert_eq!(
        p.status(),
        ProcessStatus::Stopped {
            by: ProcessStopper::Model
        }
    );
    assert!(!group_alive(group), "its group is gone: {}", members(group));
    assert!(tokio::task::spawn_blocking(move || get(port))
        .await
        .expect("join")
        .is_err());
    // The window heard it start, print and stop.
    let events = f.events.0.lock().expect("events").clone();
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::ProcessOutput { chunk, .. } if chunk.contains("served /"))));
    assert!(events.iter().any(|e| matches!(e, Event::ProcessChanged { process } if matches!(process.status, ProcessStatus::Stopped { .. }))));
    // Another task cannot read it; an unknown id is named.
    let unknown = f
        .call("read_process_output", json!({"process_id": "p9"}))
        .await;
    assert!(
        unknown.is_error && unknown.content.contains("p1"),
        "{}",
        unknown.content
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_network_granted_a_background_server_cannot_listen() {
    let f = fixture(Arc::new(NoModel), "serve", false);
    let port = free_port();
    let server = format!(
        "node -e \"require('http').createServer((q, s) => s.end('x')).listen({port}, '127.0.0.1', () => console.log('listening'))\""
    );
    let started = f
        .call(
            "execute_command",
            json!({"command": server, "background": true}),
        )
        .await;
    let p = f.process("p1");
    p.wait_ended(Duration::from_secs(5)).await;
    // Refused by the kernel (Landlock's TCP rules, or an empty network namespace): nothing
    // outside reaches it.
    assert!(tokio::task::spawn_blocking(move || get(port))
        .await
        .expect("join")
        .is_err());
    f.env.gov.processes.end_all(ProcessStopper::Mandate).await;
    assert!(!started.content.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_outlives_its_task_is_killed_when_the_task_ends() {
    let script = Arc::new(Script {
        plays: vec![(
            "Serve",
            vec![
                Step::Call(
                    "execute_command",
                    json!({"command": "echo up; sleep 300", "background": true}),
                ),
                Step::Call("attempt_completion", json!({"result": "served"})),
            ],
        )],
        met: Default::default(),
        asked: Default::default(),
    });
    let f = fixture(script, "Serve the app", false);
    let end = run_task(f.env.clone(), f.task.clone(), Some("Serve the app".into())).await;
    assert_eq!(end, crate::agent::TaskEnd::Completed("served".into()));
    let p = f.process("p1");
    assert_eq!(
        p.status(),
        ProcessStatus::Stopped {
            by: ProcessStopper::Task
        }
    );
    assert!(!group_alive(p.group), "nothing of it is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_for_the_person_keeps_its_process_and_deleting_it_ends_it() {
    let script = Arc::new(Script {
        plays: vec![(
            "Watch",
            vec![
                Step::Call(
                    "execute_command",
                    json!({"command": "sleep 300", "background": true}),
                ),
                Step::Say("The watcher runs."),
            ],
        )],
        met: Default::default(),
        asked: Default::default(),
    });
    let mut f = fixture(script, "Watch the files", false);
    Arc::get_mut(&mut f.env).expect("env").interactive = true;
    let end = run_task(
        f.env.clone(),
        f.task.clone(),
        Some("Watch the files".into()),
    )
    .await;
    assert_eq!(end, crate::agent::TaskEnd::Idle);
    let p = f.process("p1");
    assert_eq!(p.status(), ProcessStatus::Running);
    assert!(group_alive(p.group));
    // What the host does when the task is deleted.
    f.env
        .gov
        .processes
        .end_task(&f.task.id, ProcessStopper::Task)
        .await;
    f.env.gov.processes.forget_task(&f.task.id);
    assert!(!group_alive(p.group));
    assert!(f.env.gov.processes.list(&f.task.id).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_without_commands_refuses_a_background_command_too() {
    let f = fixture(Arc::new(NoModel), "ask", false);
    let modes = crate::modes::load_modes(f.env.gov.root(), f.env.gov.config_dir());
    f.task.set_mode(modes.get("ask").expect("ask mode"));
    let refused = f
        .call(
            "execute_command",
            json!({"command": "sleep 300", "background": true}),
        )
        .await;
    assert!(
        refused.is_error && refused.content.contains("MODE_RESTRICTED"),
        "{}",
        refused.content
    );
    assert!(f.env.gov.processes.list(&f.task.id).is_empty());
}

/// The records of the ledger that name `path`, with their tool.
fn records_of(f: &Fixture, path: &str) -> Vec<(String, Value)> {
    f.ledger()
        .into_iter()
        .filter(|r| {
            r["files"]
                .as_array()
                .is_some_and(|files| files.iter().any(|x| x["path"] == path))
        })
        .map(|r| {
            let vendor = r["metadata"]["dev.mandate"].clone();
            (vendor["tool"].as_str().unwrap_or("").to_string(), vendor)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_background_process_writes_out_of_scope_is_put_back_and_in_scope_recorded() {
    for level in levels() {
        hostile_writes_at(level).await;
    }
}

async fn hostile_writes_at(level: Confinement) {
    let summary = level.summary();
    let f = fixture_at(Arc::new(NoModel), "hostile", false, level);
    // While it runs: the kernel refuses the root, `src/` is writable but only its
    // Rust files are the intent's.
    let hostile = "sleep 2; echo leak > src/notes.txt; (echo owned > README.md) 2>/dev/null || echo refused; echo 'pub fn b() {}' > src/b.rs; echo written; sleep 300";
    let started = f
        .call(
            "execute_command",
            json!({"command": hostile, "background": true}),
        )
        .await;
    assert!(!started.is_error, "{}", started.content);
    // What was found goes to the model with the next result, whichever call that is.
    let mut read = started.content.clone();
    for _ in 0..20 {
        let r = f
            .call(
                "read_process_output",
                json!({"process_id": "p1", "wait_seconds": 2}),
            )
            .await;
        read.push_str(&r.content);
        if read.contains("written") {
            break;
        }
    }
    assert!(read.contains("refused"), "{summary}: {read}");
    // A look found it: out of scope put back and said, in scope recorded.
    assert!(read.contains("Scope Violation"), "{summary}: {read}");
    assert!(read.contains("src/notes.txt"), "{read}");
    assert!(!f.root().join("src/notes.txt").exists(), "put back");
    assert_eq!(
        std::fs::read_to_string(f.root().join("README.md")).expect("readme"),
        "# app\n"
    );
    assert!(
        read.contains("recorded in the trace ledger under INT-1): src/b.rs"),
        "{read}"
    );
    let recorded = records_of(&f, "src/b.rs");
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].0, "execute_command");
    assert_eq!(recorded[0].1["command"]["background"], true);
    assert_eq!(recorded[0].1["command"]["process_id"], "p1");
    // The person was told too.
    let events = f.events.0.lock().expect("events").clone();
    assert!(events.iter().any(|e| matches!(e, Event::Notice { message, .. } if message.contains("Scope Violation") && message.contains("src/notes.txt"))));
    f.env.gov.processes.end_all(ProcessStopper::Mandate).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_own_write_while_a_process_runs_is_not_taken_for_the_process() {
    let f = fixture(Arc::new(NoModel), "write", false);
    let started = f
        .call(
            "execute_command",
            json!({"command": "sleep 300", "background": true}),
        )
        .await;
    assert!(!started.is_error, "{}", started.content);
    let wrote = f
        .call(
            "write_to_file",
            json!({"path": "src/c.rs", "content": "pub fn c() {}\n", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"}),
        )
        .await;
    assert!(!wrote.is_error, "{}", wrote.content);
    // A foreground command's change is its own too.
    let touched = f
        .call(
            "execute_command",
            json!({"command": "echo 'pub fn d() {}' > src/d.rs"}),
        )
        .await;
    assert!(!touched.is_error, "{}", touched.content);
    let read = f
        .call("read_process_output", json!({"process_id": "p1"}))
        .await;
    assert!(!read.content.contains("src/c.rs"), "{}", read.content);
    let c = records_of(&f, "src/c.rs");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "write_to_file");
    let d = records_of(&f, "src/d.rs");
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0].1["command"]["background"].is_null(), "{d:?}");
    f.env.gov.processes.end_all(ProcessStopper::Mandate).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_process_writes_as_it_ends_is_looked_at_last() {
    let f = fixture(Arc::new(NoModel), "late", false);
    let started = f
        .call(
            "execute_command",
            json!({"command": "sleep 3; echo x > src/late.txt; echo 'fn z() {}' > src/z.rs", "background": true}),
        )
        .await;
    assert!(!started.is_error, "{}", started.content);
    let p = f.process("p1");
    assert!(p.wait_ended(Duration::from_secs(20)).await);
    let stopped = f.call("stop_process", json!({"process_id": "p1"})).await;
    assert!(
        stopped
            .content
            .contains("had already ended: it exited with code 0"),
        "{}",
        stopped.content
    );
    assert!(
        stopped.content.contains("src/late.txt"),
        "{}",
        stopped.content
    );
    assert!(!f.root().join("src/late.txt").exists());
    assert_eq!(records_of(&f, "src/z.rs").len(), 1);
}

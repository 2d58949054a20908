//! The project's check around a turn, against a scripted model: a type error the model's edit
//! brings is sent back and fixed, problems already there are not, the baseline is read before
//! the first change, and the model is sent back at most twice per message.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::agent::script_model::{Script, Step};
use crate::agent::test_support::{Events, Person};
use crate::agent::*;
use crate::llm::ChatMessage;
use crate::protocol::{ApprovalPolicy, UiMessage};
use crate::workspace::Workspace;

struct Setup {
    tmp: tempfile::TempDir,
    env: Arc<AgentEnv>,
    task: Arc<TaskHandle>,
}

impl Setup {
    fn root(&self) -> std::path::PathBuf {
        self.tmp.path().join("ws")
    }

    /// What the model was told about new problems, in order.
    fn notes(&self) -> Vec<String> {
        self.task
            .record()
            .conversation
            .iter()
            .filter_map(|m| match m {
                ChatMessage::User { text, .. } if text.starts_with("[Project check") => {
                    Some(text.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// The notices in the transcript.
    fn notices(&self) -> Vec<String> {
        self.task
            .record()
            .messages
            .iter()
            .filter_map(|m| match m {
                UiMessage::Notice { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }
}

/// A workspace of `files` where INT-1 owns `src/**` and INT-2 everything, and a task on it
/// (under INT-1) playing `steps`; in the window (`interactive`) an answer without a call ends
/// the turn.
fn setup_in(files: &[(&str, &str)], steps: Vec<Step>, interactive: bool) -> Setup {
    let s = setup(files, steps);
    let env = AgentEnv {
        interactive,
        ..s.env.with_provider(s.env.provider.clone())
    };
    Setup {
        env: Arc::new(env),
        ..s
    }
}

/// A workspace of `files` where INT-1 owns `src/**` and INT-2 everything, and a task on it
/// (under INT-1) playing `steps`.
fn setup(files: &[(&str, &str)], steps: Vec<Step>) -> Setup {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    let intents = "active_intents:\n  - id: INT-1\n    name: Src\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\"]\n  - id: INT-2\n    name: All\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n";
    for (path, text) in files
        .iter()
        .chain(&[(".orchestration/active_intents.yaml", intents)])
    {
        let abs = root.join(path);
        std::fs::create_dir_all(abs.parent().expect("parent")).expect("mkdir");
        std::fs::write(abs, text).expect("write");
    }
    let dirs = crate::settings::AppDirs {
        config: tmp.path().join("config"),
        data: tmp.path().join("data"),
    };
    let gov = Arc::new(Governance::new(Workspace::new(&root).expect("ws"), &dirs));
    gov.project_check
        .set_cache_dir(Some(tmp.path().join("cache")));
    let store = Arc::new(TaskStore::new(&dirs.data, gov.root()));
    let env = Arc::new(AgentEnv {
        gov: gov.clone(),
        provider: Arc::new(Script {
            plays: vec![("WORK", steps)],
            met: AtomicUsize::new(0),
            asked: Mutex::default(),
        }),
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
        interactive: false,
        render_interval: Duration::from_millis(50),
        context: crate::context::ContextConfig::default(),
        budget: Default::default(),
        profiles: None,
    });
    let task = TaskHandle::create(store, "ws", "WORK", "test/script");
    task.select_intent(&gov.intents.snapshot(), "INT-1")
        .expect("select");
    env.tasks.insert(task.clone());
    Setup { tmp, env, task }
}

async fn run(s: &Setup) -> TaskEnd {
    let end = run_task(s.env.clone(), s.task.clone(), Some("WORK".into()));
    tokio::time::timeout(Duration::from_secs(300), end)
        .await
        .expect("the task ended")
}

fn write(path: &str, content: &str) -> Step {
    Step::Call(
        "write_to_file",
        json!({"path": path, "content": content, "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"}),
    )
}

fn complete(result: &str) -> Step {
    Step::Call("attempt_completion", json!({"result": result}))
}

fn read(path: &str) -> Step {
    Step::Call("read_file", json!({"path": path}))
}

fn confined() -> bool {
    let here = crate::sandbox::Confinement::detect();
    if !here.is_confined() {
        eprintln!("commands cannot be confined here: the check does not run");
    }
    here.is_confined()
}

const MANIFEST: &str =
    "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const LOCK: &str = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"fixture\"\nversion = \"0.1.0\"\n";
/// Already there before the task: a function never used (a warning `cargo check` prints).
const OLD: &str = "pub fn never_called() {}\n";

#[tokio::test]
async fn a_type_error_the_edit_brings_is_sent_back_and_fixed_and_an_old_warning_is_not() {
    if !confined() {
        return;
    }
    let broken =
        "mod old;\n\nfn main() {\n    let n: u32 = \"three\";\n    println!(\"{n}\");\n}\n";
    let fixed = "mod old;\n\nfn main() {\n    let n: u32 = 3;\n    println!(\"{n}\");\n}\n";
    let s = setup(
        &[
            ("Cargo.toml", MANIFEST),
            ("Cargo.lock", LOCK),
            ("src/main.rs", "mod old;\n\nfn main() {}\n"),
            ("src/old.rs", OLD),
        ],
        vec![
            read("src/main.rs"),
            write("src/main.rs", broken),
            complete("done"),
            write("src/main.rs", fixed),
            complete("fixed"),
        ],
    );
    let end = run(&s).await;
    assert_eq!(
        end,
        TaskEnd::Completed("fixed".into()),
        "{:#?}\n{:#?}",
        s.notices(),
        s.env.gov.project_check.last()
    );
    let notes = s.notes();
    assert_eq!(notes.len(), 1, "{notes:#?}\n{:#?}", s.notices());
    let note = &notes[0];
    assert!(
        note.contains("src/main.rs:4:") && note.contains("mismatched types"),
        "{note}"
    );
    assert!(note.contains("new problems (1 error)"), "{note}");
    assert!(note.contains("attempt_completion"), "{note}");
    assert!(
        !note.contains("old.rs"),
        "an old problem was reported: {note}"
    );
    let notices = s.notices();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("found new problems after the agent's changes (1 error)")),
        "{notices:#?}"
    );
    // The check wrote nothing into the workspace (its build is in the cache).
    assert!(!s.root().join("target").exists());
    assert!(s.tmp.path().join("cache/build/target").is_dir());
    // `@problems` attaches what the last check found: the old warning, and no error.
    let last = s.env.gov.project_check.last_text().expect("a last check");
    let ignore = crate::hooks::ignore_list::IntentIgnore::empty();
    let attached = attach_mentions(&s.env.gov.workspace, &ignore, Some(&last), "@problems");
    let text = attached[0].text.clone().expect("attached");
    assert!(text.contains("The project's last check"), "{text}");
    assert!(
        text.contains("src/old.rs") && text.contains("warning"),
        "{text}"
    );
    assert!(!text.contains("mismatched"), "{text}");
}

#[tokio::test]
async fn the_model_is_sent_back_twice_at_most_per_message() {
    if !confined() {
        return;
    }
    let check = r#"{"command": "cat src/*.txt", "format": "other"}"#;
    let problem = |n: u32| format!("src/p.txt:1:1: error: problem {n}\n");
    let s = setup(
        &[(".mandate/check.json", check), ("src/p.txt", "")],
        vec![
            read("src/p.txt"),
            write("src/p.txt", &problem(1)),
            complete("one"),
            write("src/p.txt", &problem(2)),
            complete("two"),
            write("src/p.txt", &problem(3)),
            complete("three"),
        ],
    );
    let end = run(&s).await;
    assert_eq!(
        end,
        TaskEnd::Completed("three".into()),
        "{:#?}",
        s.task.record().conversation
    );
    let notes = s.notes();
    assert_eq!(notes.len(), 2, "{notes:#?}");
    assert!(notes[0].contains("problem 1") && notes[1].contains("problem 2"));
    assert!(
        s.notices()
            .iter()
            .any(|n| n.contains("is not sent back again") && n.contains("problem 3")),
        "{:#?}",
        s.notices()
    );
}

#[tokio::test]
async fn the_baseline_is_read_before_the_first_change() {
    if !confined() {
        return;
    }
    // A slow check: a write that did not wait for it would be in the baseline, and its
    // problem never new.
    let check = r#"{"command": "sleep 1; cat src/*.txt", "format": "other"}"#;
    let s = setup(
        &[
            (".mandate/check.json", check),
            ("src/old.txt", "src/old.txt:1:1: error: already broken\n"),
        ],
        vec![
            write(
                "src/new.txt",
                "src/new.txt:1:1: error: brought by the edit\n",
            ),
            complete("done"),
            complete("done again"),
        ],
    );
    assert_eq!(run(&s).await, TaskEnd::Completed("done again".into()));
    let notes = s.notes();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].contains("brought by the edit"), "{}", notes[0]);
    assert!(!notes[0].contains("already broken"), "{}", notes[0]);
    assert!(
        s.notices()
            .iter()
            .any(|n| n.contains("the change waits for it")),
        "{:#?}",
        s.notices()
    );
}

#[tokio::test]
async fn a_check_that_cannot_run_is_said_once_and_never_blocks_the_turn() {
    if !confined() {
        return;
    }
    let check = r#"{"command": "no-such-checker --strict"}"#;
    let s = setup(
        &[(".mandate/check.json", check)],
        vec![write("src/a.txt", "a\n"), complete("done")],
    );
    assert_eq!(run(&s).await, TaskEnd::Completed("done".into()));
    assert!(s.notes().is_empty());
    let said: Vec<String> = s
        .notices()
        .into_iter()
        .filter(|n| n.contains("did not give an answer"))
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(said[0].contains("no-such-checker"), "{}", said[0]);
}

#[tokio::test]
async fn the_persons_check_file_is_not_the_agents_to_write() {
    let check = "{\"command\": \"cargo check --message-format=short\"}\n";
    let s = setup(
        &[(".mandate/check.json", check)],
        vec![
            Step::Call("select_active_intent", json!({"intent_id": "INT-2"})),
            Step::Call(
                "write_to_file",
                json!({"path": ".mandate/check.json", "content": "{\"command\": \"off\"}", "intent_id": "INT-2", "mutation_class": "INTENT_EVOLUTION"}),
            ),
            Step::Call(
                "execute_command",
                json!({"command": "echo '{\"command\": \"off\"}' > .mandate/check.json"}),
            ),
            complete("done"),
        ],
    );
    run(&s).await;
    let results: Vec<(String, bool)> = s
        .task
        .record()
        .conversation
        .iter()
        .filter_map(|m| match m {
            ChatMessage::ToolResult {
                name,
                content,
                is_error,
                ..
            } if name != "select_active_intent" && name != "attempt_completion" => {
                Some((content.clone(), *is_error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(results.iter().all(|(_, error)| *error), "{results:#?}");
    assert!(results[0].0.contains("PROTECTED_PATH"), "{}", results[0].0);
    assert_eq!(
        std::fs::read_to_string(s.root().join(".mandate/check.json")).expect("read"),
        check
    );
}

#[tokio::test]
async fn in_the_window_an_answer_without_a_call_ends_the_turn_after_the_check() {
    if !confined() {
        return;
    }
    let check = r#"{"command": "cat src/*.txt", "format": "other"}"#;
    let s = setup_in(
        &[(".mandate/check.json", check), ("src/b.txt", "")],
        vec![
            write("src/a.txt", "src/a.txt:3:1: warning: left over\n"),
            Step::Say("Done."),
            write("src/a.txt", "clean\n"),
            Step::Say("Fixed."),
        ],
        true,
    );
    assert_eq!(run(&s).await, TaskEnd::Idle);
    let notes = s.notes();
    assert_eq!(notes.len(), 1, "{notes:#?}\n{:#?}", s.notices());
    assert!(
        notes[0].contains("src/a.txt:3:1: warning: left over") && notes[0].contains("answer again"),
        "{}",
        notes[0]
    );
    // The last check found nothing: that is the baseline now.
    let last = s.env.gov.project_check.last().expect("last");
    assert!(last.problems.is_empty(), "{last:?}");
}

#[tokio::test]
async fn the_check_cannot_forge_what_problems_attaches_later() {
    if !confined() {
        return;
    }
    // Code the check runs (a build script, a plugin) writing beside its build, where the kept
    // result is.
    let line = "mkdir -p \"$CARGO_TARGET_DIR\"; cat src/*.txt; \
                echo '{}' > \"$CARGO_TARGET_DIR/../../last.json.new\"; true";
    let check = json!({"command": line, "format": "other"}).to_string();
    let s = setup(
        &[(".mandate/check.json", check.as_str()), ("src/b.txt", "")],
        vec![
            write("src/a.txt", "src/a.txt:1:1: error: real\n"),
            complete("done"),
            complete("done again"),
        ],
    );
    assert_eq!(run(&s).await, TaskEnd::Completed("done again".into()));
    // Its own build directory it may write: the check did run there; not beside it.
    let cache = s.tmp.path().join("cache");
    assert!(cache.join("build/target").is_dir());
    assert!(!cache.join("last.json.new").exists());
    let kept = std::fs::read_to_string(cache.join("last.json")).expect("kept");
    let kept: LastCheck = serde_json::from_str(&kept).expect("json");
    let messages: Vec<&str> = kept.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(messages, ["real"]);
}

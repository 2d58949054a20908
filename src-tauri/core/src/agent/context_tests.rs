//! The turn loop against a model that enforces its window: long tasks that are several times
//! the window finish, nothing is lost, and a refusal is answered by sending less.
//! (The same behaviour over the real wire formats is tested in tests/tests/long_tasks.rs.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::llm::{
    ChatMessage, LlmError, ModelEvent, ModelRequest, ModelStream, Provider, TokenUsage,
};
use crate::protocol::{ApprovalPolicy, Event, ModelOverride, UiMessage};
use crate::workspace::Workspace;

/// What the model saw and did.
#[derive(Default)]
struct Seen {
    requests: usize,
    over_window: usize,
    summaries: usize,
    largest: u64,
    step: usize,
    final_request: String,
}

/// A model with a window: refuses what does not fit as a provider would, answers summary
/// requests by copying the FACT lines it was sent, and otherwise reads `files` one by one,
/// then completes saying whether the facts of the first read were still in its request.
struct WindowedModel {
    window: u64,
    /// Whether the refusal names the window.
    names_limit: bool,
    files: usize,
    /// Summary requests fail (the circuit breaker's case).
    summaries_fail: bool,
    seen: Mutex<Seen>,
}

/// A secret Mandate holds (as if it were the person's API key).
const SECRET: &str = "sk-context-test-secret-0042";

fn size(r: &ModelRequest) -> u64 {
    let body = json!({
        "system": r.system,
        "messages": r.messages,
        "tools": r.tools,
    })
    .to_string();
    (body.len() as u64).div_ceil(4)
}

fn answer(events: Vec<ModelEvent>) -> ModelStream {
    Box::pin(stream::iter(events.into_iter().map(Ok)))
}

fn tool(id: String, name: &str, args: serde_json::Value) -> Vec<ModelEvent> {
    vec![
        ModelEvent::ToolCallStart {
            index: 0,
            id,
            name: name.into(),
        },
        ModelEvent::ToolCallArgs {
            index: 0,
            delta: args.to_string(),
        },
    ]
}

#[async_trait]
impl Provider for WindowedModel {
    fn model_id(&self) -> String {
        "test/windowed".into()
    }
    fn base_url(&self) -> String {
        "http://127.0.0.1:9".into()
    }
    async fn stream(&self, r: &ModelRequest) -> Result<ModelStream, LlmError> {
        let tokens = size(r);
        let mut seen = self.seen.lock().expect("seen");
        seen.requests += 1;
        seen.largest = seen.largest.max(tokens);
        if tokens + u64::from(r.max_tokens) > self.window {
            seen.over_window += 1;
            return Err(LlmError::ContextTooLong {
                status: 400,
                limit: self.names_limit.then_some(self.window),
                requested: self.names_limit.then_some(tokens + u64::from(r.max_tokens)),
                message: format!(
                    "prompt is too long: {tokens} tokens > {} maximum",
                    self.window
                ),
            });
        }
        assert!(
            crate::context::history::is_well_formed(&r.messages),
            "a malformed history was sent: {:?}",
            r.messages
        );
        let usage = TokenUsage {
            input_tokens: tokens,
            output_tokens: 20,
            ..TokenUsage::default()
        };
        let text = serde_json::to_string(&r.messages).unwrap_or_default();
        let mut events = if r.tools.is_empty() || r.forbid_tools {
            seen.summaries += 1;
            if self.summaries_fail {
                return Err(LlmError::Server {
                    status: 500,
                    retries: 0,
                    message: "summary unavailable".into(),
                });
            }
            // Every fact line the request carried, once (the lines only, as a model would).
            let mut facts: Vec<&str> = text
                .split("\\n")
                .filter_map(|l| l.find("FACT-").map(|at| &l[at..]))
                .filter(|l| l.starts_with("FACT-ALPHA: "))
                .map(|l| l.split('"').next().unwrap_or(l))
                .collect();
            facts.sort();
            facts.dedup();
            // A model may repeat a secret it saw; the summary must not keep it.
            vec![ModelEvent::TextDelta(format!(
                "## Goal\nRead every doc.\n## Facts\n{}\nThe key is {SECRET}.\n## Next\nRead on.",
                facts.join("\n")
            ))]
        } else {
            seen.step += 1;
            let step = seen.step;
            let id = format!("call_{step}");
            if step == 1 {
                tool(id, "select_active_intent", json!({"intent_id": "INT-1"}))
            } else if step <= self.files + 1 {
                let n = step - 2;
                tool(
                    id,
                    "read_file",
                    json!({"path": format!("docs/big_{n}.txt")}),
                )
            } else {
                seen.final_request = text.clone();
                let kept = text.contains("FACT-ALPHA: the build uses cargo")
                    && text.contains("read every doc");
                let result = if kept { "FACTS KEPT" } else { "FACTS LOST" };
                tool(id, "attempt_completion", json!({ "result": result }))
            }
        };
        events.push(ModelEvent::Usage(usage));
        events.push(ModelEvent::Finished {
            stop_reason: "tool_use".into(),
        });
        Ok(answer(events))
    }
    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        Ok(Vec::new())
    }
}

use super::test_support::{Events, Person};

struct Run {
    _tmp: tempfile::TempDir,
    model: Arc<WindowedModel>,
    task: Arc<TaskHandle>,
    end: TaskEnd,
    events: Arc<Events>,
}

struct Setup {
    tmp: tempfile::TempDir,
    model: Arc<WindowedModel>,
    env: Arc<AgentEnv>,
    task: Arc<TaskHandle>,
    events: Arc<Events>,
}

const OBJECTIVE: &str = "Objective: read every doc and say what the build uses";

fn setup(model: WindowedModel, window: Option<u64>) -> Setup {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    for n in 0..model.files {
        let mut text = String::new();
        if n == 0 {
            text.push_str("FACT-ALPHA: the build uses cargo\n");
        }
        for line in 0..240 {
            text.push_str(&format!(
                "doc {n} line {line}: some words about the code here\n"
            ));
        }
        std::fs::write(root.join(format!("docs/big_{n}.txt")), text).expect("doc");
    }
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "active_intents:\n  - id: INT-1\n    name: Docs\n    status: IN_PROGRESS\n    owned_scope: [\"docs/**\"]\n",
    )
    .expect("intents");
    let dirs = crate::settings::AppDirs {
        config: tmp.path().join("config"),
        data: tmp.path().join("data"),
    };
    let gov = Arc::new(Governance::new(Workspace::new(&root).expect("ws"), &dirs));
    let store = Arc::new(TaskStore::new(&dirs.data, gov.root()));
    let model = Arc::new(model);
    let events = Arc::new(Events::default());
    let mut context = crate::context::ContextConfig::default();
    context.model_override = ModelOverride {
        context_window: window,
        ..ModelOverride::default()
    };
    context.learned = Arc::new(crate::context::LearnedWindows::open(&dirs.data));
    let env = Arc::new(AgentEnv {
        gov,
        provider: model.clone(),
        sink: events.clone(),
        interaction: Arc::new(Person::away()),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(crate::tools::registry()),
        approval: ApprovalPolicy::default(),
        custom_instructions: String::new(),
        max_turns: Some(400),
        interactive: false,
        render_interval: Duration::from_millis(50),
        context,
        budget: Default::default(),
        profiles: None,
    });
    let task = TaskHandle::create(store, "ws", OBJECTIVE, "test/windowed");
    Setup {
        tmp,
        model,
        env,
        task,
        events,
    }
}

async fn run(model: WindowedModel, window: Option<u64>) -> Run {
    crate::secrets::remember(&crate::secrets::Secret::new(SECRET));
    let s = setup(model, window);
    let end = run_task(s.env.clone(), s.task.clone(), Some(OBJECTIVE.into())).await;
    Run {
        _tmp: s.tmp,
        model: s.model,
        task: s.task,
        end,
        events: s.events,
    }
}

fn model(window: u64, files: usize) -> WindowedModel {
    WindowedModel {
        window,
        names_limit: true,
        files,
        summaries_fail: false,
        seen: Mutex::default(),
    }
}

#[tokio::test]
async fn a_task_many_times_the_window_finishes_without_an_over_window_request_and_keeps_its_facts()
{
    let r = run(model(16_384, 60), Some(16_384)).await;
    let seen = r.model.seen.lock().expect("seen");
    assert_eq!(
        r.end,
        TaskEnd::Completed("FACTS KEPT".into()),
        "{}",
        seen.final_request
    );
    assert_eq!(
        seen.over_window, 0,
        "the window was known: nothing over it was sent"
    );
    let record = r.task.record();
    assert!(
        record.context.condensations.len() >= 3,
        "{:?}",
        record.context
    );
    for c in &record.context.condensations {
        assert!(!c.summary.contains(SECRET), "{}", c.summary);
    }
    // The whole conversation is kept with the task: every read's result is there.
    let results = record
        .conversation
        .iter()
        .filter(|m| matches!(m, ChatMessage::ToolResult { name, .. } if name == "read_file"))
        .count();
    assert_eq!(results, 60);
    let total: u64 = record
        .conversation
        .iter()
        .map(crate::context::tokens::message)
        .sum();
    assert!(
        total > 4 * 16_384,
        "the task was {total} tokens, several windows"
    );
    // The window shows each condensing as a card, and the gauge.
    let cards = record
        .messages
        .iter()
        .filter(|m| matches!(m, UiMessage::Condensed { tokens_before, tokens_after, .. } if tokens_after < tokens_before))
        .count();
    assert_eq!(cards, record.context.condensations.len());
    let gauge = r.task.summary().context.expect("gauge");
    assert_eq!(gauge.window_tokens, 16_384);
    assert!(gauge.used_tokens <= gauge.usable_tokens, "{gauge:?}");
    // Condensing loops are what users hate: never more than one in two turns.
    let notices: Vec<String> = r
        .events
        .0
        .lock()
        .expect("events")
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert!(
        seen.summaries <= seen.step / 2 + 1 && notices.is_empty(),
        "{notices:?}\n{} summaries for {} steps",
        seen.summaries,
        seen.step
    );
}

#[tokio::test]
async fn an_unknown_window_costs_at_most_one_refused_request_and_is_remembered() {
    let r = run(model(16_384, 60), None).await;
    let seen = r.model.seen.lock().expect("seen");
    assert_eq!(r.end, TaskEnd::Completed("FACTS KEPT".into()));
    assert_eq!(seen.over_window, 1, "learned from the one refusal");
    let retries = r
        .events
        .0
        .lock()
        .expect("events")
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::ContextRetry {
                    limit_tokens: Some(16_384),
                    ..
                }
            )
        })
        .count();
    assert_eq!(retries, 1);
    let learned = crate::context::LearnedWindows::open(&r._tmp.path().join("data"));
    assert_eq!(
        learned.get(&crate::context::LearnedWindows::key(
            "test/windowed",
            "http://127.0.0.1:9"
        )),
        Some(16_384)
    );
}

#[tokio::test]
async fn a_refusal_that_names_no_limit_is_answered_smaller_each_time() {
    let mut m = model(16_384, 60);
    m.names_limit = false;
    let r = run(m, None).await;
    let seen = r.model.seen.lock().expect("seen");
    assert_eq!(r.end, TaskEnd::Completed("FACTS KEPT".into()));
    assert!(seen.over_window <= 3, "{}", seen.over_window);
}

#[tokio::test]
async fn when_summaries_keep_failing_the_person_is_asked_and_nothing_over_the_window_is_sent() {
    let mut m = model(16_384, 60);
    m.summaries_fail = true;
    let r = run(m, Some(16_384)).await;
    let seen = r.model.seen.lock().expect("seen");
    // Nobody answers yes: the task waits for the person after three failures.
    assert!(
        matches!(r.end, TaskEnd::Paused(ref m) if m.contains("Condensing failed")),
        "{:?}",
        r.end
    );
    assert_eq!(seen.summaries, 3);
    assert_eq!(seen.over_window, 0);
}

#[tokio::test]
async fn condensing_by_hand_a_conversation_too_small_to_shrink_says_so_and_changes_nothing() {
    let s = setup(model(8_192, 1), Some(8_192));
    s.task.begin_turn(s.env.sink.as_ref(), "hello".into(), None);
    let end = condense_task(s.env.clone(), s.task.clone()).await;
    assert_eq!(end, TaskEnd::Idle);
    let record = s.task.record();
    assert!(record.context.condensations.is_empty());
    assert!(record.messages.iter().any(
        |m| matches!(m, UiMessage::Notice { text, .. } if text.starts_with("Not condensed:"))
    ));
    assert_eq!(
        s.model.seen.lock().expect("seen").summaries,
        0,
        "no summary was asked"
    );
    assert!(!s.task.is_running());
}

#[tokio::test]
async fn a_result_too_big_for_the_window_is_cut_and_the_whole_is_read_back_by_range() {
    let s = setup(model(8_192, 1), Some(8_192));
    let output: String = (1..=3_000).map(|i| format!("output line {i}\n")).collect();
    let call = crate::llm::ToolCall {
        id: "call_big".into(),
        name: "execute_command".into(),
        arguments: "{}".into(),
    };
    let cut = context_steps::fit_result(&s.env, &s.task, &call, output.clone()).await;
    assert!(cut.len() < output.len() / 4, "{}", cut.len());
    assert!(cut.starts_with("output line 1\n") && cut.ends_with("output line 3000\n"));
    assert!(
        cut.contains("read_tool_output {\"call_id\": \"call_big\""),
        "{cut}"
    );
    let read = crate::llm::ToolCall {
        id: "call_read".into(),
        name: "read_tool_output".into(),
        arguments: json!({"call_id": "call_big", "start_line": 1500, "end_line": 1502}).to_string(),
    };
    let result = dispatch(&s.env, &s.task, &read, &CancellationToken::new()).await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        result.content,
        "1500 | output line 1500\n1501 | output line 1501\n1502 | output line 1502\n"
    );
    let unknown = crate::llm::ToolCall {
        id: "call_read2".into(),
        name: "read_tool_output".into(),
        arguments: json!({"call_id": "../../etc/passwd"}).to_string(),
    };
    let result = dispatch(&s.env, &s.task, &unknown, &CancellationToken::new()).await;
    assert!(
        result.is_error && result.content.contains("no kept output"),
        "{}",
        result.content
    );
}

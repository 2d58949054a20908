//! A whole working day on any model: `mandate run` against a provider that behaves like a real
//! one (it enforces its window, refuses malformed histories in the real APIs' words, caches
//! prefixes and reports usage) over both wire formats, on tasks many times the window.

use std::time::Duration;

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{mandate, mandate_within, task_record, Output};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::long_task::{documents, FACT, INTENTS, OBJECTIVE};
use mandate_tests::real_provider::{
    Counters, LongTaskPlan, Overflow, ProviderConfig, RealProvider, Rejection, WireFormat,
};
use mandate_tests::sse::{anthropic, openai};
use serde_json::json;

struct Task {
    wire: WireFormat,
    window: u64,
    /// Told to Mandate with --context-window; otherwise it learns it from the refusal.
    known: bool,
    overflow: Overflow,
    reads: usize,
    doc_tokens: usize,
    extra: &'static [&'static str],
}

/// A long task at `window`, told to Mandate, refused with figures, reading `reads` documents
/// (1,200 tokens each at 16k, 4,000 above).
fn task(wire: WireFormat, window: u64, reads: usize) -> Task {
    Task {
        wire,
        window,
        known: true,
        overflow: Overflow::Figures,
        reads,
        doc_tokens: if window <= 16_384 { 1_200 } else { 4_000 },
        extra: &[],
    }
}

struct Ran {
    out: Output,
    counters: Counters,
    record: serde_json::Value,
    _ws: tempfile::TempDir,
    _dirs: UserDirs,
}

async fn run(t: Task) -> Ran {
    let files = documents(t.reads, t.doc_tokens);
    let file_refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let ws = workspace(Some(INTENTS), &file_refs);
    let dirs = UserDirs::new();
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    let plan =
        LongTaskPlan::new("INT-001", &paths, OBJECTIVE, &[FACT]).writing_every(10, "docs/notes");
    let provider = RealProvider::start(
        ProviderConfig::new(t.wire, t.window).overflow(t.overflow),
        plan,
    )
    .await;
    let (kind, base) = match t.wire {
        WireFormat::Anthropic => ("anthropic", provider.base_url()),
        WireFormat::OpenAi => ("openai", format!("{}/v1", provider.base_url())),
    };
    let window = t.window.to_string();
    let mut args = vec![
        "run",
        "--workspace",
        ws.path().to_str().expect("utf-8 path"),
        "--provider",
        kind,
        "--base-url",
        &base,
        "--model",
        "local-model",
        "--api-key-env",
        "LONG_TASK_KEY",
        "--approve",
        "allow",
        "--max-turns",
        "1000",
        "--json",
    ];
    if t.known {
        args.extend(["--context-window", &window]);
    }
    args.extend(t.extra.iter().copied());
    args.push(OBJECTIVE);
    let out = mandate_within(
        &args,
        &dirs,
        &[("LONG_TASK_KEY", "sk-test")],
        Duration::from_secs(600),
    )
    .await;
    let counters = provider.counters();
    let id = out.task_id().expect("a task was started");
    let record = task_record(&dirs, &id);
    Ran {
        out,
        counters,
        record,
        _ws: ws,
        _dirs: dirs,
    }
}

/// What every long task must show: it completed knowing its facts, no request was malformed,
/// the whole conversation is kept, and condensing happened and was said.
fn finished_whole(r: &Ran, reads: usize) {
    assert_eq!(
        r.out.code,
        Some(0),
        "{}\n{}",
        r.out.stderr,
        r.out
            .stdout
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let verdict = r
        .counters
        .facts
        .clone()
        .expect("the plan checked its facts");
    assert!(verdict.all_kept(), "{verdict:?}");
    assert_eq!(r.counters.rejected_for(Rejection::MalformedHistory), 0);
    let results = r.record["conversation"]
        .as_array()
        .expect("conversation")
        .iter()
        .filter(|m| m["role"] == "tool_result" && m["name"] == "read_file")
        .count();
    assert_eq!(results, reads, "every read stays in the task's history");
    let failed: Vec<String> = r
        .out
        .events_of("tool_call_finished")
        .iter()
        .filter(|e| e["call"]["status"] != "succeeded")
        .map(|e| e["call"]["summary"].to_string())
        .collect();
    assert!(failed.is_empty(), "every call succeeded: {failed:?}");
    let condensed = r.out.events_of("condensing").len();
    assert!(condensed >= 2, "condensed {condensed} times");
    assert_eq!(
        r.record["context"]["condensations"]
            .as_array()
            .map(Vec::len),
        Some(condensed)
    );
}

#[tokio::test]
async fn a_200_step_task_on_a_16k_window_finishes_over_the_openai_format() {
    let r = run(task(WireFormat::OpenAi, 16_384, 200)).await;
    finished_whole(&r, 200);
    assert_eq!(r.counters.rejected_for(Rejection::ContextLength), 0);
    assert!(r.counters.largest_request_tokens <= 16_384);
}

#[tokio::test]
async fn a_200_step_task_on_a_16k_window_finishes_over_the_anthropic_format() {
    let r = run(task(WireFormat::Anthropic, 16_384, 200)).await;
    finished_whole(&r, 200);
    assert_eq!(r.counters.rejected_for(Rejection::ContextLength), 0);
}

#[tokio::test]
async fn a_200_step_task_on_a_200k_window_finishes_and_the_cache_pays_for_it() {
    let r = run(task(WireFormat::Anthropic, 200_000, 200)).await;
    finished_whole(&r, 200);
    assert_eq!(r.counters.rejected_for(Rejection::ContextLength), 0);
    let c = &r.counters;
    let all_input = c.input_tokens + c.cache_read_tokens + c.cache_write_tokens;
    assert!(
        c.cache_read_tokens * 2 > all_input,
        "most input is read from the cache: {c:?}"
    );
    let usage = &r.record["summary"]["usage"];
    assert_eq!(
        usage["cache_read_tokens"].as_u64(),
        Some(c.cache_read_tokens)
    );
}

#[tokio::test]
async fn a_200_step_task_on_a_200k_window_finishes_over_the_openai_format() {
    let r = run(task(WireFormat::OpenAi, 200_000, 200)).await;
    finished_whole(&r, 200);
    assert_eq!(r.counters.rejected_for(Rejection::ContextLength), 0);
    assert!(
        r.counters.cache_read_tokens > 0,
        "automatic prefix caching hit"
    );
}

#[tokio::test]
async fn an_unknown_window_is_learned_from_one_refusal_and_remembered() {
    for wire in [WireFormat::OpenAi, WireFormat::Anthropic] {
        let r = run(Task {
            known: false,
            ..task(wire, 16_384, 60)
        })
        .await;
        finished_whole(&r, 60);
        assert_eq!(
            r.counters.rejected_for(Rejection::ContextLength),
            1,
            "{wire:?}: at most one over-window request where the window is not known"
        );
        let retries = r.out.events_of("context_retry");
        assert_eq!(retries.len(), 1, "{wire:?}");
        assert_eq!(retries[0]["limit_tokens"], 16_384);
        let learned =
            std::fs::read_to_string(r._dirs.data().join("model-windows.json")).expect("learned");
        assert!(learned.contains("16384"), "{learned}");
    }
}

#[tokio::test]
async fn a_refusal_without_a_figure_is_answered_smaller_each_time() {
    let r = run(Task {
        known: false,
        overflow: Overflow::NoFigure,
        ..task(WireFormat::Anthropic, 16_384, 50)
    })
    .await;
    finished_whole(&r, 50);
    let refused = r.counters.rejected_for(Rejection::RequestTooLarge)
        + r.counters.rejected_for(Rejection::ContextLength);
    assert!((1..=3).contains(&refused), "{refused} refusals");
}

#[tokio::test]
async fn thinking_goes_back_signed_inside_the_tool_loop_and_never_into_the_ledger() {
    let r = run(Task {
        extra: &["--thinking-budget", "2048"],
        ..task(WireFormat::Anthropic, 16_384, 30)
    })
    .await;
    finished_whole(&r, 30);
    assert_eq!(r.counters.rejected_for(Rejection::Thinking), 0);
    let conversation = r.record["conversation"].as_array().expect("conversation");
    let signed = conversation
        .iter()
        .filter(|m| {
            m["thinking"][0]["signature"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
        .count();
    assert!(signed >= 30, "{signed} signed thinking blocks kept");
    let shown = r.record["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["kind"] == "thinking")
        .count();
    assert!(shown >= 30, "{shown} thinking rows in the transcript");
    let writes: Vec<String> = r
        .out
        .events_of("tool_call_finished")
        .iter()
        .filter(|e| e["call"]["tool"] == "write_to_file")
        .map(|e| e["call"].to_string())
        .collect();
    let ledger = std::fs::read_to_string(r._ws.path().join(".orchestration/agent_trace.jsonl"))
        .unwrap_or_else(|e| panic!("the task wrote notes, so the ledger exists ({e}): {writes:?}"));
    assert!(
        !ledger.contains("signature") && !ledger.contains("thinking"),
        "{ledger}"
    );
}

#[tokio::test]
async fn an_answer_cut_at_the_output_limit_is_said_and_its_cut_call_is_not_run() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let select = anthropic::turn()
        .tool_use(
            "toolu_1",
            "select_active_intent",
            json!({"intent_id": "INT-001"}),
        )
        .reply();
    let cut = anthropic::turn()
        .text("I write the whole file now.")
        .tool_use(
            "toolu_2",
            "write_to_file",
            json!({"path": "docs/long.md", "content": "# Lo"}),
        )
        .stop_reason("max_tokens")
        .reply();
    let done = anthropic::turn()
        .tool_use(
            "toolu_3",
            "attempt_completion",
            json!({"result": "split it"}),
        )
        .reply();
    let server = ScriptedServer::start(vec![select, cut, done]).await;
    let base = server.base_url();
    let args = [
        "run",
        "--workspace",
        ws.path().to_str().expect("path"),
        "--provider",
        "anthropic",
        "--base-url",
        &base,
        "--model",
        "local-model",
        "--api-key-env",
        "CUT_KEY",
        "--approve",
        "allow",
        "--context-window",
        "16384",
        "--json",
        "write the long file",
    ];
    let out = mandate(&args, &dirs, &[("CUT_KEY", "sk-test")]).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(
        !ws.path().join("docs/long.md").exists(),
        "the cut call was not run"
    );
    let cuts = out.events_of("output_cut");
    assert_eq!(cuts.len(), 1);
    // The output reserved is a fifth of a 16k window, within what the model can write.
    assert_eq!(cuts[0]["max_tokens"], 3_276);
    let third = server.requests()[2].json();
    assert_eq!(third["max_tokens"], 3_276);
    let results: Vec<&serde_json::Value> = third["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_2")
        .collect();
    assert_eq!(results.len(), 1);
    let text = results[0]["content"].as_str().expect("text");
    assert!(
        text.contains("INVALID_ARGUMENTS") && text.contains("cut at the output limit"),
        "{text}"
    );
    assert_eq!(results[0]["is_error"], true);
    let notices = out
        .events_of("message_added")
        .into_iter()
        .filter(|e| e["message"]["kind"] == "notice")
        .count();
    assert_eq!(notices, 1, "the person is told once");
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens_and_the_effort_asked_for() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let done = openai::turn()
        .tool_call("c1", "attempt_completion", json!({"result": "done"}))
        .reply();
    let server = ScriptedServer::start(vec![done]).await;
    let base = format!("{}/v1", server.base_url());
    let args = [
        "run",
        "--workspace",
        ws.path().to_str().expect("path"),
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--model",
        "o4-mini",
        "--reasoning-effort",
        "high",
        "--json",
        "go",
    ];
    let out = mandate(&args, &dirs, &[]).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let body = server.requests()[0].json();
    assert_eq!(body["reasoning_effort"], "high");
    assert!(body.get("max_tokens").is_none(), "{body}");
    // o4-mini: a 200k window, 100k output; a fifth of the window is reserved, at most 32k.
    assert_eq!(body["max_completion_tokens"], 32_000);
}

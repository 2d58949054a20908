//! What a long task costs: `mandate run` (the binary `MANDATE_BIN` names) on a 50-step task
//! at a 16k and a 200k window, against a provider on loopback that enforces its window, caches
//! prefixes as Anthropic does and reports usage. Each figure is set against sending the whole
//! history every turn, the way the agent did before it managed its context, worked out in the
//! same run from the conversation the task kept. Three runs each; median (min–max).
//! Prints rows of the table `make bench` shows.

use std::time::{Duration, Instant};

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::long_task::{documents, FACT, INTENTS, OBJECTIVE};
use mandate_tests::real_provider::{
    Counters, LongTaskPlan, Overflow, ProviderConfig, RealProvider, WireFormat,
};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

const STEPS: usize = 50;
const RUNS: usize = 3;

struct Figures {
    /// Input tokens Mandate sent (every kind).
    sent: u64,
    /// Input billed in full-price tokens: uncached + 1.25 × cache writes + 0.1 × cache reads.
    billed: f64,
    /// The same requests' input at the full price.
    uncached: u64,
    /// The whole history, every turn, at the full price.
    whole: u64,
    summaries: u64,
    turns: u64,
    /// Wall time from each `condensing` event to the card that follows it.
    condensing: Duration,
    total: Duration,
}

/// The whole-history figure: at each model turn, everything said so far (as the wire would
/// carry it, bytes / 4), plus the system prompt and tools the first request carried.
fn whole_history(record: &Value, fixed: u64) -> u64 {
    let conversation = record["conversation"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut total = 0u64;
    let mut so_far = 0u64;
    for m in &conversation {
        if m["role"] == "assistant" {
            total += fixed + so_far;
        }
        so_far += (m.to_string().len() as u64).div_ceil(4);
    }
    total
}

async fn once(wire: WireFormat, window: u64, doc_tokens: usize) -> anyhow::Result<Figures> {
    let files = documents(STEPS - 2, doc_tokens);
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let ws = workspace(Some(INTENTS), &refs);
    let dirs = UserDirs::new();
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    let plan = LongTaskPlan::new("INT-001", &paths, OBJECTIVE, &[FACT]);
    let provider = RealProvider::start(
        ProviderConfig::new(wire, window).overflow(Overflow::Figures),
        plan,
    )
    .await;
    let (kind, base) = match wire {
        WireFormat::Anthropic => ("anthropic", provider.base_url()),
        WireFormat::OpenAi => ("openai", format!("{}/v1", provider.base_url())),
    };
    let bin = std::env::var("MANDATE_BIN").unwrap_or_else(|_| "target/release/mandate".into());
    let mut child = tokio::process::Command::new(bin)
        .args(["run", "--workspace"])
        .arg(ws.path())
        .args([
            "--provider",
            kind,
            "--base-url",
            &base,
            "--model",
            "local-model",
        ])
        .args(["--api-key-env", "BENCH_KEY", "--approve", "allow", "--json"])
        .args([
            "--context-window",
            &window.to_string(),
            "--max-turns",
            "500",
        ])
        .arg(OBJECTIVE)
        .envs(dirs.env())
        .env("BENCH_KEY", "sk-bench")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let started = Instant::now();
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let (mut condensing, mut since) = (Duration::ZERO, None::<Instant>);
    let mut task_id = None;
    while let Some(line) = lines.next_line().await? {
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if task_id.is_none() {
            task_id = event["task"]["id"].as_str().map(str::to_string);
        }
        if event["type"] == "condensing" {
            since = Some(Instant::now());
        }
        if event["type"] == "message_added" && event["message"]["kind"] == "condensed" {
            if let Some(t) = since.take() {
                condensing += t.elapsed();
            }
        }
    }
    let status = child.wait().await?;
    let total = started.elapsed();
    anyhow::ensure!(status.success(), "mandate run failed: {status}");
    let c: Counters = provider.counters();
    anyhow::ensure!(
        c.facts.as_ref().is_some_and(|f| f.all_kept()),
        "the task lost its facts: {:?}",
        c.facts
    );
    let id = task_id.ok_or_else(|| anyhow::anyhow!("no task id"))?;
    let record = mandate_tests::cli::task_record(&dirs, &id);
    let first = provider
        .server()
        .requests()
        .first()
        .map(|r| r.json())
        .unwrap_or_default();
    let fixed =
        ((first["system"].to_string().len() + first["tools"].to_string().len()) as u64).div_ceil(4);
    let sent = c.input_tokens + c.cache_read_tokens + c.cache_write_tokens;
    Ok(Figures {
        sent,
        billed: c.input_tokens as f64
            + 1.25 * c.cache_write_tokens as f64
            + 0.1 * c.cache_read_tokens as f64,
        uncached: sent,
        whole: whole_history(&record, fixed),
        summaries: c.summaries,
        turns: c.answered - c.summaries,
        condensing,
        total,
    })
}

fn median_min_max(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn row(figure: &str, measured: &str, reference: &str, ratio: &str, budget: &str, ok: Option<bool>) {
    let mark = match ok {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "",
    };
    println!("| {figure} | {measured} | {reference} | {ratio} | {budget} | {mark} |");
}

fn fmt((m, lo, hi): (f64, f64, f64), unit: &str, digits: usize) -> String {
    format!("{m:.digits$}{unit} ({lo:.digits$}–{hi:.digits$})")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    for (label, wire, window, doc_tokens) in [
        ("16k", WireFormat::Anthropic, 16_384u64, 1_200usize),
        ("200k", WireFormat::Anthropic, 200_000, 6_000),
    ] {
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            runs.push(once(wire, window, doc_tokens).await?);
        }
        let pick = |f: &dyn Fn(&Figures) -> f64| median_min_max(runs.iter().map(f).collect());
        let sent = pick(&|f| f.sent as f64);
        let whole = pick(&|f| f.whole as f64);
        row(
            &format!("context {label}, {STEPS} steps: input tokens sent"),
            &fmt(sent, "", 0),
            &format!("{:.0} whole history", whole.0),
            &format!("{:.2}×", sent.0 / whole.0),
            "",
            None,
        );
        let billed = pick(&|f| f.billed / f.uncached as f64);
        row(
            &format!("context {label}, {STEPS} steps: billed input with caching (Anthropic)"),
            &fmt(pick(&|f| f.billed), "", 0),
            &format!("{:.0} uncached", pick(&|f| f.uncached as f64).0),
            &fmt(billed, "×", 2),
            "≤ 0.35×",
            Some(billed.2 <= 0.35),
        );
        let vs_whole = pick(&|f| f.billed / f.whole as f64);
        row(
            &format!("context {label}, {STEPS} steps: billed input vs the whole history uncached"),
            &fmt(pick(&|f| f.billed), "", 0),
            &format!("{:.0} whole history", whole.0),
            &fmt(vs_whole, "×", 3),
            "",
            None,
        );
        let per_100 = pick(&|f| f.summaries as f64 * 100.0 / f.turns.max(1) as f64);
        row(
            &format!("context {label}: condensing calls per 100 turns"),
            &fmt(per_100, "", 1),
            "",
            "",
            "",
            None,
        );
        let time = pick(&|f| f.condensing.as_secs_f64() * 1000.0);
        row(
            &format!("context {label}: time condensing adds (client side, whole task)"),
            &fmt(time, " ms", 1),
            &format!("{:.0} ms task", pick(&|f| f.total.as_secs_f64() * 1000.0).0),
            "",
            "",
            None,
        );
    }
    Ok(())
}

//! Mandate's performance figures, each against a reference measured in the same run.
//! `cargo bench -p mandate-core --bench figures` (or `make bench` for everything, the window too).
//! Prints one table row per figure: measured, reference, ratio, budget.

mod code;
mod confine;
mod data;
mod intents;
mod ledger;
mod prehook;
mod undo;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mandate_core::agent::{
    dispatch, AgentEnv, EventSink, Governance, Interaction, TaskHandle, TaskStore,
};
use mandate_core::llm::{LlmError, ModelRequest, ModelStream, Provider, ToolCall};
use mandate_core::protocol::{ApprovalDecision, ApprovalPolicy, ApprovalRequest, Event};
use mandate_core::workspace::Workspace;

struct Row {
    figure: &'static str,
    measured: String,
    reference: String,
    ratio: String,
    budget: &'static str,
    ok: bool,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.2} µs", d.as_secs_f64() * 1e6)
}

fn time<R>(f: impl FnOnce() -> R) -> (Duration, R) {
    let t = Instant::now();
    let r = f();
    (t.elapsed(), r)
}

/// Median wall time of a command (stdout discarded) over `runs`, after one warm-up.
fn time_command(program: &str, args: &[&str], runs: usize) -> Option<Duration> {
    let run = || {
        let t = Instant::now();
        let ok = Command::new(program)
            .args(args)
            .stdout(std::process::Stdio::null())
            .status()
            .ok()?;
        ok.code()?;
        Some(t.elapsed())
    };
    run()?;
    let mut v = Vec::new();
    for _ in 0..runs {
        v.push(run()?);
    }
    Some(median(v))
}

fn data_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("MANDATE_BENCH_DATA") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("bench-data")
}

// ---- 2. governed write --------------------------------------------------------------------

struct Quiet;
impl EventSink for Quiet {
    fn emit(&self, _: Event) {}
}

struct Unattended;
#[async_trait::async_trait]
impl Interaction for Unattended {
    async fn approve(
        &self,
        _: &str,
        _: ApprovalRequest,
        _: &tokio_util::sync::CancellationToken,
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
        _: &str,
        _: &[String],
        _: &tokio_util::sync::CancellationToken,
    ) -> Option<String> {
        None
    }
    fn approver(&self) -> mandate_core::protocol::Approver {
        mandate_core::protocol::Approver::Other("bench".into())
    }
}

struct NoModel;
#[async_trait::async_trait]
impl Provider for NoModel {
    fn model_id(&self) -> String {
        "bench/none".into()
    }
    async fn stream(&self, _: &ModelRequest) -> Result<ModelStream, LlmError> {
        Err(LlmError::Cancelled)
    }
    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        Ok(vec![])
    }
}

fn governed_write(root: &Path) -> Vec<Row> {
    let dir = root.join("write");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    std::fs::write(dir.join(".orchestration/active_intents.yaml"), "active_intents:\n  - id: INT-1\n    name: Bench\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\"]\n").expect("intents");
    let mut rng = data::Rng::new(9);
    let a = data::words(&mut rng, 1500);
    let a: String = a.chars().take(10_240).collect();
    let b = a.replacen("intent", "INTENT", 3);
    std::fs::write(dir.join("src/big.txt"), &a).expect("file");
    // The runtime the window and `mandate run` use; each call runs as a task on it, as there.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let gov = Arc::new(Governance::new(
        Workspace::new(&dir).expect("ws"),
        &mandate_core::settings::AppDirs {
            config: dir.join(".config"),
            data: dir.join(".data"),
        },
    ));
    let store = Arc::new(TaskStore::new(&dir.join(".data"), gov.root()));
    let env = AgentEnv {
        gov: gov.clone(),
        provider: Arc::new(NoModel),
        sink: Arc::new(Quiet),
        interaction: Arc::new(Unattended),
        store: store.clone(),
        tasks: Default::default(),
        tools: Arc::new(mandate_core::tools::registry()),
        approval: ApprovalPolicy {
            ask_before_writes: false,
            ask_before_safe_commands: false,
            switch_modes_without_asking: false,
        },
        custom_instructions: String::new(),
        max_turns: None,
        interactive: false,
        render_interval: Duration::from_millis(50),
        context: mandate_core::context::ContextConfig::default(),
        budget: Default::default(),
        profiles: None,
    };
    let env = Arc::new(env);
    let task = Arc::new(TaskHandle::create(store, "bench", "bench", "bench/none"));
    task.select_intent(&gov.intents.snapshot(), "INT-1")
        .expect("select");
    task.record_read(
        "src/big.txt",
        mandate_core::fsutil::sha256_hex(a.as_bytes()),
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    let ledger_path = dir.join(".orchestration/agent_trace.jsonl");
    // One task makes every call in turn, as an agent's task does, on a worker of the runtime.
    let calls = async move {
        let (mut governed, mut bare) = (Vec::new(), Vec::new());
        for n in 0..120 {
            let content = if n % 2 == 0 { &b } else { &a };
            let call = ToolCall {
                id: format!("c{n}"),
                name: "write_to_file".into(),
                arguments: serde_json::json!({"path": "src/big.txt", "content": content, "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"}).to_string(),
            };
            let started = Instant::now();
            let result = dispatch(&env, &task, &call, &cancel).await;
            governed.push(started.elapsed());
            assert!(!result.is_error, "{}", result.content);
            // The reference: the same bytes written and fsynced, and the same record appended
            // and fsynced, from the same task.
            let record = std::fs::read_to_string(&ledger_path)
                .ok()
                .and_then(|l| l.lines().last().map(str::to_string))
                .unwrap_or_default();
            let (t, _) = time(|| {
                use std::io::Write;
                let mut f = std::fs::File::create(dir.join("bare.txt")).expect("create");
                f.write_all(content.as_bytes()).expect("write");
                f.sync_all().expect("fsync");
                let mut l = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join("bare.jsonl"))
                    .expect("open");
                l.write_all(record.as_bytes()).expect("append");
                l.write_all(b"\n").expect("append");
                l.sync_data().expect("fsync");
            });
            bare.push(t);
        }
        (governed, bare)
    };
    let (governed, bare) = rt.block_on(rt.spawn(calls)).expect("the calls' task");
    let (g, r) = (median(governed[20..].to_vec()), median(bare[20..].to_vec()));
    let ratio = g.as_secs_f64() / r.as_secs_f64();
    vec![Row {
        figure: "governed write of 10 KB (hooks+write+fsync+ledger)",
        measured: ms(g),
        reference: format!("bare write+fsync+append {}", ms(r)),
        ratio: format!("{ratio:.2}x"),
        budget: "<= 2x",
        ok: ratio <= 2.0,
    }]
}

// ---- 3, 4. trace verify and blame -----------------------------------------------------------

fn verify_and_blame(root: &Path) -> Vec<Row> {
    let (gen_time, dir) = time(|| data::cached(root, "ledger", "v1", data::ledger_workspace));
    if gen_time > Duration::from_secs(1) {
        println!("    ledger data set generated in {}", ms(gen_time));
    }
    let _ = mandate_core::orchestration::trace::verify(&dir);
    let mut runs = Vec::new();
    let mut report = None;
    for _ in 0..5 {
        let (t, r) = time(|| mandate_core::orchestration::trace::verify(&dir).expect("verify"));
        runs.push(t);
        report = Some(r);
    }
    let report = report.expect("report");
    assert_eq!(report.records as usize, data::LEDGER_RECORDS);
    assert!(report.chain_ok);
    let verify_t = median(runs);
    let ledger = dir.join(".orchestration/agent_trace.jsonl");
    let mut rows = vec![ledger::verify_row(
        "trace verify (100k records, 5k files)",
        &ledger,
        verify_t,
        5,
    )];

    let mut rng = data::Rng::new(13);
    let mut blames = Vec::new();
    for _ in 0..21 {
        let path = data::file_path(rng.below(data::LEDGER_FILES));
        let (t, b) =
            time(|| mandate_core::orchestration::trace::blame(&dir, &path).expect("blame"));
        assert!(b.lines.iter().any(|l| l.origin.is_some()));
        blames.push(t);
    }
    let blame_t = median(blames);
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/mandate");
    let cli = if bin.is_file() {
        let ws = dir.display().to_string();
        let target = format!("{}:10", data::file_path(1234));
        time_command(
            &bin.display().to_string(),
            &["trace", "blame", &target, "--workspace", &ws],
            11,
        )
    } else {
        None
    };
    let (measured, ok) = match cli {
        Some(c) => (
            format!("{} (CLI process), {} in-process", ms(c), ms(blame_t)),
            c <= Duration::from_millis(50),
        ),
        None => (
            format!(
                "{} in-process (build --release for the CLI figure)",
                ms(blame_t)
            ),
            blame_t <= Duration::from_millis(50),
        ),
    };
    rows.push(Row {
        figure: "trace blame FILE:LINE (same ledger)",
        measured,
        reference: format!(
            "ledger {:.0} MB",
            std::fs::metadata(&ledger).map_or(0, |m| m.len()) as f64 / 1e6
        ),
        ratio: String::new(),
        budget: "<= 50 ms median",
        ok,
    });
    rows
}

// ---- 5. streaming render --------------------------------------------------------------------

fn streaming_render() -> Vec<Row> {
    use mandate_core::markdown::{render, StreamingRenderer};
    let text = data::markdown_answer(200_000);
    let chars: Vec<char> = text.chars().collect();
    let per = chars.len().div_ceil(20_000);
    let deltas: Vec<String> = chars.chunks(per).map(|c| c.iter().collect()).collect();
    let mut one = Vec::new();
    for _ in 0..9 {
        one.push(time(|| render(&text)).0);
    }
    let one = median(one);
    let mut rows = Vec::new();
    for spacing in [
        Duration::ZERO,
        Duration::from_millis(5),
        Duration::from_millis(20),
    ] {
        let mut cpu = Duration::ZERO;
        let mut renders = 0;
        let mut r = StreamingRenderer::new(Duration::from_millis(100));
        let start = Instant::now();
        for (i, d) in deltas.iter().enumerate() {
            let t = Instant::now();
            r.push(d);
            // A burst runs on the wall clock; a paced stream on its own: delta i arrives at i × spacing.
            let now = if spacing.is_zero() {
                Instant::now()
            } else {
                start + spacing * i as u32
            };
            if r.update_if_due(now).is_some() {
                renders += 1;
            }
            cpu += t.elapsed();
        }
        let t = Instant::now();
        let _ = r.finish();
        cpu += t.elapsed();
        let ratio = cpu.as_secs_f64() / one.as_secs_f64();
        let figure = match spacing.as_millis() {
            0 => "streaming render, 200 KB as 20k deltas (burst)",
            5 => "streaming render, 200 KB as 20k deltas (5 ms apart)",
            _ => "streaming render, 200 KB as 20k deltas (20 ms apart)",
        };
        rows.push(Row {
            figure,
            measured: format!("{} CPU, {renders} re-renders", ms(cpu)),
            reference: format!("one render {}", ms(one)),
            ratio: format!("{ratio:.2}x"),
            budget: "<= 5x",
            ok: ratio <= 5.0,
        });
    }
    rows
}

// ---- 6. search and list ---------------------------------------------------------------------

fn search_and_list(root: &Path) -> Vec<Row> {
    let (gen_time, dir) = time(|| data::cached(root, "tree", "v1", data::search_tree));
    if gen_time > Duration::from_secs(1) {
        println!("    100k-file tree generated in {}", ms(gen_time));
    }
    let ws = Workspace::new(&dir).expect("ws");
    let top = ws.resolve(".").expect("root");
    let regex = "needle_[0-9]{4}_marker";
    let mut ours = Vec::new();
    let mut matches = 0;
    let _ = mandate_core::tools::walk::search(&top, regex, None, 1);
    for _ in 0..7 {
        let (t, r) =
            time(|| mandate_core::tools::walk::search(&top, regex, None, 1).expect("search"));
        matches = r.1;
        ours.push(t);
    }
    let ours = median(ours);
    let d = dir.display().to_string();
    let rg = time_command("rg", &["-n", "-C1", regex, &d], 7);
    let mut lists = Vec::new();
    let _ = mandate_core::tools::walk::list_for_model(&top, true);
    for _ in 0..7 {
        lists.push(
            time(|| mandate_core::tools::walk::list(&top, true, usize::MAX).expect("list")).0,
        );
    }
    let list_t = median(lists);
    let rg_files = time_command("rg", &["--files", &d], 7);
    let row = |figure, t: Duration, reference: Option<Duration>, what: &str| match reference {
        Some(r) => {
            let ratio = t.as_secs_f64() / r.as_secs_f64();
            Row {
                figure,
                measured: ms(t),
                reference: format!("{what} {}", ms(r)),
                ratio: format!("{ratio:.2}x"),
                budget: "<= 1.3x",
                ok: ratio <= 1.3,
            }
        }
        None => Row {
            figure,
            measured: ms(t),
            reference: "rg not found".into(),
            ratio: String::new(),
            budget: "<= 1.3x",
            ok: false,
        },
    };
    println!("    search found {matches} matches");
    vec![
        row("search_files, 100k files, rare regex", ours, rg, "rg"),
        row(
            "list_files recursive, 100k files",
            list_t,
            rg_files,
            "rg --files",
        ),
    ]
}

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let root = data_root();
    std::fs::create_dir_all(&root).expect("bench data dir");
    println!("Mandate benchmarks (data under {})", root.display());
    let mut rows = Vec::new();
    if wanted("prehook") {
        rows.extend(prehook::prehook(&root));
    }
    if wanted("write") {
        rows.extend(governed_write(&root));
    }
    // Before the figures that grow this process to gigabytes: a confined process is started
    // by fork() (its set-up runs between fork and exec), whose cost grows with the parent's
    // mapped memory (about +50 ms at 1.9 GB here), which is the bench's and not Mandate's.
    if wanted("confine") {
        rows.extend(confine::setup(&root));
        rows.extend(confine::detection(&root));
        rows.extend(confine::nested_images(&root));
    }
    if wanted("trace") {
        rows.extend(verify_and_blame(&root));
    }
    if wanted("ledger") {
        rows.extend(ledger::figures(&root));
    }
    if wanted("render") {
        rows.extend(streaming_render());
    }
    if wanted("search") {
        rows.extend(search_and_list(&root));
    }
    if wanted("undo") {
        rows.extend(undo::figures(&root));
    }
    if wanted("intents") {
        rows.extend(intents::load_and_validate(&root));
    }
    if wanted("code") {
        rows.extend(code::figures(&root));
    }
    println!();
    println!("| figure | measured | reference (same run) | ratio | budget | |");
    println!("|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.figure,
            r.measured,
            r.reference,
            r.ratio,
            r.budget,
            if r.ok { "ok" } else { "MISSED" }
        );
    }
}

//! The hostile-command corpus, run for real inside the confinement this machine offers, each
//! case in a fresh scratch workspace (an intent owning `src/allowed/**`, `.orchestration/`
//! with intents and a ledger, a git repository, `.intentignore`, a file outside the workspace,
//! a fake home), with a loopback TCP and UDP listener that count what reaches them and a key in
//! the parent process's environment. Judged afterwards by the file system and the listeners;
//! then every out-of-scope change found must have been undone. And every case must be
//! classified as needing approval.

#[path = "hostile/corpus.rs"]
mod corpus;
#[path = "hostile/judge.rs"]
mod judge;

use std::sync::atomic::Ordering;

use mandate_core::hooks::command_policy::{CommandClass, CommandPolicy};
use mandate_core::sandbox::Confinement;

const SECRET: &str = "sk-corpus-7Hq2xV9mK4pL8nR3tW6yB1cD5fG0jS";

#[test]
fn every_corpus_case_needs_approval() {
    let policy = CommandPolicy::builtin();
    let cases = corpus::cases();
    assert!(cases.len() >= 300, "only {} cases", cases.len());
    let safe: Vec<String> = cases
        .iter()
        .map(|(_, line)| judge::fill(line, "/tmp/o", "/tmp/h", 9, 9, "/tmp/s"))
        .filter(|line| policy.classify(line).class == CommandClass::Safe)
        .collect();
    assert!(safe.is_empty(), "classified safe:\n{}", safe.join("\n"));
}

/// The corpus runs in a child process, so that the key is in the initial environment of the
/// process that starts the commands (as an API key given to a headless run would be).
#[test]
fn the_kernel_stops_every_corpus_case() {
    let exe = std::env::current_exe().expect("exe");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "corpus_in_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MANDATE_CORPUS_CHILD", "1")
        .env("MANDATE_CORPUS_SECRET", SECRET)
        .env(
            "MANDATE_CORPUS_FILTER",
            std::env::var("MANDATE_CORPUS_FILTER").unwrap_or_default(),
        )
        .output()
        .expect("run the corpus");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("corpus: done"), "{stdout}\n{stderr}");
}

#[test]
fn corpus_in_child() {
    if std::env::var_os("MANDATE_CORPUS_CHILD").is_none() {
        return;
    }
    // What the app does at start-up (the key stays in the initial block here on purpose: the
    // kernel, not the scrub, must keep it from commands).
    assert!(mandate_core::sandbox::protect_this_process());
    let here = Confinement::detect();
    println!("confinement here: {}", here.summary());
    let mut levels = Vec::new();
    if here.landlock_abi.is_some() {
        levels.push(Confinement::from_parts(here.landlock_abi, None));
        if here.bwrap.is_some() {
            levels.push(here.clone());
        }
    }
    if levels.is_empty() {
        println!("no confinement on this machine: the corpus cannot be stopped by the kernel; every command needs approval");
        println!("corpus: done");
        return;
    }
    let listeners = judge::Listeners::start();
    // The listeners hear an unconfined command: their silence later means something.
    listeners.prove_reachable();
    // MANDATE_CORPUS_FILTER=text runs only the cases containing it (for debugging one).
    let filter = std::env::var("MANDATE_CORPUS_FILTER").unwrap_or_default();
    let cases: Vec<(String, String)> = corpus::cases()
        .into_iter()
        .filter(|(_, line)| line.contains(&filter))
        .collect();
    // One thread per level, each with its own scratch template.
    let reports: Vec<(Vec<String>, Vec<String>, String)> = std::thread::scope(|scope| {
        let runs: Vec<_> = levels
            .iter()
            .map(|level| {
                let (cases, listeners) = (&cases, &listeners);
                scope.spawn(move || run_level(level, cases, listeners))
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("level")).collect()
    });
    let mut failures = Vec::new();
    let mut gaps = Vec::new();
    for (failed, gapped, summary) in reports {
        println!("{summary}");
        failures.extend(failed);
        gaps.extend(gapped);
    }
    listeners.settle();
    let tcp = listeners.tcp.load(Ordering::SeqCst);
    let udp = listeners.udp.load(Ordering::SeqCst);
    let unix = listeners.unix.load(Ordering::SeqCst);
    println!(
        "listeners: {tcp} TCP connections, {udp} UDP datagrams, {unix} Unix socket connections"
    );
    for gap in &gaps {
        println!("known gap: {gap}");
    }
    assert_eq!((tcp, udp, unix), (0, 0, 0), "a listener was reached");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("corpus: done");
}

/// Runs every case under one level: (failures, gaps, a summary line).
fn run_level(
    level: &Confinement,
    cases: &[(String, String)],
    listeners: &judge::Listeners,
) -> (Vec<String>, Vec<String>, String) {
    let template = judge::Template::new();
    let (mut stopped, mut undone) = (0, 0);
    let (mut failures, mut gaps) = (Vec::new(), Vec::new());
    let mut slowest: Vec<(std::time::Duration, String)> = Vec::new();
    for (class, line) in cases {
        let started = std::time::Instant::now();
        let outcome = template.run_case(level, line, listeners, SECRET);
        slowest.push((started.elapsed(), line.clone()));
        let name = level.summary();
        match outcome {
            judge::Outcome::Stopped => stopped += 1,
            judge::Outcome::Undone => undone += 1,
            judge::Outcome::Gap(what) => gaps.push(format!("[{name}] {class}: {line:?}: {what}")),
            judge::Outcome::Failed(why) => {
                failures.push(format!("[{name}] {class}: {line:?}: {why}"))
            }
        }
    }
    slowest.sort();
    let mut summary = format!(
        "{}: {stopped} of {} cases stopped by the kernel, {undone} found and set back after (permissions or times)",
        level.summary(),
        cases.len()
    );
    for (took, line) in slowest.iter().rev().take(3) {
        summary.push_str(&format!(
            "\n  slowest: {:.0} ms {line:?}",
            took.as_secs_f64() * 1e3
        ));
    }
    (failures, gaps, summary)
}

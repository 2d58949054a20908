//! The ledger at team scale: verify and blame on 1,000,000 records over 50,000 files, `trace
//! report` over 1,000 commits, and the merge driver on two 100,000-record sides. Data sets are
//! generated deterministically (records chained and digested as Mandate writes them; the
//! 1,000-commit repository through `git fast-import`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use mandate_core::fsutil::sha256_hex;
use mandate_core::orchestration::ledger::{canonical_json, content_hash, record_digest, GENESIS};

use super::data::{cached, Rng};
use super::{median, ms, time, time_command, Row};

pub const BIG_RECORDS: usize = 1_000_000;
pub const BIG_FILES: usize = 50_000;

fn file_path(f: usize) -> String {
    format!("src/d{:03}/f{f:05}.rs", f / 100)
}

fn file_lines(rng: &mut Rng, f: usize) -> Vec<String> {
    (0..40)
        .map(|l| {
            format!(
                "    let v{l} = compute_{f}_{l}(input, {});",
                rng.below(1000)
            )
        })
        .collect()
}

/// One chained record (as Mandate writes it) for lines `start..=end` of `path`; returns the
/// line and its hash.
fn record(
    n: usize,
    tag: &str,
    path: &str,
    lines: &[String],
    start: usize,
    end: usize,
    prev: &str,
) -> (String, String) {
    let hash = content_hash(&lines[start - 1..end]);
    let diff = format!(
        "--- a/{path}\n+++ b/{path}\n@@ -{start},1 +{start},1 @@\n-    let old = 1;\n+{}\n",
        lines[start - 1]
    );
    let intent = format!("INT-{:03}", n % 97);
    let mut r = json!({
        "version": "0.1",
        "id": format!("00000000-0000-4000-8000-{:012}", n),
        "timestamp": format!("2026-11-21T12:{:02}:00Z", n % 60),
        "tool": {"name": "mandate", "version": "0.1.0"},
        "files": [{"path": path, "conversations": [{
            "url": format!("mandate://task/{tag}{}", n / 50),
            "contributor": {"type": "ai", "model_id": "anthropic/claude-sonnet-4-5"},
            "ranges": [{"start_line": start, "end_line": end, "content_hash": hash}],
            "related": [{"type": "intent", "url": format!("mandate://intent/{intent}")}],
        }]}],
        "metadata": {"dev.mandate": {
            "intent_id": intent, "task_id": format!("{tag}{}", n / 50),
            "mutation_class": {"declared": "INTENT_EVOLUTION", "computed": "INTENT_EVOLUTION"},
            "tool": "apply_diff", "tool_call_id": format!("{tag}call_{n}"),
            "approval": {"by": "user", "at": "2026-11-21T12:00:00Z", "accepted_hunks": [0], "rejected_hunks": [], "edited": false},
            "diffs": {path: diff},
            "prev": prev,
        }},
    });
    let digest = record_digest(&r);
    r["metadata"]["dev.mandate"]["digest"] = json!(digest);
    let line = canonical_json(&r);
    let h = sha256_hex(line.as_bytes());
    (line, h)
}

/// 50,000 files and 1,000,000 records over them (20 per file).
fn big_workspace(dir: &Path) {
    let mut rng = Rng::new(21);
    let mut files = Vec::with_capacity(BIG_FILES);
    for f in 0..BIG_FILES {
        let lines = file_lines(&mut rng, f);
        let p = dir.join(file_path(f));
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, lines.join("\n") + "\n").expect("write");
        files.push(lines);
    }
    let ledger = dir.join(".orchestration/agent_trace.jsonl");
    std::fs::create_dir_all(ledger.parent().expect("parent")).expect("mkdir");
    let mut out = std::io::BufWriter::new(std::fs::File::create(ledger).expect("ledger"));
    let mut prev = GENESIS.to_string();
    for n in 0..BIG_RECORDS {
        let f = n % BIG_FILES;
        let start = 1 + rng.below(37);
        let end = start + rng.below(3);
        let (line, h) = record(n, "t", &file_path(f), &files[f], start, end, &prev);
        out.write_all(line.as_bytes()).expect("w");
        out.write_all(b"\n").expect("w");
        prev = h;
    }
    out.flush().expect("flush");
}

/// Verify against `openssl dgst -sha256` of the same ledger, run `runs` times in the same
/// run: the ledger's bytes per second of each. Verify hashes every byte of the ledger once
/// (chain and digests share it) and, besides, parses the ranges and hashes their lines in the
/// files; openssl only hashes.
pub fn verify_row(figure: &'static str, ledger: &Path, verify_t: Duration, runs: usize) -> Row {
    let size = std::fs::metadata(ledger).map(|m| m.len()).unwrap_or(0) as f64;
    let ours = size / verify_t.as_secs_f64() / 1e6;
    let ledger_s = ledger.display().to_string();
    let budget = ">= 70% of openssl";
    match time_command("openssl", &["dgst", "-sha256", &ledger_s], runs) {
        Some(o) => {
            let theirs = size / o.as_secs_f64() / 1e6;
            let ratio = ours / theirs;
            Row {
                figure,
                measured: format!("{} ({ours:.0} MB/s of ledger)", ms(verify_t)),
                reference: format!(
                    "openssl dgst -sha256 of the ledger {} ({theirs:.0} MB/s)",
                    ms(o)
                ),
                ratio: format!("{:.0}%", ratio * 100.0),
                budget,
                ok: ratio >= 0.7,
            }
        }
        None => Row {
            figure,
            measured: ms(verify_t),
            reference: "openssl not found".into(),
            ratio: String::new(),
            budget,
            ok: false,
        },
    }
}

fn big(root: &Path) -> Vec<Row> {
    let (gen, dir) = time(|| cached(root, "ledger-1m", "v1", big_workspace));
    if gen > Duration::from_secs(1) {
        println!("    1M-record ledger generated in {}", ms(gen));
    }
    let ledger = dir.join(".orchestration/agent_trace.jsonl");
    let size = std::fs::metadata(&ledger).map(|m| m.len()).unwrap_or(0);
    let _ = mandate_core::orchestration::trace::verify(&dir);
    let mut runs = Vec::new();
    for _ in 0..3 {
        let (t, r) = time(|| mandate_core::orchestration::trace::verify(&dir).expect("verify"));
        assert!(r.chain_ok && r.records as usize == BIG_RECORDS);
        runs.push(t);
    }
    let verify_t = median(runs);
    let mut rows = vec![verify_row(
        "trace verify (1M records, 50k files)",
        &ledger,
        verify_t,
        3,
    )];
    let mut rng = Rng::new(5);
    let mut blames = Vec::new();
    for _ in 0..21 {
        let path = file_path(rng.below(BIG_FILES));
        let (t, b) =
            time(|| mandate_core::orchestration::trace::blame(&dir, &path).expect("blame"));
        assert!(b.lines.iter().any(|l| l.origin.is_some()));
        blames.push(t);
    }
    let blame_t = median(blames);
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/mandate");
    let cli = bin.is_file().then(|| {
        let ws = dir.display().to_string();
        let target = format!("{}:10", file_path(31_337));
        time_command(
            &bin.display().to_string(),
            &["trace", "blame", &target, "--workspace", &ws],
            11,
        )
    });
    let (measured, ok) = match cli.flatten() {
        Some(c) => (
            format!("{} (CLI process), {} in-process", ms(c), ms(blame_t)),
            c <= Duration::from_millis(250),
        ),
        None => (
            format!("{} in-process", ms(blame_t)),
            blame_t <= Duration::from_millis(250),
        ),
    };
    rows.push(Row {
        figure: "trace blame FILE:LINE (1M records, 50k files)",
        measured,
        reference: format!("ledger {:.0} MB", size as f64 / 1e6),
        ratio: String::new(),
        budget: "<= 250 ms",
        ok,
    });
    rows
}

// ---- report over 1,000 commits ----------------------------------------------------------

pub const COMMITS: usize = 1000;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .expect("git");
    assert!(ok.success(), "git {args:?}");
}

/// A repository of 1,000 commits over 200 files: in each, an agent inserts three lines into a
/// file and its record is appended (anchored in the message); every fifth, a person adds two
/// lines with no record.
fn commits_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    let mut rng = Rng::new(33);
    let mut files: Vec<Vec<String>> = (0..200)
        .map(|f| (0..30).map(|l| format!("fn f{f}_{l}() {{}}")).collect())
        .collect();
    let mut ledger = String::new();
    let mut prev = GENESIS.to_string();
    let mut records = 0usize;
    let mut stream = Vec::with_capacity(64 << 20);
    let blob = |s: &mut Vec<u8>, path: &str, text: &str| {
        let _ = write!(
            ByteWriter(s),
            "M 100644 inline {path}\ndata {}\n{text}\n",
            text.len()
        );
    };
    for c in 0..=COMMITS {
        let mut changed = Vec::new();
        if c > 0 {
            let f = rng.below(files.len());
            let at = 1 + rng.below(files[f].len());
            for k in 0..3 {
                files[f].insert(at - 1 + k, format!("    agent_line_{c}_{k}();"));
            }
            let path = format!("src/m{f:03}.rs");
            let (line, h) = record(c, "r", &path, &files[f], at, at + 2, &prev);
            ledger.push_str(&line);
            ledger.push('\n');
            prev = h;
            records += 1;
            changed.push(f);
            if c % 5 == 0 {
                let g = rng.below(files.len());
                files[g].push(format!("// person {c}"));
                files[g].push(format!("// person {c} again"));
                changed.push(g);
            }
        } else {
            changed.extend(0..files.len());
        }
        let message = format!("commit {c}\n\nMandate-Ledger: {records} {prev}\n");
        let _ = write!(
            ByteWriter(&mut stream),
            "commit refs/heads/main\nmark :{}\ncommitter Bench <bench@example.com> {} +0000\ndata {}\n{message}\n",
            c + 1,
            1_700_000_000 + c * 60,
            message.len()
        );
        if c > 0 {
            let _ = writeln!(ByteWriter(&mut stream), "from :{c}");
        }
        for f in changed {
            blob(
                &mut stream,
                &format!("src/m{f:03}.rs"),
                &(files[f].join("\n") + "\n"),
            );
        }
        if c > 0 {
            blob(&mut stream, ".orchestration/agent_trace.jsonl", &ledger);
        }
        stream.push(b'\n');
    }
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("fast-import");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&stream)
        .expect("stream");
    assert!(child.wait().expect("wait").success());
    git(dir, &["checkout", "-q", "-f", "main"]);
}

struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn report(root: &Path) -> Vec<Row> {
    let (gen, dir) = time(|| cached(root, "report-1000", "v1", commits_repo));
    if gen > Duration::from_secs(1) {
        println!("    1,000-commit repository generated in {}", ms(gen));
    }
    let first = String::from_utf8(
        Command::new("git")
            .current_dir(&dir)
            .args(["rev-list", "--max-parents=0", "HEAD"])
            .output()
            .expect("git")
            .stdout,
    )
    .expect("utf8");
    let range = format!("{}..HEAD", first.trim());
    let mut runs = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let (t, r) =
            time(|| mandate_core::orchestration::report::report(&dir, &range).expect("report"));
        runs.push(t);
        last = Some(r);
    }
    let r = last.expect("report");
    assert_eq!((r.commits, r.records), (COMMITS, COMMITS));
    println!(
        "    report: {} added lines, {} by agents, {} with no record",
        r.coverage.added_lines, r.coverage.agent_lines, r.coverage.unrecorded_lines
    );
    let t = median(runs);
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/mandate");
    let cli = bin.is_file().then(|| {
        let ws = dir.display().to_string();
        time_command(
            &bin.display().to_string(),
            &["trace", "report", &range, "--workspace", &ws],
            5,
        )
    });
    let (measured, worst) = match cli.flatten() {
        Some(c) => (
            format!("{} (CLI process), {} in-process", ms(c), ms(t)),
            c.max(t),
        ),
        None => (format!("{} in-process", ms(t)), t),
    };
    vec![Row {
        figure: "trace report over 1,000 commits",
        measured,
        reference: format!("{} added lines", r.coverage.added_lines),
        ratio: String::new(),
        budget: "<= 2 s",
        ok: worst <= Duration::from_secs(2),
    }]
}

// ---- merge driver ---------------------------------------------------------------------------

const BASE: usize = 20_000;
const SIDE: usize = 100_000;

/// A base of 20,000 records and two sides of 100,000 records each (80,000 new on each).
fn merge_sides(dir: &Path) {
    let mut rng = Rng::new(44);
    let files: Vec<Vec<String>> = (0..500).map(|f| file_lines(&mut rng, f)).collect();
    let mut write_side = |name: &str, tag: &str, base: &str, base_prev: &str, from: usize| {
        let mut out = String::with_capacity(SIDE * 1200);
        out.push_str(base);
        let mut prev = base_prev.to_string();
        for n in from..SIDE {
            let f = n % files.len();
            let start = 1 + rng.below(37);
            let (line, h) = record(n, tag, &file_path(f), &files[f], start, start, &prev);
            out.push_str(&line);
            out.push('\n');
            prev = h;
        }
        std::fs::write(dir.join(name), &out).expect("write");
        (out, prev)
    };
    let (base, prev) = write_side("base.jsonl", "b", "", GENESIS, SIDE - BASE);
    write_side("ours.jsonl", "o", &base, &prev, BASE);
    write_side("theirs.jsonl", "t", &base, &prev, BASE);
}

fn merge(root: &Path) -> Vec<Row> {
    let (gen, dir) = time(|| cached(root, "merge-100k", "v1", merge_sides));
    if gen > Duration::from_secs(1) {
        println!("    merge sides generated in {}", ms(gen));
    }
    let ours = std::fs::read(dir.join("ours.jsonl")).expect("ours");
    let theirs = std::fs::read(dir.join("theirs.jsonl")).expect("theirs");
    let mut runs = Vec::new();
    for _ in 0..5 {
        let (t, m) =
            time(|| mandate_core::orchestration::merge::merge(&ours, &theirs).expect("merge"));
        assert_eq!(
            (m.common, m.from_ours, m.from_theirs),
            (BASE, SIDE - BASE, SIDE - BASE)
        );
        runs.push(t);
    }
    let t = median(runs);
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/mandate");
    let work: PathBuf = dir.join("work");
    let _ = std::fs::create_dir_all(&work);
    let cli = bin.is_file().then(|| {
        let mut v = Vec::new();
        for _ in 0..5 {
            std::fs::copy(dir.join("ours.jsonl"), work.join("ours")).expect("copy");
            let (d, ok) = time(|| {
                Command::new(&bin)
                    .current_dir(&work)
                    .args(["trace", "merge", "../base.jsonl", "ours", "../theirs.jsonl"])
                    .env("MANDATE_DATA_DIR", work.join("data"))
                    .stderr(Stdio::null())
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false)
            });
            assert!(ok, "the merge driver failed");
            v.push(d);
        }
        median(v)
    });
    let (measured, worst) = match cli {
        Some(c) => (
            format!(
                "{} (driver process, files read and written), {} in-process",
                ms(c),
                ms(t)
            ),
            c.max(t),
        ),
        None => (format!("{} in-process", ms(t)), t),
    };
    vec![Row {
        figure: "merge driver, two 100k-record sides",
        measured,
        reference: format!("sides {:.0} MB each", ours.len() as f64 / 1e6),
        ratio: String::new(),
        budget: "<= 1 s",
        ok: worst <= Duration::from_secs(1),
    }]
}

pub fn figures(root: &Path) -> Vec<Row> {
    let mut rows = merge(root);
    rows.extend(report(root));
    rows.extend(big(root));
    rows
}

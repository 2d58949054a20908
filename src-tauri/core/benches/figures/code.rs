//! What the model sees of the code: the repo map (cold, and warm after one edit) on a 10k-file
//! repository, and codebase_search (index build, query p50/p95, one edit) on a 100k-file one.
//! Both repositories are generated: Rust, Python and TypeScript files whose functions call one
//! another and carry doc comments.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use mandate_core::code::map::{MapRequest, RepoMap};
use mandate_core::code::search::SearchIndex;

use super::data::{cached, Rng};
use super::{median, ms, percentile, time, time_command, Row};

const VOCABULARY: &[&str] = &[
    "retry", "backoff", "parser", "token", "stream", "buffer", "window", "ledger", "intent",
    "scope", "cache", "socket", "render", "layout", "schema", "queue", "worker", "timer",
    "checksum", "archive", "session", "cursor", "index", "shard", "replica", "quota", "budget",
    "signal", "codec", "frame",
];

fn word(rng: &mut Rng) -> &'static str {
    VOCABULARY[rng.below(VOCABULARY.len())]
}

/// `files` source files of five functions each, in 100-file folders.
fn repository(dir: &Path, files: usize) {
    let mut rng = Rng::new(23);
    for f in 0..files {
        let folder = dir.join(format!("m{:04}", f / 100));
        let _ = std::fs::create_dir_all(&folder);
        let mut text = String::new();
        let (ext, name) = match f % 5 {
            0 => ("py", format!("f{f}.py")),
            1 => ("ts", format!("f{f}.ts")),
            _ => ("rs", format!("f{f}.rs")),
        };
        for k in 0..5 {
            let (a, b, c) = (word(&mut rng), word(&mut rng), word(&mut rng));
            let callee = format!("{}_{}_{}", word(&mut rng), rng.below(files), rng.below(5));
            let fname = format!("{a}_{f}_{k}");
            match ext {
                "py" => {
                    let _ = write!(
                        text,
                        "def {fname}(x):\n    \"\"\"Handles the {a} {b} with {c}.\"\"\"\n    return {callee}(x)\n\n"
                    );
                }
                "ts" => {
                    let _ = write!(
                        text,
                        "/** Handles the {a} {b} with {c}. */\nexport function {fname}(x: number): number {{\n  return {callee}(x);\n}}\n\n"
                    );
                }
                _ => {
                    let _ = write!(
                        text,
                        "/// Handles the {a} {b} with {c}.\npub fn {fname}(x: u32) -> u32 {{\n    {callee}(x)\n}}\n\n"
                    );
                }
            }
        }
        std::fs::write(folder.join(name), text).expect("write");
    }
}

fn row(
    figure: &'static str,
    t: Duration,
    reference: String,
    budget: &'static str,
    ok: bool,
) -> Row {
    Row {
        figure,
        measured: ms(t),
        reference,
        ratio: String::new(),
        budget,
        ok,
    }
}

fn nothing(_: &str) -> bool {
    false
}

pub fn figures(root: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let small = cached(root, "code-10k", "v1", |d| repository(d, 10_000));
    let rg = time_command("rg", &["--files", &small.display().to_string()], 5)
        .map_or("rg not found".to_string(), |t| {
            format!("rg --files {}", ms(t))
        });
    let request = MapRequest {
        focus: vec!["m0000/f2.rs".into()],
        mentioned: vec!["retry".into()],
        budget_tokens: 1024,
    };
    // Cold: a new map parses every file.
    let mut cold = Vec::new();
    for _ in 0..3 {
        let map = RepoMap::default();
        cold.push(time(|| map.render(&small, &request)).0);
    }
    let cold = median(cold);
    rows.push(row(
        "repo map cold, 10k files",
        cold,
        rg.clone(),
        "<= 1 s",
        cold <= Duration::from_secs(1),
    ));
    // Warm after one edit: one file parsed again, the rest from the cache.
    let map = RepoMap::default();
    map.render(&small, &request);
    let edited = small.join("m0000/f2.rs");
    let original = std::fs::read_to_string(&edited).expect("read");
    let mut warm = Vec::new();
    for n in 0..7 {
        std::fs::write(&edited, format!("{original}\npub fn added_{n}() {{}}\n")).expect("edit");
        warm.push(time(|| map.render(&small, &request)).0);
    }
    std::fs::write(&edited, original).expect("restore");
    let warm = median(warm);
    rows.push(row(
        "repo map after one edit, 10k files",
        warm,
        rg,
        "<= 50 ms",
        warm <= Duration::from_millis(50),
    ));

    let big = cached(root, "code-100k", "v1", |d| repository(d, 100_000));
    let rg = time_command("rg", &["--files", &big.display().to_string()], 3)
        .map_or("rg not found".to_string(), |t| {
            format!("rg --files {}", ms(t))
        });
    let data = tempfile::tempdir().expect("data dir");
    let stored = mandate_core::code::search::index_path(data.path(), &big);
    let index = SearchIndex::stored_at(stored.clone());
    let (build, _) = time(|| index.search(&big, "retry backoff", "", 10, &nothing));
    rows.push(row(
        "codebase_search index build, 100k files",
        build,
        rg.clone(),
        "(reported)",
        true,
    ));
    // The next start reads the index from the data directory and checks each file's stamp.
    while !stored.exists() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut starts = Vec::new();
    for _ in 0..3 {
        let again = SearchIndex::stored_at(stored.clone());
        starts.push(time(|| again.search(&big, "retry backoff", "", 10, &nothing)).0);
    }
    let start = median(starts);
    rows.push(row(
        "codebase_search index read from disk at start, 100k files",
        start,
        rg,
        "(reported)",
        true,
    ));
    let mut rng = Rng::new(5);
    let mut queries = Vec::new();
    let started = Instant::now();
    for _ in 0..40 {
        let q = format!("{} {} {}", word(&mut rng), word(&mut rng), word(&mut rng));
        queries.push(time(|| index.search(&big, &q, "", 10, &nothing)).0);
    }
    let spent = started.elapsed();
    queries.sort_unstable();
    let (p50, p95) = (percentile(&queries, 0.5), percentile(&queries, 0.95));
    println!(
        "    40 queries in {} (the listing is checked again every 3 s)",
        ms(spent)
    );
    rows.push(row(
        "codebase_search p50, 100k files",
        p50,
        String::new(),
        "<= 30 ms",
        p50 <= Duration::from_millis(30),
    ));
    rows.push(row(
        "codebase_search p95, 100k files",
        p95,
        String::new(),
        "<= 30 ms",
        p95 <= Duration::from_millis(30),
    ));
    let edited = big.join("m0000/f2.rs");
    let original = std::fs::read_to_string(&edited).expect("read");
    let mut updates = Vec::new();
    for n in 0..7 {
        std::fs::write(
            &edited,
            format!("{original}\n/// zebra{n} crossing\npub fn zebra_{n}() {{}}\n"),
        )
        .expect("edit");
        index.touched("m0000/f2.rs");
        let (t, hits) = time(|| index.search(&big, &format!("zebra{n}"), "", 10, &nothing));
        assert_eq!(hits.first().map(|h| h.path.as_str()), Some("m0000/f2.rs"));
        updates.push(t);
    }
    std::fs::write(&edited, original).expect("restore");
    let update = median(updates);
    rows.push(row(
        "codebase_search after one edit, 100k files",
        update,
        String::new(),
        "<= 100 ms",
        update <= Duration::from_millis(100),
    ));
    rows
}

//! Deterministic data sets for the benchmarks: the same bytes on every run and machine.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use mandate_core::fsutil::sha256_hex;
use mandate_core::orchestration::ledger::{canonical_json, content_hash, record_digest, GENESIS};

/// xorshift64*: small, fast, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "intent", "scope", "ledger", "approval", "hash", "range", "file", "model", "task", "hook",
    "write", "read", "chain", "record", "agent", "review", "patch", "build", "test", "commit",
    "branch", "merge", "parser", "token", "stream", "buffer", "window", "panel", "config",
    "policy", "command", "output",
];

pub fn words(rng: &mut Rng, n: usize) -> String {
    let mut s = String::with_capacity(n * 7);
    for i in 0..n {
        if i > 0 {
            s.push(if i % 12 == 0 { '\n' } else { ' ' });
        }
        s.push_str(WORDS[rng.below(WORDS.len())]);
    }
    s.push('\n');
    s
}

/// `root/<name>` is (re)made unless its marker says it is complete for this `version`.
pub fn cached(root: &Path, name: &str, version: &str, make: impl FnOnce(&Path)) -> PathBuf {
    let dir = root.join(name);
    let marker = dir.join(".complete");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(version) {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create data dir");
    make(&dir);
    std::fs::write(&marker, version).expect("marker");
    dir
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// 1,000 intents of 10 globs each, over a 50,000-file workspace (`mod0000/file00.rs` …).
pub fn hooks_workspace(dir: &Path) {
    let mut yaml = String::from("active_intents:\n");
    for i in 0..1000 {
        let _ = write!(
            yaml,
            "  - id: INT-{i:04}\n    name: Module {i}\n    status: IN_PROGRESS\n    owned_scope:\n      - \"mod{i:04}/**\"\n      - \"tests/mod{i:04}/*.rs\"\n      - \"docs/mod{i:04}.md\"\n      - \"crates/c{i}/src/**/*.rs\"\n      - \"bench/b{i}_*.rs\"\n      - \"mod{i:04}/gen/**/*.{{rs,toml}}\"\n      - \"assets/i{i}/[a-f]*.png\"\n      - \"scripts/s{i}.sh\"\n      - \"examples/e{i}/**\"\n      - \"mod{i:04}/?*.txt\"\n"
        );
    }
    write(&dir.join(".orchestration/active_intents.yaml"), &yaml);
    for k in 0..1000 {
        for j in 0..50 {
            write(
                &dir.join(format!("mod{k:04}/file{j:02}.rs")),
                "pub fn f() {}\n",
            );
        }
    }
}

/// 100,000 files (1,000 directories of 100), ~1.5 KB of words each; 12 contain the needle.
pub fn search_tree(dir: &Path) {
    let mut rng = Rng::new(7);
    for a in 0..1000 {
        for c in 0..100 {
            let mut text = words(&mut rng, 200);
            if (a * 100 + c) % 8333 == 17 {
                text.push_str("here is needle_4242_marker in the text\n");
            }
            write(
                &dir.join(format!("d{:03}/e{:02}/f{:02}.txt", a, c / 10, c % 10)),
                &text,
            );
        }
    }
}

pub const LEDGER_FILES: usize = 5_000;
pub const LEDGER_RECORDS: usize = 100_000;

/// 5,000 files of 40 lines and 100,000 chained records over them (20 per file), each with a
/// range hash of the file's current lines and a small stored diff, like real records.
pub fn ledger_workspace(dir: &Path) {
    let mut rng = Rng::new(11);
    let mut files: Vec<Vec<String>> = Vec::with_capacity(LEDGER_FILES);
    for f in 0..LEDGER_FILES {
        let lines: Vec<String> = (0..40)
            .map(|l| {
                format!(
                    "    let v{l} = compute_{f}_{l}(input, {});",
                    rng.below(1000)
                )
            })
            .collect();
        write(&dir.join(file_path(f)), &(lines.join("\n") + "\n"));
        files.push(lines);
    }
    let mut out = String::with_capacity(LEDGER_RECORDS * 1200);
    let mut prev = GENESIS.to_string();
    for n in 0..LEDGER_RECORDS {
        let f = n % LEDGER_FILES;
        let start = 1 + rng.below(37);
        let end = start + rng.below(3);
        let lines = &files[f];
        let hash = content_hash(&lines[start - 1..end]);
        let path = file_path(f);
        let diff = format!(
            "--- a/{path}\n+++ b/{path}\n@@ -{start},3 +{start},3 @@\n-    let old = 1;\n+{}\n {}\n {}\n",
            lines[start - 1], lines[start], lines[start + 1]
        );
        let mut record = json!({
            "version": "0.1",
            "id": format!("00000000-0000-4000-8000-{n:012}"),
            "timestamp": "2026-11-21T12:00:00Z",
            "tool": {"name": "mandate", "version": "0.1.0"},
            "vcs": {"type": "git", "revision": "a".repeat(40)},
            "files": [{"path": path, "conversations": [{
                "url": format!("mandate://task/t{}", n / 50),
                "contributor": {"type": "ai", "model_id": "anthropic/claude-sonnet-4-5"},
                "ranges": [{"start_line": start, "end_line": end, "content_hash": hash}],
                "related": [{"type": "intent", "url": format!("mandate://intent/INT-{:03}", f % 97)}],
            }]}],
            "metadata": {"dev.mandate": {
                "intent_id": format!("INT-{:03}", f % 97), "task_id": format!("t{}", n / 50),
                "mutation_class": {"declared": "INTENT_EVOLUTION", "computed": "INTENT_EVOLUTION"},
                "mutation_reason": "the code's tokens changed beyond formatting, moves and renames",
                "tool": "apply_diff", "tool_call_id": format!("call_{n}"),
                "approval": {"by": "user", "at": "2026-11-21T12:00:00Z", "accepted_hunks": [0], "rejected_hunks": [], "edited": false},
                "diffs": {path.clone(): diff},
                "prev": prev,
            }},
        });
        let digest = record_digest(&record);
        record["metadata"]["dev.mandate"]["digest"] = json!(digest);
        let line = canonical_json(&record);
        prev = sha256_hex(line.as_bytes());
        out.push_str(&line);
        out.push('\n');
    }
    write(&dir.join(".orchestration/agent_trace.jsonl"), &out);
}

pub fn file_path(f: usize) -> String {
    format!("src/d{:02}/f{f:04}.rs", f / 100)
}

/// A 200 KB answer: paragraphs, lists, code blocks, a table, in the proportions of real answers.
pub fn markdown_answer(target: usize) -> String {
    let mut rng = Rng::new(3);
    let mut out = String::with_capacity(target + 1024);
    let mut section = 0;
    while out.len() < target {
        section += 1;
        let _ = writeln!(out, "## Step {section}: {}\n", words(&mut rng, 4).trim());
        let _ = writeln!(
            out,
            "{} **{}** and `{}`.\n",
            words(&mut rng, 40).replace('\n', " ").trim(),
            WORDS[rng.below(WORDS.len())],
            WORDS[rng.below(WORDS.len())]
        );
        for _ in 0..4 {
            let _ = writeln!(out, "- {}", words(&mut rng, 8).trim().replace('\n', " "));
        }
        out.push_str("\n```rust\n");
        for l in 0..12 {
            let _ = writeln!(
                out,
                "    let {}_{l} = {}(&{});",
                WORDS[rng.below(WORDS.len())],
                WORDS[rng.below(WORDS.len())],
                WORDS[rng.below(WORDS.len())]
            );
        }
        out.push_str("```\n\n");
        if section % 5 == 0 {
            out.push_str("| file | lines | intent |\n|---|---|---|\n");
            for r in 0..6 {
                let _ = writeln!(
                    out,
                    "| src/{}.rs | {}-{} | INT-{r:03} |",
                    WORDS[rng.below(WORDS.len())],
                    r * 10,
                    r * 10 + 7
                );
            }
            out.push('\n');
        }
    }
    out
}

pub const MANY_INTENTS: usize = 250_000;

/// `active_intents.yaml` with 250,000 intents of ~210 bytes each (~52 MB, the size of the
/// file in the report that asked for this figure): three globs of the usual shapes, a
/// constraint, two acceptance criteria and a key Mandate does not know.
pub fn many_intents(dir: &Path) {
    let mut rng = Rng::new(17);
    let mut yaml = String::with_capacity(MANY_INTENTS * 230);
    yaml.push_str("# Generated: many intents.\nactive_intents:\n");
    for i in 0..MANY_INTENTS {
        let status = ["NOT_STARTED", "IN_PROGRESS", "DONE", "BLOCKED"][rng.below(4)];
        let _ = write!(
            yaml,
            "  - id: INT-{i:06}\n    name: {}\n    status: {status}\n    owned_scope: [\"src/m{i}/**\", \"tests/m{i}/*.rs\", \"docs/m{i}.md\"]\n    constraints: [\"keep the public API\"]\n    acceptance_criteria: [\"{}\", cargo test passes]\n    owner: team-{}\n",
            words(&mut rng, 3).trim(),
            words(&mut rng, 3).trim(),
            rng.below(40),
        );
    }
    write(&dir.join(".orchestration/active_intents.yaml"), &yaml);
}

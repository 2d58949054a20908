//! Governed writes across processes and through crashes: no write is ever accepted on content
//! another process already replaced, and a writer killed at any moment leaves either the old bytes
//! and no record, or the new bytes and a record — once the next `mandate` process has recovered.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{ledger, mandate};
use serde_json::Value;

const STRESS: &str = env!("CARGO_BIN_EXE_journal-stress");

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn image(record: &Value, path: &str, which: &str) -> Option<String> {
    record["metadata"]["dev.mandate"]["images"][path][which]
        .as_str()
        .map(str::to_string)
}

/// Per file, in ledger order: each record's "before" is the previous record's "after" (the
/// first one's is the file's initial content), and the file holds the last "after".
fn assert_histories_chain(
    ws: &Path,
    initial: &HashMap<String, Option<String>>,
) -> HashMap<String, usize> {
    let mut last: HashMap<String, Option<String>> = initial.clone();
    let mut counts = HashMap::new();
    for record in ledger(ws) {
        let path = record["files"][0]["path"]
            .as_str()
            .expect("path")
            .to_string();
        let before = image(&record, &path, "before");
        let expected = last.get(&path).cloned().flatten();
        assert_eq!(
            before, expected,
            "a write to {path} was accepted on content that had already been replaced"
        );
        last.insert(path.clone(), image(&record, &path, "after"));
        *counts.entry(path).or_insert(0) += 1;
    }
    for (path, after) in &last {
        let now = std::fs::read(ws.join(path)).ok().map(|b| sha256(&b));
        assert_eq!(
            &now, after,
            "{path} on disk is not what its last record says"
        );
    }
    counts
}

/// The journal directories under the data directory `data` (one per workspace).
fn journals(data: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(data.join("ledgers"))
        .map(|d| d.flatten().map(|e| e.path().join("journal")).collect())
        .unwrap_or_default()
}

/// Whether the journal file `path` holds an entry: a file of its own (`*.json`), or a slot
/// (`slot-N`) whose content is an entry rather than the free mark.
fn holds_entry(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.ends_with(".json")
        || (name.starts_with("slot-")
            && std::fs::read(path).is_ok_and(|b| b.starts_with(b"mandate-journal-entry")))
}

fn leftovers(ws: &Path, data: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs = journals(data);
    dirs.extend([ws.join(".orchestration/.journal"), ws.join("hammer")]);
    for dir in dirs {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if holds_entry(&e.path()) || name.ends_with(".tmp") {
                    found.push(name);
                }
            }
        }
    }
    found
}

#[tokio::test]
async fn several_processes_never_accept_a_write_on_a_replaced_base() {
    let ws = workspace(
        None,
        &[("hammer/0.txt", "start\n"), ("hammer/1.txt", "start\n")],
    );
    let dirs = UserDirs::new();
    let initial: HashMap<String, Option<String>> = (0..3)
        .map(|i| {
            let path = format!("hammer/{i}.txt");
            let now = std::fs::read(ws.path().join(&path))
                .ok()
                .map(|b| sha256(&b));
            (path, now)
        })
        .collect();
    let mut children = Vec::new();
    for tag in ["a", "b", "c", "d"] {
        children.push(
            tokio::process::Command::new(STRESS)
                .arg(ws.path())
                .arg(dirs.data())
                .args([tag, "120", "0", "3"])
                .output(),
        );
    }
    let mut accepted = 0usize;
    for child in children {
        let out = child.await.expect("stress process");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        accepted += String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<usize>()
            .expect("count");
    }
    let counts = assert_histories_chain(ws.path(), &initial);
    assert_eq!(
        counts.values().sum::<usize>(),
        accepted,
        "every accepted write has its record"
    );
    assert!(accepted >= 120, "too few writes got through: {accepted}");
    // Each accepted write appended one line: nothing accepted is missing from a file's history.
    for (path, n) in &counts {
        let text = std::fs::read_to_string(ws.path().join(path)).expect("read");
        let initial_lines = usize::from(initial[path].is_some());
        assert_eq!(text.lines().count(), initial_lines + n, "{path}");
    }
    let verify = mandate(
        &[
            "--workspace",
            &ws.path().display().to_string(),
            "trace",
            "verify",
        ],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(verify.code, Some(0), "{}{}", verify.stdout, verify.stderr);
}

/// Polls the journal (in the data directory `data`) until a write has an entry on disk (or the
/// deadline passes).
fn wait_for_an_entry(data: &Path, deadline: Duration) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < deadline {
        let busy = journals(data).iter().any(|journal| {
            std::fs::read_dir(journal)
                .map(|d| d.flatten().any(|e| holds_entry(&e.path())))
                .unwrap_or(false)
        });
        if busy {
            return true;
        }
        std::hint::spin_loop();
    }
    false
}

/// A small deterministic generator: the trials differ, and a failure can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

#[tokio::test]
async fn a_writer_killed_at_any_moment_leaves_old_bytes_without_record_or_new_bytes_with_one() {
    let ws = workspace(None, &[("hammer/0.txt", "start\n")]);
    let dirs = UserDirs::new();
    // The history the chain check walks starts here (the calibration runs are part of it).
    let mut initial: HashMap<String, Option<String>> = HashMap::new();
    initial.insert("hammer/0.txt".into(), Some(sha256(b"start\n")));
    initial.insert("hammer/1.txt".into(), None);
    let mut rng = Lcg(0x5eed);
    // How long an uninterrupted run of each size takes here, so kills land across its whole life.
    let mut span = HashMap::new();
    for max_bytes in [0usize, 1 << 20, 5 << 20] {
        let started = std::time::Instant::now();
        let out = std::process::Command::new(STRESS)
            .arg(ws.path())
            .arg(dirs.data())
            .args(["calibrate", "6", &max_bytes.to_string(), "2"])
            .output()
            .expect("calibrate");
        assert!(out.status.success());
        span.insert(max_bytes, started.elapsed().as_millis().max(5) as u64);
    }
    let (mut recovered, mut trials, mut seen) = (0, 0, 0);
    for trial in 0..100 {
        // Small writes mostly; every sixth trial rewrites with a megabyte or five.
        let max_bytes = match trial % 6 {
            0 if trial % 24 == 0 => 5 << 20,
            0 => 1 << 20,
            _ => 0,
        };
        let mut child = std::process::Command::new(STRESS)
            .arg(ws.path())
            .arg(dirs.data())
            .args([&format!("t{trial}"), "6", &max_bytes.to_string(), "2"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        if trial % 2 == 0 {
            // At a random moment of the writer's life (start-up, a write, between writes).
            std::thread::sleep(Duration::from_millis(rng.next(span[&max_bytes])));
        } else {
            // The moment an entry says a write is under way: the window recovery exists for.
            if wait_for_an_entry(&dirs.data(), Duration::from_secs(30)) {
                seen += 1;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        trials += 1;
        // The next process to open the workspace recovers; `trace verify` is one.
        let verify = mandate(
            &[
                "--workspace",
                &ws.path().display().to_string(),
                "trace",
                "verify",
                "--json",
            ],
            &dirs,
            &[],
        )
        .await;
        if verify.stderr.contains("recovered:") {
            recovered += 1;
        }
        assert_eq!(
            verify.code,
            Some(0),
            "trial {trial}: the ledger does not verify after a kill: {}{}",
            verify.stdout,
            verify.stderr
        );
        assert_histories_chain(ws.path(), &initial);
        assert!(
            leftovers(ws.path(), &dirs.data()).is_empty(),
            "trial {trial}: {:?} {}",
            leftovers(ws.path(), &dirs.data()),
            verify.stderr
        );
    }
    assert_eq!(trials, 100);
    eprintln!("{recovered} of {trials} kills left a write for recovery ({seen} seen in flight)");
    // Kills landed inside writes often enough for recovery to have had work to do.
    assert!(recovered > 0, "no trial interrupted a write");
}

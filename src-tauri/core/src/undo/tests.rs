//! Random sequences of agent writes and deletions (through the journal), a person's edits,
//! deletions and renames (straight to disk), and undos of random earlier calls. After every undo:
//! either each file holds exactly the expected bytes, or the undo refused that file with a reason
//! naming it and left it untouched; and no line a person wrote is ever lost.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::*;
use crate::checkpoint::CheckpointStore;
use crate::journal::{FileWrite, Journal};
use crate::orchestration::ledger::{ApprovalRecord, Ledger, TraceEntry};
use crate::workspace::Workspace;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

fn entry(call: &str) -> TraceEntry {
    TraceEntry {
        task_id: "task".into(),
        intent_id: "INT-1".into(),
        model_id: "test/model".into(),
        tool: "write_to_file".into(),
        tool_call_id: call.into(),
        contributor: crate::protocol::Contributor::Ai,
        mutation_declared: Some(crate::protocol::MutationClass::IntentEvolution),
        mutation_computed: None,
        approval: ApprovalRecord {
            by: crate::protocol::Approver::Policy,
            at: "2026-01-01T00:00:00Z".into(),
            accepted_hunks: vec![],
            rejected_hunks: vec![],
            edited: false,
            user_hooks: Vec::new(),
        },
        files: vec![],
        extra: Default::default(),
    }
}

/// What one agent call did: (file, bytes before, bytes after).
type Call = (String, Option<Vec<u8>>, Option<Vec<u8>>);

struct World {
    _tmp: tempfile::TempDir,
    ws: Workspace,
    ledger: Arc<Ledger>,
    journal: Journal,
    rt: tokio::runtime::Runtime,
    /// What each agent call did.
    calls: BTreeMap<String, Call>,
    /// Calls whose change is taken back (or abandoned as a conflict) and the last change per file.
    undone: HashSet<String>,
    last_change: BTreeMap<String, String>,
    /// Files a person touched since the agent's last change to them.
    human_since: HashSet<String>,
}

const FILES: [&str; 3] = ["src/a.txt", "src/b.txt", "src/c.txt"];

impl World {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(tmp.path().join("ws/src")).expect("mkdir");
        let ws = Workspace::new(&tmp.path().join("ws")).expect("ws");
        let store = Arc::new(CheckpointStore::new(&tmp.path().join("data"), ws.root()));
        Self {
            ledger: Arc::new(Ledger::new(ws.root())),
            journal: Journal::new(ws.root(), store),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("rt"),
            ws,
            _tmp: tmp,
            calls: BTreeMap::new(),
            undone: HashSet::new(),
            last_change: BTreeMap::new(),
            human_since: HashSet::new(),
        }
    }

    fn read(&self, f: &str) -> Option<Vec<u8>> {
        std::fs::read(self.ws.root().join(f)).ok()
    }

    fn lines(&self, f: &str) -> Vec<String> {
        self.read(f)
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn human_lines(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for f in FILES.iter().chain(["src/moved.txt"].iter()) {
            for l in self.lines(f) {
                if l.starts_with('H') {
                    out.push((f.to_string(), l));
                }
            }
        }
        out
    }

    fn agent(&mut self, rng: &mut Rng, n: usize) {
        let f = FILES[rng.below(FILES.len())];
        let before = self.read(f);
        let mut lines = self.lines(f);
        let call = format!("c{n}");
        let after = if before.is_some() && rng.below(8) == 0 {
            None
        } else {
            let tag = format!("A{n}");
            match (lines.len(), rng.below(3)) {
                (0, _) | (_, 0) => {
                    let at = rng.below(lines.len() + 1);
                    lines.insert(at, tag);
                }
                (len, 1) => lines[rng.below(len)] = tag,
                (len, _) => {
                    lines.remove(rng.below(len));
                }
            }
            Some(
                lines
                    .iter()
                    .map(|l| format!("{l}\n"))
                    .collect::<String>()
                    .into_bytes(),
            )
        };
        let path = self.ws.resolve(f).expect("resolve");
        let mut write = FileWrite::new(path, before.clone(), Vec::new(), entry(&call));
        write.new = after.clone();
        let done = self
            .rt
            .block_on(self.journal.write(self.ledger.clone(), write, |_| None));
        assert!(done.is_ok(), "agent write: {:?}", done.err());
        self.calls
            .insert(call.clone(), (f.to_string(), before, after));
        self.last_change.insert(f.to_string(), call);
        self.human_since.remove(f);
    }

    fn person(&mut self, rng: &mut Rng, n: usize) {
        let f = FILES[rng.below(FILES.len())];
        let abs = self.ws.root().join(f);
        match rng.below(6) {
            0 if abs.exists() => std::fs::remove_file(&abs).expect("rm"),
            1 if abs.exists() => {
                std::fs::rename(&abs, self.ws.root().join("src/moved.txt")).expect("mv")
            }
            _ => {
                let mut lines = self.lines(f);
                let tag = format!("H{n}");
                if lines.is_empty() || rng.below(2) == 0 {
                    let at = rng.below(lines.len() + 1);
                    lines.insert(at, tag);
                } else {
                    let at = rng.below(lines.len());
                    lines[at] = tag;
                }
                let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
                std::fs::write(&abs, text).expect("write");
            }
        }
        self.human_since.insert(f.to_string());
    }

    fn undo(&mut self, rng: &mut Rng) {
        let open: Vec<String> = self
            .calls
            .keys()
            .filter(|c| !self.undone.contains(*c))
            .cloned()
            .collect();
        if open.is_empty() {
            return;
        }
        let call = open[rng.below(open.len())].clone();
        let (file, before, _) = self.calls[&call].clone();
        let humans_before = self.human_lines();
        let on_disk_before = self.read(&file);
        let selection = Selection {
            call_ids: Some([call.clone()].into_iter().collect()),
            ..Selection::default()
        };
        let plan = plan(self.ws.root(), &self.journal.checkpoints, &selection).expect("plan");
        let applied = self.rt.block_on(apply(
            &self.ws,
            &self.journal,
            self.ledger.clone(),
            &plan,
            None,
            &Undoer {
                by: crate::protocol::Approver::User,
                scope: &call,
                undo_id: &format!("undo-{call}"),
            },
        ));
        assert_eq!(applied.len(), 1, "{applied:?}");
        let now = self.read(&file);
        let clean = self.last_change.get(&file) == Some(&call) && !self.human_since.contains(&file);
        match &applied[0].result {
            FileResult::Undone { .. } => {
                if clean {
                    assert_eq!(now, before, "undoing {call} did not restore {file} exactly");
                }
                let tag = format!("A{}", &call[1..]);
                assert!(
                    !self.lines(&file).contains(&tag)
                        || self.calls.iter().any(|(c, (f, _, a))| c != &call
                            && f == &file
                            && a.as_deref()
                                .is_some_and(|a| String::from_utf8_lossy(a).contains(&tag))),
                    "{call}'s line is still in {file}"
                );
            }
            FileResult::Skipped { reason } => {
                assert!(
                    reason.contains(&file),
                    "the reason does not name the file: {reason}"
                );
                assert_eq!(now, on_disk_before, "a refused undo changed {file}");
                assert!(
                    !clean || before == on_disk_before,
                    "a clean undo of {call} was refused: {reason}"
                );
            }
            FileResult::Failed { reason } => panic!("undo of {call} failed: {reason}"),
        }
        for (f, line) in humans_before {
            let still = self.lines(&f).contains(&line);
            assert!(still, "undoing {call} lost the person's line {line} in {f}");
        }
        self.undone.insert(call.clone());
        // The file moved on: later undos are judged against what it holds now.
        self.human_since.insert(file);
    }
}

#[test]
fn undo_restores_exact_bytes_or_refuses_naming_the_file_and_never_loses_a_persons_edit() {
    for seed in 1..=40u64 {
        let mut world = World::new();
        let mut rng = Rng(seed);
        for n in 0..30 {
            match rng.below(10) {
                0..=4 => world.agent(&mut rng, n),
                5..=6 => world.person(&mut rng, n),
                _ => world.undo(&mut rng),
            }
        }
        let report = crate::orchestration::trace::verify(world.ws.root()).expect("verify");
        assert!(
            report.chain_ok,
            "seed {seed}: the ledger chain broke: {report:?}"
        );
    }
}

#[test]
fn a_clean_undo_restores_the_file_and_blame_shows_the_earlier_origin() {
    let world = World::new();
    std::fs::write(world.ws.root().join("src/a.txt"), "one\ntwo\n").expect("w");
    let base = world.read("src/a.txt");
    for (call, text) in [("c1", "one\nTWO\n"), ("c2", "one\nTWO\nthree\n")] {
        let path = world.ws.resolve("src/a.txt").expect("r");
        let before = world.read("src/a.txt");
        let w = FileWrite::new(path, before, text.as_bytes().to_vec(), entry(call));
        world
            .rt
            .block_on(world.journal.write(world.ledger.clone(), w, |_| None))
            .expect("write");
    }
    let selection = Selection {
        call_ids: Some(["c2".to_string()].into_iter().collect()),
        ..Selection::default()
    };
    let plan = plan(world.ws.root(), &world.journal.checkpoints, &selection).expect("plan");
    assert_eq!(plan.files[0].action, FileAction::Restore);
    let who = Undoer {
        by: crate::protocol::Approver::User,
        scope: "c2",
        undo_id: "u1",
    };
    let applied = world.rt.block_on(apply(
        &world.ws,
        &world.journal,
        world.ledger.clone(),
        &plan,
        None,
        &who,
    ));
    assert!(
        matches!(applied[0].result, FileResult::Undone { .. }),
        "{applied:?}"
    );
    assert_eq!(world.read("src/a.txt").as_deref(), Some(&b"one\nTWO\n"[..]));
    // Line 2 came from c1 again; the undo record claims no lines.
    let blame = crate::orchestration::trace::blame(world.ws.root(), "src/a.txt").expect("blame");
    let origin = blame.lines[1].origin.as_ref().expect("origin");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(
        world
            .ws
            .root()
            .join(crate::orchestration::ledger::LEDGER_FILE),
    )
    .expect("ledger")
    .lines()
    .map(|l| serde_json::from_str(l).expect("json"))
    .collect();
    assert_eq!(origin.record_id, records[0]["id"].as_str().expect("id"));
    assert_eq!(
        records[2]["metadata"]["dev.mandate"]["revert_of"][0],
        records[1]["id"]
    );
    // Taken back once: a second undo of c2 has nothing to do.
    assert!(plan_again(&world, "c2").is_err());
    // The whole history back to the start.
    let all = Selection {
        task_id: Some("task".into()),
        ..Selection::default()
    };
    let plan = super::plan(world.ws.root(), &world.journal.checkpoints, &all).expect("plan");
    let who = Undoer {
        by: crate::protocol::Approver::User,
        scope: "task",
        undo_id: "u2",
    };
    world.rt.block_on(apply(
        &world.ws,
        &world.journal,
        world.ledger.clone(),
        &plan,
        None,
        &who,
    ));
    assert_eq!(world.read("src/a.txt"), base);
}

fn plan_again(world: &World, call: &str) -> Result<UndoPlan, PlanError> {
    let selection = Selection {
        call_ids: Some([call.to_string()].into_iter().collect()),
        ..Selection::default()
    };
    plan(world.ws.root(), &world.journal.checkpoints, &selection)
}

#[test]
fn created_files_are_removed_deleted_ones_come_back_and_modes_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new();
    let root = world.ws.root().to_path_buf();
    std::fs::write(root.join("src/run.sh"), "#!/bin/sh\necho hi\n").expect("w");
    std::fs::set_permissions(
        root.join("src/run.sh"),
        std::fs::Permissions::from_mode(0o750),
    )
    .expect("chmod");
    let write = |call: &str, rel: &str, new: Option<&[u8]>| {
        let path = world.ws.resolve(rel).expect("r");
        let mut w = FileWrite::new(path, world.read(rel), Vec::new(), entry(call));
        w.new = new.map(<[u8]>::to_vec);
        world
            .rt
            .block_on(world.journal.write(world.ledger.clone(), w, |_| None))
            .expect("write");
    };
    write("c1", "src/new.txt", Some(b"fresh\n"));
    write("c2", "src/run.sh", None);
    let all = Selection {
        task_id: Some("task".into()),
        ..Selection::default()
    };
    let plan = plan(&root, &world.journal.checkpoints, &all).expect("plan");
    let actions: BTreeMap<&str, &FileAction> = plan
        .files
        .iter()
        .map(|f| (f.path.as_str(), &f.action))
        .collect();
    assert_eq!(actions["src/new.txt"], &FileAction::Remove);
    assert_eq!(actions["src/run.sh"], &FileAction::Recreate);
    let who = Undoer {
        by: crate::protocol::Approver::User,
        scope: "task",
        undo_id: "u",
    };
    world.rt.block_on(apply(
        &world.ws,
        &world.journal,
        world.ledger.clone(),
        &plan,
        None,
        &who,
    ));
    assert!(!root.join("src/new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("src/run.sh")).expect("r"),
        "#!/bin/sh\necho hi\n"
    );
    let mode = std::fs::metadata(root.join("src/run.sh"))
        .expect("m")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o750);
}

#[test]
fn hostile_ledger_paths_are_refused() {
    let world = World::new();
    let mut plan = UndoPlan {
        records: vec!["r".into()],
        files: vec![FilePlan {
            path: ".git/hooks/pre-commit".into(),
            action: FileAction::Restore,
            current: None,
            target: Some(b"#!/bin/sh\nevil\n".to_vec()),
            mode: Some(0o755),
            records: vec!["r".into()],
            intents: vec![],
            tasks: vec![],
        }],
    };
    let who = Undoer {
        by: crate::protocol::Approver::User,
        scope: "x",
        undo_id: "u",
    };
    for path in [
        ".git/hooks/pre-commit",
        "../outside.txt",
        ".orchestration/active_intents.yaml",
    ] {
        plan.files[0].path = path.into();
        let applied = world.rt.block_on(apply(
            &world.ws,
            &world.journal,
            world.ledger.clone(),
            &plan,
            None,
            &who,
        ));
        assert!(
            matches!(applied[0].result, FileResult::Failed { .. }),
            "{path}: {applied:?}"
        );
    }
    assert!(!world.ws.root().join(".git/hooks/pre-commit").exists());
}

#[test]
fn a_forged_ledger_path_is_never_read_into_a_preview() {
    let world = World::new();
    let root = world.ws.root().to_path_buf();
    let outside = root.parent().expect("parent").join("outside.txt");
    std::fs::write(&outside, "a secret of the machine\n").expect("w");
    let path = world.ws.resolve("src/a.txt").expect("r");
    let w = FileWrite::new(path, None, b"x\n".to_vec(), entry("c1"));
    world
        .rt
        .block_on(world.journal.write(world.ledger.clone(), w, |_| None))
        .expect("write");
    // Someone rewrites the record to name a file outside the workspace.
    let ledger = root.join(crate::orchestration::ledger::LEDGER_FILE);
    let text = std::fs::read_to_string(&ledger).expect("ledger");
    std::fs::write(&ledger, text.replace("src/a.txt", "../outside.txt")).expect("forge");
    let all = Selection {
        task_id: Some("task".into()),
        ..Selection::default()
    };
    let plan = plan(&root, &world.journal.checkpoints, &all).expect("plan");
    let file = &plan.files[0];
    assert_eq!(file.path, "../outside.txt");
    assert!(
        matches!(file.action, FileAction::Unavailable(_)),
        "{:?}",
        file.action
    );
    assert_eq!(file.current, None, "nothing outside the workspace is read");
    assert_eq!(
        std::fs::read_to_string(&outside).expect("outside"),
        "a secret of the machine\n"
    );
}

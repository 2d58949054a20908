use std::sync::Arc;

use super::*;
use crate::orchestration::ledger::{ApprovalRecord, LEDGER_FILE};
use crate::workspace::Workspace;

pub(crate) fn entry() -> TraceEntry {
    TraceEntry {
        task_id: "t".into(),
        intent_id: "INT-1".into(),
        model_id: "test/model".into(),
        tool: "write_to_file".into(),
        tool_call_id: "c".into(),
        contributor: crate::protocol::Contributor::Ai,
        mutation_declared: Some(crate::protocol::MutationClass::IntentEvolution),
        mutation_computed: None,
        approval: ApprovalRecord {
            by: crate::protocol::Approver::Policy,
            at: "2026-01-01T00:00:00Z".into(),
            accepted_hunks: Vec::new(),
            rejected_hunks: Vec::new(),
            edited: false,
            user_hooks: Vec::new(),
        },
        files: Vec::new(),
        extra: Default::default(),
    }
}

struct Fixture {
    tmp: tempfile::TempDir,
    ws: Workspace,
    ledger: Arc<Ledger>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(tmp.path().join("ws/.orchestration")).expect("mkdir");
    std::fs::create_dir_all(tmp.path().join("ws/src")).expect("mkdir");
    let ws = Workspace::new(&tmp.path().join("ws")).expect("ws");
    let ledger = Arc::new(Ledger::with_data_dir(ws.root(), &tmp.path().join("data")));
    Fixture { tmp, ws, ledger }
}

impl Fixture {
    fn journal(&self) -> Journal {
        Journal::new(
            self.ws.root(),
            Arc::new(CheckpointStore::new(
                &self.tmp.path().join("data"),
                self.ws.root(),
            )),
        )
    }
    fn write(&self, rel: &str, base: Option<&[u8]>, new: &[u8]) -> FileWrite {
        FileWrite::new(
            self.ws.resolve(rel).expect("resolve"),
            base.map(<[u8]>::to_vec),
            new.to_vec(),
            entry(),
        )
    }
    fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(self.ws.root().join(LEDGER_FILE))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("record"))
            .collect()
    }
    /// Entries left in the journal: files of their own, or slots that are not free.
    fn journal_entries(&self) -> usize {
        std::fs::read_dir(self.ledger.journal_dir())
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        !slots::is_slot(&name)
                            || std::fs::File::open(e.path()).is_ok_and(|f| {
                                slots::read(&f).is_ok_and(|c| c != slots::Content::Free)
                            })
                    })
                    .count()
            })
            .unwrap_or(0)
    }
}

fn image(record: &Value, path: &str, which: &str) -> Option<String> {
    record["metadata"]["dev.mandate"]["images"][path][which]
        .as_str()
        .map(|h| h.trim_start_matches("sha256:").to_string())
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn a_write_records_both_images_and_leaves_no_journal_entry_or_temp_file() {
    let f = fixture();
    let journal = f.journal();
    let written = rt()
        .block_on(journal.write(
            f.ledger.clone(),
            f.write("src/a.rs", None, b"one\ntwo\n"),
            |_| None,
        ))
        .expect("write");
    assert_eq!(
        std::fs::read(f.ws.root().join("src/a.rs")).expect("read"),
        b"one\ntwo\n"
    );
    assert_eq!(written.ranges, vec![(1, 2)]);
    let records = f.records();
    assert_eq!(records.len(), 1);
    assert_eq!(image(&records[0], "src/a.rs", "before"), None);
    assert_eq!(
        image(&records[0], "src/a.rs", "after"),
        written.new_hash.clone()
    );
    assert_eq!(f.journal_entries(), 0);
    let leftovers: Vec<_> = std::fs::read_dir(f.ws.root().join("src"))
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    assert_eq!(
        journal
            .checkpoints
            .get(written.new_hash.as_deref().expect("hash"))
            .expect("after image"),
        b"one\ntwo\n"
    );
}

#[test]
fn a_file_that_moved_since_the_plan_is_not_written() {
    let f = fixture();
    std::fs::write(f.ws.root().join("src/a.rs"), "theirs\n").expect("write");
    let err = rt()
        .block_on(f.journal().write(
            f.ledger.clone(),
            f.write("src/a.rs", Some(b"mine\n"), b"new\n"),
            |_| None,
        ))
        .expect_err("moved");
    assert!(matches!(err, WriteError::Moved { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws.root().join("src/a.rs")).expect("r"),
        "theirs\n"
    );
    assert!(f.records().is_empty());
}

#[test]
fn the_callers_last_check_sees_the_current_hash_and_can_refuse() {
    let f = fixture();
    std::fs::write(f.ws.root().join("src/a.rs"), "x\n").expect("write");
    let want = crate::fsutil::sha256_hex(b"x\n");
    let err = rt()
        .block_on(f.journal().write(
            f.ledger.clone(),
            f.write("src/a.rs", Some(b"x\n"), b"y\n"),
            move |hash| {
                assert_eq!(hash, Some(want.as_str()));
                Some(Denial::new(crate::hooks::DenialCode::StaleFile, "stale"))
            },
        ))
        .expect_err("refused");
    assert!(matches!(err, WriteError::Refused(_)));
    assert_eq!(
        std::fs::read_to_string(f.ws.root().join("src/a.rs")).expect("r"),
        "x\n"
    );
}

#[test]
fn a_ledger_that_refuses_the_record_puts_the_file_back() {
    let f = fixture();
    std::fs::write(f.ws.root().join("src/a.rs"), "old\n").expect("write");
    // A directory where the ledger should be: every append fails.
    std::fs::create_dir_all(f.ws.root().join(LEDGER_FILE)).expect("mkdir");
    let journal = f.journal();
    let err = rt()
        .block_on(journal.write(
            f.ledger.clone(),
            f.write("src/a.rs", Some(b"old\n"), b"new\n"),
            |_| None,
        ))
        .expect_err("ledger refused");
    let message = err.to_string();
    assert!(
        matches!(
            err,
            WriteError::Ledger {
                rolled_back: true,
                ..
            }
        ),
        "{message}"
    );
    assert!(message.contains("put back as it was"), "{message}");
    assert_eq!(
        std::fs::read_to_string(f.ws.root().join("src/a.rs")).expect("r"),
        "old\n"
    );
    // A new file is removed again.
    let err = rt()
        .block_on(journal.write(
            f.ledger.clone(),
            f.write("src/new.rs", None, b"new\n"),
            |_| None,
        ))
        .expect_err("ledger refused");
    assert!(matches!(
        err,
        WriteError::Ledger {
            rolled_back: true,
            ..
        }
    ));
    assert!(!f.ws.root().join("src/new.rs").exists());
    assert_eq!(f.journal_entries(), 0);
}

/// Two journals stand for two processes: their in-process locks are separate, so only the
/// cross-process lock keeps their writes in line.
#[test]
fn writers_in_separate_journals_never_accept_two_writes_on_one_base() {
    let f = fixture();
    std::fs::write(f.ws.root().join("src/a.rs"), "0\n").expect("write");
    let journals = [Arc::new(f.journal()), Arc::new(f.journal())];
    let rt = rt();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::scope(|scope| {
        for n in 0..4 {
            let journal = journals[n % 2].clone();
            let (f, accepted, rt) = (&f, accepted.clone(), &rt);
            scope.spawn(move || {
                for i in 0..25 {
                    // Read, then write on what was read: the lost-update pattern.
                    let base = std::fs::read(f.ws.root().join("src/a.rs")).expect("read");
                    let new = format!("{}{n}.{i}\n", String::from_utf8_lossy(&base));
                    let w = f.write("src/a.rs", Some(&base), new.as_bytes());
                    if rt
                        .block_on(journal.write(f.ledger.clone(), w, |_| None))
                        .is_ok()
                    {
                        accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
        }
    });
    let records = f.records();
    assert_eq!(
        records.len(),
        accepted.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert!(!records.is_empty());
    let mut previous = Some(crate::fsutil::sha256_hex(b"0\n"));
    for r in &records {
        assert_eq!(
            image(r, "src/a.rs", "before"),
            previous,
            "a write was accepted on a replaced base"
        );
        previous = image(r, "src/a.rs", "after");
    }
    let on_disk = std::fs::read(f.ws.root().join("src/a.rs")).expect("read");
    assert_eq!(previous, Some(crate::fsutil::sha256_hex(&on_disk)));
    let lines = String::from_utf8_lossy(&on_disk).lines().count();
    assert_eq!(
        lines,
        records.len() + 1,
        "every accepted write is in the file's history"
    );
}

/// A crash leaves an entry; here the entries are made as a dead writer would have left them,
/// each in a file of its own (as earlier versions kept them).
fn leave_entry(f: &Fixture, rel: &str, before: Option<&[u8]>, after: &[u8], temp: bool) -> Entry {
    let entry = make_entry(f, rel, before, after, temp);
    let id = entry.record["id"].as_str().expect("id").to_string();
    persist_entry(&entry_file(&f.ledger, &id), &entry).expect("entry");
    entry
}

/// The entry a writer of `rel` makes, and its temporary file if `temp`.
fn make_entry(f: &Fixture, rel: &str, before: Option<&[u8]>, after: &[u8], temp: bool) -> Entry {
    let mut w = f.write(rel, before, after);
    w.entry.tool_call_id = format!("crash-{rel}");
    let before_hash = before.map(crate::fsutil::sha256_hex);
    let after_hash = crate::fsutil::sha256_hex(after);
    let images = Images {
        before: before_hash.as_deref(),
        after: Some(&after_hash),
        before_mode: None,
        after_mode: None,
    };
    let (record, _, _) = prepare_record(
        &w,
        &images,
        crate::orchestration::git::head_revision(f.ws.root()),
        crate::orchestration::ledger::new_record_id(),
        super::analysis::analyze(before, Some(after), rel, true),
    );
    let id = record["id"].as_str().expect("id").to_string();
    let entry = Entry {
        format: 1,
        path: rel.into(),
        before: before_hash,
        after: Some(after_hash),
        temp: format!(
            ".{}.mandate-{id}.tmp",
            rel.rsplit('/').next().unwrap_or(rel)
        ),
        record,
    };
    if temp {
        let dir = f.ws.root().join(rel);
        std::fs::write(dir.parent().expect("dir").join(&entry.temp), after).expect("temp");
    }
    entry
}

/// An entry left in a slot by a writer that died (its lock released with it).
fn leave_in_slot(f: &Fixture, entry: &Entry) {
    let slot = slots::Slots::default()
        .take(&f.ledger.journal_dir())
        .expect("slot");
    slot.persist(&serde_json::to_vec(entry).expect("json"))
        .expect("persist");
}

#[test]
fn recovery_finishes_a_dead_writers_slot_and_leaves_a_live_writers_slot_alone() {
    let f = fixture();
    let root = f.ws.root();
    let dir = f.ledger.journal_dir();
    std::fs::write(root.join("src/done.rs"), "new\n").expect("w");
    leave_in_slot(
        &f,
        &make_entry(&f, "src/done.rs", Some(b"old\n"), b"new\n", false),
    );
    // A live writer's slot: its entry says a write is under way; the file still holds the old
    // bytes, and rolling it back now would race the writer.
    std::fs::write(root.join("src/live.rs"), "old\n").expect("w");
    let live = slots::Slots::default();
    let held = live.take(&dir).expect("slot");
    let entry = make_entry(&f, "src/live.rs", Some(b"old\n"), b"new\n", true);
    held.persist(&serde_json::to_vec(&entry).expect("json"))
        .expect("persist");
    // A slot torn by a power cut: its write never started.
    let torn = slots::Slots::default().take(&dir).expect("slot");
    torn.persist(b"{\"format\":1}").expect("persist");
    let path = torn.path().to_path_buf();
    drop(torn);
    let mut bytes = std::fs::read(&path).expect("read");
    let last = bytes.len() - 2;
    bytes[last] = b'2';
    std::fs::write(&path, bytes).expect("tear");

    assert_eq!(
        recover(root, &f.ledger),
        vec![Recovered::Completed {
            path: "src/done.rs".into()
        }]
    );
    assert_eq!(f.records().len(), 1);
    assert_eq!(
        f.journal_entries(),
        1,
        "only the live writer's entry is left"
    );
    assert!(
        root.join("src").join(&entry.temp).exists(),
        "the live writer's temporary file is left too"
    );
    // Its writer goes on: the entry is still there for it.
    drop(held);
    assert_eq!(
        recover(root, &f.ledger),
        vec![Recovered::RolledBack {
            path: "src/live.rs".into()
        }]
    );
    assert_eq!(f.journal_entries(), 0);
    // The freed slots are used again by the next writer; no file is added.
    let files = std::fs::read_dir(&dir).expect("ls").count();
    let j = f.journal();
    rt().block_on(j.write(
        f.ledger.clone(),
        f.write("src/done.rs", Some(b"new\n"), b"newer\n"),
        |_| None,
    ))
    .expect("write");
    assert_eq!(std::fs::read_dir(&dir).expect("ls").count(), files);
    assert_eq!(f.journal_entries(), 0);
}

#[test]
fn recovery_completes_rolls_back_or_abandons_and_says_so() {
    let f = fixture();
    let root = f.ws.root();
    // Renamed, not recorded: completed.
    std::fs::write(root.join("src/done.rs"), "new\n").expect("w");
    leave_entry(&f, "src/done.rs", Some(b"old\n"), b"new\n", false);
    // Not renamed: rolled back, temp file removed.
    std::fs::write(root.join("src/undone.rs"), "old\n").expect("w");
    leave_entry(&f, "src/undone.rs", Some(b"old\n"), b"new\n", true);
    // A new file that never appeared: rolled back.
    leave_entry(&f, "src/never.rs", None, b"new\n", true);
    // Changed by someone after the crash: left alone.
    std::fs::write(root.join("src/edited.rs"), "theirs\n").expect("w");
    leave_entry(&f, "src/edited.rs", Some(b"old\n"), b"new\n", false);
    // Recorded already: only cleaned.
    std::fs::write(root.join("src/recorded.rs"), "new\n").expect("w");
    let recorded = leave_entry(&f, "src/recorded.rs", Some(b"old\n"), b"new\n", false);
    f.ledger
        .append_record(recorded.record.clone())
        .expect("append");
    // A torn entry (the write it announced never started).
    std::fs::write(
        f.ledger.journal_dir().join("torn.json"),
        "{\"format\":1,\"pa",
    )
    .expect("w");
    // A temp file of an atomic write whose process is gone.
    std::fs::write(
        root.join(".orchestration/.active_intents.yaml.tmp-999999999-abc"),
        "x",
    )
    .expect("w");

    let mut done = recover(root, &f.ledger);
    done.sort_by_key(|r| r.to_string());
    let paths: Vec<String> = done.iter().map(|r| format!("{r:?}")).collect();
    assert_eq!(
        done,
        vec![
            Recovered::Abandoned {
                path: "src/edited.rs".into()
            },
            Recovered::Completed {
                path: "src/done.rs".into()
            },
            Recovered::RolledBack {
                path: "src/never.rs".into()
            },
            Recovered::RolledBack {
                path: "src/undone.rs".into()
            },
        ],
        "{paths:?}"
    );
    assert!(done[1].to_string().contains("record was added"));
    assert_eq!(f.journal_entries(), 0);
    assert!(!root
        .join(".orchestration/.active_intents.yaml.tmp-999999999-abc")
        .exists());
    let temps = std::fs::read_dir(root.join("src"))
        .expect("ls")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .count();
    assert_eq!(temps, 0);
    let records = f.records();
    assert_eq!(records.len(), 2, "the recorded one and the completed one");
    assert_eq!(records[1]["files"][0]["path"], "src/done.rs");
    assert!(recover(root, &f.ledger).is_empty(), "recovery runs once");
}

#[test]
fn recovery_leaves_the_entry_of_a_live_writer_alone() {
    let f = fixture();
    std::fs::write(f.ws.root().join("src/busy.rs"), "new\n").expect("w");
    leave_entry(&f, "src/busy.rs", Some(b"old\n"), b"new\n", false);
    let held = lock_path(f.ws.root(), "src/busy.rs").expect("lock");
    assert!(recover(f.ws.root(), &f.ledger).is_empty());
    assert_eq!(f.journal_entries(), 1);
    drop(held);
    assert_eq!(
        recover(f.ws.root(), &f.ledger),
        vec![Recovered::Completed {
            path: "src/busy.rs".into()
        }]
    );
}

/// Rewrites the entry `id` left by `leave_entry` with `change` applied.
fn tamper(f: &Fixture, entry: &Entry, change: impl FnOnce(&mut Entry)) {
    let mut forged = entry.clone();
    change(&mut forged);
    let id = entry.record["id"].as_str().expect("id");
    persist_entry(&entry_file(&f.ledger, id), &forged).expect("entry");
}

/// A file outside the workspace that a forged entry aims at; it must still read "keep me".
fn victim(f: &Fixture) -> std::path::PathBuf {
    let outside = f.tmp.path().join("victim.txt");
    std::fs::write(&outside, "keep me\n").expect("w");
    outside
}

#[test]
fn planted_journal_entries_delete_read_and_record_nothing() {
    let f = fixture();
    let root = f.ws.root();
    let outside = victim(&f);
    std::fs::write(root.join("src/a.rs"), "new\n").expect("w");
    std::fs::write(root.join(".intentignore"), "secret/\n").expect("w");
    // A temporary name that climbs out of the workspace: recovery would delete the victim.
    let e = leave_entry(&f, "src/a.rs", Some(b"old\n"), b"new\n", false);
    tamper(&f, &e, |x| x.temp = "../../victim.txt".into());
    // A path outside the workspace, and a protected one.
    let e = leave_entry(&f, "src/b.rs", Some(b"old\n"), b"new\n", false);
    tamper(&f, &e, |x| x.path = outside.display().to_string());
    let e = leave_entry(&f, "src/c.rs", None, b"secret/\n", false);
    tamper(&f, &e, |x| x.path = ".intentignore".into());
    // A record about another file than the entry's, and images that do not match the entry.
    let e = leave_entry(&f, "src/d.rs", Some(b"old\n"), b"new\n", false);
    tamper(&f, &e, |x| x.path = "src/a.rs".into());
    let e = leave_entry(&f, "src/a.rs", Some(b"old\n"), b"other\n", false);
    tamper(&f, &e, |x| {
        x.after = Some(crate::fsutil::sha256_hex(b"new\n"))
    });
    // An entry named after another record than its own.
    let e = leave_entry(&f, "src/a.rs", Some(b"old\n"), b"new\n", false);
    let id = e.record["id"].as_str().expect("id").to_string();
    std::fs::rename(
        entry_file(&f.ledger, &id),
        f.ledger
            .journal_dir()
            .join("00000000-0000-0000-0000-000000000000.json"),
    )
    .expect("rename");

    let done = recover(root, &f.ledger);
    assert_eq!(done.len(), 6, "{done:?}");
    assert!(
        done.iter().all(|r| matches!(r, Recovered::Rejected { .. })),
        "{done:?}"
    );
    assert!(done[0].to_string().contains("not one Mandate wrote"));
    assert_eq!(
        std::fs::read_to_string(&outside).expect("victim"),
        "keep me\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".intentignore")).expect("ignore"),
        "secret/\n"
    );
    assert!(f.records().is_empty(), "nothing planted reaches the ledger");
    assert_eq!(f.journal_entries(), 0, "planted entries are removed");
}

#[test]
fn entries_planted_in_slots_delete_read_and_record_nothing() {
    let f = fixture();
    let root = f.ws.root();
    let outside = victim(&f);
    std::fs::write(root.join("src/a.rs"), "new\n").expect("w");
    // The same forgeries as in files of their own, written into slots with a valid checksum.
    let mut forged = make_entry(&f, "src/a.rs", Some(b"old\n"), b"new\n", false);
    forged.temp = "../../victim.txt".into();
    leave_in_slot(&f, &forged);
    let mut forged = make_entry(&f, "src/b.rs", Some(b"old\n"), b"new\n", false);
    forged.path = outside.display().to_string();
    leave_in_slot(&f, &forged);
    let mut forged = make_entry(&f, "src/c.rs", None, b"x\n", false);
    forged.path = ".orchestration/active_intents.yaml".into();
    leave_in_slot(&f, &forged);
    // Not an entry at all, with a checksum that matches it.
    let slot = slots::Slots::default()
        .take(&f.ledger.journal_dir())
        .expect("slot");
    slot.persist(b"[\"not\", \"an entry\"]").expect("persist");
    drop(slot);

    let done = recover(root, &f.ledger);
    assert_eq!(done.len(), 4, "{done:?}");
    assert!(
        done.iter().all(|r| matches!(r, Recovered::Rejected { .. })),
        "{done:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).expect("victim"),
        "keep me\n"
    );
    assert!(f.records().is_empty(), "nothing planted reaches the ledger");
    assert_eq!(f.journal_entries(), 0, "planted slots are freed");
}

#[test]
fn a_well_formed_entry_in_the_workspace_is_removed_unread_and_records_nothing() {
    let f = fixture();
    let root = f.ws.root();
    // What a branch could carry: an entry exactly as a writer makes it, for a file that holds
    // its "after" bytes, so that recovery would append the record of the planter's choosing.
    std::fs::write(root.join("src/a.rs"), "new\n").expect("w");
    let planted = leave_entry(&f, "src/a.rs", Some(b"old\n"), b"new\n", false);
    let id = planted.record["id"].as_str().expect("id").to_string();
    let in_workspace = root.join(WORKSPACE_JOURNAL_DIR).join(format!("{id}.json"));
    std::fs::create_dir_all(root.join(WORKSPACE_JOURNAL_DIR)).expect("mkdir");
    std::fs::rename(entry_file(&f.ledger, &id), &in_workspace).expect("move");

    let done = recover(root, &f.ledger);
    assert_eq!(done.len(), 1, "{done:?}");
    assert!(
        matches!(&done[0], Recovered::Untrusted { file } if file.ends_with(&format!("{id}.json")))
    );
    assert!(
        done[0].to_string().contains("removed unread"),
        "{}",
        done[0]
    );
    assert!(f.records().is_empty(), "nothing planted reaches the ledger");
    assert!(!root.join(WORKSPACE_JOURNAL_DIR).exists());
    assert_eq!(
        std::fs::read_to_string(root.join("src/a.rs")).expect("a"),
        "new\n"
    );
    // The journal itself is outside the workspace.
    assert!(!f.ledger.journal_dir().starts_with(root));
}

#[test]
fn a_workspace_journal_that_links_elsewhere_removes_nothing_there() {
    let f = fixture();
    let root = f.ws.root();
    let elsewhere = f.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    std::fs::write(elsewhere.join("keep.json"), "{}").expect("w");
    std::os::unix::fs::symlink(&elsewhere, root.join(WORKSPACE_JOURNAL_DIR)).expect("link");
    assert!(recover(root, &f.ledger).is_empty());
    assert!(
        elsewhere.join("keep.json").exists(),
        "nothing outside the workspace is removed"
    );
}

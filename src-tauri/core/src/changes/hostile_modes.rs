//! Hostile modes: a process that leaves a directory or a file unreadable must not hide what it
//! changed there. Root reads everything, so these run as an unprivileged user: when the tests
//! run as root, each re-runs this test binary as uid/gid 65534 (`setpriv`), on a workspace
//! prepared for that user.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use super::*;
use crate::hooks::ignore_list::IntentIgnore;

const CHILD: &str = "MANDATE_HOSTILE_MODES_CHILD";
const WORKSPACE: &str = "MANDATE_HOSTILE_MODES_WS";
const NOBODY: u32 = 65534;

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn chmod(root: &Path, rel: &str, mode: u32) {
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {rel}: {e}"));
}

fn mode_of(root: &Path, rel: &str) -> u32 {
    std::fs::symlink_metadata(root.join(rel))
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777
}

fn chown_all(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).expect("chown");
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("read") {
            chown_all(&entry.expect("entry").path(), uid);
        }
    }
}

/// Runs `body` on a fresh workspace (made by `prepare`, as the user running the tests) as an
/// unprivileged user: this process when it is not root (it then cannot read what it made
/// unreadable either), else a copy of this test binary run as 65534.
fn as_unprivileged(test: &str, prepare: fn(&Path), body: fn(&Path)) {
    if let Some(ws) = std::env::var_os(CHILD).and(std::env::var_os(WORKSPACE)) {
        return body(Path::new(&ws));
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    if euid() != 0 {
        prepare(&ws);
        eprintln!("not root: run as uid {} directly", euid());
        return body(&ws);
    }
    chown_all(tmp.path(), NOBODY);
    prepare(&ws);
    let exe = std::env::current_exe().expect("exe");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env(WORKSPACE, &ws)
        .env("TMPDIR", tmp.path())
        .output()
        .expect("setpriv");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "as 65534:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "as 65534:\n{stdout}\n{stderr}");
}

fn kinds(changes: &[Change]) -> Vec<(String, ChangeKind)> {
    changes.iter().map(|c| (c.path.clone(), c.kind)).collect()
}

fn made_unreadable_workspace(ws: &Path) {
    let own = |rel: &str, text: &str| {
        write(ws, rel, text);
        if euid() == 0 {
            chown_all(&ws.join("src"), NOBODY);
        }
    };
    own("src/auth/login.rs", "fn login() {}\n");
    own("src/db/pool.rs", "fn pool() {}\n");
    own("src/db/deep/x.rs", "x\n");
    own("src/wx/.keep", "");
    own("src/kept/k.rs", "the person's own\n");
}

#[test]
fn what_a_process_made_unreadable_is_opened_again_and_its_changes_found() {
    as_unprivileged(
        "changes::hostile_modes::what_a_process_made_unreadable_is_opened_again_and_its_changes_found",
        made_unreadable_workspace,
        made_unreadable,
    );
}

fn made_unreadable(root: &Path) {
    // The person keeps a directory of theirs closed; Mandate reads it, and leaves it closed.
    chmod(root, "src/kept", 0o000);
    let mut before = Snapshot::take(root);
    before.reopen(None);
    assert!(before.unreadable().is_empty(), "{:?}", before.unreadable());
    assert!(before.get("src/kept/k.rs").is_some());
    assert_eq!(mode_of(root, "src/kept"), 0o000);
    let mode_before = |rel: &str| before.get(rel).expect(rel).mode & 0o7777;

    // What a process did: changed files, then closed their directories (and a file) to Mandate.
    write(root, "src/db/pool.rs", "changed\n");
    write(root, "src/db/new.rs", "new\n");
    write(root, "src/db/deep/x.rs", "changed\n");
    chmod(root, "src/db/deep", 0o000);
    chmod(root, "src/db", 0o000);
    write(root, "src/auth/new/f.rs", "f\n");
    chmod(root, "src/auth/new", 0o000);
    write(root, "src/auth/login.rs", "changed\n");
    chmod(root, "src/auth/login.rs", 0o000);
    write(
        root,
        "src/wx/f",
        "written where it can search but not list\n",
    );
    chmod(root, "src/wx", 0o300);

    let mut after = Snapshot::take(root);
    assert!(!after.unreadable().is_empty(), "the walk alone is blind");
    after.reopen(Some(&before));
    let changes = diff(&before, &mut after);
    assert!(after.unreadable().is_empty(), "{:?}", after.unreadable());
    assert_eq!(
        kinds(&changes),
        [
            ("src/auth/login.rs", ChangeKind::Modified),
            ("src/auth/new", ChangeKind::Created),
            ("src/auth/new/f.rs", ChangeKind::Created),
            ("src/db", ChangeKind::ModeChanged),
            ("src/db/deep", ChangeKind::ModeChanged),
            ("src/db/deep/x.rs", ChangeKind::Modified),
            ("src/db/new.rs", ChangeKind::Created),
            ("src/db/pool.rs", ChangeKind::Modified),
            ("src/wx", ChangeKind::ModeChanged),
            ("src/wx/f", ChangeKind::Created),
        ]
        .map(|(p, k)| (p.to_string(), k))
    );
    let login = changes.iter().find(|c| c.path == "src/auth/login.rs");
    assert_eq!(
        login.and_then(|c| c.hash_after.clone()),
        Some(format!(
            "sha256:{}",
            crate::fsutil::sha256_hex(b"changed\n")
        ))
    );
    // Modes put back as they were before the run; a new directory gets u+rwx.
    for rel in ["src/db", "src/db/deep", "src/wx", "src/auth/login.rs"] {
        assert_eq!(mode_of(root, rel), mode_before(rel), "{rel}");
    }
    assert_eq!(mode_of(root, "src/auth/new") & 0o700, 0o700);
    assert_eq!(
        mode_of(root, "src/kept"),
        0o000,
        "the person's choice stays"
    );
    let mut opened: Vec<(String, u32)> = after
        .reopened()
        .iter()
        .map(|r| (r.path.clone(), r.left_mode))
        .collect();
    opened.sort();
    assert_eq!(
        opened,
        [
            ("src/auth/login.rs", 0o000),
            ("src/auth/new", 0o000),
            ("src/db", 0o000),
            ("src/db/deep", 0o000),
            ("src/wx", 0o300),
        ]
        .map(|(p, m)| (p.to_string(), m))
    );

    undo_out_of_scope(root, &before, changes);
    chmod(root, "src/kept", 0o755);
}

/// Out of scope (the intent owns `src/auth/`): the mode changes count, and are undone.
fn undo_out_of_scope(root: &Path, before: &Snapshot, changes: Vec<Change>) {
    let owns = |p: &str| p.starts_with("src/auth/");
    let ignore = IntentIgnore::load(root).expect("ignore");
    let sorted = classify(changes, &owns, &ignore, &[], false);
    let out: Vec<Change> = sorted.out_of_scope.iter().map(|(c, _)| c.clone()).collect();
    let outcomes = restore(root, before, &out, &BeforeImages::none(), &|_| false);
    let result = |p: &str| {
        outcomes
            .iter()
            .find(|o| o.path == p)
            .map(|o| o.result.clone())
    };
    assert_eq!(result("src/db"), Some(Ok(Restored::ModeRestored)));
    assert_eq!(result("src/db/new.rs"), Some(Ok(Restored::Removed)));
    assert_eq!(result("src/wx/f"), Some(Ok(Restored::Removed)));
}

fn foreign_workspace(ws: &Path) {
    write(ws, "src/a.rs", "a\n");
    write(ws, "vault/secret", "not Mandate's\n");
    write(ws, "box/drop", "others may write, not read\n");
    if euid() == 0 {
        chown_all(&ws.join("src"), NOBODY);
        // Another user's: a closed directory, and a file anyone may write but not read.
        chmod(ws, "vault", 0o700);
        chmod(ws, "box/drop", 0o622);
    }
}

#[test]
fn what_another_user_keeps_closed_stays_unreadable_and_is_said_so() {
    if euid() != 0 {
        eprintln!("not root: there is no other user's directory to prepare; skipped");
        return;
    }
    as_unprivileged(
        "changes::hostile_modes::what_another_user_keeps_closed_stays_unreadable_and_is_said_so",
        foreign_workspace,
        foreign,
    );
}

fn foreign(root: &Path) {
    let mut before = Snapshot::take(root);
    before.reopen(None);
    assert_eq!(before.unreadable(), ["vault"]);
    write(root, "src/b.rs", "b\n");
    std::fs::write(root.join("box/drop"), "overwritten\n").expect("write");
    let mut after = Snapshot::take(root);
    after.reopen(Some(&before));
    let changes = diff(&before, &mut after);
    assert_eq!(
        kinds(&changes),
        [
            ("box/drop".to_string(), ChangeKind::Modified),
            ("src/b.rs".to_string(), ChangeKind::Created),
        ]
    );
    // Neither can be read: the caller is told (and fails closed where the process could write).
    let mut unreadable = after.unreadable().to_vec();
    unreadable.sort();
    assert_eq!(unreadable, ["box/drop", "vault"]);
}

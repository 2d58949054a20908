//! Hostile git: a process that may write a directory holding a nested repository must not leave
//! anything there that git runs later with the person's rights (`core.fsmonitor`, a hook, a
//! `.git` file pointing at a repository it made), whatever the intent's globs say; and undoing
//! it must never destroy the nested repository. Real git, real payloads: each test first shows
//! the payload fires when the change stays, then that it does not once the change is undone.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::hooks::ignore_list::IntentIgnore;

pub(crate) const WHY: &str = "git configuration in a nested repository";

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

pub(crate) fn git_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git")
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_in(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A payload outside the workspace: when git runs it, it leaves `fired`.
pub(crate) struct Payload {
    _dir: tempfile::TempDir,
    pub(crate) script: PathBuf,
    fired: PathBuf,
}

impl Payload {
    pub(crate) fn new() -> Payload {
        let dir = tempfile::tempdir().expect("tmp");
        let fired = dir.path().join("fired");
        let script = dir.path().join("payload.sh");
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\n", fired.display()),
        )
        .expect("write");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Payload {
            _dir: dir,
            script,
            fired,
        }
    }

    /// What the person does in `dir`: `git status`, then a checkout (which runs
    /// `post-checkout`). Whether the payload ran; the trace is cleared.
    pub(crate) fn fires_in(&self, dir: &Path) -> bool {
        let _ = git_in(dir, &["status"]);
        let _ = git_in(dir, &["checkout", "-q", "-B", "probe"]);
        let fired = self.fired.exists();
        let _ = std::fs::remove_file(&self.fired);
        fired
    }

    pub(crate) fn hook(&self) -> String {
        format!("#!/bin/sh\n'{}' hook\n", self.script.display())
    }
}

/// A workspace (a repository itself) with `vendor/x`, a nested clone with one commit, and
/// `vendor/sub`, a submodule-like checkout whose `.git` is a file pointing into the
/// top-level `.git/modules/`.
fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    write(root, "src/main.rs", "fn main() {}\n");
    git(root, &["init", "-q"]);
    write(root, "vendor/x/lib.rs", "pub fn x() {}\n");
    git(&root.join("vendor/x"), &["init", "-q"]);
    git(&root.join("vendor/x"), &["add", "."]);
    git(&root.join("vendor/x"), &["commit", "-qm", "x"]);
    write(root, "vendor/sub/sub.rs", "pub fn sub() {}\n");
    let modules = root.join(".git/modules/sub");
    std::fs::create_dir_all(root.join(".git/modules")).expect("mkdir");
    git(
        &root.join("vendor/sub"),
        &[
            "init",
            "-q",
            &format!("--separate-git-dir={}", modules.display()),
        ],
    );
    git(&root.join("vendor/sub"), &["add", "."]);
    git(&root.join("vendor/sub"), &["commit", "-qm", "sub"]);
    tmp
}

/// A repository outside the workspace whose configuration runs the payload (a command may
/// make one in its temporary directory).
fn evil_gitdir(payload: &Payload) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    git(dir.path(), &["init", "-q", "--bare", "evil.git"]);
    let evil = dir.path().join("evil.git");
    git(&evil, &["config", "core.bare", "false"]);
    git(
        &evil,
        &[
            "config",
            "core.fsmonitor",
            &payload.script.display().to_string(),
        ],
    );
    dir
}

fn vendor_owns(p: &str) -> bool {
    p.starts_with("vendor/")
}

fn reason_of<'a>(sorted: &'a ClassifiedChanges, path: &str) -> &'a str {
    sorted
        .out_of_scope
        .iter()
        .find(|(c, _)| c.path == path)
        .map(|(_, why)| why.as_str())
        .unwrap_or_else(|| panic!("{path} is not out of scope: {sorted:#?}"))
}

#[test]
fn a_nested_repositorys_configuration_hooks_and_gitdir_files_are_out_of_scope_and_undone() {
    let tmp = workspace();
    let root = tmp.path();
    let payload = Payload::new();
    let evil = evil_gitdir(&payload);
    let evil_line = format!("gitdir: {}\n", evil.path().join("evil.git").display());
    let (x, sub) = (root.join("vendor/x"), root.join("vendor/sub"));
    let config_before = std::fs::read(x.join(".git/config")).expect("config");
    let pointer_before = std::fs::read(sub.join(".git")).expect(".git file");
    assert!(!payload.fires_in(&x) && !payload.fires_in(&sub));
    let before = Snapshot::take(root);
    // Kept even where protected files are not copied (under bubblewrap): a nested `.git` is
    // bound read-only only where it existed when the process started, and only so many.
    let images = BeforeImages::capture_with(&before, false);

    // What a process in scope `vendor/**` did.
    write(root, "vendor/x/lib.rs", "pub fn x() { 1 }\n");
    let script = payload.script.display().to_string();
    git(&x, &["config", "core.fsmonitor", &script]);
    write(root, "vendor/x/.git/hooks/post-checkout", &payload.hook());
    std::fs::set_permissions(
        x.join(".git/hooks/post-checkout"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    git(&root.join("vendor"), &["init", "-q", "y"]);
    write(root, "vendor/y/y.rs", "pub fn y() {}\n");
    git(
        &root.join("vendor/y"),
        &["config", "core.fsmonitor", &script],
    );
    write(root, "vendor/sub/.git", &evil_line);
    write(root, "vendor/z/z.rs", "pub fn z() {}\n");
    write(root, "vendor/z/.git", &evil_line);
    for dir in ["vendor/x", "vendor/y", "vendor/sub", "vendor/z"] {
        assert!(
            payload.fires_in(&root.join(dir)),
            "{dir}: the payload is real"
        );
    }

    let mut after = Snapshot::take(root);
    let changes = diff(&before, &mut after);
    let sorted = classify(
        changes,
        &vendor_owns,
        &IntentIgnore::empty(),
        &["target"],
        false,
    );
    for path in [
        "vendor/x/.git/config",
        "vendor/x/.git/hooks/post-checkout",
        "vendor/y/.git",
        "vendor/y/.git/config",
        "vendor/y/.git/HEAD",
        "vendor/sub/.git",
        "vendor/z/.git",
    ] {
        let why = reason_of(&sorted, path);
        assert!(why.contains(WHY), "{path}: {why}");
    }
    let in_scope: Vec<&str> = sorted.in_scope.iter().map(|c| c.path.as_str()).collect();
    for path in [
        "vendor/x/lib.rs",
        "vendor/y",
        "vendor/y/y.rs",
        "vendor/z/z.rs",
    ] {
        assert!(
            in_scope.contains(&path),
            "{path} not in scope: {in_scope:?}"
        );
    }

    let out: Vec<Change> = sorted.out_of_scope.iter().map(|(c, _)| c.clone()).collect();
    let outcomes = restore(root, &before, &out, &images, &|_| false);
    let undone = not_undone(&outcomes);
    assert!(undone.is_empty(), "not undone: {undone:?}\n{outcomes:#?}");
    assert_eq!(
        std::fs::read(x.join(".git/config")).expect("config"),
        config_before
    );
    assert!(!x.join(".git/hooks/post-checkout").exists());
    assert!(!root.join("vendor/y/.git").exists());
    assert_eq!(
        std::fs::read(sub.join(".git")).expect("file"),
        pointer_before
    );
    assert!(!root.join("vendor/z/.git").exists());
    for dir in ["vendor/x", "vendor/y", "vendor/sub", "vendor/z"] {
        assert!(!payload.fires_in(&root.join(dir)), "{dir}: the payload ran");
    }
    // The nested repositories are whole, and what the intent owns is kept.
    assert!(git(&x, &["log", "--oneline"]).contains(" x"));
    assert!(git(&sub, &["log", "--oneline"]).contains(" sub"));
    assert_eq!(
        std::fs::read_to_string(x.join("lib.rs")).expect("lib"),
        "pub fn x() { 1 }\n"
    );
}

/// A nested repository's database moved elsewhere in scope (its `.git` renamed, or the whole
/// checkout renamed and a planted `.git` put where it was) is not in scope where it lands, and
/// undoing never deletes it: it goes back where it was, or stays where it is and says so.
#[test]
fn a_nested_repository_moved_away_is_never_deleted_and_comes_back_where_it_can() {
    let tmp = workspace();
    let root = tmp.path();
    let payload = Payload::new();
    let (x, w) = (root.join("vendor/x"), root.join("vendor/w"));
    write(root, "vendor/w/w.rs", "pub fn w() {}\n");
    git(&w, &["init", "-q"]);
    git(&w, &["add", "."]);
    git(&w, &["commit", "-qm", "w"]);
    let head_w = git(&w, &["rev-parse", "HEAD"]);
    let head_x = git(&x, &["rev-parse", "HEAD"]);
    let before = Snapshot::take(root);
    let images = BeforeImages::capture_with(&before, false);

    // `.git` of `w` renamed to a name the intent owns and a `.git` file pointing at a
    // repository that runs the payload put in its place; `x` renamed whole and such a
    // repository planted where it was.
    let evil = evil_gitdir(&payload);
    std::fs::rename(w.join(".git"), root.join("vendor/stash")).expect("mv");
    write(
        root,
        "vendor/w/.git",
        &format!("gitdir: {}\n", evil.path().join("evil.git").display()),
    );
    std::fs::rename(&x, root.join("vendor/x2")).expect("mv");
    write(root, "vendor/x/lib.rs", "pub fn x() {}\n");
    git(&x, &["init", "-q"]);
    git(
        &x,
        &[
            "config",
            "core.fsmonitor",
            &payload.script.display().to_string(),
        ],
    );
    assert!(payload.fires_in(&x), "the payload is real");
    assert!(payload.fires_in(&w), "the payload is real");

    let mut after = Snapshot::take(root);
    let changes = diff(&before, &mut after);
    let sorted = classify(
        changes,
        &vendor_owns,
        &IntentIgnore::empty(),
        &["target"],
        false,
    );
    for path in ["vendor/stash", "vendor/stash/config", "vendor/stash/HEAD"] {
        let why = reason_of(&sorted, path);
        assert!(why.contains("vendor/w/.git"), "{path}: {why}");
    }
    let out: Vec<Change> = sorted.out_of_scope.iter().map(|(c, _)| c.clone()).collect();
    let outcomes = restore(root, &before, &out, &images, &|_| false);

    // `w`'s database is back, whole; nothing is left under the name it was given.
    assert!(!root.join("vendor/stash").exists(), "{outcomes:#?}");
    assert_eq!(git(&w, &["rev-parse", "HEAD"]), head_w);
    assert!(!payload.fires_in(&w), "the payload ran: {outcomes:#?}");
    // `x`'s database still exists, whole (where the process put it), and nothing at its old
    // place runs the payload.
    assert_eq!(git(&root.join("vendor/x2"), &["rev-parse", "HEAD"]), head_x);
    assert!(!payload.fires_in(&x), "the payload ran: {outcomes:#?}");
    let undone = not_undone(&outcomes);
    assert!(
        undone.iter().all(|p| p.starts_with("vendor/x")),
        "{undone:?}"
    );
}

/// A repository database not named `.git` (`git init --bare`, then made to look non-bare with
/// a work tree): git uses it, and runs its `core.fsmonitor`, when the person works inside it.
/// It is no intent's either, and a change to one that was there is undone.
#[test]
fn a_repository_database_not_named_git_is_out_of_scope_and_undone() {
    let tmp = workspace();
    let root = tmp.path();
    let payload = Payload::new();
    let script = payload.script.display().to_string();
    git(
        &root.join("vendor"),
        &["init", "-q", "--bare", "fixture.git"],
    );
    let fixture = root.join("vendor/fixture.git");
    let config_before = std::fs::read(fixture.join("config")).expect("config");
    let before = Snapshot::take(root);
    let images = BeforeImages::capture_with(&before, false)
        .keeping(&before, &super::repository_dirs(&before));

    // A new one, and the person's fixture changed to run the payload.
    git(&root.join("vendor"), &["init", "-q", "--bare", "evil"]);
    let evil = root.join("vendor/evil");
    for dir in [&evil, &fixture] {
        git(dir, &["config", "core.bare", "false"]);
        git(dir, &["config", "core.worktree", ".."]);
        git(dir, &["config", "core.fsmonitor", &script]);
        assert!(payload.fires_in(dir), "{dir:?}: the payload is real");
    }

    let mut after = Snapshot::take(root);
    let changes = diff(&before, &mut after);
    let mut sorted = classify(
        changes,
        &vendor_owns,
        &IntentIgnore::empty(),
        &["target"],
        false,
    );
    let mut dirs = super::repository_dirs(&before);
    dirs.extend(super::repository_dirs(&after));
    assert_eq!(
        dirs,
        ["vendor/fixture.git", "vendor/evil", "vendor/fixture.git"]
    );
    super::out_of_scope_in(&mut sorted, &dirs);
    for path in [
        "vendor/evil",
        "vendor/evil/config",
        "vendor/fixture.git/config",
    ] {
        let why = reason_of(&sorted, path);
        assert!(why.contains(WHY), "{path}: {why}");
    }
    let out: Vec<Change> = sorted.out_of_scope.iter().map(|(c, _)| c.clone()).collect();
    let outcomes = restore(root, &before, &out, &images, &|_| false);
    let undone = not_undone(&outcomes);
    assert!(undone.is_empty(), "not undone: {undone:?}");
    assert!(!evil.exists());
    assert_eq!(
        std::fs::read(fixture.join("config")).expect("config"),
        config_before
    );
    assert!(!payload.fires_in(&fixture), "the payload ran");
}

//! Hostile names: a process that makes a change under a name that is not UTF-8 must not hide it
//! behind another entry, nor get another file restored in its place.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::hooks::ignore_list::IntentIgnore;

fn at(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}

fn git(root: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(root)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Sets a file's times an hour back, so that git's index, written after it, is surely later
/// (a file as new as the index is "racily clean" and cannot be trusted to match it).
fn age(path: &Path) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    file.set_modified(hour_ago).expect("set time");
}

fn names_in(dir: &Path) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .expect("read")
        .map(|e| e.expect("entry").file_name().as_bytes().to_vec())
        .collect();
    names.sort();
    names
}

fn sha(text: &str) -> String {
    format!("sha256:{}", crate::fsutil::sha256_hex(text.as_bytes()))
}

#[test]
fn names_that_are_not_utf8_neither_collide_nor_hide_a_change() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    std::fs::create_dir_all(root.join("src/auth")).expect("mkdir");
    let (fe, fffd, ff) = (
        at(root, b"src/auth/a\xfe"),
        root.join("src/auth/a\u{FFFD}"),
        at(root, b"src/auth/a\xff"),
    );
    std::fs::write(&fe, "fe before\n").expect("write");
    std::fs::write(&fffd, "fffd before\n").expect("write");
    age(&fe);
    age(&fffd);
    git(root, &["init", "-q"]);
    git(root, &["add", "src"]);
    git(root, &["commit", "-qm", "init"]);
    let before = Snapshot::take(root);

    // What a command did: a new `a\xff`, and both neighbours rewritten.
    std::fs::write(&ff, "ff new\n").expect("write");
    std::fs::write(&fe, "fe changed\n").expect("write");
    std::fs::write(&fffd, "fffd changed\n").expect("write");
    let mut after = Snapshot::take(root);
    let changes = diff(&before, &mut after);
    let found: Vec<(String, ChangeKind, Option<String>)> = changes
        .iter()
        .map(|c| (shown(&c.path).into_owned(), c.kind, c.hash_after.clone()))
        .collect();
    assert_eq!(
        found,
        vec![
            (
                r#""src/auth/a\xfe""#.to_string(),
                ChangeKind::Modified,
                Some(sha("fe changed\n"))
            ),
            (
                r#""src/auth/a\xff""#.to_string(),
                ChangeKind::Created,
                Some(sha("ff new\n"))
            ),
            (
                "src/auth/a\u{FFFD}".to_string(),
                ChangeKind::Modified,
                Some(sha("fffd changed\n"))
            ),
        ]
    );

    // The intent owns `src/auth/`, which holds all three: only the UTF-8 name can be its.
    let owns = |p: &str| p.starts_with("src/auth/");
    let ignore = IntentIgnore::load(root).expect("ignore");
    let sorted = classify(changes, &owns, &ignore, &[], false);
    let in_scope: Vec<&str> = sorted.in_scope.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(in_scope, ["src/auth/a\u{FFFD}"]);
    assert_eq!(
        sorted.out_of_scope_paths(),
        [r#""src/auth/a\xfe""#, r#""src/auth/a\xff""#]
    );
    assert!(sorted
        .out_of_scope
        .iter()
        .all(|(_, why)| why.contains("not valid UTF-8")));

    let out_of_scope: Vec<Change> = sorted.out_of_scope.iter().map(|(c, _)| c.clone()).collect();
    let outcomes = restore(root, &before, &out_of_scope, &BeforeImages::none(), &|_| {
        false
    });
    let results: Vec<(String, Result<Restored, String>)> = outcomes
        .iter()
        .map(|o| (shown(&o.path).into_owned(), o.result.clone()))
        .collect();
    assert_eq!(
        results,
        vec![
            (r#""src/auth/a\xfe""#.to_string(), Ok(Restored::FromGit)),
            (r#""src/auth/a\xff""#.to_string(), Ok(Restored::Removed)),
        ]
    );
    assert!(not_undone(&outcomes).is_empty());
    assert_eq!(std::fs::read_to_string(&fe).expect("fe"), "fe before\n");
    assert_eq!(
        std::fs::read_to_string(&fffd).expect("fffd"),
        "fffd changed\n"
    );
    assert_eq!(
        names_in(&root.join("src/auth")),
        ["a\u{FFFD}".as_bytes().to_vec(), b"a\xfe".to_vec()]
    );
}

#[test]
fn a_directory_whose_name_is_not_utf8_goes_with_everything_in_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    std::fs::create_dir_all(root.join("src/auth")).expect("mkdir");
    std::fs::write(root.join("src/auth/login.rs"), "fn login() {}\n").expect("write");
    let before = Snapshot::take(root);
    std::fs::create_dir_all(at(root, b"src/auth/d\xff/sub")).expect("mkdir");
    std::fs::write(at(root, b"src/auth/d\xff/f.rs"), "x\n").expect("write");
    std::fs::write(at(root, b"src/auth/d\xff/sub/g\xfe"), "y\n").expect("write");
    // Its UTF-8 twin, the lossy spelling of its name, is the intent's and stays.
    std::fs::create_dir(root.join("src/auth/d\u{FFFD}")).expect("mkdir");
    std::fs::write(root.join("src/auth/d\u{FFFD}/f.rs"), "mine\n").expect("write");
    let mut after = Snapshot::take(root);
    let owns = |p: &str| p.starts_with("src/auth/");
    let ignore = IntentIgnore::load(root).expect("ignore");
    let sorted = classify(diff(&before, &mut after), &owns, &ignore, &[], false);
    let in_scope: Vec<&str> = sorted.in_scope.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(in_scope, ["src/auth/d\u{FFFD}", "src/auth/d\u{FFFD}/f.rs"]);
    assert_eq!(
        sorted.out_of_scope_paths(),
        [
            r#""src/auth/d\xff""#,
            r#""src/auth/d\xff/f.rs""#,
            r#""src/auth/d\xff/sub""#,
            r#""src/auth/d\xff/sub/g\xfe""#,
        ]
    );
    let out_of_scope: Vec<Change> = sorted.out_of_scope.iter().map(|(c, _)| c.clone()).collect();
    let outcomes = restore(root, &before, &out_of_scope, &BeforeImages::none(), &|_| {
        false
    });
    assert!(
        outcomes.iter().all(|o| o.result == Ok(Restored::Removed)),
        "{outcomes:?}"
    );
    assert_eq!(
        names_in(&root.join("src/auth")),
        ["d\u{FFFD}".as_bytes().to_vec(), b"login.rs".to_vec()]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/auth/d\u{FFFD}/f.rs")).expect("read"),
        "mine\n"
    );
}

#[test]
fn a_partial_snapshot_reads_a_writable_directory_whose_name_is_not_utf8() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    std::fs::create_dir_all(at(root, b"w\xff")).expect("mkdir");
    std::fs::create_dir_all(root.join("w\u{FFFD}")).expect("mkdir");
    let before = Snapshot::take(root);
    std::fs::write(at(root, b"w\xff/new"), "x\n").expect("write");
    let within = vec![key_of(OsStr::from_bytes(b"w\xff")).into_owned()];
    let mut after = Snapshot::take_within(root, &within);
    let found: Vec<String> = diff_within(&before, &mut after, &within)
        .iter()
        .map(|c| shown(&c.path).into_owned())
        .collect();
    assert_eq!(found, [r#""w\xff/new""#]);
}

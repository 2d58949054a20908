use super::*;

fn git(root: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(root)
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

fn workspace() -> (
    tempfile::TempDir,
    Workspace,
    crate::hooks::ignore_list::IntentIgnore,
) {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    let files = [
        ("src/lib.rs", "pub fn f() {}\n"),
        ("src/util/mod.rs", "pub fn g() {}\n"),
        (".gitignore", ".env\ntarget/\n"),
        (".env", "TOKEN=secret\n"),
        (".intentignore", "vendor/\n"),
        ("vendor/lib.js", "x\n"),
        (".roomodes", "customModes: []\n"),
    ];
    for (path, text) in files {
        let abs = root.join(path);
        std::fs::create_dir_all(abs.parent().expect("parent")).expect("mkdir");
        std::fs::write(abs, text).expect("write");
    }
    std::fs::write(tmp.path().join("outside.txt"), "outside\n").expect("outside");
    std::fs::write(root.join("big.txt"), "x".repeat(MAX_FILE_BYTES + 1)).expect("big");
    std::fs::write(root.join("blob.bin"), [0u8, 1, 2]).expect("bin");
    std::os::unix::fs::symlink(tmp.path().join("outside.txt"), root.join("src/link.txt"))
        .expect("link");
    let ws = Workspace::new(&root).expect("ws");
    let ignore = crate::hooks::ignore_list::IntentIgnore::load(ws.root()).expect("ignore");
    (tmp, ws, ignore)
}

fn one(
    ws: &Workspace,
    ignore: &crate::hooks::ignore_list::IntentIgnore,
    text: &str,
) -> Option<Attached> {
    attach_all(ws, ignore, None, text).into_iter().next()
}

#[test]
fn mentions_are_read_from_the_message_once_each() {
    assert_eq!(
        mentions_in("see @src/lib.rs, and @git-changes. Mail me@x.com about @src/lib.rs"),
        vec!["src/lib.rs", "git-changes"]
    );
}

#[test]
fn a_file_or_a_folder_is_attached_and_a_word_that_names_nothing_stays_text() {
    let (_tmp, ws, ignore) = workspace();
    let file = one(&ws, &ignore, "look at @src/lib.rs").expect("file");
    assert_eq!(
        file.text.as_deref(),
        Ok("File src/lib.rs:\npub fn f() {}\n")
    );
    assert!(file.tokens() > 0);
    let folder = one(&ws, &ignore, "@src/").expect("folder");
    let listing = folder.text.expect("listing");
    assert!(
        listing.contains("src/lib.rs") && listing.contains("src/util/"),
        "{listing}"
    );
    assert!(one(&ws, &ignore, "thanks @bob").is_none());
    let context = as_context(&attach_all(&ws, &ignore, None, "@src/lib.rs")).expect("context");
    assert!(
        context.starts_with("<mention name=\"@src/lib.rs\">"),
        "{context}"
    );
}

#[test]
fn what_is_ignored_protected_outside_too_large_or_binary_is_refused_by_name() {
    let (_tmp, ws, ignore) = workspace();
    for (mention, says) in [
        ("@.env", "ignored"),
        ("@vendor/lib.js", "`.intentignore`"),
        ("@.roomodes", "protected"),
        ("@../outside.txt", "`../outside.txt`"),
        ("@src/link.txt", "`src/link.txt`"),
        ("@big.txt", "KiB"),
        ("@blob.bin", "binary"),
    ] {
        let got = one(&ws, &ignore, mention).unwrap_or_else(|| panic!("{mention} was not seen"));
        let why = got.text.clone().expect_err(mention).0;
        assert!(why.contains(says), "{mention}: {why}");
        assert_eq!(got.view().error.as_deref(), Some(why.as_str()));
    }
}

#[test]
fn git_changes_a_commit_and_problems_are_attached() {
    let (_tmp, ws, ignore) = workspace();
    let root = ws.root();
    git(root, &["init", "-q"]);
    git(root, &["add", "src"]);
    git(root, &["commit", "-qm", "first commit"]);
    std::fs::write(root.join("src/lib.rs"), "pub fn f() { let x = ; }\n").expect("edit");
    let diff = one(&ws, &ignore, "@git-changes")
        .expect("diff")
        .text
        .expect("diff");
    assert!(diff.contains("+pub fn f() { let x = ; }"), "{diff}");
    let problems = one(&ws, &ignore, "@problems")
        .expect("problems")
        .text
        .expect("problems");
    assert!(
        problems.contains("src/lib.rs:\nline 1, column"),
        "{problems}"
    );
    let head =
        crate::orchestration::git::run(root, &["rev-parse", "--short", "HEAD"]).expect("head");
    let hash = String::from_utf8_lossy(&head).trim().to_string();
    let commit = one(&ws, &ignore, &format!("@{hash}"))
        .expect("commit")
        .text
        .expect("commit");
    assert!(commit.contains("first commit"), "{commit}");
    // Hex that is no commit is a word.
    assert!(one(&ws, &ignore, "@deadbee").is_none());
}

#[test]
fn the_message_box_is_offered_files_folders_and_the_special_mentions() {
    let (_tmp, ws, _) = workspace();
    let all = mentionables(ws.root(), "");
    assert_eq!(&all[..2], ["git-changes", "problems"]);
    let util = mentionables(ws.root(), "uti");
    assert_eq!(
        util.first().map(String::as_str),
        Some("src/util/"),
        "{util:?}"
    );
    assert!(util.contains(&"src/util/mod.rs".to_string()));
    assert!(
        !mentionables(ws.root(), "env").iter().any(|m| m == ".env"),
        "ignored files are not offered"
    );
}

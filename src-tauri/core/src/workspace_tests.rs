use super::*;
use std::os::unix::fs::symlink;

/// A workspace with an outside directory next to it and a few symlink layouts.
fn layout() -> (tempfile::TempDir, Workspace) {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    for d in ["src/auth", "src/db", "docs"] {
        std::fs::create_dir_all(root.join(d)).expect("mkdir");
    }
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(root.join("src/auth/login.rs"), "fn login() {}\n").expect("write");
    std::fs::write(outside.join("secret.txt"), "secret").expect("write");
    symlink(&outside, root.join("src/out_dir")).expect("link");
    symlink(outside.join("secret.txt"), root.join("src/out_file")).expect("link");
    symlink("../db", root.join("src/auth/db_link")).expect("link");
    symlink(root.join("src/auth"), root.join("auth_alias")).expect("link");
    symlink("/etc", root.join("etc_link")).expect("link");
    symlink("missing-target", root.join("dangling")).expect("link");
    let ws = Workspace::new(&root).expect("workspace");
    (tmp, ws)
}

#[test]
fn ordinary_paths_resolve_to_posix_relatives() {
    let (_tmp, ws) = layout();
    for (input, rel) in [
        ("src/auth/login.rs", "src/auth/login.rs"),
        ("./src/auth/login.rs", "src/auth/login.rs"),
        ("src//auth/./login.rs", "src/auth/login.rs"),
        ("src/db/../auth/login.rs", "src/auth/login.rs"),
        ("src/new/dir/file.rs", "src/new/dir/file.rs"),
        ("docs/ünïcödé.md", "docs/ünïcödé.md"),
        (".", ""),
    ] {
        let r = ws.resolve(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(r.rel, rel, "{input}");
        assert!(r.abs.starts_with(ws.root()), "{input}");
    }
    let abs = format!("{}/src/auth/login.rs", ws.root().display());
    assert_eq!(
        ws.resolve(&abs).expect("absolute inside").rel,
        "src/auth/login.rs"
    );
}

#[test]
fn hostile_paths_are_refused() {
    let (_tmp, ws) = layout();
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        ("   ", "empty"),
        ("../outside/secret.txt", "outside"),
        ("src/../../outside/secret.txt", "outside"),
        ("src/auth/../../../etc/passwd", "outside"),
        ("/etc/passwd", "outside"),
        ("/", "outside"),
        ("src\\..\\..\\etc\\passwd", "separators"),
        ("..\\outside", "separators"),
        ("src/auth/login.rs\0.txt", "control"),
        ("src/\nfile", "control"),
        ("src/\u{202E}sr.nigol", "U+202E"),
        ("src/\u{200B}auth/login.rs", "U+200B"),
        ("src\u{2215}..\u{2215}..\u{2215}etc", "U+2215"),
        ("\u{FF0E}\u{FF0E}/outside", "U+FF0E"),
        ("src/\u{FEFF}x", "U+FEFF"),
        ("src/out_dir/secret.txt", "symlink"),
        ("src/out_dir", "symlink"),
        ("src/out_file", "symlink"),
        ("etc_link/passwd", "symlink"),
        ("src/out_dir/new_file.txt", "symlink"),
    ];
    for (input, expected) in cases {
        let err = ws.resolve(input).expect_err(input);
        assert!(
            err.to_string().contains(expected),
            "{input:?}: expected `{expected}` in `{err}`"
        );
    }
    let outside_abs = ws
        .root()
        .parent()
        .expect("parent")
        .join("outside/secret.txt");
    assert!(ws.resolve(&outside_abs.to_string_lossy()).is_err());
    assert!(ws.resolve(&"a/".repeat(3000)).is_err());
}

#[test]
fn symlinks_inside_the_workspace_resolve_to_where_they_land() {
    let (_tmp, ws) = layout();
    // A link inside src/auth pointing at src/db must be matched as src/db, not src/auth.
    let r = ws.resolve("src/auth/db_link/schema.rs").expect("inside");
    assert_eq!(r.rel, "src/db/schema.rs");
    let r = ws.resolve("auth_alias/login.rs").expect("inside");
    assert_eq!(r.rel, "src/auth/login.rs");
    // A dangling link cannot be followed, so nothing is written through it.
    assert!(ws.resolve("dangling").is_err());
}

#[test]
fn protected_directories() {
    assert!(protected_reason(".orchestration/active_intents.yaml").is_some());
    assert!(protected_reason(".git/config").is_some());
    assert!(protected_reason(".GIT/config").is_some());
    assert!(protected_reason("src/.git_helpers.rs").is_none());
    assert!(protected_reason("docs/.orchestration.md").is_none());
}

#[test]
fn the_mandate_itself_and_every_repository_database_are_protected() {
    assert!(protected_reason(".intentignore").is_some());
    assert!(protected_reason("./.orchestration/agent_trace.jsonl").is_some());
    assert!(protected_reason("vendor/lib/.git/config").is_some());
    assert!(protected_reason("sub/.git").is_some());
    // A nested one says what it is: git configuration git runs with the person's rights.
    assert_eq!(
        protected_reason("vendor/lib/.git/hooks/x"),
        Some(NESTED_GIT)
    );
    assert_eq!(protected_reason("sub/.GIT"), Some(NESTED_GIT));
    assert_ne!(protected_reason(".git/config"), Some(NESTED_GIT));
    assert!(protected_reason("docs/.intentignore").is_none());
    // The person's hooks.
    assert!(protected_reason(".mandate/hooks.json").is_some());
    assert!(protected_reason(".claude/settings.json").is_some());
    assert!(protected_reason(".Claude/hooks/check.sh").is_some());
    assert!(protected_reason("docs/.claude/settings.json").is_none());
    // The workspace's MCP server definitions: headless `--trust-mcp NAME` trusts by name.
    assert!(protected_reason(".mcp.json").is_some());
    assert!(protected_reason("./.MCP.json").is_some());
    assert!(protected_reason("docs/.mcp.json").is_none());
    assert!(protected_reason(".mcp.json.bak").is_none());
    assert!(protected_reason("mcp.json").is_none());
    assert!(protected_reason("src/main.rs").is_none());
    assert!(protected_reason("").is_none());
}

#[test]
fn resolved_tricks_arrive_as_the_protected_path() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(tmp.path().join(".orchestration")).expect("mkdir");
    std::fs::create_dir_all(tmp.path().join("x")).expect("mkdir");
    std::os::unix::fs::symlink(".orchestration", tmp.path().join("link")).expect("link");
    let ws = Workspace::new(tmp.path()).expect("ws");
    for input in [
        "./.orchestration/active_intents.yaml",
        "x/../.orchestration/active_intents.yaml",
        "link/active_intents.yaml",
        ".orchestration//ledger",
    ] {
        let resolved = ws.resolve(input).expect("resolve");
        assert!(
            protected_reason(&resolved.rel).is_some(),
            "{input} resolved to {}",
            resolved.rel
        );
    }
}

//! No change a command makes may hide from the snapshot taken after it: not behind a file name
//! that is not UTF-8 (its lossy spelling would be another file's), and not inside a directory
//! or file it made unreadable. Run through `mandate run` against a scripted provider, with the
//! real confinement of this machine; what the model read, what the person was told, the ledger
//! and the workspace afterwards are all checked.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{give_to_nobody, ledger, run_openai_as_nobody};
use mandate_tests::gitrepo::git;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::mcp::{
    consent_and_write_grant, stdio_entry, write_project_file, write_user_file,
};
use mandate_tests::script::{call, command, done, error_of, notices, run_go, select};
use mandate_tests::trace_schema::assert_valid;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: IN_PROGRESS
    owned_scope: ["src/greet/**"]
    constraints: []
    acceptance_criteria: []
"#;

const REPLACEMENT: &str = "src/greet/a\u{FFFD}";

/// An hour back: git's index, written later, then surely post-dates the file.
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
    format!(
        "sha256:{}",
        mandate_core::fsutil::sha256_hex(text.as_bytes())
    )
}

#[tokio::test]
async fn a_command_cannot_hide_a_change_behind_a_name_that_is_not_utf8() {
    let ws = workspace(
        Some(INTENTS),
        &[
            ("src/greet/mod.rs", "pub fn greet() {}\n"),
            (REPLACEMENT, "fffd before\n"),
        ],
    );
    let root = ws.path();
    let fe = root.join(OsStr::from_bytes(b"src/greet/a\xfe"));
    std::fs::write(&fe, "fe before\n").expect("write");
    age(&fe);
    age(&root.join(REPLACEMENT));
    git(root, &["init", "-q"]);
    git(root, &["add", "src"]);
    git(root, &["commit", "-qm", "init"]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        select(),
        // A new `a\xff` beside `a\xfe` and the real `a\u{FFFD}`, all three written: with
        // lossy names the three are one, and the two that are nobody's hide behind the third.
        command(
            "c1",
            "printf 'ff new\\n' > $'src/greet/a\\xff'; printf 'fe changed\\n' > $'src/greet/a\\xfe'; printf 'fffd changed\\n' > 'src/greet/a\u{FFFD}'",
        ),
        command(
            "c2",
            "mkdir -p $'src/greet/d\\xff/sub' && echo x > $'src/greet/d\\xff/f.rs' && echo y > $'src/greet/d\\xff/sub/g\\xfe'",
        ),
        done(),
    ])
    .await;
    let out = run_go(root, &server, &["--approve", "allow"], &dirs).await;

    // What the model read: the UTF-8 name recorded, the other two out of scope and undone,
    // each named once, quoted, by its real bytes.
    let c1 = server.tool_result("c1").expect("c1");
    let error = error_of(&c1);
    assert_eq!(error["error"]["code"], "SCOPE_VIOLATION", "{c1}");
    assert_eq!(
        error["error"]["paths"],
        json!([r#""src/greet/a\xfe""#, r#""src/greet/a\xff""#]),
        "{c1}"
    );
    let message = error["error"]["message"].as_str().unwrap_or_default();
    for undone in [
        r#""src/greet/a\xfe" (undone)"#,
        r#""src/greet/a\xff" (undone)"#,
    ] {
        assert!(message.contains(undone), "{message}");
    }
    assert!(
        error["result"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!(
                "Files it changed (recorded in the trace ledger under INT-001): {REPLACEMENT}."
            )),
        "{c1}"
    );
    let c2 = server.tool_result("c2").expect("c2");
    assert_eq!(
        error_of(&c2)["error"]["paths"],
        json!([
            r#""src/greet/d\xff""#,
            r#""src/greet/d\xff/f.rs""#,
            r#""src/greet/d\xff/sub""#,
            r#""src/greet/d\xff/sub/g\xfe""#
        ]),
        "{c2}"
    );
    // What the person was told names them the same way.
    let told = notices(&out).join("\n");
    for name in [
        r#""src/greet/a\xff" (undone)"#,
        r#""src/greet/d\xff" (undone)"#,
    ] {
        assert!(told.contains(name), "{told}");
    }

    // The ledger: the real `a\u{FFFD}` with its own content; the others by their quoted names.
    let records = ledger(root);
    assert_eq!(records.len(), 2, "{records:#?}");
    for record in &records {
        assert_valid(record);
    }
    let first = &records[0]["metadata"]["dev.mandate"];
    assert_eq!(first["command"]["changed_in_scope"], json!([REPLACEMENT]));
    assert_eq!(
        first["command"]["changed_out_of_scope"],
        json!([r#""src/greet/a\xfe""#, r#""src/greet/a\xff""#])
    );
    assert_eq!(first["command"]["not_undone"], json!([]));
    assert_eq!(records[0]["files"][0]["path"], REPLACEMENT);
    assert_eq!(records[0]["files"].as_array().map(Vec::len), Some(1));
    assert_eq!(first["images"][REPLACEMENT]["after"], sha("fffd changed\n"));
    let second = &records[1]["metadata"]["dev.mandate"];
    assert_eq!(second["command"]["changed_in_scope"], json!([]));
    assert_eq!(
        second["command"]["changed_out_of_scope"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
    // Nowhere a lossy name, nor a raw escape: the only U+FFFD is the real file's.
    let text = std::fs::read_to_string(root.join(".orchestration/agent_trace.jsonl"))
        .expect("ledger")
        .replace(REPLACEMENT, "");
    assert!(
        !text.contains('\u{FFFD}') && !text.contains("\\u0000"),
        "{text}"
    );
    let events = out.stdout.replace(REPLACEMENT, "");
    assert!(
        !events.contains('\u{FFFD}') && !events.contains("\\u0000"),
        "{events}"
    );

    // The workspace: nothing that is not UTF-8 is left but `a\xfe`, back as it was.
    assert_eq!(
        names_in(&root.join("src/greet")),
        [
            "a\u{FFFD}".as_bytes().to_vec(),
            b"a\xfe".to_vec(),
            b"mod.rs".to_vec()
        ]
    );
    assert_eq!(std::fs::read_to_string(&fe).expect("fe"), "fe before\n");
    assert_eq!(
        std::fs::read_to_string(root.join(REPLACEMENT)).expect("fffd"),
        "fffd changed\n"
    );
}

fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Makes `rel` (and what is in it) another user's (root's), closed to everyone else.
fn give_to_root_closed(root: &Path, rel: &str) {
    let path = root.join(rel);
    std::os::unix::fs::chown(&path, Some(0), Some(0)).expect("chown");
    for entry in std::fs::read_dir(&path).expect("read") {
        std::os::unix::fs::chown(entry.expect("entry").path(), Some(0), Some(0)).expect("chown");
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).expect("chmod");
}

/// Run as an unprivileged user (root reads everything): the command closes a directory it
/// changed files in, and a file it rewrote; Mandate opens both again, finds every change and
/// records it, and the modes come back.
#[tokio::test]
async fn a_command_cannot_hide_changes_in_a_directory_or_file_it_made_unreadable() {
    let ws = workspace(
        Some(INTENTS),
        &[
            ("src/greet/mod.rs", "pub fn greet() {}\n"),
            ("src/greet/sub/x.rs", "x\n"),
        ],
    );
    let root = ws.path();
    let dirs = UserDirs::new();
    give_to_nobody(root);
    give_to_nobody(dirs.home.path());
    let (sub_mode, mod_mode) = (
        mode_of(&root.join("src/greet/sub")),
        mode_of(&root.join("src/greet/mod.rs")),
    );
    let server = ScriptedServer::start(vec![
        select(),
        command(
            "c1",
            "echo changed > src/greet/sub/x.rs && echo new > src/greet/sub/new.rs && chmod 000 src/greet/sub && echo hello > src/greet/mod.rs && chmod 000 src/greet/mod.rs",
        ),
        done(),
    ])
    .await;
    let out = run_openai_as_nobody(
        root,
        &server.base_url(),
        &["--approve", "allow"],
        "go",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);

    let c1 = server.tool_result("c1").expect("c1");
    assert!(
        c1.contains("Files it changed (recorded in the trace ledger under INT-001): src/greet/mod.rs, src/greet/sub, src/greet/sub/new.rs, src/greet/sub/x.rs."),
        "{c1}"
    );
    assert!(
        c1.contains(&format!("Mandate put their permissions back to read them: src/greet/mod.rs (left 000, now {mod_mode:03o}), src/greet/sub (left 000, now {sub_mode:03o})")),
        "{c1}"
    );
    let records = ledger(root);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_valid(&records[0]);
    let vendor = &records[0]["metadata"]["dev.mandate"];
    assert_eq!(
        vendor["command"]["changed_in_scope"],
        json!([
            "src/greet/mod.rs",
            "src/greet/sub",
            "src/greet/sub/new.rs",
            "src/greet/sub/x.rs"
        ])
    );
    assert_eq!(
        vendor["images"]["src/greet/sub/x.rs"]["after"],
        sha("changed\n")
    );
    assert_eq!(
        vendor["images"]["src/greet/mod.rs"]["after"],
        sha("hello\n")
    );
    assert_eq!(mode_of(&root.join("src/greet/sub")), sub_mode);
    assert_eq!(mode_of(&root.join("src/greet/mod.rs")), mod_mode);
}

/// Run as an unprivileged user: a directory of another user's inside the owned scope cannot be
/// read, so what a command changed there is unknown. The run fails closed: the model and the
/// person are told, and nothing is recorded from the partial view.
#[tokio::test]
async fn a_command_whose_changes_mandate_cannot_read_fails_closed_and_records_nothing() {
    if !is_root() {
        eprintln!("not root: no other user's directory can be made here; skipped");
        return;
    }
    let ws = workspace(
        Some(INTENTS),
        &[
            ("src/greet/mod.rs", "pub fn greet() {}\n"),
            ("src/greet/vault/secret", "root's\n"),
        ],
    );
    let root = ws.path();
    let dirs = UserDirs::new();
    give_to_nobody(root);
    give_to_nobody(dirs.home.path());
    give_to_root_closed(root, "src/greet/vault");
    let server = ScriptedServer::start(vec![
        select(),
        command("c1", "echo hello > src/greet/mod.rs"),
        done(),
    ])
    .await;
    let out = run_openai_as_nobody(
        root,
        &server.base_url(),
        &["--approve", "allow"],
        "go",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);

    let c1 = server.tool_result("c1").expect("c1");
    let error = error_of(&c1);
    assert_eq!(error["error"]["code"], "CHANGES_UNSEEN", "{c1}");
    assert_eq!(error["error"]["paths"], json!(["src/greet/vault"]), "{c1}");
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("nothing it changed was recorded in the trace ledger"),
        "{message}"
    );
    assert!(
        !error["result"]
            .as_str()
            .unwrap_or_default()
            .contains("recorded in the trace ledger under"),
        "{c1}"
    );
    let told = notices(&out).join("\n");
    assert!(
        told.contains("Changes unseen") && told.contains("src/greet/vault"),
        "{told}"
    );
    assert!(ledger(root).is_empty(), "{:#?}", ledger(root));
}

/// A workspace whose intent owns `docs/**`, with the test server `srv` the person allowed to
/// write in it, and its user directories (given to [`NOBODY`] when `nobody`).
fn with_granted_server(files: &[(&str, &str)], nobody: bool) -> (tempfile::TempDir, UserDirs) {
    let ws = workspace(Some(mandate_tests::mcp::INTENTS), files);
    let dirs = UserDirs::new();
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], json!({}))}));
    let (key, decisions) = consent_and_write_grant(ws.path(), "srv");
    write_user_file(&dirs.config(), json!({"projects": {key: decisions}}));
    if nobody {
        give_to_nobody(ws.path());
        give_to_nobody(dirs.home.path());
    }
    (ws, dirs)
}

#[tokio::test]
async fn a_server_cannot_hide_a_change_behind_a_name_that_is_not_utf8() {
    let (ws, dirs) = with_granted_server(&[("docs/notes.md", "notes\n")], false);
    let root = ws.path();
    let fe = root.join(OsStr::from_bytes(b"docs/a\xfe"));
    std::fs::write(&fe, "fe before\n").expect("write");
    age(&fe);
    git(root, &["init", "-q"]);
    git(root, &["add", "docs"]);
    git(root, &["commit", "-qm", "init"]);
    let server = ScriptedServer::start(vec![
        select(),
        call(
            "w",
            "mcp__srv__write_and_close",
            json!({"paths": ["docs/a\\xff", "docs/a\\xfe", "docs/a\u{FFFD}"], "text": "server\n"}),
        ),
        done(),
    ])
    .await;
    run_go(root, &server, &["--approve", "allow"], &dirs).await;
    let w = server.tool_result("w").expect("w");
    let error = error_of(&w);
    assert_eq!(error["error"]["code"], "SCOPE_VIOLATION", "{w}");
    assert_eq!(
        error["error"]["paths"],
        json!([r#""docs/a\xfe""#, r#""docs/a\xff""#]),
        "{w}"
    );
    assert!(
        error["result"].as_str().unwrap_or_default().contains(
            "Files it changed (recorded in the trace ledger under INT-001): docs/a\u{FFFD}."
        ),
        "{w}"
    );
    let records = ledger(root);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_valid(&records[0]);
    let mcp = &records[0]["metadata"]["dev.mandate"]["mcp"];
    assert_eq!(mcp["changed_in_scope"], json!(["docs/a\u{FFFD}"]));
    assert_eq!(
        mcp["changed_out_of_scope"],
        json!([r#""docs/a\xfe""#, r#""docs/a\xff""#])
    );
    assert_eq!(mcp["not_undone"], json!([]));
    assert_eq!(
        names_in(&root.join("docs")),
        [
            "a\u{FFFD}".as_bytes().to_vec(),
            b"a\xfe".to_vec(),
            b"notes.md".to_vec()
        ]
    );
    assert_eq!(std::fs::read_to_string(&fe).expect("fe"), "fe before\n");
}

/// Run as an unprivileged user: the server writes in a directory and closes it in one call.
#[tokio::test]
async fn a_server_cannot_hide_changes_in_a_directory_it_made_unreadable() {
    let (ws, dirs) = with_granted_server(&[("docs/sub/old.md", "old\n")], true);
    let root = ws.path();
    let sub_mode = mode_of(&root.join("docs/sub"));
    let server = ScriptedServer::start(vec![
        select(),
        call(
            "w",
            "mcp__srv__write_and_close",
            json!({"paths": ["docs/sub/new.md"], "text": "new\n", "close": ["docs/sub"]}),
        ),
        done(),
    ])
    .await;
    let out = run_openai_as_nobody(
        root,
        &server.base_url(),
        &["--approve", "allow"],
        "go",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let w = server.tool_result("w").expect("w");
    assert!(
        w.contains("Files it changed (recorded in the trace ledger under INT-001): docs/sub, docs/sub/new.md."),
        "{w}"
    );
    let records = ledger(root);
    assert_eq!(records.len(), 1, "{records:#?}");
    let vendor = &records[0]["metadata"]["dev.mandate"];
    assert_eq!(vendor["images"]["docs/sub/new.md"]["after"], sha("new\n"));
    assert_eq!(mode_of(&root.join("docs/sub")), sub_mode);
}

/// Run as an unprivileged user: another user's directory lies where the server may write, so
/// what a call changed is unknown; the server is stopped and the call fails.
#[tokio::test]
async fn a_server_whose_changes_mandate_cannot_read_is_stopped_and_the_call_fails() {
    if !is_root() {
        eprintln!("not root: no other user's directory can be made here; skipped");
        return;
    }
    let (ws, dirs) = with_granted_server(
        &[
            ("docs/notes.md", "notes\n"),
            ("docs/vault/secret", "root's\n"),
        ],
        true,
    );
    let root = ws.path();
    give_to_root_closed(root, "docs/vault");
    let server = ScriptedServer::start(vec![
        select(),
        call(
            "w",
            "mcp__srv__write_marker",
            json!({"path": "docs/notes.md", "text": "changed\n"}),
        ),
        call("again", "mcp__srv__lookup", json!({"key": "k"})),
        done(),
    ])
    .await;
    let out = run_openai_as_nobody(
        root,
        &server.base_url(),
        &["--approve", "allow"],
        "go",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let w = server.tool_result("w").expect("w");
    assert!(
        w.contains("could not be found")
            && w.contains("Mandate cannot read docs/vault")
            && w.contains("the server was stopped and the call failed"),
        "{w}"
    );
    let again = server.tool_result("again").expect("again");
    assert!(!again.contains("the value of k"), "{again}");
    let told = notices(&out).join("\n");
    assert!(told.contains("Mandate cannot read docs/vault"), "{told}");
    for record in ledger(root) {
        assert_eq!(record["files"], json!([]), "{record:#}");
    }
}

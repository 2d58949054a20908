//! The hub without a real MCP server (those are in the black-box tests): what Settings may
//! change, consent, trust, secrets, and servers that cannot start.

use std::path::Path;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;

use super::config::Source;
use super::user_file::UserFile;
use super::*;
use crate::agent::EventSink;
use crate::protocol::{Event, McpGrant, McpServerInput, McpStatus, McpVariable};
use crate::secrets::{MemoryStore, Secret, SecretStore};

#[derive(Default)]
struct Events(Mutex<Vec<Event>>);

impl EventSink for Events {
    fn emit(&self, event: Event) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }
}

pub(super) struct Fixture {
    _tmp: tempfile::TempDir,
    pub root: std::path::PathBuf,
    pub config: std::path::PathBuf,
    pub store: Arc<MemoryStore>,
    pub hub: McpHub,
}

fn fixture(project: Option<&str>) -> Fixture {
    fixture_on(project, crate::sandbox::Confinement::detect())
}

/// A workspace (with `.mcp.json` when `project` is given) and its hub, on a machine that
/// confines servers as `confinement` says.
pub(super) fn fixture_on(
    project: Option<&str>,
    confinement: crate::sandbox::Confinement,
) -> Fixture {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(&root).expect("mkdir");
    let root = root.canonicalize().expect("canonical");
    if let Some(text) = project {
        std::fs::write(root.join(PROJECT_FILE), text).expect("write .mcp.json");
    }
    let config = tmp.path().join("config");
    let store = Arc::new(MemoryStore::default());
    let dirs = crate::settings::AppDirs {
        config: config.clone(),
        data: tmp.path().join("data"),
    };
    let hub = McpHub::with_confinement(
        &root,
        &dirs,
        Some(tmp.path().join("cache")),
        confinement,
        store.clone(),
        Arc::new(Events::default()),
        Default::default(),
    );
    Fixture {
        _tmp: tmp,
        root,
        config,
        store,
        hub,
    }
}

fn var(name: &str, value: &str) -> McpVariable {
    McpVariable {
        name: name.into(),
        value: value.into(),
    }
}

fn http(url: &str, headers: Vec<McpVariable>) -> McpServerInput {
    McpServerInput::Http {
        url: url.into(),
        headers,
        startup_timeout_sec: Some(2),
        tool_timeout_sec: None,
    }
}

#[tokio::test]
async fn settings_servers_are_checked_saved_and_removed_with_their_secrets() {
    let f = fixture(None);
    for (name, input, why) in [
        (
            "bad name",
            http("http://127.0.0.1:9/mcp", vec![]),
            "not allowed",
        ),
        ("web", http("ftp://x", vec![]), "http:// or https://"),
        (
            "web",
            http("http://x", vec![var("A", "1"), var("A", "2")]),
            "given twice",
        ),
        (
            "web",
            http("http://x", vec![var("X", "a\r\nB: c")]),
            "line break",
        ),
    ] {
        let err = f
            .hub
            .save_server(name.into(), input)
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(why), "{err}");
    }
    assert!(
        !super::user_file::path(&f.config).exists(),
        "nothing written for a refused server"
    );

    let input = http(
        "http://127.0.0.1:9/mcp",
        vec![var("Authorization", "Bearer ${keyring:TOKEN}")],
    );
    let overview = f.hub.save_server("web".into(), input).await.expect("saved");
    let view = &overview.servers[0];
    assert_eq!(
        (view.name.as_str(), view.target.as_str()),
        ("web", "http://127.0.0.1:9/mcp")
    );
    assert_eq!(view.secrets.len(), 1);
    assert!(!view.secrets[0].set);
    let file = UserFile::load(&f.config).expect("load");
    assert_eq!(
        file.mcp_servers["web"]["headers"]["Authorization"],
        "Bearer ${keyring:TOKEN}"
    );
    assert_eq!(file.mcp_servers["web"]["startupTimeoutSec"], 2);

    let overview = f
        .hub
        .set_secret("web".into(), "TOKEN".into(), Some("tok-123456789".into()))
        .await
        .expect("secret stored");
    assert!(overview.servers[0].secrets[0].set);
    assert_eq!(
        f.store.get("mcp:user:web:TOKEN").expect("get"),
        Some(Secret::new("tok-123456789"))
    );
    // The secret is never in the file or the view.
    let text = std::fs::read_to_string(super::user_file::path(&f.config)).expect("read");
    assert!(!text.contains("tok-123456789"));
    assert!(!format!("{overview:?}").contains("tok-123456789"));
    for bad in ["", "a\nb"] {
        assert!(f
            .hub
            .set_secret("web".into(), "TOKEN".into(), Some(bad.into()))
            .await
            .is_err());
    }
    assert!(f
        .hub
        .set_secret("nope".into(), "TOKEN".into(), Some("x".into()))
        .await
        .is_err());

    let overview = f.hub.remove_server("web".into()).await.expect("removed");
    assert!(overview.servers.is_empty());
    assert_eq!(f.store.get("mcp:user:web:TOKEN").expect("get"), None);
}

#[tokio::test]
async fn consent_names_the_definition_the_person_saw() {
    let f = fixture(Some(
        r#"{"mcpServers": {"files": {"command": "/nonexistent/srv", "env": {"LD_PRELOAD": "/tmp/x.so"}}}}"#,
    ));
    let overview = f.hub.overview(true).await;
    let view = &overview.servers[0];
    assert_eq!(
        view.status,
        McpStatus::NeedsConsent,
        "never started without consent"
    );
    assert_eq!(
        view.variables,
        vec![var("LD_PRELOAD", "/tmp/x.so")],
        "shown for consent"
    );
    let err = f
        .hub
        .grant_consent("files".into(), "0".repeat(64))
        .await
        .expect_err("stale hash");
    assert!(matches!(err, ManageError::Conflict(_)), "{err}");
    let overview = f
        .hub
        .grant_consent("files".into(), view.definition_hash.clone())
        .await
        .expect("consent");
    assert_ne!(overview.servers[0].status, McpStatus::NeedsConsent);
    let file = UserFile::load(&f.config).expect("load");
    assert_eq!(
        file.project(&f.root).expect("decisions").consents["files"],
        view.definition_hash
    );
    // A program that does not exist: a clear failure, no tools, the run goes on.
    let run = f.hub.prepare_run().await;
    assert!(run.tools.is_empty());
    assert!(
        run.notes.iter().any(|n| n.contains(
            "`files` is unavailable: it could not start: could not start `/nonexistent/srv`"
        )),
        "{:?}",
        run.notes
    );
    let overview = f.hub.revoke_consent("files".into()).await.expect("revoked");
    assert_eq!(overview.servers[0].status, McpStatus::NeedsConsent);
    // Settings servers need none, and a workspace's server is not edited from Settings.
    assert!(f.hub.remove_server("files".into()).await.is_err());
}

#[tokio::test]
async fn trust_and_a_broken_decisions_file() {
    let f = fixture(Some(
        r#"{"mcpServers": {"files": {"command": "/nonexistent/srv"}}}"#,
    ));
    let overview = f
        .hub
        .set_trust("files".into(), false)
        .await
        .expect("untrusted");
    assert!(!overview.servers[0].trusts_read_only_hints);
    let overview = f
        .hub
        .set_trust("files".into(), true)
        .await
        .expect("trusted");
    assert!(overview.servers[0].trusts_read_only_hints);

    std::fs::write(super::user_file::path(&f.config), "{ broken").expect("write");
    let overview = f.hub.overview(false).await;
    assert!(
        overview
            .problems
            .iter()
            .any(|p| p.contains("no consent holds")),
        "{:?}",
        overview.problems
    );
    assert!(
        !overview.servers[0].trusts_read_only_hints,
        "no hint is believed"
    );
    let err = f
        .hub
        .set_trust("files".into(), true)
        .await
        .expect_err("never overwritten");
    assert!(matches!(err, ManageError::File(_)), "{err}");
    assert_eq!(
        std::fs::read_to_string(super::user_file::path(&f.config)).expect("read"),
        "{ broken"
    );
}

#[tokio::test]
async fn invalid_entries_and_shadowed_names_are_listed_with_the_reason() {
    let f = fixture(Some(
        r#"{"mcpServers": {"a b": {"command": "x"}, "web": {"command": "x"}, "bad": {"command": 3}}}"#,
    ));
    super::user_file::UserFile {
        mcp_servers: serde_json::json!({"web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..Default::default()
    }
    .save(&f.config)
    .expect("save");
    let overview = f.hub.overview(false).await;
    let summary: Vec<(String, McpStatus, Option<String>)> = overview
        .servers
        .iter()
        .map(|s| (s.name.clone(), s.status, s.error.clone()))
        .collect();
    assert_eq!(summary[0].0, "web");
    assert_eq!(summary[0].1, McpStatus::Stopped, "the Settings one is used");
    let invalid: Vec<&str> = summary[1..].iter().map(|s| s.0.as_str()).collect();
    assert_eq!(invalid.len(), 3, "{summary:#?}");
    assert!(summary[1..].iter().all(|s| s.1 == McpStatus::Invalid));
    assert!(summary.iter().any(|s| s
        .2
        .as_deref()
        .is_some_and(|e| e.contains("in Settings is used instead"))));
}

#[test]
fn references_resolve_per_server_from_the_keyring() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = Arc::new(MemoryStore::default());
    let def = config::parse(
        r#"{"mcpServers": {"gh": {"command": "srv", "args": ["--token=${TOKEN}"], "env": {"A": "${keyring:A}", "B": "${B:-dflt}"}}}}"#,
        Source::Project,
        ".mcp.json",
    )
    .servers
    .remove(0);
    let env = server::ServerEnv {
        root: tmp.path().to_path_buf(),
        confinement: crate::sandbox::Confinement::detect(),
        hidden: Vec::new(),
        cache_root: None,
        secrets: store.clone(),
        changed: Box::new(|| {}),
    };
    let err = server::resolve(&def, &env).err().expect("missing secret");
    assert!(err.contains("`TOKEN` is not set"), "{err}");
    for (name, value) in [("TOKEN", "tok-aaaaaaaa"), ("A", "a-secret-value")] {
        let key = refs::keyring_name(Source::Project, tmp.path(), "gh", name);
        store.set(&key, &Secret::new(value)).expect("set");
    }
    let resolved = server::resolve(&def, &env).expect("resolved");
    let connection::Resolved::Stdio { args, env, .. } = resolved else {
        panic!("stdio");
    };
    assert_eq!(args, ["--token=tok-aaaaaaaa"]);
    assert_eq!(
        env,
        [
            ("A".to_string(), "a-secret-value".to_string()),
            ("B".to_string(), "dflt".to_string())
        ]
    );
    for used in ["tok-aaaaaaaa", "a-secret-value"] {
        assert!(
            crate::redact::Redactor::global().contains_secret(used),
            "both are scrubbed from results"
        );
    }
    // Another workspace with a server of the same name does not get them.
    let other = server::ServerEnv {
        root: Path::new("/elsewhere").to_path_buf(),
        confinement: crate::sandbox::Confinement::detect(),
        hidden: Vec::new(),
        cache_root: None,
        secrets: store,
        changed: Box::new(|| {}),
    };
    assert!(server::resolve(&def, &other).is_err());
}

#[test]
fn a_bad_url_after_its_secrets_are_filled_in_is_refused_without_showing_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = Arc::new(MemoryStore::default());
    let def = config::parse(
        r#"{"mcpServers": {"web": {"type": "http", "url": "https://${HOST}/mcp"}}}"#,
        Source::Settings,
        "mcp.json",
    )
    .servers
    .remove(0);
    store
        .set(
            "mcp:user:web:HOST",
            &Secret::new("not a host secret-value-123"),
        )
        .expect("set");
    let env = server::ServerEnv {
        root: tmp.path().to_path_buf(),
        confinement: crate::sandbox::Confinement::detect(),
        hidden: Vec::new(),
        cache_root: None,
        secrets: store,
        changed: Box::new(|| {}),
    };
    let err = server::resolve(&def, &env).err().expect("refused");
    assert!(
        err.contains("not an http(s) URL") && !err.contains("secret-value-123"),
        "{err}"
    );
}

#[test]
fn a_server_secret_is_redacted_in_every_encoding_and_everywhere_once_resolved() {
    use base64::Engine as _;
    let tmp = tempfile::tempdir().expect("tmp");
    let store = Arc::new(MemoryStore::default());
    let def = config::parse(
        r#"{"mcpServers": {"gh": {"command": "srv", "env": {"TOKEN": "${TOKEN}"}}}}"#,
        Source::Project,
        ".mcp.json",
    )
    .servers
    .remove(0);
    let token = "ghp-server-token-5f1c9e27";
    let key = refs::keyring_name(Source::Project, tmp.path(), "gh", "TOKEN");
    store.set(&key, &Secret::new(token)).expect("set");
    let env = server::ServerEnv {
        root: tmp.path().to_path_buf(),
        confinement: crate::sandbox::Confinement::detect(),
        hidden: Vec::new(),
        cache_root: None,
        secrets: store,
        changed: Box::new(|| {}),
    };
    server::resolve(&def, &env).expect("resolved");

    // A hostile server hands its own token back, encoded, hoping the model passes it on.
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("token={token}"));
    let hexed = hex::encode(token);
    let result = serde_json::json!({"content": [
        {"type": "text", "text": format!("b64 {encoded} hex {hexed} plain {token}")}
    ]});
    let shown = result::for_model(&result).text;
    assert!(
        !shown.contains(&encoded[8..]) && !shown.contains(&hexed) && !shown.contains(token),
        "{shown}"
    );
    assert_eq!(shown.matches(crate::redact::REDACTED).count(), 3, "{shown}");

    // Once resolved, the token is one of the secrets Mandate holds: a later command that prints
    // it (output, ledger, task history, logs all pass the global redactor) does not show it.
    let later = format!("$ env | grep TOKEN\nTOKEN={token}\n");
    let redacted = crate::redact::Redactor::global().redact(&later);
    assert!(!redacted.contains(token), "{redacted}");
    assert!(redacted.contains("TOKEN=[REDACTED]"), "{redacted}");
}

/// Consents to the workspace's server `name`, the only one it defines, as the person does in
/// Settings; returns its definition's hash.
pub(super) async fn consent_to_the_only_server(f: &Fixture, name: &str) -> String {
    let hash = f.hub.overview(false).await.servers[0]
        .definition_hash
        .clone();
    f.hub
        .grant_consent(name.into(), hash.clone())
        .await
        .expect("consent");
    hash
}

/// An executable outside the workspace of `f` (next to it), for a server's program.
pub(super) fn program_outside(f: &Fixture, name: &str) -> std::path::PathBuf {
    script_outside(f, name, "exit 0")
}

/// A shell script running `body`, outside the workspace of `f` (next to it).
pub(super) fn script_outside(f: &Fixture, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = f.root.parent().expect("parent").join("bin").join(name);
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[tokio::test]
async fn a_write_grant_names_the_definition_and_the_code_and_only_a_stdio_server_gets_one() {
    let f = fixture(None);
    let program = program_outside(&f, "srv");
    std::fs::write(
        f.root.join(PROJECT_FILE),
        serde_json::json!({"mcpServers": {
            "files": {"command": program.display().to_string()},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
        }})
        .to_string(),
    )
    .expect("write .mcp.json");
    let overview = f.hub.overview(false).await;
    let files = overview
        .servers
        .iter()
        .find(|s| s.name == "files")
        .expect("files");
    assert!(!files.may_write_workspace);
    assert_eq!(files.write_grant, McpGrant::NotGranted);
    assert!(
        files.confinement.contains("writes nothing in it")
            || files.confinement.contains("not started unless"),
        "{}",
        files.confinement
    );
    let web = overview
        .servers
        .iter()
        .find(|s| s.name == "web")
        .expect("web");
    assert_eq!(web.confinement, "");
    let err = f
        .hub
        .set_workspace_write("files".into(), "0".repeat(64), true)
        .await
        .expect_err("stale hash");
    assert!(matches!(err, ManageError::Conflict(_)), "{err}");
    let err = f
        .hub
        .set_workspace_write("web".into(), web.definition_hash.clone(), true)
        .await
        .expect_err("http");
    assert!(err.to_string().contains("over HTTP"), "{err}");
    let overview = f
        .hub
        .set_workspace_write("files".into(), files.definition_hash.clone(), true)
        .await
        .expect("granted");
    let files_now = overview
        .servers
        .iter()
        .find(|s| s.name == "files")
        .expect("files");
    assert!(files_now.may_write_workspace);
    assert_eq!(files_now.write_grant, McpGrant::InForce);
    assert!(files_now.confinement.contains("may write in the workspace"));
    let file = UserFile::load(&f.config).expect("load");
    let stored = &file.project(&f.root).expect("decisions").writes["files"];
    let grant::WriteEntry::Bound(grant) = stored else {
        panic!("{stored:?}");
    };
    assert_eq!(grant.definition, files.definition_hash);
    assert_eq!(grant.program, program.display().to_string());
    assert!(
        grant.code[&grant.program].starts_with("sha256:"),
        "{grant:?}"
    );

    // The program changes after the grant: stale, with the path, and not in force.
    std::fs::write(&program, "#!/bin/sh\necho something else\n").expect("rewrite");
    let overview = f.hub.overview(false).await;
    let files_now = &overview.servers[0];
    assert!(!files_now.may_write_workspace);
    match &files_now.write_grant {
        McpGrant::Stale { reason } => assert!(
            reason.contains(&program.display().to_string()) && reason.contains("changed"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(files_now.confinement.contains("writes nothing in it"));
    // Asked again, the person allows the code it runs now.
    let overview = f
        .hub
        .set_workspace_write("files".into(), files.definition_hash.clone(), true)
        .await
        .expect("granted again");
    assert_eq!(overview.servers[0].write_grant, McpGrant::InForce);
    let overview = f
        .hub
        .set_workspace_write("files".into(), String::new(), false)
        .await
        .expect("taken back");
    assert!(!overview.servers.iter().any(|s| s.may_write_workspace));
}

#[tokio::test]
async fn a_server_that_runs_the_workspaces_code_is_refused_the_grant_naming_the_path() {
    let f = fixture(None);
    let node = program_outside(&f, "node");
    std::fs::create_dir_all(f.root.join("tools")).expect("mkdir");
    std::fs::write(f.root.join("tools/srv.js"), "// the workspace's code\n").expect("write");
    std::fs::write(
        f.root.join(PROJECT_FILE),
        serde_json::json!({"mcpServers": {"files": {"command": node.display().to_string(), "args": ["tools/srv.js"]}}})
            .to_string(),
    )
    .expect("write .mcp.json");
    let overview = f.hub.overview(false).await;
    let hash = overview.servers[0].definition_hash.clone();
    let err = f
        .hub
        .set_workspace_write("files".into(), hash.clone(), true)
        .await
        .expect_err("refused");
    let shown = err.to_string();
    assert!(
        shown.contains("cannot be allowed to write in this workspace")
            && shown.contains(&f.root.join("tools/srv.js").display().to_string()),
        "{shown}"
    );
    let file = UserFile::load(&f.config).expect("load");
    assert!(file.project(&f.root).is_none_or(|p| p.writes.is_empty()));

    // A grant stored anyway (an older version, a hand edit) is refused at every load, and
    // one in the older form is stale: neither is in force.
    let forged = grant::WriteGrant {
        definition: hash.clone(),
        program: node.display().to_string(),
        code: Default::default(),
    };
    for (entry, refused) in [
        (grant::WriteEntry::Bound(forged), true),
        (grant::WriteEntry::Older(serde_json::json!(hash)), false),
    ] {
        let mut file = UserFile::default();
        file.project_mut(&f.root)
            .writes
            .insert("files".into(), entry);
        file.save(&f.config).expect("save");
        let overview = f.hub.overview(false).await;
        let server = &overview.servers[0];
        assert!(!server.may_write_workspace, "{server:?}");
        match (&server.write_grant, refused) {
            (McpGrant::Refused { reason }, true) => {
                assert!(reason.contains("tools/srv.js"), "{reason}")
            }
            (McpGrant::Stale { reason }, false) => {
                assert!(reason.contains("before Mandate bound"), "{reason}")
            }
            (other, _) => panic!("{other:?}"),
        }
    }
}

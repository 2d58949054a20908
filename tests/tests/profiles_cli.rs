//! Provider profiles side by side, each key bound to the origin it was given for: two scripted
//! servers on loopback stand for two hosts. A profile's key reaches its own server only; a
//! profile pointed at another server sends nothing there until the person lets the key go; a
//! run that names a server without a profile gets no one's key.

use mandate_core::profiles::{key_name, origin};
use mandate_core::secrets::{KeyringStore, Secret, SecretStore};
use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::mandate;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

fn done() -> mandate_tests::llm_server::Reply {
    openai::turn()
        .tool_call("d", "attempt_completion", json!({"result": "Done."}))
        .reply()
}

fn settings(dirs: &UserDirs, a_id: &str, a_url: &str, a_key_origin: &str, b_url: &str) {
    std::fs::create_dir_all(dirs.config()).expect("mkdir");
    let profile = |id: &str, name: &str, url: &str, key_origin: Option<&str>| {
        json!({"id": id, "name": name, "provider": "openai", "preset": "custom",
               "base_url": url, "model": "test-model", "key_origin": key_origin})
    };
    let s = json!({
        "provider": "openai", "preset": "custom", "base_url": a_url, "model": "test-model",
        "profiles": [profile(a_id, "Remote A", a_url, Some(a_key_origin)), profile("local-b", "Local B", b_url, None)],
        "default_profile": a_id,
    });
    std::fs::write(dirs.config().join("settings.json"), s.to_string()).expect("settings");
}

/// Every header value of every request the server got.
fn headers(server: &ScriptedServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .flat_map(|r| r.headers.iter().map(|(n, v)| format!("{n}: {v}")))
        .collect()
}

#[tokio::test]
async fn a_profiles_key_reaches_its_own_host_and_no_other() {
    let one = ScriptedServer::start(vec![done()]).await;
    let two = ScriptedServer::start(vec![done(), done()]).await;
    let (url_one, url_two) = (
        format!("{}/v1", one.base_url()),
        format!("{}/v1", two.base_url()),
    );
    let origin_one = origin(&url_one).expect("origin");
    // A profile id of this run's own, so runs side by side never share a keyring entry.
    let a = format!("remote-a-{}", std::process::id());
    let entry = key_name(&a, &origin_one);
    KeyringStore
        .set(&entry, &Secret::new("sk-only-for-one"))
        .expect("keyring (run through make test)");
    let ws = workspace(None, &[]);
    let root = ws.path().display().to_string();
    let dirs = UserDirs::new();
    settings(&dirs, &a, &url_one, &origin_one, &url_two);
    let run = |profile: &str| {
        vec![
            "run".to_string(),
            "--workspace".into(),
            root.clone(),
            "--profile".into(),
            profile.into(),
            "--json".into(),
            "Say done".into(),
        ]
    };
    let as_strs = |v: &[String]| v.iter().map(String::clone).collect::<Vec<_>>();

    // The local profile's server never sees the remote profile's key.
    let args = as_strs(&run("Local B"));
    let out = mandate(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(!headers(&two).iter().any(|h| h.contains("sk-only-for-one")));
    // The remote profile's key goes to its own server.
    let args = as_strs(&run(&a));
    let out = mandate(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        one.requests()[0].header("authorization"),
        Some("Bearer sk-only-for-one")
    );
    // The task remembers the profile it ran on.
    let record = mandate_tests::cli::task_record(&dirs, &out.task_id().expect("task"));
    assert_eq!(record["summary"]["profile"], a.as_str());

    // Pointed at the other server (by hand, in the settings file): the key stays behind and
    // nothing is sent.
    let seen = two.requests().len();
    settings(&dirs, &a, &url_two, &origin_one, &url_two);
    let args = as_strs(&run(&a));
    let out = mandate(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(2), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("is not sent there"), "{}", out.stderr);
    assert_eq!(
        two.requests().len(),
        seen,
        "nothing reached the second host"
    );

    // Naming a server without a profile sends no one's key.
    let out = mandate(
        &[
            "run",
            "--workspace",
            &root,
            "--provider",
            "openai",
            "--base-url",
            &url_two,
            "--model",
            "test-model",
            "--json",
            "Say done",
        ],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(!headers(&two).iter().any(|h| h.contains("sk-only-for-one")));
    let _ = KeyringStore.delete(&entry);
}

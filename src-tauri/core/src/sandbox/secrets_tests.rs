//! The person's secrets and Mandate's own data, unreadable to confined commands at every
//! level this machine offers, with the tools and the workspace still readable.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::tests::levels;
use super::*;
use crate::hooks::command_policy::CommandPolicy;
use crate::redact::Redactor;

/// Secret files under the fake home, each holding `SECRET-<n>`.
const SECRET_FILES: &[&str] = &[
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".netrc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".docker/config.json",
    ".gnupg/private-keys-v1.d/k.key",
    ".kube/config",
    ".mozilla/firefox/p.default/logins.json",
    ".config/google-chrome/Default/Cookies",
    ".local/share/keyrings/login.keyring",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".pgpass",
    ".config/sops/age/keys.txt",
    ".cache/huggingface/token",
    ".claude/.credentials.json",
    ".codex/auth.json",
    "mandate-data/tasks/t1.json",
    "mandate-config/settings.json",
];

/// Files beside them that tools need, each holding `OPEN-<n>`.
const OPEN_FILES: &[&str] = &[
    ".cargo/bin/tool",
    ".rustup/settings.toml",
    ".npm/_cacache/index",
    ".config/other/x.conf",
    ".docker/features.json",
    ".local/bin/tool",
    ".local/share/other/x",
    ".gitconfig",
    ".npmrc",
    ".cache/huggingface/hub/model.txt",
    ".claude/settings.json",
    "project/src/main.rs",
];

struct FakeHome {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    temp: PathBuf,
}

/// A home outside `/tmp` (bubblewrap hides all of `/tmp`, which would prove nothing).
fn fake_home() -> FakeHome {
    let base = ["/var/tmp", env!("CARGO_MANIFEST_DIR")]
        .into_iter()
        .find_map(|dir| {
            tempfile::Builder::new()
                .prefix("mandate-secrets-")
                .tempdir_in(dir)
                .ok()
        })
        .expect("a directory outside /tmp");
    let home = base.path().canonicalize().expect("canonical").join("home");
    for (i, rel) in SECRET_FILES.iter().enumerate() {
        write(&home.join(rel), &format!("SECRET-{i}\n"));
    }
    for (i, rel) in OPEN_FILES.iter().enumerate() {
        write(&home.join(rel), &format!("OPEN-{i}\n"));
    }
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("project/keys")).expect("link");
    std::os::unix::fs::symlink(&home, home.join("project/home")).expect("link");
    let temp = base.path().join("cmdtmp");
    std::fs::create_dir_all(&temp).expect("mkdir");
    FakeHome {
        _tmp: base,
        home,
        temp,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn own_dirs(h: &FakeHome) -> Vec<PathBuf> {
    vec![h.home.join("mandate-data"), h.home.join("mandate-config")]
}

/// A sandbox in `workspace` whose protected paths are found under the fake home.
fn sandbox_in(h: &FakeHome, workspace: &Path, scope: &[&str]) -> CommandSandbox {
    let scope: Vec<String> = scope.iter().map(|g| g.to_string()).collect();
    let policy = CommandPolicy::builtin();
    let env = env::command_environment(
        std::env::vars(),
        policy.confinement(),
        &h.temp,
        false,
        &Redactor::new(),
    );
    let mut sb = CommandSandbox::new(
        workspace,
        workspace,
        scope_grants(workspace, &scope),
        Vec::new(),
        &h.temp,
        false,
        false,
        Vec::new(),
        env,
    )
    .expect("sandbox");
    sb.protect(secrets::protected_paths(Some(&h.home), &own_dirs(h)))
        .expect("protect");
    sb
}

fn run(sandbox: &CommandSandbox, confinement: &Confinement, line: &str) -> (Option<i32>, String) {
    let cmd = ConfinedCommand::command(sandbox, confinement, line).expect("command");
    let out = cmd.output().expect("spawn");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

fn cat_all(home: &Path, rels: &[&str]) -> String {
    rels.iter()
        .map(|rel| format!("cat '{}';", home.join(rel).display()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_list_finds_what_exists_resolved_and_top_most_only() {
    let h = fake_home();
    let found = secrets::protected_paths(Some(&h.home), &own_dirs(&h));
    for rel in [
        ".ssh",
        ".aws",
        ".netrc",
        ".config/gh",
        ".docker/config.json",
        ".local/share/keyrings",
        ".cargo/credentials.toml",
        "mandate-data",
    ] {
        assert!(found.contains(&h.home.join(rel)), "{rel}: {found:?}");
    }
    assert!(
        !found.contains(&h.home.join(".azure")),
        "missing is left out"
    );
    assert!(!found
        .iter()
        .any(|p| p.starts_with(h.home.join(".cargo/bin"))));
    // A symlinked secret is protected where it really is.
    let real = h.home.join("elsewhere/kube");
    std::fs::create_dir_all(&real).expect("mkdir");
    std::fs::remove_dir_all(h.home.join(".kube")).expect("rm");
    std::os::unix::fs::symlink(&real, h.home.join(".kube")).expect("link");
    let found = secrets::protected_paths(Some(&h.home), &[]);
    assert!(found.contains(&real), "{found:?}");
    // Inside another: only the outer one.
    let nested = secrets::protected_paths(None, &[h.home.join(".ssh"), h.home.clone()]);
    assert_eq!(nested, vec![h.home.clone()]);
}

#[test]
fn a_confined_command_cannot_read_the_persons_secrets_or_mandates_data() {
    let h = fake_home();
    for level in levels() {
        let name = level.summary();
        let ws = h.home.join("project");
        let sb = sandbox_in(&h, &ws, &["src/**"]);
        let attempts = format!(
            "{} cat keys/id_ed25519; cat home/.netrc; cat ~/.netrc; grep -r SECRET '{}' ; \
             tar cf - -C '{}' .ssh .aws | od -c | head; true",
            cat_all(&h.home, SECRET_FILES),
            h.home.display(),
            h.home.display(),
        );
        let (_, out) = run(&sb, &level, &attempts);
        assert!(!out.contains("SECRET-"), "{name}: {out}");
        // What the model reads says why.
        let touched = secrets::mentioned(&[&attempts, &out], &sb.hidden, Some(&h.home));
        assert!(touched.contains(&h.home.join(".ssh").display().to_string()));
        assert!(secrets::note(&touched).contains("is protected"));
        // The tools and the workspace beside them still read.
        let (code, out) = run(&sb, &level, &cat_all(&h.home, OPEN_FILES));
        assert_eq!(code, Some(0), "{name}: {out}");
        for i in 0..OPEN_FILES.len() {
            assert!(
                out.contains(&format!("OPEN-{i}\n")),
                "{name}: OPEN-{i}: {out}"
            );
        }
        // Writes in scope still land; no secret can be written either.
        let (_, out) = run(
            &sb,
            &level,
            &format!(
                "echo ok > src/new.rs; echo x >> '{}'",
                h.home.join(".netrc").display()
            ),
        );
        assert!(ws.join("src/new.rs").is_file(), "{name}: {out}");
        let netrc = std::fs::read_to_string(h.home.join(".netrc")).expect("read");
        assert_eq!(netrc, format!("SECRET-{}\n", 2), "{name}");
    }
}

#[test]
fn a_workspace_holding_a_secret_keeps_it_hidden_and_one_inside_a_secret_is_refused() {
    let h = fake_home();
    for level in levels() {
        let name = level.summary();
        // The person opens the home directory itself, and grants an intent all of it.
        let sb = sandbox_in(&h, &h.home, &["**"]);
        assert!(
            sb.writable.iter().all(|g| !g.path.ends_with(".ssh")
                && !g.path.ends_with(".config")
                && !g.path.ends_with("mandate-data")),
            "{:?}",
            sb.writable
        );
        let (_, out) = run(&sb, &level, &cat_all(&h.home, SECRET_FILES));
        assert!(!out.contains("SECRET-"), "{name}: {out}");
        let (_, out) = run(&sb, &level, &cat_all(&h.home, OPEN_FILES));
        assert!(out.contains("OPEN-8"), "{name}: {out}");
    }
    let inside = h.home.join(".ssh");
    let mut sb = sandbox_in(&h, &h.home.join("project"), &[]);
    sb.workspace = inside.clone();
    let refused = sb.protect(secrets::protected_paths(Some(&h.home), &[]));
    let err = refused.expect_err("a workspace inside ~/.ssh");
    assert!(
        matches!(err, SandboxError::WorkspaceProtected { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("open a workspace outside it"),
        "{err}"
    );
}

#[test]
fn the_tools_still_run_confined() {
    // With this machine's real home and its protected paths.
    for level in levels() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().canonicalize().expect("canonical");
        let temp = ws.join("cmdtmp");
        std::fs::create_dir_all(&temp).expect("mkdir");
        let policy = CommandPolicy::builtin();
        let env = env::command_environment(
            std::env::vars(),
            policy.confinement(),
            &temp,
            false,
            &Redactor::new(),
        );
        let sb = CommandSandbox::new(
            &ws,
            &ws,
            Vec::new(),
            Vec::new(),
            &temp,
            false,
            false,
            Vec::new(),
            env,
        )
        .expect("sandbox");
        let mut line = String::from(
            "git --version && git init -q \"$TMPDIR/g\" && git -C \"$TMPDIR/g\" status --short && echo GIT-OK; ",
        );
        for (tool, check) in [
            ("cargo", "cargo --version"),
            ("rustc", "rustc --version"),
            ("node", "node -e 'console.log(\"NODE-\" + (1 + 1))'"),
            (
                "python3",
                "python3 -c 'import json; print(\"PY-\" + json.dumps(2))'",
            ),
        ] {
            if which(tool) {
                line.push_str(&format!("{check} || echo FAILED-{tool}; "));
            }
        }
        let (_, out) = run(&sb, &level, &line);
        let name = level.summary();
        assert!(out.contains("GIT-OK"), "{name}: {out}");
        assert!(!out.contains("FAILED-"), "{name}: {out}");
        if which("node") {
            assert!(out.contains("NODE-2"), "{name}: {out}");
        }
        if which("python3") {
            assert!(out.contains("PY-2"), "{name}: {out}");
        }
    }
}

fn which(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn secrets_the_environment_moves_elsewhere_are_hidden_too() {
    let h = fake_home();
    let elsewhere = h.home.parent().expect("base").join("elsewhere");
    write(
        &elsewhere.join("gnupg/private-keys-v1.d/k.key"),
        "SECRET-gpg\n",
    );
    write(&elsewhere.join("kube/a.yaml"), "SECRET-kube-a\n");
    write(&elsewhere.join("kube/b.yaml"), "SECRET-kube-b\n");
    write(&elsewhere.join("open.txt"), "OPEN-elsewhere\n");
    let var = |name: &str| -> Option<std::ffi::OsString> {
        match name {
            "GNUPGHOME" => Some(elsewhere.join("gnupg").into()),
            "KUBECONFIG" => Some(
                format!(
                    "{}:{}:relative/kube.yaml",
                    elsewhere.join("kube/a.yaml").display(),
                    elsewhere.join("kube/b.yaml").display()
                )
                .into(),
            ),
            // Relative: it depends on where a tool runs, so it names nothing.
            "DOCKER_CONFIG" => Some("docker".into()),
            // The person's own list.
            "MANDATE_PROTECTED_PATHS" => {
                Some(format!("{}:notes/relative", elsewhere.join("mine").display()).into())
            }
            _ => None,
        }
    };
    write(&elsewhere.join("mine/diary.txt"), "SECRET-mine\n");
    let named = secrets::named_by_environment(var);
    assert_eq!(
        named,
        [
            elsewhere.join("gnupg"),
            elsewhere.join("kube/a.yaml"),
            elsewhere.join("kube/b.yaml"),
            elsewhere.join("mine"),
        ]
    );
    for level in levels() {
        let name = level.summary();
        let ws = h.home.join("project");
        let mut sb = sandbox_in(&h, &ws, &["src/**"]);
        let mut own = own_dirs(&h);
        own.extend(named.iter().cloned());
        sb.protect(secrets::protected_paths(Some(&h.home), &own))
            .expect("protect");
        let e = elsewhere.display();
        let (_, out) = run(
            &sb,
            &level,
            &format!("cat {e}/gnupg/private-keys-v1.d/k.key {e}/kube/a.yaml {e}/kube/b.yaml {e}/mine/diary.txt; cat {e}/open.txt"),
        );
        assert!(!out.contains("SECRET-"), "{name}: {out}");
        assert!(out.contains("OPEN-elsewhere"), "{name}: {out}");
    }
}

#[test]
fn secrets_in_trees_the_environment_moves_are_looked_for_there() {
    let var = |name: &str| -> Option<std::ffi::OsString> {
        match name {
            "XDG_CONFIG_HOME" => Some("/cfg".into()),
            "CARGO_HOME" => Some("/opt/cargo".into()),
            "XDG_DATA_HOME" => Some("relative/data".into()),
            _ => None,
        }
    };
    let named = secrets::named_by_environment(var);
    for path in [
        "/cfg/gh",
        "/cfg/gcloud",
        "/cfg/google-chrome",
        "/opt/cargo/credentials",
        "/opt/cargo/credentials.toml",
    ] {
        assert!(named.contains(&PathBuf::from(path)), "{path}: {named:?}");
    }
    assert!(
        !named.iter().any(|p| p.starts_with("relative")),
        "a relative tree names nothing: {named:?}"
    );
    assert!(!named.contains(&PathBuf::from("/opt/cargo/bin")));
}

#[test]
fn the_lists_are_kept_between_commands_but_follow_every_change_of_the_home() {
    let h = fake_home();
    let own = own_dirs(&h);
    let first = secrets::protected_paths(Some(&h.home), &own);
    assert!(!first.contains(&h.home.join(".azure")));
    // Other tests make and remove their own homes beside this one while it runs: the lists are
    // compared on what this test's machine holds, not on theirs.
    let base = h.home.parent().expect("base").to_path_buf();
    let mine = |list: Vec<PathBuf>| -> Vec<PathBuf> {
        list.into_iter()
            .filter(|p| !p.starts_with("/var/tmp") || p.starts_with(&base))
            .collect()
    };
    let around = mine(secrets::readable_around(&first));
    // The same machine: the same lists, again.
    assert_eq!(
        mine(secrets::protected_paths(Some(&h.home), &own)),
        mine(first.clone())
    );
    assert_eq!(mine(secrets::readable_around(&first)), around);

    // A secret appears (its parent's entries change): it is protected at once.
    write(&h.home.join(".azure/accessTokens.json"), "SECRET\n");
    let now = secrets::protected_paths(Some(&h.home), &own);
    assert!(now.contains(&h.home.join(".azure")), "{now:?}");
    // A deeper one, under directories that did not exist.
    write(&h.home.join(".config/gcloud/credentials.db"), "SECRET\n");
    let now = secrets::protected_paths(Some(&h.home), &own);
    assert!(now.contains(&h.home.join(".config/gcloud")), "{now:?}");
    // A secret replaced by a link elsewhere is protected where it points.
    let real = h.home.join("vault/aws");
    std::fs::create_dir_all(&real).expect("mkdir");
    std::fs::remove_dir_all(h.home.join(".aws")).expect("rm");
    std::os::unix::fs::symlink(&real, h.home.join(".aws")).expect("link");
    let now = secrets::protected_paths(Some(&h.home), &own);
    assert!(now.contains(&real), "{now:?}");

    // A new entry beside the secrets becomes readable; the new secret does not.
    std::fs::create_dir_all(h.home.join("notes")).expect("mkdir");
    let around = secrets::readable_around(&now);
    assert!(around.contains(&h.home.join("notes")), "{around:?}");
    assert!(!around.iter().any(|p| p.starts_with(h.home.join(".azure"))));
    assert!(!around.iter().any(|p| p.starts_with(&real)));
}

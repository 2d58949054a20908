//! Hooks and MCP servers wherever their program lives: kept outside the workspace under `/tmp`
//! (where bubblewrap gives confined processes a private directory), a script runs with what
//! it loads beside it and a binary runs alone; one inside a hidden directory (the person's
//! secrets, Mandate's own data) is refused up front with that reason, at every level.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::tests::levels;
use super::*;
use crate::hooks::command_policy::CommandPolicy;
use crate::mcp::connection::{connect, ConnectError, Resolved};
use crate::mcp::jail::Place;
use crate::redact::Redactor;
use crate::user_hooks::process::{run_hook, HookPlace, HookRun};

const LIB: &str = "verdict() { printf 'verdict: %s\\n' \"$1\"; }\n";
const HOOK: &str = "#!/bin/sh\n. \"$(dirname \"$0\")/lib.sh\"\ncat > /dev/null\nverdict \"from $(cat \"$(dirname \"$0\")/reason.txt\")\"\n";

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A workspace, and apart from it under `/tmp` a script with a library and a file beside it,
/// a copy of a binary with a private file beside it, and Mandate's data directory holding a
/// script too.
struct Outside {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    script: PathBuf,
    binary: PathBuf,
    data: PathBuf,
    hidden_script: PathBuf,
}

fn outside() -> Outside {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = tmp.path().canonicalize().expect("canonical");
    assert!(base.starts_with("/tmp"), "{}", base.display());
    let root = base.join("ws");
    std::fs::create_dir_all(&root).expect("mkdir");
    let tools = base.join("tools/hooks");
    write(&tools.join("lib.sh"), LIB, 0o644);
    write(&tools.join("reason.txt"), "outside", 0o644);
    let script = tools.join("check.sh");
    write(&script, HOOK, 0o755);
    let bin = base.join("tools/bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let binary = bin.join("say");
    std::fs::copy("/bin/echo", &binary).expect("copy");
    write(&bin.join("private.txt"), "PRIVATE-BESIDE-THE-BINARY", 0o644);
    let data = base.join("mandate-data");
    let hidden_script = data.join("hooks/check.sh");
    write(&hidden_script, HOOK, 0o755);
    write(&data.join("hooks/lib.sh"), LIB, 0o644);
    write(&data.join("hooks/reason.txt"), "hidden", 0o644);
    Outside {
        _tmp: tmp,
        root,
        script,
        binary,
        data,
        hidden_script,
    }
}

async fn hook(o: &Outside, level: &Confinement, line: &str) -> HookRun {
    let policy = CommandPolicy::builtin();
    let app_dirs = [o.data.clone()];
    let place = HookPlace {
        root: &o.root,
        confinement: level,
        app_dirs: &app_dirs,
        settings: policy.confinement(),
        redactor: &Redactor::new(),
    };
    run_hook(
        line,
        false,
        Duration::from_secs(20),
        b"{}".to_vec(),
        &place,
        &CancellationToken::new(),
    )
    .await
}

#[tokio::test]
async fn a_hook_kept_under_tmp_outside_the_workspace_runs_at_every_level() {
    for level in levels() {
        let o = outside();
        let name = level.summary();
        for line in [
            format!("'{}'", o.script.display()),
            format!("sh {}", o.script.display()),
        ] {
            let run = hook(&o, &level, &line).await;
            assert_eq!(
                (run.exit_code, run.failure.as_deref()),
                (Some(0), None),
                "{name}: {line}: {run:?}"
            );
            assert_eq!(run.stdout, "verdict: from outside\n", "{name}: {line}");
        }
        let say = format!("{} hello", o.binary.display());
        let run = hook(&o, &level, &say).await;
        assert_eq!(
            (run.exit_code, run.stdout.as_str()),
            (Some(0), "hello\n"),
            "{name}: {run:?}"
        );
        // A binary is shown alone: what lies beside it (and the line does not name) stays in
        // the private `/tmp`.
        if level.level == ConfinementLevel::LandlockAndBwrap {
            let peek = format!("{say}; cat \"$(dirname {})\"/private*", o.binary.display());
            let run = hook(&o, &level, &peek).await;
            assert!(!run.stdout.contains("PRIVATE"), "{name}: {run:?}");
        }
    }
}

#[tokio::test]
async fn a_hook_kept_in_a_hidden_directory_is_refused_with_the_reason() {
    for level in levels() {
        let o = outside();
        let run = hook(&o, &level, &format!("'{}'", o.hidden_script.display())).await;
        let why = run.failure.clone().unwrap_or_default();
        assert!(
            why.contains(&o.hidden_script.display().to_string())
                && why.contains(&o.data.display().to_string())
                && why.contains("may not read"),
            "{}: {run:?}",
            level.summary()
        );
        assert!(!run.stdout.contains("verdict"), "{run:?}");
    }
}

fn server_place(o: &Outside, level: &Confinement) -> Place {
    Place {
        name: "outside".into(),
        root: o.root.clone(),
        confinement: level.clone(),
        hidden: vec![o.data.clone()],
        cache: None,
        writes_workspace: false,
        unconfined: false,
        listing: false,
    }
}

/// Starts `program` as a stdio server; it is no MCP server, so the start fails, and what
/// it printed on stderr before exiting tells whether it ran.
async fn start(o: &Outside, level: &Confinement, program: &Path) -> ConnectError {
    let resolved = Resolved::Stdio {
        command: program.display().to_string(),
        args: Vec::new(),
        env: Vec::new(),
    };
    match connect(
        "srv",
        &resolved,
        &server_place(o, level),
        Duration::from_secs(10),
    )
    .await
    {
        Ok(_) => panic!("a shell script answered `initialize`"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn an_mcp_server_kept_under_tmp_starts_and_one_in_a_hidden_directory_is_refused() {
    for level in levels() {
        let o = outside();
        let name = level.summary();
        let server = o.script.with_file_name("server.sh");
        write(
            &server,
            "#!/bin/sh\n. \"$(dirname \"$0\")/lib.sh\"\nverdict started >&2\n",
            0o755,
        );
        let e = start(&o, &level, &server).await.to_string();
        assert!(e.contains("verdict: started"), "{name}: {e}");
        assert!(!e.contains("execvp"), "{name}: {e}");
        let hidden = o.hidden_script.with_file_name("server.sh");
        std::fs::copy(&server, &hidden).expect("copy");
        let e = start(&o, &level, &hidden).await.to_string();
        assert!(
            e.contains(&hidden.display().to_string())
                && e.contains(&o.data.display().to_string())
                && e.contains("may not read"),
            "{name}: {e}"
        );
    }
}

#[test]
fn the_persons_home_under_tmp_is_seen_as_anywhere_else_its_secrets_still_hidden() {
    for level in levels() {
        let o = outside();
        let home = o.root.parent().expect("base").join("home");
        write(&home.join(".local/bin/readable"), "OPEN-TOOL", 0o644);
        write(&home.join(".ssh/id_ed25519"), "SECRET-KEY", 0o600);
        let env = vec![
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ("HOME".to_string(), home.display().to_string()),
        ];
        let sandbox = CommandSandbox::new(
            &o.root,
            &o.root,
            Vec::new(),
            Vec::new(),
            &o.data,
            false,
            false,
            vec![home.join(".ssh")],
            env,
        )
        .expect("sandbox");
        let line = "cat ~/.local/bin/readable ~/.ssh/id_ed25519; true";
        let out = ConfinedCommand::command(&sandbox, &level, line)
            .expect("command")
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text, "OPEN-TOOL", "{}: {out:?}", level.summary());
    }
}

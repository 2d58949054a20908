use std::io::Read as _;
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;

use super::*;
use crate::hooks::command_policy::CommandPolicy;
use crate::redact::Redactor;

/// The levels this machine can run; a test runs each (a level the kernel lacks is skipped).
pub(super) fn levels() -> Vec<Confinement> {
    let here = Confinement::detect();
    let mut out = Vec::new();
    if here.landlock_abi.is_some() {
        out.push(Confinement::from_parts(here.landlock_abi, None));
        if here.bwrap.is_some() {
            out.push(here.clone());
            out.push(here.clone().bwrap_per_command());
        }
    }
    out
}

pub(super) struct Scratch {
    _tmp: tempfile::TempDir,
    pub(super) root: PathBuf,
    pub(super) outside: PathBuf,
    temp: PathBuf,
}

pub(super) fn scratch() -> Scratch {
    scratch_in(&std::env::temp_dir())
}

/// A workspace under `dir`: under `/tmp` bubblewrap binds it back over its private `/tmp`;
/// elsewhere (`/var/tmp`) it is seen through the read-only view of `/`.
fn scratch_in(dir: &Path) -> Scratch {
    let tmp = tempfile::tempdir_in(dir).expect("tmp");
    let base = tmp.path().canonicalize().expect("canon");
    let root = base.join("ws");
    for dir in [
        "src/auth",
        "src/db",
        "docs",
        ".git/hooks",
        ".orchestration",
        "target",
    ] {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    std::fs::write(root.join("README.md"), "readme\n").expect("write");
    std::fs::write(root.join(".orchestration/agent_trace.jsonl"), "{}\n").expect("write");
    std::fs::write(root.join("src/auth/login.rs"), "fn a() {}\n").expect("write");
    let outside = base.join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    let temp = base.join("cmdtmp");
    std::fs::create_dir_all(&temp).expect("mkdir");
    Scratch {
        _tmp: tmp,
        root,
        outside,
        temp,
    }
}

pub(super) fn sandbox(s: &Scratch, scope: &[&str], network: bool) -> CommandSandbox {
    let scope: Vec<String> = scope.iter().map(|g| g.to_string()).collect();
    let mut grants = scope_grants(&s.root, &scope);
    grants.push(Grant::directory(s.root.join("target")));
    let policy = CommandPolicy::builtin();
    let env = env::command_environment(
        std::env::vars(),
        policy.confinement(),
        &s.temp,
        network,
        &Redactor::new(),
    );
    CommandSandbox::new(
        &s.root,
        &s.root,
        grants,
        Vec::new(),
        &s.temp,
        network,
        false,
        Vec::new(),
        env,
    )
    .expect("sandbox")
}

/// Runs `line` and returns (exit code, stdout + stderr).
pub(super) fn run(
    sandbox: &CommandSandbox,
    confinement: &Confinement,
    line: &str,
) -> (Option<i32>, String) {
    let cmd = ConfinedCommand::command(sandbox, confinement, line).expect("command");
    let out = cmd.output().expect("spawn");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

#[test]
fn this_machine_reports_its_confinement() {
    let here = Confinement::detect();
    eprintln!(
        "confinement here: {} (gaps: {:?})",
        here.summary(),
        here.gaps
    );
    assert_eq!(here.is_confined(), here.landlock_abi.is_some());
    let none = Confinement::from_parts(None, None);
    assert_eq!(none.summary(), "none");
    assert!(!none.is_confined() && !none.gaps.is_empty());
    assert_eq!(
        Confinement::from_parts(Some(7), None).summary(),
        "landlock ABI 7 only"
    );
    assert_eq!(
        Confinement::from_parts(Some(7), Some("/usr/bin/bwrap".into())).summary(),
        "landlock ABI 7 + bwrap"
    );
}

#[test]
fn writes_land_only_in_the_scope_the_temp_dir_and_build_output() {
    let under = [std::env::temp_dir(), PathBuf::from("/var/tmp")];
    for (level, dir) in levels()
        .into_iter()
        .flat_map(|l| under.clone().map(|d| (l.clone(), d)))
    {
        let s = scratch_in(&dir);
        let sb = sandbox(&s, &["src/auth/**"], false);
        let line = format!(
            "echo ok > src/auth/new.rs; echo t > \"$TMPDIR/t\"; echo b > target/out; echo x > /dev/null; echo y > /dev/stderr; \
             echo bad > src/db/x.rs; echo bad > docs/x.md; echo bad > x.txt; echo bad >> .orchestration/agent_trace.jsonl; \
             echo bad > .git/hooks/pre-commit; echo bad > {}/x; echo bad > README.md; true",
            s.outside.display()
        );
        let (code, out) = run(&sb, &level, &line);
        let name = format!("{} (workspace under {})", level.summary(), dir.display());
        assert_eq!(code, Some(0), "{name}: {out}");
        assert!(s.root.join("src/auth/new.rs").exists(), "{name}: {out}");
        assert!(s.temp.join("t").exists(), "{name}");
        assert!(s.root.join("target/out").exists(), "{name}");
        for denied in ["src/db/x.rs", "docs/x.md", "x.txt", ".git/hooks/pre-commit"] {
            assert!(
                !s.root.join(denied).exists(),
                "{name}: {denied} was written"
            );
        }
        assert!(!s.outside.join("x").exists(), "{name}: wrote outside");
        let ledger = std::fs::read_to_string(s.root.join(".orchestration/agent_trace.jsonl"));
        assert_eq!(ledger.expect("ledger"), "{}\n", "{name}");
        assert_eq!(
            std::fs::read_to_string(s.root.join("README.md")).expect("readme"),
            "readme\n"
        );
    }
}

#[test]
fn the_network_is_refused_unless_granted() {
    for level in levels() {
        let s = scratch();
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let line = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
        let (_, out) = run(&sandbox(&s, &[], false), &level, &line);
        assert!(!out.contains("connected"), "{}: {out}", level.summary());
        assert!(
            listener.accept().is_err(),
            "{}: a connection arrived",
            level.summary()
        );
        // UDP: the datagram sent without network must never arrive; the one sent with it
        // shows that it would have.
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
        let udp_port = udp.local_addr().expect("addr").port();
        let send = |word: &str| format!("echo {word} > /dev/udp/127.0.0.1/{udp_port}");
        run(&sandbox(&s, &[], false), &level, &send("refused"));
        run(&sandbox(&s, &[], true), &level, &send("granted"));
        let mut buf = [0u8; 64];
        let n = udp.recv(&mut buf).expect("recv");
        assert_eq!(
            &buf[..n],
            b"granted\n",
            "{}: UDP left without network",
            level.summary()
        );
        // Granted: the same command connects.
        let (_, out) = run(&sandbox(&s, &[], true), &level, &line);
        assert!(out.contains("connected"), "{}: {out}", level.summary());
        let mut accepted = None;
        for _ in 0..100 {
            if let Ok((stream, _)) = listener.accept() {
                accepted = Some(stream);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            accepted.is_some(),
            "{}: granted network did not connect",
            level.summary()
        );
    }
}

#[test]
fn commands_get_an_allow_listed_environment_and_no_privilege() {
    for level in levels() {
        let s = scratch();
        let (code, out) = run(
            &sandbox(&s, &[], false),
            &level,
            "env | cut -d= -f1 | sort | tr '\\n' ' '; echo \"optional=$GIT_OPTIONAL_LOCKS\"; grep CapEff /proc/self/status",
        );
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("PATH") && out.contains("TMPDIR"), "{out}");
        // git does not rewrite the index behind a read (`git status`).
        assert!(out.contains("optional=0"), "{out}");
        assert!(!out.contains("MANDATE_") && !out.contains("DBUS"), "{out}");
        assert!(
            out.contains("CapEff:\t0000000000000000"),
            "{}: {out}",
            level.summary()
        );
    }
}

#[test]
fn root_level_globs_grant_top_level_directories_never_the_root() {
    let s = scratch();
    std::fs::write(s.root.join(".mcp.json"), "{}\n").expect("write");
    let grants = scope_grants(&s.root, &["**".to_string()]);
    let paths: Vec<String> = grants
        .iter()
        .map(|g| {
            g.path
                .strip_prefix(&s.root)
                .expect("inside")
                .display()
                .to_string()
        })
        .collect();
    for expected in ["src", "docs", "target", "README.md"] {
        assert!(paths.contains(&expected.to_string()), "{paths:?}");
    }
    assert!(
        !paths.iter().any(|p| p.is_empty()
            || p.starts_with(".git")
            || p.starts_with(".orchestration")
            || p == ".mcp.json"),
        "{paths:?}"
    );
    for glob in ["*.json", ".mcp*"] {
        assert_eq!(
            scope_grants(&s.root, &[glob.to_string()]),
            Vec::new(),
            "{glob}"
        );
    }
    // A literal path is dropped when the sandbox checks its grants.
    for glob in [".mcp.json", ".MCP.json", "*.json", "**"] {
        let sb = sandbox(&s, &[glob], false);
        assert!(
            sb.writable.iter().all(|g| !g
                .path
                .to_string_lossy()
                .to_ascii_lowercase()
                .ends_with("/.mcp.json")),
            "{glob}: {:?}",
            sb.writable
        );
    }
    let md = scope_grants(&s.root, &["*.md".to_string()]);
    assert_eq!(
        md,
        vec![Grant {
            path: s.root.join("README.md"),
            kind: GrantKind::File
        }]
    );
    let nested = scope_grants(
        &s.root,
        &[
            "src/auth/**".into(),
            "src/auth/login.rs".into(),
            "src/*.rs".into(),
        ],
    );
    assert_eq!(nested, vec![Grant::directory(s.root.join("src"))]);
    // A new top-level directory is granted only once made (by the sandbox, which removes it
    // again if the command leaves it empty); reading the grants makes nothing.
    assert_eq!(scope_grants(&s.root, &["newmod/**".into()]), Vec::new());
    assert!(!s.root.join("newmod").exists());
    let mut make = |dir: &Path| std::fs::create_dir(dir).is_ok();
    let fresh = scope::scope_grants_making(&s.root, &["newmod/**".into()], &mut make);
    assert_eq!(fresh, vec![Grant::directory(s.root.join("newmod"))]);
    assert!(s.root.join("newmod").is_dir());
    let deep = scope_grants(&s.root, &["src/auth/new/deeper/*.rs".into()]);
    assert_eq!(deep, vec![Grant::directory(s.root.join("src/auth"))]);
}

#[test]
fn unsafe_grants_are_dropped_whatever_the_caller_passes() {
    let s = scratch();
    std::fs::write(s.root.join(".mcp.json"), "{}\n").expect("write");
    std::os::unix::fs::symlink(&s.outside, s.root.join("src/escape")).expect("link");
    let grants = vec![
        Grant::directory(s.root.clone()),
        Grant::directory(s.root.join(".git")),
        Grant::directory(s.root.join(".orchestration")),
        Grant {
            path: s.root.join(".mcp.json"),
            kind: GrantKind::File,
        },
        Grant::directory(s.root.join("src/escape")),
        Grant::directory(s.outside.clone()),
        Grant::directory(s.root.join("docs")),
    ];
    let sb = CommandSandbox::new(
        &s.root,
        &s.root,
        grants,
        Vec::new(),
        &s.temp,
        false,
        false,
        Vec::new(),
        Vec::new(),
    )
    .expect("sandbox");
    assert_eq!(sb.writable, vec![Grant::directory(s.root.join("docs"))]);
}

#[test]
fn a_parent_process_environment_is_unreadable() {
    // `/proc/$PPID/environ` is this test process, whose initial environment the child test
    // below sets to hold a key; run it as its own process.
    let exe = std::env::current_exe().expect("exe");
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "sandbox::tests::parent_environ_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MANDATE_PARENT_ENVIRON_CHILD", "1")
        .env("MANDATE_FAKE_KEY", "sk-parent-environ-0123456789")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    assert!(child.wait().expect("wait").success(), "{out}");
    assert!(out.contains("environ: refused"), "{out}");
}

#[test]
fn parent_environ_child() {
    if std::env::var_os("MANDATE_PARENT_ENVIRON_CHILD").is_none() {
        return;
    }
    assert!(protect_this_process());
    for level in levels() {
        let s = scratch();
        let (_, out) = run(
            &sandbox(&s, &[], false),
            &level,
            "cat /proc/$PPID/environ; cat /proc/1/environ; for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null; true",
        );
        assert!(
            !out.contains("sk-parent-environ"),
            "{}: {out}",
            level.summary()
        );
    }
    println!("environ: refused");
}

#[test]
fn a_missing_path_in_the_sandbox_is_an_error_not_a_wider_grant() {
    let s = scratch();
    let sb = sandbox(&s, &[], false);
    let mut broken = sb.clone();
    broken.temp_dir = s.root.join("no-such-dir");
    let level = Confinement::from_parts(Some(7), None);
    if Confinement::detect().landlock_abi.is_some() {
        assert!(matches!(
            ConfinedCommand::command(&broken, &level, "true"),
            Err(SandboxError::Path { .. })
        ));
    }
    assert!(Path::new(spawn::bash()).is_absolute() || spawn::bash() == "bash");
}

#[test]
fn the_repository_is_writable_only_when_granted() {
    for level in levels() {
        let s = scratch();
        std::fs::remove_dir_all(s.root.join(".git")).expect("rm");
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&s.root)
            .status()
            .expect("git");
        assert!(init.success());
        let commit = "git -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -q --allow-empty -m x && echo committed";
        let (_, out) = run(&sandbox(&s, &[], false), &level, commit);
        assert!(!out.contains("committed"), "{}: {out}", level.summary());
        let mut granted = sandbox(&s, &[], false);
        granted.write_git = true;
        let (code, out) = run(&granted, &level, commit);
        assert_eq!(code, Some(0), "{}: {out}", level.summary());
        assert!(out.contains("committed"), "{}: {out}", level.summary());
    }
}

#[test]
fn without_confinement_commands_still_get_the_allow_listed_environment() {
    let s = scratch();
    let none = Confinement::from_parts(None, None);
    assert_eq!(none.level, ConfinementLevel::None);
    let (code, out) = run(
        &sandbox(&s, &[], false),
        &none,
        "echo \"[$MANDATE_API_KEY][$DBUS_SESSION_BUS_ADDRESS]\"; echo $TMPDIR",
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("[][]"), "{out}");
    assert!(out.contains(&s.temp.display().to_string()), "{out}");
}

/// The dispatcher awaits the governed run inside spawned tasks: its future must be `Send`.
#[allow(dead_code)]
fn governed_run_is_send(action: &crate::hooks::CommandAction, cx: &CommandContext<'_>) {
    fn send<T: Send>(_: T) {}
    let cancel = tokio_util::sync::CancellationToken::new();
    send(run_governed(action, cx, &cancel, |_| {}));
}

fn action(s: &Scratch, command: &str, timeout: std::time::Duration) -> crate::hooks::CommandAction {
    let ws = crate::workspace::Workspace::new(&s.root).expect("ws");
    crate::hooks::CommandAction {
        command: command.into(),
        cwd: ws.resolve(".").expect("root"),
        timeout,
        granted: Default::default(),
        background: false,
    }
}

#[tokio::test]
async fn output_streams_as_it_comes_and_the_exit_code_is_reported() {
    let s = scratch();
    let sb = sandbox(&s, &["src/auth/**"], false);
    let mut chunks = String::new();
    let run = run_confined(
        &action(
            &s,
            "echo out; echo err >&2; exit 3",
            std::time::Duration::from_secs(10),
        ),
        &sb,
        &Confinement::detect(),
        &Redactor::new(),
        &tokio_util::sync::CancellationToken::new(),
        |c| chunks.push_str(c),
    )
    .await;
    assert_eq!(run.exit_code, Some(3), "{}", run.output);
    assert!(run.output.contains("out") && run.output.contains("err"));
    assert_eq!(chunks, run.output);
}

#[tokio::test]
async fn a_timeout_kills_everything_the_command_started() {
    let s = scratch();
    let sb = sandbox(&s, &["src/auth/**"], false);
    let marker = s.root.join("src/auth/survived");
    let line = format!("(sleep 2; touch {}) & sleep 30", marker.display());
    let started = std::time::Instant::now();
    let run = run_confined(
        &action(&s, &line, std::time::Duration::from_millis(300)),
        &sb,
        &Confinement::detect(),
        &Redactor::new(),
        &tokio_util::sync::CancellationToken::new(),
        |_| {},
    )
    .await;
    assert!(run.timed_out);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // Long enough for the orphan to have fired, had it survived.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert!(!marker.exists(), "a child of the command outlived the kill");
}

/// Where, and for which intent, a test runs a command as the agent does ([`run_governed`]).
pub(super) struct AgentPlace<'a> {
    /// The workspace root (canonical).
    pub root: &'a Path,
    pub temp: &'a Path,
    /// Where the command starts, relative to the root.
    pub cwd: &'a str,
    /// The selected intent's globs.
    pub scope: &'a [&'a str],
    pub granted: crate::hooks::command_policy::CommandNeeds,
    /// Mandate's own directories, hidden.
    pub app_dirs: &'a [PathBuf],
}

impl AgentPlace<'_> {
    /// Runs `line` with the workspace's `.intentignore` and repository configuration as
    /// Mandate loads them.
    pub(super) async fn run(&self, level: &Confinement, line: &str) -> GovernedRun {
        let ws = crate::workspace::Workspace::new(self.root).expect("ws");
        let action = crate::hooks::CommandAction {
            command: line.into(),
            cwd: ws.resolve(self.cwd).expect("cwd"),
            timeout: std::time::Duration::from_secs(60),
            granted: self.granted,
            background: false,
        };
        let scope: Vec<String> = self.scope.iter().map(|g| g.to_string()).collect();
        let globs = scope.clone();
        let owns = move |p: &str| {
            globs
                .iter()
                .any(|g| globset::Glob::new(g).is_ok_and(|g| g.compile_matcher().is_match(p)))
        };
        let policy = CommandPolicy::builtin();
        let ignore = crate::hooks::ignore_list::IntentIgnore::load(self.root).expect("ignore");
        let cx = CommandContext {
            workspace: self.root,
            owned_scope: &scope,
            owns: &owns,
            ignore: &ignore,
            policy: &policy,
            confinement: level,
            temp_dir: self.temp,
            granted: self.granted,
            app_dirs: self.app_dirs,
            redactor: &Redactor::new(),
        };
        run_governed(
            &action,
            &cx,
            &tokio_util::sync::CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("ran")
    }
}

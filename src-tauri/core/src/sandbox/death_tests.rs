//! A confined process dies with Mandate, at each confinement level this machine has: a helper
//! process (this test binary, run again) starts a long-running command and a long-running
//! server the way Mandate does, and is killed with SIGKILL; its confined processes must go
//! too. And a process outlives the thread that asked for it, which must not kill it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::process::Stdio;
use std::time::Duration;

use super::tests::levels;
use super::*;

const HELPER: &str = "MANDATE_DEATH_HELPER";

fn sandbox(base: &Path) -> CommandSandbox {
    let (root, temp) = (base.join("ws"), base.join("tmp"));
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::create_dir_all(&temp).expect("mkdir");
    let env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
    CommandSandbox::new(
        &root,
        &root,
        Vec::new(),
        Vec::new(),
        &temp,
        false,
        false,
        Vec::new(),
        env,
    )
    .expect("sandbox")
}

/// The processes whose command line (its words separated by NUL) holds `marker`.
pub(super) fn processes_with(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// A descriptor that becomes readable when process `pid` exits (whoever its parent is).
fn pidfd(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open with integer arguments; a valid descriptor is owned from here on.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Waits (at most `limit`) until the process behind `fd` has exited.
fn exited(fd: &OwnedFd, limit: Duration) -> bool {
    use std::os::fd::AsRawFd as _;
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on the stack, valid for the call.
    let n = unsafe { libc::poll(&mut poll, 1, limit.as_millis() as libc::c_int) };
    n == 1
}

/// What the helper starts, each process sleeping for the marker's number of seconds.
#[derive(Clone, Copy)]
enum Scenario {
    /// A command and a server that sleep themselves.
    Plain,
    /// A command that backgrounds a grandchild and waits; a command and a server whose
    /// grandchildren double-fork and try to leave their session; each also sleeps itself.
    Descendants,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Plain => "plain",
            Scenario::Descendants => "descendants",
        }
    }

    fn from_name(name: &str) -> Scenario {
        match name {
            "descendants" => Scenario::Descendants,
            _ => Scenario::Plain,
        }
    }

    /// The confined processes it starts, for the helper's `sandbox`.
    fn start(self, sb: &CommandSandbox, level: &Confinement, marker: &str) -> Vec<super::Launch> {
        // A grandchild that double-forks (its parent exits at once: it is orphaned) and
        // tries to leave its session and process group; it sleeps whether or not it could.
        let escape =
            format!("( (setsid sleep {marker} || sleep {marker}) & ); exec sleep {marker}");
        let command = |line: &str| ConfinedCommand::command(sb, level, line).expect("command");
        match self {
            Scenario::Plain => vec![
                command(&format!("sleep {marker}")),
                ConfinedCommand::server(sb, level, "sleep", &[marker.to_string()]).expect("server"),
            ],
            Scenario::Descendants => vec![
                command(&format!("sh -c 'sleep {marker} & wait'")),
                command(&escape),
                ConfinedCommand::server(sb, level, "sh", &["-c".to_string(), escape.clone()])
                    .expect("server"),
            ],
        }
    }

    /// How many `sleep` processes run once everything started.
    fn sleepers(self) -> usize {
        match self {
            Scenario::Plain => 2,
            Scenario::Descendants => 5,
        }
    }
}

/// Starts the helper for `scenario` at each level, SIGKILLs it once all its confined
/// processes sleep, and asserts that every process holding the marker is gone.
fn everything_dies_with_the_helper(scenario: Scenario) {
    for (n, level) in levels().into_iter().enumerate() {
        // A number no other process on the machine sleeps for.
        let marker = format!("4242{}.{n}{}", std::process::id(), scenario.sleepers());
        let exe = std::env::current_exe().expect("exe");
        let mut helper = std::process::Command::new(exe)
            .args([
                "--exact",
                "sandbox::death_tests::death_helper",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                HELPER,
                format!("{}:{marker}:{}", level.bwrap.is_some(), scenario.name()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the helper");
        let mut lines = BufReader::new(helper.stdout.take().expect("stdout")).lines();
        let ready = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.contains("all started"));
        assert!(
            ready,
            "{}: the helper did not start them all",
            level.summary()
        );
        let confined = processes_with(&marker);
        assert!(
            confined.len() >= scenario.sleepers(),
            "{}: the confined processes run: {confined:?}",
            level.summary()
        );
        let watched: Vec<(i32, OwnedFd)> = confined
            .iter()
            .filter_map(|pid| pidfd(*pid).map(|fd| (*pid, fd)))
            .collect();
        helper.kill().expect("SIGKILL the helper");
        helper.wait().expect("reap the helper");
        // One deadline for them all: each gets what is left of it.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let survivors: Vec<i32> = watched
            .iter()
            .filter(|(_, fd)| {
                !exited(
                    fd,
                    deadline.saturating_duration_since(std::time::Instant::now()),
                )
            })
            .map(|(pid, _)| *pid)
            .collect();
        for pid in &survivors {
            // SAFETY: kill(2) on a process this test started.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        assert!(
            survivors.is_empty(),
            "{}: processes {survivors:?} outlived the process that started them",
            level.summary()
        );
    }
}

#[test]
fn confined_processes_die_with_mandate_even_when_it_is_killed() {
    everything_dies_with_the_helper(Scenario::Plain);
}

#[test]
fn what_confined_processes_started_dies_with_mandate_even_when_it_left_its_session() {
    everything_dies_with_the_helper(Scenario::Descendants);
}

/// Run by the tests above as its own process: starts the confined processes of a scenario,
/// says so once they all sleep, and waits to be killed.
#[test]
fn death_helper() {
    let Ok(what) = std::env::var(HELPER) else {
        return;
    };
    let mut parts = what.splitn(3, ':');
    let (bwrap, marker, scenario) = (
        parts.next().expect("LEVEL"),
        parts.next().expect("MARKER"),
        Scenario::from_name(parts.next().unwrap_or("plain")),
    );
    let level = levels()
        .into_iter()
        .find(|l| l.bwrap.is_some() == (bwrap == "true"))
        .expect("the level");
    let tmp = tempfile::tempdir().expect("tmp");
    let sb = sandbox(&tmp.path().canonicalize().expect("canonical"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let children = runtime.block_on(async {
        let mut started = Vec::new();
        for cmd in scenario.start(&sb, &level, marker) {
            let mut cmd = cmd;
            cmd.stdin(Io::Null).stdout(Io::Null).stderr(Io::Null);
            started.push(spawn(cmd).expect("spawn"));
        }
        started
    });
    // All sleep (under bubblewrap, in bubblewrap's children) before the helper says so:
    // what is tested is a confined process that runs, not one still being set up.
    let sleeping = format!("sleep\0{marker}\0");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while processes_with(&sleeping).len() < scenario.sleepers()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("all started");
    std::io::stdout().flush().expect("flush");
    // Killed here, with its runtime and its children's handles alive.
    loop {
        std::thread::park();
        let _ = &children;
    }
}

#[test]
fn a_process_outlives_the_thread_that_asked_for_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    for level in levels() {
        let tmp = tempfile::tempdir().expect("tmp");
        let sb = sandbox(&tmp.path().canonicalize().expect("canonical"));
        let handle = runtime.handle().clone();
        let asker = std::thread::spawn(move || {
            let _runtime = handle.enter();
            let cmd = ConfinedCommand::command(&sb, &level, "read line; echo \"got $line\"")
                .expect("command");
            let mut cmd = cmd;
            cmd.stdin(Io::Piped).stdout(Io::Piped);
            // SAFETY: gettid takes no argument.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) };
            (tid, spawn(cmd).expect("spawn"), level)
        });
        let (tid, mut child, level) = asker.join().expect("the thread");
        // The thread is gone from the kernel (its exit is when a parent-death signal would go).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let answer = runtime.block_on(async {
            use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(b"hello\n").await.expect("write");
            let mut line = String::new();
            let stdout = child.stdout.take().expect("stdout");
            tokio::io::BufReader::new(stdout)
                .read_line(&mut line)
                .await
                .expect("read");
            line
        });
        assert_eq!(answer, "got hello\n", "{}", level.summary());
        runtime.block_on(child.wait()).expect("wait");
    }
}

#[test]
fn a_confined_command_cannot_leave_its_session_or_group_and_git_still_runs() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for level in levels() {
        let tmp = tempfile::tempdir().expect("tmp");
        let sb = sandbox(&tmp.path().canonicalize().expect("canonical"));
        let git = std::env::var_os("PATH")
            .and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("git"))
                    .find(|g| g.is_file())
            })
            .expect("git");
        let repo = tmp
            .path()
            .canonicalize()
            .expect("canonical")
            .join("tmp/repo");
        let (git, repo) = (git.display(), repo.display());
        let line = format!(
            "setsid true && echo left-session; \
             perl -e 'setpgid(0,0) or exit 1' && echo left-group; \
             {git} init -q {repo} && {git} -C {repo} status --short && echo git-ran"
        );
        let cmd = ConfinedCommand::command(&sb, &level, &line).expect("command");
        let mut cmd = cmd;
        cmd.stdin(Io::Null).stdout(Io::Piped).stderr(Io::Null);
        let out = runtime.block_on(async {
            let child = spawn(cmd).expect("spawn");
            child.wait_with_output().await.expect("wait")
        });
        let out = String::from_utf8_lossy(&out.stdout);
        assert!(!out.contains("left-session"), "{}: {out}", level.summary());
        assert!(!out.contains("left-group"), "{}: {out}", level.summary());
        assert!(out.contains("git-ran"), "{}: {out}", level.summary());
    }
}

#[test]
fn the_watchdog_holds_nothing_of_mandate_but_its_pipe() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let Some(level) = levels().into_iter().next() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let sb = sandbox(&tmp.path().canonicalize().expect("canonical"));
    let cmd = ConfinedCommand::command(&sb, &level, "true").expect("command");
    runtime.block_on(async {
        let child = spawn(cmd).expect("spawn");
        child.wait_with_output().await.expect("wait");
    });
    let pid = super::reaper::pid().expect("a watchdog runs");
    let fds: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("its descriptors")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(fds.len(), 1, "the watchdog holds {fds:?}");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let session = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(3))
        .and_then(|s| s.parse::<i32>().ok());
    assert_eq!(session, Some(pid), "the watchdog leads its own session");
}

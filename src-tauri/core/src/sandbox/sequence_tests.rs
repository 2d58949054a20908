//! One command after another in the same Mandate process: nothing one command was given or
//! left behind reaches the next, and a command cannot reach another one still running. Each
//! command gets its own confinement today; these hold whatever is kept between commands for
//! speed (a namespace kept for the session must keep them too).

use std::time::{Duration, Instant};

use super::death_tests::processes_with;
use super::tests::{levels, run, sandbox, scratch};
use super::*;

#[test]
fn a_grant_given_to_one_command_is_gone_for_the_next() {
    for level in levels() {
        let s = scratch();
        let name = level.summary();
        let first = sandbox(&s, &["src/auth/**"], false);
        let (code, out) = run(&first, &level, "echo a > src/auth/a.rs");
        assert_eq!(
            code,
            Some(0),
            "{name}: the first command's own grant: {out}"
        );
        let second = sandbox(&s, &["docs/**"], false);
        let (_, out) = run(
            &second,
            &level,
            "echo b > src/auth/b.rs; echo a2 >> src/auth/a.rs; echo d > docs/d.md",
        );
        assert!(s.root.join("docs/d.md").exists(), "{name}: {out}");
        assert!(
            !s.root.join("src/auth/b.rs").exists(),
            "{name}: the second command created a file under the first one's grant"
        );
        assert_eq!(
            std::fs::read_to_string(s.root.join("src/auth/a.rs")).expect("a.rs"),
            "a\n",
            "{name}: the second command changed a file under the first one's grant"
        );
        // And back: the first grant again, as a new command.
        let (code, out) = run(&first, &level, "echo c > src/auth/c.rs");
        assert_eq!(code, Some(0), "{name}: {out}");
        let (_, out) = run(&second, &level, "echo e > src/auth/e.rs");
        assert!(!s.root.join("src/auth/e.rs").exists(), "{name}: {out}");
    }
}

#[test]
fn what_a_command_leaves_in_tmp_the_next_one_does_not_see() {
    for (n, level) in levels().into_iter().enumerate() {
        let s = scratch();
        let name = level.summary();
        let sb = sandbox(&s, &["src/auth/**"], false);
        let marker = format!("mandate-tmp-{}-{n}", std::process::id());
        let host = Path::new("/tmp").join(&marker);
        let _ = std::fs::remove_file(&host);
        // Refused (Landlock alone: `/tmp` is not granted) or written to a `/tmp` of its own
        // (bubblewrap): either way the next command must not find it.
        let (_, out) = run(
            &sb,
            &level,
            &format!("echo kept-by-the-first > /tmp/{marker}"),
        );
        let (_, seen) = run(&sb, &level, &format!("cat /tmp/{marker} 2>&1; true"));
        assert!(
            !seen.contains("kept-by-the-first"),
            "{name}: the next command read what the first left in /tmp ({out})"
        );
        // Removed before the verdict, so that a failing run leaves nothing behind.
        let leaked = host.exists();
        let _ = std::fs::remove_file(&host);
        assert!(!leaked, "{name}: a command wrote into the machine's /tmp");
    }
}

#[test]
fn a_command_cannot_signal_another_one_still_running() {
    for level in levels() {
        // Below Landlock ABI 6 without bubblewrap, a command of the same user can signal
        // another one (a gap Settings names); nothing to hold there.
        if level.bwrap.is_none() && level.landlock_abi.unwrap_or(0) < 6 {
            continue;
        }
        let s = scratch();
        let name = level.summary();
        let sb = sandbox(&s, &["src/auth/**"], false);
        // A number no other process of this test holds on its command line.
        let seconds = format!("29.{}", std::process::id());
        let line = format!("exec sleep {seconds}");
        std::thread::scope(|scope| {
            let running = scope.spawn(|| run(&sb, &level, &line));
            let deadline = Instant::now() + Duration::from_secs(10);
            let pid = loop {
                if let Some(pid) = processes_with(&seconds).into_iter().find(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c == "sleep\n")
                }) {
                    break pid;
                }
                assert!(
                    Instant::now() < deadline,
                    "{name}: the first command never started"
                );
                std::thread::sleep(Duration::from_millis(20));
            };
            let (_, out) = run(
                &sb,
                &level,
                &format!("kill -STOP {pid} 2>&1; kill -9 {pid} 2>&1; echo done"),
            );
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // SAFETY: kill with integer arguments, on the sleep this test started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            let _ = running.join();
            assert!(out.contains("done"), "{name}: {out}");
            let after_name = state.rsplit(')').next().unwrap_or_default().trim_start();
            assert!(
                after_name.starts_with('S') || after_name.starts_with('R'),
                "{name}: the running command was stopped or killed by the next one ({out}; {state})"
            );
        });
    }
}

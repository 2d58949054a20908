//! MCP servers' processes at each confinement level this machine has: they cannot leave
//! their process group, the whole group can be stopped, and they write nothing in the
//! workspace, only their temporary and cache directories.

use std::io::{BufRead as _, BufReader};

use super::tests::levels;
use super::*;

struct Place {
    _tmp: tempfile::TempDir,
    sandbox: CommandSandbox,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = tmp.path().canonicalize().expect("canonical");
    let root = base.join("ws");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    let temp = base.join("tmp");
    std::fs::create_dir_all(&temp).expect("mkdir");
    let env = vec![
        (
            "PATH".to_string(),
            "/usr/local/bin:/usr/bin:/bin".to_string(),
        ),
        ("TMPDIR".to_string(), temp.display().to_string()),
    ];
    let sandbox = CommandSandbox::new(
        &root,
        &root,
        Vec::new(),
        Vec::new(),
        &temp,
        true,
        false,
        Vec::new(),
        env,
    )
    .expect("sandbox")
    .with_cache_dir(&base.join("cache"))
    .expect("cache");
    Place { _tmp: tmp, sandbox }
}

fn server(p: &Place, level: &Confinement, script: &str) -> super::vspawn::BlockingChild {
    let mut launch = ConfinedCommand::server(
        &p.sandbox,
        level,
        "/bin/sh",
        &["-c".to_string(), script.to_string()],
    )
    .expect("command");
    launch.stdin(Io::Null).stdout(Io::Piped).stderr(Io::Null);
    launch.start_blocking().expect("spawn")
}

fn states_of_group(group: i32) -> Vec<String> {
    let mut states = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let mut f = stat
            .rsplit_once(')')
            .map_or("", |(_, r)| r)
            .split_whitespace();
        let state = f.next().unwrap_or("").to_string();
        if f.nth(1).and_then(|g| g.parse::<i32>().ok()) == Some(group) {
            states.push(state);
        }
    }
    states
}

#[test]
fn a_server_cannot_leave_its_group_and_the_whole_group_stops() {
    for level in levels() {
        let p = place();
        let mut child = server(
            &p,
            &level,
            "setsid sleep 30 2>/dev/null; echo setsid=$?; \
             (while :; do echo x >> \"$TMPDIR/bg\"; sleep 0.01; done) & echo started; sleep 30",
        );
        let group = i32::try_from(child.id()).expect("pid");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        assert_ne!(first, "setsid=0", "{}: setsid ran", level.summary());
        assert!(first.starts_with("setsid="), "{first}");
        assert_eq!(
            lines.next().and_then(Result::ok).as_deref(),
            Some("started")
        );
        freeze_group(group).unwrap_or_else(|e| panic!("{}: {e}", level.summary()));
        let states = states_of_group(group);
        assert!(
            states.len() >= 2 && states.iter().all(|s| s == "T" || s == "D"),
            "{}: {states:?}",
            level.summary()
        );
        thaw_group(group);
        kill_group(Some(group));
        let _ = child.wait();
    }
}

#[test]
fn a_server_writes_its_temporary_and_cache_directories_and_nothing_in_the_workspace() {
    for level in levels() {
        let p = place();
        let cache = p.sandbox.cache_dir.clone().expect("cache");
        let script = format!(
            "echo x > docs/new.md 2>/dev/null; echo ws=$?; echo x > \"$TMPDIR/t\"; echo tmp=$?; echo x > '{}/c'; echo cache=$?",
            cache.display()
        );
        let out = server(&p, &level, &script)
            .wait_with_output()
            .expect("output");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("ws=1") || text.contains("ws=2"),
            "{}: {text}",
            level.summary()
        );
        assert!(
            text.contains("tmp=0") && text.contains("cache=0"),
            "{}: {text}",
            level.summary()
        );
        assert!(!p.sandbox.workspace.join("docs/new.md").exists());
        assert!(cache.join("c").is_file());
    }
}

#[test]
fn a_cache_directory_never_overlaps_the_workspace_or_a_hidden_one() {
    let p = place();
    let ws = p.sandbox.workspace.clone();
    for bad in [
        ws.join("cache"),
        ws.join("docs/mcp/cache"),
        ws.parent().expect("parent").to_path_buf(),
    ] {
        assert!(
            p.sandbox.clone().with_cache_dir(&bad).is_err(),
            "{}",
            bad.display()
        );
    }
    // Refused before anything is made: no trace of it in the workspace.
    assert!(!ws.join("cache").exists() && !ws.join("docs/mcp").exists());
    // A symlink elsewhere that leads into the workspace is the workspace.
    let link = ws.parent().expect("parent").join("link-into-ws");
    std::fs::create_dir_all(ws.join(".git")).expect("mkdir");
    std::os::unix::fs::symlink(ws.join(".git"), &link).expect("symlink");
    assert!(p.sandbox.clone().with_cache_dir(&link).is_err());
    let mut hidden = p.sandbox.clone();
    let data = ws.parent().expect("parent").join("data");
    hidden.hidden.push(data.clone());
    assert!(hidden.with_cache_dir(&data.join("cache")).is_err());
    assert!(!data.exists());
}

#[test]
fn a_server_cannot_use_io_uring_whose_workers_would_outlive_a_freeze() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    for level in levels() {
        let p = place();
        // io_uring_setup(8, NULL): EFAULT (14) when allowed, ENOSYS (38) when refused.
        let out = server(
            &p,
            &level,
            "perl -e 'syscall(425, 8, 0); print \"errno=\", $!+0, \"\\n\"'",
        )
        .wait_with_output()
        .expect("output");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("errno=38") || text.contains("errno=1\n"),
            "{}: {text}",
            level.summary()
        );
    }
}

#[test]
fn a_server_cannot_create_a_unix_socket_but_keeps_socketpair() {
    for level in levels() {
        let p = place();
        let out = server(
            &p,
            &level,
            "perl -MSocket -e '\
             print socket(my $s, AF_UNIX, SOCK_STREAM, 0) ? \"unix=ok\\n\" : \"unix=refused\\n\"; \
             print socket(my $d, AF_UNIX, SOCK_DGRAM, 0) ? \"dgram=ok\\n\" : \"dgram=refused\\n\"; \
             print socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, 0) ? \"pair=ok\\n\" : \"pair=refused\\n\"'",
        )
        .wait_with_output()
        .expect("output");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("unix=refused")
                && text.contains("dgram=refused")
                && text.contains("pair=ok"),
            "{}: {text}",
            level.summary()
        );
    }
}

/// The states (`R`, `S`, `T`, …) of every thread of every process of `group`.
pub(crate) fn thread_states_of_group(group: i32) -> Vec<String> {
    let mut states = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let pgrp = stat
            .rsplit_once(')')
            .map_or("", |(_, r)| r)
            .split_whitespace()
            .nth(2)
            .and_then(|g| g.parse::<i32>().ok());
        if pgrp != Some(group) {
            continue;
        }
        for task in std::fs::read_dir(entry.path().join("task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) {
                let state = stat
                    .rsplit_once(')')
                    .map_or("", |(_, r)| r)
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_string();
                states.push(state);
            }
        }
    }
    states
}

#[test]
fn a_freeze_reports_success_only_when_every_thread_stopped() {
    for level in levels() {
        let p = place();
        let mut child = server(
            &p,
            &level,
            "exec /usr/bin/python3 -c 'import threading, time\n\
             def spin():\n    while True: pass\n\
             for _ in range(4): threading.Thread(target=spin, daemon=True).start()\n\
             print(\"started\", flush=True)\ntime.sleep(30)'",
        );
        let group = i32::try_from(child.id()).expect("pid");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        assert_eq!(
            lines.next().and_then(Result::ok).as_deref(),
            Some("started"),
            "{}",
            level.summary()
        );
        freeze_group(group).unwrap_or_else(|e| panic!("{}: {e}", level.summary()));
        let states = thread_states_of_group(group);
        assert!(
            states.len() >= 5 && states.iter().all(|s| s == "T" || s == "t"),
            "{}: {states:?}",
            level.summary()
        );
        thaw_group(group);
        kill_group(Some(group));
        let _ = child.wait();
    }
}

#[test]
fn a_group_continued_and_stopped_again_behind_mandates_back_is_found() {
    let mut all = levels();
    all.push(Confinement::from_parts(None, None));
    for level in all {
        let p = place();
        let mut child = server(
            &p,
            &level,
            "(while :; do echo x >> \"$TMPDIR/bg\"; sleep 0.01; done) & echo started; sleep 30",
        );
        let group = i32::try_from(child.id()).expect("pid");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        assert_eq!(
            lines.next().and_then(Result::ok).as_deref(),
            Some("started")
        );
        let mark = freeze_and_mark(group).unwrap_or_else(|e| panic!("{}: {e}", level.summary()));
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(ran_since(group, &mark), None, "{}", level.summary());
        // Any process allowed to signal it continues it; it stops again to look untouched.
        // SAFETY: signals to the test's own child group.
        unsafe {
            libc::killpg(group, libc::SIGCONT);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        freeze_group(group).unwrap_or_else(|e| panic!("{}: {e}", level.summary()));
        let found = ran_since(group, &mark);
        assert!(
            found.as_deref().is_some_and(|why| why.contains("ran")),
            "{}: {found:?}",
            level.summary()
        );
        kill_group(Some(group));
        let _ = child.wait();
    }
}

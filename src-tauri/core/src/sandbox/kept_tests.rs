//! The namespace kept for the session (`kept.rs`), as a command would try to use it: to reach
//! the machine's `/tmp` and `/run` the session keeps, to leave something for the next command
//! where the view is shared (`/dev`, `/dev/shm`, `/dev/pts`), to keep the root it is in the
//! session, or to hold a pipe of Mandate's open. Each test runs under bubblewrap both ways.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use super::tests::{levels, run, sandbox, scratch};
use super::*;

fn bubblewrap_levels() -> Vec<Confinement> {
    levels()
        .into_iter()
        .filter(|l| l.level == ConfinementLevel::LandlockAndBwrap)
        .collect()
}

/// The level whose commands run in the namespace kept for the session, where bubblewrap works.
fn kept_level() -> Option<Confinement> {
    bubblewrap_levels()
        .into_iter()
        .find(|l| !l.bwrap_per_command)
}

#[test]
fn a_command_runs_in_the_kept_namespace_as_the_person_with_nothing_more() {
    let Some(kept) = kept_level() else {
        return;
    };
    let Some(bwrap) = &kept.bwrap else { return };
    assert!(
        super::kept::session(bwrap).is_some(),
        "bubblewrap works here, so the session's namespace must be made"
    );
    let s = scratch();
    let sb = sandbox(&s, &["src/auth/**"], false);
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let (code, out) = run(
        &sb,
        &kept,
        "echo $$; tr '\\0' ' ' < /proc/1/cmdline; echo; id -u; id -g; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status",
    );
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    // The command is the second process of its PID namespace, after Mandate's, not
    // bubblewrap's.
    assert_eq!(lines[0], "2", "{out}");
    assert!(!lines[1].contains("bwrap"), "pid 1: {out}");
    assert_eq!(lines[2], uid.to_string(), "{out}");
    assert_eq!(lines[3], gid.to_string(), "{out}");
    for cap in ["CapEff", "CapPrm", "CapBnd"] {
        let line = lines.iter().find(|l| l.starts_with(cap)).expect(cap);
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    assert!(out.contains("Seccomp:\t2"), "{out}");
}

#[test]
fn the_machine_s_tmp_and_run_kept_by_the_session_cannot_be_reached() {
    for level in bubblewrap_levels() {
        let s = scratch();
        let sb = sandbox(&s, &["src/auth/**"], false);
        let marker = format!("/tmp/mandate-kept-{}", std::process::id());
        std::fs::write(&marker, "kept-by-the-machine").expect("marker");
        let (_, out) = run(
            &sb,
            &level,
            &format!(
                "ls -a /run; cat {marker} /run/.mandate-host/tmp/{name} 2>&1; \
                 ls /run/.mandate-host 2>&1; ls /run/user 2>&1; \
                 umount /run 2>&1; umount -l /run 2>&1; ls /run/.mandate-host 2>&1",
                name = marker.trim_start_matches("/tmp/")
            ),
        );
        let _ = std::fs::remove_file(&marker);
        assert!(
            !out.contains("kept-by-the-machine"),
            "{}: {out}",
            level.summary()
        );
        assert!(
            !out.contains("mandate-host\n"),
            "{}: {out}",
            level.summary()
        );
        assert!(!out.contains("\ntmp\n"), "{}: {out}", level.summary());
    }
}

#[test]
fn what_a_command_leaves_in_dev_the_next_one_does_not_see() {
    for level in bubblewrap_levels() {
        let s = scratch();
        let sb = sandbox(&s, &["src/auth/**"], false);
        let name = level.summary();
        let (_, out) = run(
            &sb,
            &level,
            "echo left > /dev/shm/left; echo left > /dev/left; mkdir /dev/dir; \
             python3 -c 'import os, pty; m, s = pty.openpty(); print(os.ttyname(s))' 2>&1; \
             ls /dev/pts",
        );
        let (code, after) = run(
            &sb,
            &level,
            "ls /dev/shm /dev/pts; cat /dev/shm/left /dev/left 2>&1; ls -d /dev/dir 2>&1; \
             echo ok > /dev/null && head -c 4 /dev/zero | wc -c",
        );
        assert_eq!(code, Some(0), "{name}: {after}");
        assert!(!after.contains("left\n"), "{name}: {out} / {after}");
        assert!(
            !after.lines().any(|l| l.trim() == "0" || l.trim() == "1"),
            "{name}: a pty of the first command is seen by the next: {out} / {after}"
        );
        assert!(
            after.ends_with("4\n"),
            "{name}: /dev/null and /dev/zero: {after}"
        );
    }
}

#[test]
fn a_command_holds_no_pipe_of_another_one() {
    // `cat` ends when its stdin is closed; a second command started while it runs must not
    // hold that stdin's writing end (the process between Mandate and each command lives as
    // long as the command, with a copy of Mandate's descriptors until it closes them).
    for level in bubblewrap_levels() {
        let s = scratch();
        let sb = sandbox(&s, &["src/auth/**"], false);
        let mut first = ConfinedCommand::command(&sb, &level, "cat").expect("command");
        first.stdin(Io::Piped).stdout(Io::Piped);
        let started = super::vspawn::start(&first).expect("start cat");
        let mut second = ConfinedCommand::command(&sb, &level, "sleep 5").expect("command");
        second.stdin(Io::Null);
        let sleeper = super::vspawn::start(&second).expect("start sleep");
        let mut stdin = std::fs::File::from(started.stdin.expect("stdin"));
        stdin.write_all(b"through\n").expect("write");
        drop(stdin);
        let t = Instant::now();
        let mut out = String::new();
        std::fs::File::from(started.stdout.expect("stdout"))
            .read_to_string(&mut out)
            .expect("read");
        let status = super::vspawn::wait_blocking(started.pid).expect("wait");
        assert!(
            t.elapsed() < Duration::from_secs(4),
            "{}: `cat` saw the end of its input only when the other command ended",
            level.summary()
        );
        assert_eq!(out, "through\n");
        assert!(status.success(), "{status:?}");
        // SAFETY: kills this test's own child's group.
        unsafe { libc::kill(-sleeper.pid, libc::SIGKILL) };
        let _ = super::vspawn::wait_blocking(sleeper.pid);
    }
}

#[test]
fn the_command_s_status_is_its_own() {
    for level in bubblewrap_levels() {
        let s = scratch();
        let sb = sandbox(&s, &["src/auth/**"], false);
        assert_eq!(run(&sb, &level, "exit 3").0, Some(3), "{}", level.summary());
        let (code, _) = run(&sb, &level, "kill -9 $$");
        assert_eq!(code, Some(137), "{}", level.summary());
        let (code, out) = run(&sb, &level, "/nonexistent/program");
        assert_eq!(code, Some(127), "{}: {out}", level.summary());
    }
}

#[test]
fn the_command_cannot_read_the_memory_or_environment_of_the_process_before_it() {
    // The first process of the command's PID namespace shares Mandate's memory: its
    // environment and memory are Mandate's. Each read must be refused. (Under bubblewrap per
    // command the first process is bubblewrap's, in the command's own Landlock domain.)
    for level in bubblewrap_levels()
        .into_iter()
        .filter(|l| !l.bwrap_per_command)
    {
        let s = scratch();
        let sb = sandbox(&s, &["src/auth/**"], false);
        let (_, out) = run(
            &sb,
            &level,
            "for f in environ maps mem stack auxv; do \
               if head -c 64 /proc/1/$f > /dev/null 2>&1; then echo \"read $f\"; fi; done; \
             if readlink /proc/1/fd/0 > /dev/null 2>&1; then echo 'read fd'; fi; \
             if echo 1000 > /proc/1/oom_score_adj; then echo 'read oom'; fi 2>/dev/null; \
             if ls /proc/1/root/ > /dev/null 2>&1; then echo 'read root'; fi",
        );
        assert!(!out.contains("read "), "{}: {out}", level.summary());
    }
    let ours = std::fs::read_to_string("/proc/self/oom_score_adj").expect("oom_score_adj");
    assert_eq!(ours.trim(), "0", "Mandate's OOM score was changed");
}

#[test]
fn a_symlink_planted_on_a_granted_path_after_the_plan_moves_no_mount() {
    // Another command with a wider grant could swap a directory the next command is granted
    // for a symbolic link to a place that command should not write, between the plan and the
    // start. The mount is refused and the command does not run.
    let Some(kept) = kept_level() else {
        return;
    };
    let s = scratch();
    let sb = sandbox(&s, &["src/auth/**"], false);
    let mut cmd =
        ConfinedCommand::command(&sb, &kept, "echo planted > src/auth/written").expect("plan");
    cmd.stdin(Io::Null);
    let auth = s.root.join("src/auth");
    std::fs::rename(&auth, s.root.join("src/auth-moved")).expect("move");
    std::os::unix::fs::symlink(&s.outside, &auth).expect("symlink");
    let started = super::vspawn::start(&cmd);
    let error = started.err().expect("the command must not start");
    assert!(
        error.to_string().contains("src/auth")
            && error.to_string().contains("in the command's view"),
        "{error}"
    );
    assert!(!s.outside.join("written").exists());
    assert!(!s.root.join("src/auth-moved/written").exists());
}

#[test]
fn nothing_is_writable_in_the_view_but_what_the_command_was_given() {
    // Every mount the command can write: its fresh /tmp, /run, /dev/shm, /dev/pts and /proc,
    // its temporary directory and its grants. Anything else writable (a mount that arrived
    // in the session's view with the machine's flags) would be a hole.
    for level in bubblewrap_levels() {
        let s = scratch();
        let sb = sandbox(&s, &["src/auth/**"], false);
        let (code, out) = run(&sb, &level, "cat /proc/self/mountinfo");
        assert_eq!(code, Some(0), "{out}");
        // Device nodes are written through, whatever their mount says.
        let mut allowed: Vec<String> = ["/tmp", "/run", "/dev/shm", "/dev/pts", "/proc"]
            .map(String::from)
            .to_vec();
        allowed.extend(super::landlock_rules::DEVICES.map(|d| d.to_string_lossy().into_owned()));
        allowed.extend(sb.writable.iter().map(|g| g.path.display().to_string()));
        allowed.push(sb.temp_dir.display().to_string());
        if level.bwrap_per_command {
            // bubblewrap's own /dev, per command.
            allowed.push("/dev".into());
        }
        for line in out.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let (point, options) = (fields[4], fields[5]);
            if options.split(',').any(|o| o == "rw") {
                assert!(
                    allowed.iter().any(|a| a == point),
                    "{}: `{point}` is writable: {line}",
                    level.summary()
                );
            }
        }
    }
}

#[test]
fn the_kernel_keyrings_are_refused() {
    // Not confined by any namespace a command gets: a command could read what another program
    // keeps in the user's keyring, or leave a key for the next command.
    for level in levels() {
        let s = scratch();
        let sb = sandbox(&s, &["src/auth/**"], false);
        let (code, out) = run(
            &sb,
            &level,
            "python3 -c 'import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n\
             r = libc.syscall(248, b\"user\", b\"mandate-test\", b\"x\", 1, -4)\n\
             print(r, os.strerror(ctypes.get_errno()))\n\
             r = libc.syscall(250, 0, -4, 0)\nprint(r, os.strerror(ctypes.get_errno()))'",
        );
        assert_eq!(code, Some(0), "{}: {out}", level.summary());
        assert_eq!(
            out.lines()
                .filter(|l| l.starts_with("-1 Operation not permitted"))
                .count(),
            2,
            "{}: {out}",
            level.summary()
        );
    }
}

#[test]
fn a_filesystem_mounted_after_the_session_began_is_read_only_in_the_command() {
    // The session's view follows the machine's mounts; one made later (a USB drive, an NFS
    // home mounted again) arrives there with the machine's flags, writable.
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return; // mounting on the machine needs root
    }
    let Some(level) = kept_level() else {
        return;
    };
    let sh = |line: &str| {
        let status = std::process::Command::new("sh")
            .args(["-c", line])
            .status()
            .expect("sh");
        assert!(status.success(), "{line}");
    };
    let base = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let shared = base.path().join("shared");
    let sub = shared.join("sub");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let (shared_s, sub_s) = (shared.display().to_string(), sub.display().to_string());
    // Mounts under `shared` reach every copy of it, the session's view among them.
    sh(&format!(
        "mount --bind {shared_s} {shared_s} && mount --make-shared {shared_s}"
    ));
    let session =
        super::kept::Session::start(level.bwrap.as_ref().expect("bwrap")).expect("session");
    let session: &'static super::kept::Session = Box::leak(Box::new(session));
    sh(&format!("mount -t tmpfs mandate-test {sub_s}"));
    let s = scratch();
    let sb = sandbox(&s, &["src/auth/**"], false);
    let mut cmd = ConfinedCommand::command(
        &sb,
        &level,
        &format!("grep -c ' {sub_s} ' /proc/self/mountinfo; touch {sub_s}/written; touch {shared_s}/written"),
    )
    .expect("command");
    cmd.kept = Some(session.plan(&sb).expect("plan"));
    let out = cmd.output().expect("run");
    let written = (
        sub.join("written").exists(),
        shared.join("written").exists(),
    );
    sh(&format!("umount {sub_s}; umount {shared_s}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("1\n"),
        "the new mount did not reach the session's view, so this test shows nothing: {text}"
    );
    assert_eq!(written, (false, false), "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
}

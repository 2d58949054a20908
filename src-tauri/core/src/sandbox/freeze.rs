//! Stopping a whole process group and making sure it stopped: how an MCP server that may write
//! in the workspace is kept from writing between calls. Its processes cannot leave the group
//! (`setsid` and `setpgid` are refused by its system-call filter), and a stopped process runs
//! no code, so only the process that stops it can start it again (`SIGCONT`): Landlock scopes
//! signals to its own domain, so the server cannot ask anyone outside for that.

use std::time::{Duration, Instant};

/// How long the processes of a group get to reach the stopped state.
const STOP_LIMIT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum FreezeError {
    #[error("process group {group} could not be stopped: processes {pids:?} kept running")]
    NotStopped { group: i32, pids: Vec<i32> },
}

/// The processes of group `group` with a thread that is neither stopped nor finished. Every
/// thread is read (`/proc/<pid>/task/*/stat`): a process's main thread can show stopped while
/// another of its threads has not taken the stop yet and still writes.
fn running_members(group: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut running = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if state_and_group(&stat).1 != Some(group) {
            continue;
        }
        if threads_running(pid) {
            running.push(pid);
        }
    }
    running
}

/// "pid (comm) state ppid pgrp …": the command may hold spaces and parentheses.
fn state_and_group(stat: &str) -> (&str, Option<i32>) {
    let mut fields = stat
        .rsplit_once(')')
        .map_or("", |(_, r)| r)
        .split_whitespace();
    let state = fields.next().unwrap_or("");
    let pgrp = fields.nth(1).and_then(|f| f.parse::<i32>().ok());
    (state, pgrp)
}

/// Whether any thread of `pid` still runs. A process gone meanwhile runs nothing; a task
/// directory that cannot be read counts as running (the stop is not confirmed).
fn threads_running(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return std::path::Path::new(&format!("/proc/{pid}")).exists();
    };
    tasks.flatten().any(|task| {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            return false;
        };
        let state = state_and_group(&stat).0;
        !matches!(state, "T" | "t" | "Z" | "X" | "x") && !in_vfork(&task.path(), state)
    })
}

/// A parent waiting in `vfork` for its child to exec is blocked in the kernel (state `D`)
/// until then, and cannot take the stop before; its child is in the group and stopped, so
/// it runs no code of its own either.
fn in_vfork(task: &std::path::Path, state: &str) -> bool {
    state == "D"
        && std::fs::read_to_string(task.join("wchan"))
            .is_ok_and(|w| w.contains("vfork") || w == "kernel_clone" || w == "do_fork")
}

/// Stops every process of `group` and waits (bounded) until the kernel shows each one
/// stopped. A process forked while the signal was sent gets it too (the kernel restarts a
/// fork that a group signal interrupts); the signal is sent again while any still runs.
pub fn freeze_group(group: i32) -> Result<(), FreezeError> {
    if group <= 1 {
        return Ok(());
    }
    let started = Instant::now();
    loop {
        // SAFETY: killpg only sends a signal.
        unsafe {
            libc::killpg(group, libc::SIGSTOP);
        }
        let running = running_members(group);
        if running.is_empty() {
            return Ok(());
        }
        if started.elapsed() > STOP_LIMIT {
            return Err(FreezeError::NotStopped {
                group,
                pids: running,
            });
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Lets every process of `group` run again.
pub fn thaw_group(group: i32) {
    if group > 1 {
        // SAFETY: killpg only sends a signal.
        unsafe {
            libc::killpg(group, libc::SIGCONT);
        }
    }
}

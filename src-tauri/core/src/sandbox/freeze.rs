//! Stopping a whole process group and making sure it stopped: how an MCP server that may write
//! in the workspace (or runs unconfined) is kept from writing between calls. Its processes
//! cannot leave the group (`setsid` and `setpgid` are refused by its system-call filter), and
//! a stopped process runs no code: only a `SIGCONT` from another process starts it again.
//! Confined, nothing else can send one: bubblewrap's PID namespace hides the server, or
//! Landlock (ABI 6+) scopes signals to its domain. Without either (an unconfined server) any
//! process of the person's may; [`ran_since`] then finds at the next call that it ran, from
//! the context switches each of its threads made, which a stopped thread never makes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long the processes of a group get to reach the stopped state.
const STOP_LIMIT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum FreezeError {
    #[error("process group {group} could not be stopped: processes {pids:?} kept running")]
    NotStopped { group: i32, pids: Vec<i32> },
}

/// The processes of group `group`.
fn members(group: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| state_and_group(&stat).1 == Some(group))
        })
        .collect()
}

/// The processes of group `group` with a thread that is neither stopped nor finished. Every
/// thread is read (`/proc/<pid>/task/*/stat`): a process's main thread can show stopped while
/// another of its threads has not taken the stop yet and still writes.
fn running_members(group: i32) -> Vec<i32> {
    members(group)
        .into_iter()
        .filter(|pid| threads_running(*pid))
        .collect()
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

/// What the threads of a stopped group have done: each thread's count of context switches
/// (`/proc/<pid>/task/<tid>/status`). A stopped thread is not scheduled, so its count stays
/// as it is until something continues it; one that ran since — even if it was stopped again —
/// switched at least once more, and a process that appeared or went is another key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMark(BTreeMap<(i32, i32), u64>);

fn mark_now(group: i32) -> GroupMark {
    let mut marks = BTreeMap::new();
    for pid in members(group) {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
        for task in tasks.into_iter().flatten().flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            let switches = status
                .lines()
                .filter_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.ends_with("ctxt_switches")
                        .then(|| value.trim().parse::<u64>().ok())?
                })
                .sum();
            marks.insert((pid, tid), switches);
        }
    }
    GroupMark(marks)
}

/// [`freeze_group`], then the group's [`GroupMark`] once it holds still: a thread that has
/// just taken the stop may count its last switch a moment after it shows stopped.
pub fn freeze_and_mark(group: i32) -> Result<GroupMark, FreezeError> {
    freeze_group(group)?;
    let mut mark = mark_now(group);
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(2));
        let again = mark_now(group);
        if again == mark {
            break;
        }
        mark = again;
    }
    Ok(mark)
}

/// Why the group stopped with `mark` cannot be taken as having stayed stopped since, if it
/// cannot: some of its processes run now, or its threads ran (and stopped again) meanwhile.
pub fn ran_since(group: i32, mark: &GroupMark) -> Option<String> {
    let running = running_members(group);
    if !running.is_empty() {
        return Some(format!("its processes {running:?} are running"));
    }
    (mark_now(group) != *mark)
        .then(|| "its processes ran, and stopped again, while it was left stopped".to_string())
}

/// Whether no live process is left in `group` (zombies are gone already, waiting only to be
/// reaped).
pub fn group_gone(group: i32) -> bool {
    members(group).into_iter().all(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            matches!(state_and_group(&stat).0, "Z" | "X" | "x")
        })
    })
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

//! Processes a command left running in the background (a dev server, a watcher), as the window
//! lists them: what runs, how it stands, and the end of what it printed.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Who or what ended a background process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ProcessStopper {
    /// The person, with the process list's Stop.
    Person,
    /// The model, with `stop_process`.
    Model,
    /// Its task completed, failed, was stopped or deleted.
    Task,
    /// Mandate closed the workspace or exited.
    Mandate,
    /// It ran for the time the model gave it.
    Timeout,
    /// It could not be held still to read what it changed: killed rather than left unwatched.
    Governance,
}

/// Where a background process stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ProcessStatus {
    Running,
    /// Asked to stop (SIGTERM); killed if it has not ended after a grace period.
    Stopping {
        by: ProcessStopper,
    },
    /// It ended by itself; `code` is None when a signal ended it.
    Exited {
        code: Option<i32>,
    },
    /// Ended by Mandate (SIGTERM, then SIGKILL for all it started).
    Stopped {
        by: ProcessStopper,
    },
}

/// One background process, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ProcessView {
    /// Short and stable within the workspace (`p1`, `p2`, …): what the model names.
    pub process_id: String,
    pub task_id: String,
    /// The command line, secrets redacted.
    pub command: String,
    /// Its working directory, relative to the workspace.
    pub cwd: String,
    pub started_at: String,
    pub status: ProcessStatus,
    /// The end of its output (stdout and stderr interleaved, secrets redacted).
    pub output_tail: String,
    /// Everything it printed so far, in bytes (the tail is the last part of it).
    pub output_bytes: u64,
}

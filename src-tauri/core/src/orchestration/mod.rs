//! The files under `.orchestration/` in the user's workspace: intents, the trace ledger and the
//! files derived from it, shared lessons, and the command policy; and the ledger's life in git
//! (merges, anchors, reports) and in other tools (Agent Trace validation and export).

use std::path::{Path, PathBuf};

/// The directory of Mandate's files in a workspace. Every path under it is built from here.
pub const DIR: &str = ".orchestration";

/// `.orchestration/NAME` as a workspace-relative literal.
#[macro_export]
macro_rules! orchestration_file {
    ($name:literal) => {
        concat!(".orchestration/", $name)
    };
}

/// The `.orchestration` directory of the workspace at `root`.
pub fn dir(root: &Path) -> PathBuf {
    root.join(DIR)
}

pub mod anchor;
pub mod chain;
pub mod export;
pub mod git;
pub mod heads;
pub mod init;
pub mod integrity;
pub mod intent_map;
pub mod intents;
mod intents_plain;
pub mod ledger;
mod ledger_write;
pub mod lessons;
pub mod merge;
pub mod record;
pub mod report;
pub(crate) mod sha_lanes;
#[cfg(test)]
mod test_rng;
pub mod trace;
pub mod validate;
mod verify;
pub mod yaml;

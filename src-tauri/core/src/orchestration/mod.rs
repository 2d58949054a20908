//! The files under `.orchestration/` in the user's workspace: intents, the trace ledger and the
//! files derived from it, shared lessons, and the command policy; and the ledger's life in git
//! (merges, anchors, reports) and in other tools (Agent Trace validation and export).

pub mod anchor;
pub mod chain;
pub mod export;
pub mod git;
pub mod heads;
pub mod init;
pub mod integrity;
pub mod intent_map;
pub mod intents;
pub mod ledger;
mod ledger_write;
pub mod lessons;
pub mod merge;
pub mod report;
pub mod trace;
pub mod validate;
mod verify;
pub mod yaml;

//! The files under `.orchestration/` in the user's workspace: intents, the trace ledger and the
//! files derived from it, shared lessons, and the command policy.

pub mod git;
pub mod intent_map;
pub mod intents;
mod intents_plain;
pub mod ledger;
pub mod lessons;
pub mod trace;
mod verify;
pub mod yaml;

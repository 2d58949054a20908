//! Taking back what the agent changed: by tool call, turn, task, or intent since a time.
//!
//! Every governed write and every file a command changed left its before- and after-images in
//! the checkpoint store and their hashes in its ledger record. An undo is planned first (a
//! preview: per file, what it will hold, or why it is left alone), then applied through the
//! journal, one file at a time, as new ledger records that name the records they take back
//! (`metadata.dev.mandate.revert_of`). The ledger is only ever appended to.
//!
//! It never overwrites a person's edit: a file that changed after the agent's change is merged
//! three ways where the edits do not touch, and otherwise left alone with the reason.

mod apply;
mod merge;
mod plan;
mod scope;

pub use apply::{
    apply, follow_intent_status, Applied, FileChoice, FileResult, StatusError, Undoer,
};
pub use merge::{merge3, Overlap};
pub(crate) use plan::read_changes;
pub use plan::{plan, prune, FileAction, FilePlan, PlanError, Selection, UndoPlan};
pub use scope::{Grain, GrainError, Resolved};

#[cfg(test)]
mod tests;

//! The trace ledger as the window reads it: intent trace, blame, verify, diffs.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{Approver, Contributor, DiffHunk, MutationClass};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LineRange {
    pub start_line: u32,
    pub end_line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TraceChange {
    pub record_id: String,
    pub timestamp: String,
    pub path: String,
    pub ranges: Vec<LineRange>,
    pub model: String,
    pub contributor: Contributor,
    pub tool: String,
    pub task_id: String,
    pub mutation_class: MutationClass,
    /// Who let it through (`policy` when no approval was needed).
    pub approved_by: Approver,
    /// The approval in words: who, when, hunks left out, edited.
    pub approval: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct FileBlame {
    pub path: String,
    pub lines: Vec<BlameLine>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct BlameLine {
    pub line: u32,
    pub text: String,
    /// None when no recorded change covers this line now.
    pub origin: Option<LineOrigin>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LineOrigin {
    pub intent_id: String,
    pub record_id: String,
    pub task_id: String,
    pub model: String,
    pub contributor: Contributor,
    pub approved_by: Approver,
    /// The approval in words: who, when, hunks left out, edited.
    pub approval: String,
    pub timestamp: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The range still hashes to what was recorded, where it was recorded.
    Intact,
    /// The same text is elsewhere in the file.
    Moved,
    /// The text is gone: someone edited it after the record.
    Changed,
    /// The file no longer exists.
    Missing,
    /// The hash chain does not hold: a record was edited, removed or reordered.
    Tampered,
    /// A line of the ledger is not a valid record.
    Malformed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct VerifyFinding {
    pub kind: FindingKind,
    /// 1-based line of the ledger.
    pub ledger_line: u32,
    pub record_id: Option<String>,
    pub path: Option<String>,
    pub range: Option<LineRange>,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct VerifyReport {
    pub records: u32,
    pub ranges: u32,
    pub intact: u32,
    pub moved: u32,
    /// Replaced later by another recorded change to the same file.
    pub superseded: u32,
    pub changed: u32,
    pub missing: u32,
    pub tampered: u32,
    pub malformed: u32,
    /// Every finding that is not `intact`.
    pub findings: Vec<VerifyFinding>,
    /// True when the chain holds and no record is malformed (edits by people are not tampering).
    pub chain_ok: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ChangeDiffView {
    pub record_id: String,
    pub path: String,
    pub hunks: Vec<DiffHunk>,
    /// False when the text before the change was not kept.
    pub available: bool,
}

/// The command policy in use and its verdict on one command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CommandCheck {
    /// `.orchestration/command_policy.yaml`, or `built-in` when the workspace has none.
    pub source: String,
    /// Why the workspace policy does not load (commands are then refused).
    pub error: Option<String>,
    /// None when no command was given or the policy does not load.
    pub destructive: Option<bool>,
    pub reasons: Vec<String>,
}

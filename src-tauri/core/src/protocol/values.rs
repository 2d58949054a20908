//! The small domain values the ledger records and the window shows: mutation class, contributor,
//! approver, diff line tag, approval outcome.
//!
//! The ledger's values are spelled as they always were (`INTENT_EVOLUTION`, `ai`, `user`). A
//! ledger is also written by other tools and older versions, so a value Mandate does not know is
//! kept as written (`Other`), never an error: reading, verify and blame go on, and the value
//! comes back out byte for byte (the record's digest depends on it).

use std::fmt;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::CommandGrants;

/// Declares an open set of values: known variants with their ledger spelling, and `Other` for
/// anything else, kept as written.
macro_rules! open_values {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant,)+
            /// A value Mandate does not know (another tool's, a later version's), as written.
            /// (`string & {}` in TypeScript keeps the known values apart from any string.)
            #[serde(untagged)]
            Other(#[ts(type = "string & {}")] String),
        }

        impl $name {
            /// The ledger's spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $wire,)+
                    Self::Other(s) => s,
                }
            }

            /// The value for a ledger's spelling; an unknown one is kept as `Other`.
            pub fn parse(s: &str) -> Self {
                match s {
                    $($wire => Self::$variant,)+
                    other => Self::Other(other.to_string()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

open_values! {
    /// What a change does to the code (declared by the model, computed by Mandate).
    MutationClass {
        /// Moves, renames, reformatting, comments: the same token structure.
        AstRefactor = "AST_REFACTOR",
        /// Adds or changes behaviour.
        IntentEvolution = "INTENT_EVOLUTION",
        /// An MCP call: an effect outside the workspace's files (not a class a write may declare).
        ExternalAction = "EXTERNAL_ACTION",
    }
}

impl MutationClass {
    /// The classes the model may declare for a write.
    pub const DECLARABLE: [MutationClass; 2] =
        [MutationClass::AstRefactor, MutationClass::IntentEvolution];
}

open_values! {
    /// Who wrote the recorded lines (Agent Trace `contributor.type`).
    Contributor {
        /// A person (an undo, taken back by someone).
        Human = "human",
        /// The model.
        Ai = "ai",
        /// The model's change as the person edited it before accepting it.
        Mixed = "mixed",
        Unknown = "unknown",
    }
}

open_values! {
    /// Who let a recorded change through.
    Approver {
        /// A person, on a card in the window.
        User = "user",
        /// Nobody needed to: the approval policy lets it through.
        Policy = "policy",
        /// `mandate run --approve allow` (or `mandate undo` without asking).
        Headless = "headless",
    }
}

/// One line of a diff hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
pub enum DiffTag {
    #[serde(rename = " ")]
    Context,
    #[serde(rename = "+")]
    Added,
    #[serde(rename = "-")]
    Removed,
}

impl DiffTag {
    /// The tag of a unified diff line's first character (` `, `+`, `-`).
    pub fn from_char(c: char) -> Option<Self> {
        match c {
            ' ' => Some(Self::Context),
            '+' => Some(Self::Added),
            '-' => Some(Self::Removed),
            _ => None,
        }
    }

    pub fn as_char(self) -> char {
        match self {
            Self::Context => ' ',
            Self::Added => '+',
            Self::Removed => '-',
        }
    }
}

/// What the person (or `--approve`) decided on an approval card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalOutcome {
    Approved,
    /// A command, allowed more than its confinement gives it.
    ApprovedWithGrants {
        grants: CommandGrants,
    },
    /// "Always" on an MCP call: that is approved once, every time.
    ApprovedThisCallOnly,
    /// This exact command runs without asking again in this task.
    ApprovedAlways,
    ApprovedAfterEdit,
    /// An intent change, with the globs as the person edited them.
    ApprovedAfterScopeEdit,
    ApprovedSomeHunks {
        accepted: u32,
        of: u32,
    },
    Rejected {
        reason: String,
    },
    RejectedEveryHunk,
    /// The person's edit of an intent's scope has a glob that does not compile.
    RejectedBadScope,
    /// The agent repeated itself or kept failing; the person lets it go on.
    Continue,
    Stop,
    /// The person's new or changed hooks were confirmed to run.
    HooksConfirmed,
    HooksNotRun,
    /// A damaged ledger: the person accepts appending to it.
    LedgerAccepted,
    LedgerRefused,
}

impl fmt::Display for ApprovalOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Approved => f.write_str("approved"),
            Self::ApprovedWithGrants { grants } => {
                let mut granted = Vec::new();
                if grants.network {
                    granted.push("the network");
                }
                if grants.write_git {
                    granted.push("writing .git/");
                }
                match granted.is_empty() {
                    true => f.write_str("approved"),
                    false => write!(f, "approved with {}", granted.join(" and ")),
                }
            }
            Self::ApprovedThisCallOnly => f.write_str("approved (this call only)"),
            Self::ApprovedAlways => f.write_str("approved (always for this command in this task)"),
            Self::ApprovedAfterEdit => f.write_str("approved after the user edited it"),
            Self::ApprovedAfterScopeEdit => f.write_str("approved after the user edited the scope"),
            Self::ApprovedSomeHunks { accepted, of } => {
                write!(f, "approved {accepted} of {of} hunks")
            }
            Self::Rejected { reason } => write!(f, "rejected: {reason}"),
            Self::RejectedEveryHunk => f.write_str("rejected (every hunk)"),
            Self::RejectedBadScope => f.write_str("rejected (the edited scope does not compile)"),
            Self::Continue => f.write_str("continue"),
            Self::Stop => f.write_str("stop"),
            Self::HooksConfirmed => f.write_str("hooks confirmed"),
            Self::HooksNotRun => f.write_str("hooks not run"),
            Self::LedgerAccepted => f.write_str("accepted"),
            Self::LedgerRefused => f.write_str("refused"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_keep_their_ledger_spelling() {
        for (value, wire) in [
            (
                serde_json::to_value(MutationClass::IntentEvolution),
                "INTENT_EVOLUTION",
            ),
            (
                serde_json::to_value(MutationClass::AstRefactor),
                "AST_REFACTOR",
            ),
            (
                serde_json::to_value(MutationClass::ExternalAction),
                "EXTERNAL_ACTION",
            ),
            (serde_json::to_value(Contributor::Mixed), "mixed"),
            (serde_json::to_value(Contributor::Human), "human"),
            (serde_json::to_value(Approver::Headless), "headless"),
            (serde_json::to_value(Approver::Policy), "policy"),
            (serde_json::to_value(DiffTag::Added), "+"),
            (serde_json::to_value(DiffTag::Context), " "),
        ] {
            assert_eq!(value.expect("serializes"), serde_json::json!(wire));
        }
        let read: Contributor = serde_json::from_str("\"ai\"").expect("known");
        assert_eq!(read, Contributor::Ai);
        assert_eq!(Approver::parse("user"), Approver::User);
    }

    #[test]
    fn an_unknown_value_is_kept_as_written_not_refused() {
        for wire in ["\"robot\"", "\"\"", "\"Ai\"", "\"ai \""] {
            let read: Contributor = serde_json::from_str(wire).expect("any string reads");
            assert!(matches!(read, Contributor::Other(_)), "{wire}: {read:?}");
            assert_eq!(serde_json::to_string(&read).expect("writes"), wire);
        }
        let class: MutationClass = serde_json::from_str("\"SCHEMA_CHANGE\"").expect("reads");
        assert_eq!(class, MutationClass::Other("SCHEMA_CHANGE".into()));
        assert_eq!(class.as_str(), "SCHEMA_CHANGE");
        // Not a string at all is still an error: that record is malformed.
        assert!(serde_json::from_str::<Approver>("7").is_err());
        assert!(serde_json::from_str::<DiffTag>("\"*\"").is_err());
    }

    #[test]
    fn outcomes_read_as_before_in_the_cli() {
        let some = ApprovalOutcome::ApprovedSomeHunks { accepted: 2, of: 3 };
        assert_eq!(some.to_string(), "approved 2 of 3 hunks");
        let grants = ApprovalOutcome::ApprovedWithGrants {
            grants: CommandGrants {
                network: true,
                write_git: true,
            },
        };
        assert_eq!(
            grants.to_string(),
            "approved with the network and writing .git/"
        );
        assert_eq!(
            serde_json::to_value(&some).expect("serializes"),
            serde_json::json!({"kind": "approved_some_hunks", "accepted": 2, "of": 3})
        );
    }
}

//! The trace record as a type: an Agent Trace 0.1 record with Mandate's block under
//! `metadata["dev.mandate"]`, written and read the same way.
//!
//! The bytes on disk stay what they were: the writer turns a [`TraceRecord`] into a JSON value
//! and [`canonical_json`](super::ledger::canonical_json) remains the one byte format, so digests
//! do not change. Every level keeps the keys it does not know in `extra` (another tool's
//! metadata, a later version's fields), so a record read and written again is the same record.
//!
//! A field is an `Option` (left out when `None`) only where a writer leaves the key out: the
//! specification's optional parts, and the Mandate fields that Mandate's own merge and
//! accepted-break records do not carry. A present `null` is not taken for "absent" (the record
//! would not come back the same): such a record does not parse, and readers treat it as they
//! treat a line that is not a record.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::ledger::{intent_url, task_url, HashedRange, TraceEntry, SPEC_VERSION, VENDOR_KEY};
use crate::protocol::{Approver, Contributor, MutationClass};

/// One line of `.orchestration/agent_trace.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    pub version: String,
    pub id: String,
    pub timestamp: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub tool: Option<ToolInfo>,
    /// Left out when the workspace is not in a git repository.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub vcs: Option<Vcs>,
    pub files: Vec<TraceFile>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub metadata: Option<Metadata>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub version: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vcs {
    #[serde(rename = "type")]
    pub kind: String,
    pub revision: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceFile {
    pub path: String,
    pub conversations: Vec<Conversation>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub url: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub contributor: Option<ContributorInfo>,
    pub ranges: Vec<TraceRange>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub related: Option<Vec<Related>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContributorInfo {
    #[serde(rename = "type")]
    pub kind: Contributor,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub model_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRange {
    pub start_line: u32,
    pub end_line: u32,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub content_hash: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Related {
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    #[serde(
        rename = "dev.mandate",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub mandate: Option<MandateBlock>,
    /// Other tools' metadata, kept as written.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `metadata["dev.mandate"]`. Merge and accepted-break records carry only `prev`/`digest` and
/// their own keys (in `extra`), hence the options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MandateBlock {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub intent_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub task_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub mutation_class: Option<MutationClasses>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub tool: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub tool_call_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub approval: Option<Approval>,
    /// The person's PreToolUse hooks that ran; left out when none did.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub user_hooks: Option<Vec<String>>,
    /// An undo: the ids of the records it takes back.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub revert_of: Option<RevertOf>,
    /// Added when the record is sealed (see `ledger_write.rs`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub prev: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub digest: Option<String>,
    /// Diffs, images, command details, merge parents and anything Mandate does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Declared by the model and computed by Mandate; `""` when there was nothing to declare
/// (commands, undo), which reads back as `MutationClass::Other("")`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutationClasses {
    pub declared: MutationClass,
    pub computed: MutationClass,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub by: Approver,
    pub at: String,
    pub accepted_hunks: Vec<u32>,
    pub rejected_hunks: Vec<u32>,
    pub edited: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The records an undo takes back: a list (as `mandate undo` writes it), or one id as a
/// string (as some records have it), each written back as it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RevertOf {
    One(String),
    Many(Vec<String>),
}

impl RevertOf {
    pub fn ids(&self) -> &[String] {
        match self {
            Self::One(id) => std::slice::from_ref(id),
            Self::Many(ids) => ids,
        }
    }
}

/// A key that is present is a value, never `null` (which would not be written back).
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

impl TraceRecord {
    /// The record of `entry` (without `prev` and `digest`), with its id and time given.
    pub fn from_entry(
        entry: &TraceEntry,
        revision: Option<String>,
        id: String,
        timestamp: String,
    ) -> Self {
        let conversation = |ranges: &[HashedRange]| Conversation {
            url: Some(task_url(&entry.task_id)),
            contributor: Some(ContributorInfo {
                kind: entry.contributor.clone(),
                model_id: Some(crate::text::first_chars(&entry.model_id, 250).to_string()),
                extra: Map::new(),
            }),
            ranges: ranges
                .iter()
                .map(|r| TraceRange {
                    start_line: r.start_line,
                    end_line: r.end_line,
                    content_hash: Some(r.content_hash.clone()),
                    extra: Map::new(),
                })
                .collect(),
            related: Some(vec![Related {
                kind: "intent".into(),
                url: intent_url(&entry.intent_id),
                extra: Map::new(),
            }]),
            extra: Map::new(),
        };
        let declared_or_empty =
            |c: &Option<MutationClass>| c.clone().unwrap_or(MutationClass::Other(String::new()));
        let approval = &entry.approval;
        let mandate = MandateBlock {
            intent_id: Some(entry.intent_id.clone()),
            task_id: Some(entry.task_id.clone()),
            mutation_class: Some(MutationClasses {
                declared: declared_or_empty(&entry.mutation_declared),
                computed: declared_or_empty(&entry.mutation_computed),
                extra: Map::new(),
            }),
            tool: Some(entry.tool.clone()),
            tool_call_id: Some(entry.tool_call_id.clone()),
            approval: Some(Approval {
                by: approval.by.clone(),
                at: approval.at.clone(),
                accepted_hunks: approval.accepted_hunks.clone(),
                rejected_hunks: approval.rejected_hunks.clone(),
                edited: approval.edited,
                extra: Map::new(),
            }),
            user_hooks: (!approval.user_hooks.is_empty()).then(|| approval.user_hooks.clone()),
            // The entry's extra keys (an undo's `revert_of` among them) go out as given.
            extra: entry.extra.clone(),
            ..MandateBlock::default()
        };
        TraceRecord {
            version: SPEC_VERSION.into(),
            id,
            timestamp,
            tool: Some(ToolInfo {
                name: Some("mandate".into()),
                version: Some(env!("CARGO_PKG_VERSION").into()),
                extra: Map::new(),
            }),
            vcs: revision.map(|revision| Vcs {
                kind: "git".into(),
                revision,
                extra: Map::new(),
            }),
            files: entry
                .files
                .iter()
                .map(|f| TraceFile {
                    path: f.path.clone(),
                    conversations: vec![conversation(&f.ranges)],
                    extra: Map::new(),
                })
                .collect(),
            metadata: Some(Metadata {
                mandate: Some(mandate),
                extra: Map::new(),
            }),
            extra: Map::new(),
        }
    }

    /// The record as the JSON value the ledger seals and writes canonically. A key in an
    /// `extra` map that is also a typed field wins, as it always did.
    pub fn to_value(&self) -> Value {
        // Serializing these types cannot fail (string keys, no floats but those already in a
        // `Value`); were it to, the null fails closed: sealing refuses a record without
        // Mandate's block.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads a record from a ledger line; `None` when the line is not a trace record.
    pub fn from_line(line: &[u8]) -> Option<Self> {
        serde_json::from_slice(line).ok()
    }

    /// Mandate's block, if the record has one.
    pub fn mandate(&self) -> Option<&MandateBlock> {
        self.metadata.as_ref()?.mandate.as_ref()
    }

    /// A string field of Mandate's block, `""` when absent.
    pub fn mandate_str(&self, field: fn(&MandateBlock) -> &Option<String>) -> &str {
        self.mandate()
            .and_then(|m| field(m).as_deref())
            .unwrap_or_default()
    }

    pub fn intent_id(&self) -> Option<&str> {
        self.mandate()?.intent_id.as_deref()
    }

    pub fn approval(&self) -> Option<&Approval> {
        self.mandate()?.approval.as_ref()
    }

    /// The ids of the records this one takes back (none unless it is an undo).
    pub fn revert_of(&self) -> &[String] {
        self.mandate()
            .and_then(|m| m.revert_of.as_ref())
            .map_or(&[], RevertOf::ids)
    }
}

impl TraceFile {
    /// Every range of every conversation of the file, with the conversation's contributor.
    pub fn ranges(&self) -> impl Iterator<Item = (&Conversation, &TraceRange)> {
        self.conversations
            .iter()
            .flat_map(|c| c.ranges.iter().map(move |r| (c, r)))
    }
}

impl Conversation {
    /// The contributor type, `unknown` when the conversation names none.
    pub fn contributor_kind(&self) -> Contributor {
        self.contributor
            .as_ref()
            .map_or(Contributor::Unknown, |c| c.kind.clone())
    }

    pub fn model_id(&self) -> &str {
        self.contributor
            .as_ref()
            .and_then(|c| c.model_id.as_deref())
            .unwrap_or("")
    }
}

/// `VENDOR_KEY` is the `dev.mandate` the serde attribute spells out.
const _: () = assert!(matches!(VENDOR_KEY.as_bytes(), b"dev.mandate"));

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;

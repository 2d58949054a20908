//! The ledger record of an intent change a person approved (a wider scope, a new intent): an
//! intent evolution of the intents file, claiming no lines.

use serde_json::{json, Value};

use super::{RunCx, ToolError};
use crate::orchestration::intents::INTENTS_FILE;
use crate::orchestration::ledger::{FileChange, TraceEntry};
use crate::protocol::{Contributor, MutationClass};

pub(super) async fn record(
    cx: &RunCx<'_>,
    intent_id: &str,
    change: Value,
) -> Result<(), ToolError> {
    let mut extra = cx.trace_extra();
    extra.insert("intent_change".into(), change);
    let entry = TraceEntry {
        task_id: cx.task.id.clone(),
        intent_id: intent_id.to_string(),
        model_id: cx.model_id.to_string(),
        tool: cx.tool.to_string(),
        tool_call_id: cx.call_id.to_string(),
        contributor: if cx.approval.edited {
            Contributor::Mixed
        } else {
            Contributor::Ai
        },
        mutation_declared: Some(MutationClass::IntentEvolution),
        mutation_computed: Some(MutationClass::IntentEvolution),
        approval: cx.approval.clone(),
        files: vec![FileChange {
            path: INTENTS_FILE.into(),
            ranges: Vec::new(),
        }],
        extra,
    };
    let ledger = cx.gov.ledger.clone();
    super::blocking("recording the intent change", move || {
        ledger.append(&entry).map(|_| ()).map_err(|e| {
            ToolError::Failed(format!(
                "the intents changed, but the ledger could not record it: {e}"
            ))
        })
    })
    .await
}

pub(super) fn json_list(items: &[String]) -> Value {
    json!(items)
}

//! `select_active_intent`: the handshake. The task takes an intent and receives its context.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::orchestration::intents::Intent;
use crate::protocol::{ToolKind, TraceChange};

/// Select the intent this task works under, before any change. Returns the intent's context:
/// constraints, owned scope, acceptance criteria and recent history.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// An intent id from .orchestration/active_intents.yaml, e.g. INT-001.
    pub intent_id: String,
}

pub struct SelectActiveIntent;

#[async_trait]
impl AgentTool for SelectActiveIntent {
    type Args = Args;
    type Work = String;
    const NAME: &'static str = "select_active_intent";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "Select the intent you will work under (required before any write or command). Returns <intent_context>.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<String>, ToolError> {
        let id = args.intent_id.trim().to_string();
        crate::agent::check_selectable(cx.intents, &id)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        Ok(Plan {
            target: id.clone(),
            action: Action::Meta,
            work: id,
        })
    }

    async fn run(&self, _: Action, id: String, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let intent = cx
            .task
            .select_intent(&cx.gov.intents.snapshot(), &id)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let root = cx.gov.root().to_path_buf();
        let intent_id = id.clone();
        let history = blocking("reading the trace ledger", move || {
            crate::orchestration::trace::intent_changes(&root, &intent_id)
                .map_err(|e| ToolError::Failed(format!("cannot read the trace ledger: {e}")))
        })
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "intent history unavailable");
            Vec::new()
        });
        Ok(ToolOutput::text(
            format!("selected {id}"),
            intent_context(&intent, &history),
        ))
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The `<intent_context>` block: exactly one intent, curated, with its recent trace history.
pub fn intent_context(intent: &Intent, history: &[TraceChange]) -> String {
    let list = |tag: &str, item: &str, values: &[String]| {
        if values.is_empty() {
            return format!("  <{tag}/>\n");
        }
        let inner: String = values
            .iter()
            .map(|v| format!("    <{item}>{}</{item}>\n", xml_escape(v)))
            .collect();
        format!("  <{tag}>\n{inner}  </{tag}>\n")
    };
    let mut out = String::from("<intent_context>\n");
    out.push_str(&format!("  <id>{}</id>\n", xml_escape(&intent.id)));
    out.push_str(&format!("  <name>{}</name>\n", xml_escape(&intent.name)));
    out.push_str(&format!(
        "  <status>{}</status>\n",
        crate::orchestration::intents::status_str(intent.status)
    ));
    out.push_str(&list("constraints", "constraint", &intent.constraints));
    out.push_str(&list("owned_scope", "path", &intent.owned_scope));
    out.push_str(&list(
        "acceptance_criteria",
        "criterion",
        &intent.acceptance_criteria,
    ));
    if history.is_empty() {
        out.push_str("  <recent_history/>\n");
    } else {
        out.push_str("  <recent_history>\n");
        for change in history.iter().rev().take(10) {
            let ranges: Vec<String> = change
                .ranges
                .iter()
                .map(|r| format!("{}-{}", r.start_line, r.end_line))
                .collect();
            out.push_str(&format!(
                "    <change file=\"{}\" lines=\"{}\" at=\"{}\" class=\"{}\"/>\n",
                xml_escape(&change.path),
                ranges.join(","),
                xml_escape(&change.timestamp),
                xml_escape(change.mutation_class.as_str())
            ));
        }
        out.push_str("  </recent_history>\n");
    }
    out.push_str("</intent_context>");
    out
}

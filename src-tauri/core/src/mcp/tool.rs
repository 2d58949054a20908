//! A server's tool as the orchestrator sees it: planned as an [`Action::External`] for the hooks,
//! run by sending `tools/call`, and — when it is mutating and ran — recorded in the ledger with a
//! digest of its arguments (never the arguments: they may hold secrets).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::catalog::Entry;
use super::server::{CallError, Server};
use crate::hooks::{Action, ExternalAction};
use crate::llm::ToolSpec;
use crate::orchestration::ledger::{canonical_json, TraceEntry};
use crate::protocol::{Event, McpSource, NoticeLevel, ToolKind};
use crate::tools::{Planned, RunCx, Tool, ToolCx, ToolError, ToolOutput};

/// Arguments larger than this are refused before anyone is asked.
const MAX_ARGUMENTS: usize = 1024 * 1024;

pub struct McpTool {
    server: Arc<Server>,
    entry: Entry,
    /// Declared read-only by a server whose hints the person trusts.
    read_only: bool,
}

impl McpTool {
    pub fn new(server: Arc<Server>, entry: Entry, trusts_hints: bool) -> Self {
        let read_only = trusts_hints && entry.tool.annotations.read_only == Some(true);
        Self {
            server,
            entry,
            read_only,
        }
    }

    fn source(&self) -> McpSource {
        match self.server.def.source {
            super::config::Source::Project => McpSource::Project,
            super::config::Source::Settings => McpSource::Settings,
        }
    }
}

/// SHA-256 (hex) of the arguments' canonical JSON: the same arguments, the same digest.
pub fn args_sha256(arguments: &Value) -> String {
    crate::fsutil::sha256_hex(canonical_json(arguments).as_bytes())
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.entry.model_name
    }

    fn kind(&self) -> ToolKind {
        if self.read_only {
            ToolKind::Read
        } else {
            ToolKind::Mutate
        }
    }

    fn spec(&self) -> ToolSpec {
        let how = if self.read_only {
            "the server declares it read-only"
        } else {
            "it needs the selected intent and the user's approval for every call"
        };
        let description = if self.entry.tool.description.trim().is_empty() {
            format!("`{}`", self.entry.tool.name)
        } else {
            self.entry.tool.description.clone()
        };
        ToolSpec {
            name: self.entry.model_name.clone(),
            description: format!(
                "{description}\n\n(A tool of the MCP server `{}`; {how}.)",
                self.entry.server
            ),
            parameters: self.entry.tool.input_schema.clone(),
        }
    }

    fn plan(&self, args: Value, _: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let arguments = match args {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "The arguments of {} must be a JSON object, not {}.",
                    self.entry.model_name,
                    json_kind(&other)
                )))
            }
        };
        let arguments = Value::Object(arguments);
        if canonical_json(&arguments).len() > MAX_ARGUMENTS {
            return Err(ToolError::InvalidArguments(format!(
                "The arguments of {} are larger than {} KiB.",
                self.entry.model_name,
                MAX_ARGUMENTS / 1024
            )));
        }
        let action = ExternalAction {
            server: self.entry.server.clone(),
            source: self.source(),
            tool: self.entry.tool.name.clone(),
            description: self.entry.tool.description.clone(),
            args_sha256: args_sha256(&arguments),
            arguments,
            annotations: self.entry.tool.annotations.clone(),
            read_only: self.read_only,
            writes_workspace: self.server.writes_workspace && self.server.grant_dropped().is_none(),
            unconfined: self.server.runs_unconfined(),
        };
        let target = format!("{} › {}", self.entry.server, self.entry.tool.name);
        Ok(Planned::new(Action::External(action), target, ()))
    }

    async fn run(&self, planned: Planned, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let Some((Action::External(action), ())) = planned.into_parts::<()>() else {
            return Err(ToolError::Failed(format!(
                "internal: {} was given another tool's plan",
                self.entry.model_name
            )));
        };
        let arguments = match &action.arguments {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        if self.server.watched() {
            return super::watched::run(self, &action, arguments, cx).await;
        }
        let outcome = self.server.call(&action.tool, arguments, cx.cancel).await;
        let Shown { output, record } = shown(outcome);
        match record {
            Some(record) if !self.read_only => {
                let note = self.record(&action, record, Changed::default(), cx).await;
                with_note(output, note)
            }
            _ => output,
        }
    }
}

/// What a call gave: the model's answer and what the ledger keeps of it (`None`: the call was
/// not sent, or the server refused it, so nothing happened).
pub(super) struct Shown {
    pub output: Result<ToolOutput, ToolError>,
    pub record: Option<Value>,
}

/// The answer of a call, and its record.
pub(super) fn shown(outcome: Result<Value, CallError>) -> Shown {
    match outcome {
        Ok(result) => {
            let shown = super::result::for_model(&result);
            let record = json!({"is_error": shown.is_error, "outcome": if shown.is_error { "error" } else { "ok" }});
            let summary = if shown.is_error {
                "the server reported an error".to_string()
            } else {
                crate::text::ellipsize(shown.text.lines().next().unwrap_or(""), 120).into_owned()
            };
            let output = ToolOutput {
                display: shown.text.clone(),
                content: shown.text,
                summary,
                failed: shown.is_error,
                ..ToolOutput::default()
            };
            Shown {
                output: Ok(output),
                record: Some(record),
            }
        }
        // Not sent, or refused by the server: nothing happened.
        Err(e) if !e.was_sent() || matches!(e, CallError::Refused { .. }) => Shown {
            output: Err(ToolError::Failed(super::result::redact(&e.to_string()))),
            record: None,
        },
        Err(e) => {
            let detail = super::result::redact(&e.to_string());
            let record = json!({"is_error": Value::Null, "outcome": "no_answer", "detail": detail});
            Shown {
                output: Err(ToolError::Failed(detail)),
                record: Some(record),
            }
        }
    }
}

/// The output with a note added (a ledger problem the model and the person should know of).
pub(super) fn with_note(
    output: Result<ToolOutput, ToolError>,
    note: Result<(), String>,
) -> Result<ToolOutput, ToolError> {
    match (note, output) {
        (Ok(()), output) => output,
        (Err(problem), Ok(mut o)) => {
            o.content.push_str(&format!("\n\n(Note: {problem})"));
            Ok(o)
        }
        (Err(_), Err(e)) => Err(e),
    }
}

/// What a watched call changed in the workspace, for its record.
#[derive(Default)]
pub(super) struct Changed {
    pub files: Vec<crate::orchestration::ledger::FileChange>,
    pub images: Map<String, Value>,
    pub diffs: Map<String, Value>,
    /// `changed_in_scope`, `changed_out_of_scope`, `not_undone`, `confinement`.
    pub detail: Map<String, Value>,
}

impl McpTool {
    pub(super) fn server(&self) -> &Arc<Server> {
        &self.server
    }

    pub(super) fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The ledger record of a call that was sent: what was called, with which arguments
    /// (their digest), whether it ran unconfined, what came back and who approved it, under
    /// `metadata["dev.mandate"]`;
    /// `files` holds what it changed that Mandate saw (a watched server's in-scope changes —
    /// granted or unconfined — with line ranges and content hashes), empty for a server that
    /// cannot write in the workspace. `Err` says
    /// why the ledger could not record it (the problem is also shown to the person).
    pub(super) async fn record(
        &self,
        action: &ExternalAction,
        result: Value,
        changed: Changed,
        cx: &RunCx<'_>,
    ) -> Result<(), String> {
        let mut extra = cx.trace_extra();
        let mut mcp = json!({
            "server": action.server,
            "source": action.source,
            "tool": action.tool,
            "args_sha256": action.args_sha256,
            "transport": if self.server.def.is_stdio() { "stdio" } else { "http" },
            // Outside any confinement, what it did beyond the workspace is known only by
            // what it said.
            "unconfined": action.unconfined,
        });
        if let Some(mcp) = mcp.as_object_mut() {
            if let Some(result) = result.as_object() {
                mcp.extend(result.clone());
            }
            mcp.extend(changed.detail);
        }
        extra.insert("mcp".into(), mcp);
        let computed = if changed.files.is_empty() {
            crate::protocol::MutationClass::ExternalAction
        } else {
            crate::protocol::MutationClass::IntentEvolution
        };
        if !changed.files.is_empty() {
            extra.insert("images".into(), Value::Object(changed.images));
            extra.insert("diffs".into(), Value::Object(changed.diffs));
        }
        let entry = TraceEntry {
            task_id: cx.task.id.clone(),
            intent_id: cx.task.governance().selected_intent.unwrap_or_default(),
            model_id: cx.model_id.to_string(),
            tool: cx.tool.to_string(),
            tool_call_id: cx.call_id.to_string(),
            contributor: crate::protocol::Contributor::Ai,
            mutation_declared: Some(crate::protocol::MutationClass::ExternalAction),
            mutation_computed: Some(computed),
            approval: cx.approval.clone(),
            files: changed.files,
            extra,
        };
        let ledger = cx.gov.ledger.clone();
        let appended = tokio::task::spawn_blocking(move || ledger.append(&entry).map(|_| ()))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
            .map_err(|e| format!("the MCP call ran, but the ledger could not record it: {e}"));
        if let Err(problem) = &appended {
            cx.events.emit(Event::Notice {
                level: NoticeLevel::Error,
                message: problem.clone(),
            });
        }
        appended
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

//! `apply_diff`: SEARCH/REPLACE edits to an existing file, under the intent the task holds.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::search_replace;
use super::{
    current_bytes, parse_args, resolve, spec_for, validate_mutation_class, Effect, Planned, Tool,
    ToolCx, ToolError,
};
use crate::hooks::{Action, WriteAction};
use crate::llm::ToolSpec;
use crate::protocol::ToolKind;

/// Edit an existing file with one or more SEARCH/REPLACE blocks:
/// `<<<<<<< SEARCH` / `:start_line:N` (optional) / `-------` / exact current lines / `=======` /
/// new lines / `>>>>>>> REPLACE`. The SEARCH text must match the file (whitespace differences
/// are tolerated); read the file first.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path relative to the workspace root.
    pub path: String,
    /// The SEARCH/REPLACE blocks.
    pub diff: String,
    /// The id of the intent you selected with select_active_intent.
    pub intent_id: String,
    /// AST_REFACTOR (moves, renames, reformatting only) or INTENT_EVOLUTION (new or changed behaviour).
    pub mutation_class: String,
}

pub struct ApplyDiff;

impl Tool for ApplyDiff {
    fn name(&self) -> &'static str {
        "apply_diff"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Mutate
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "Edit an existing file with SEARCH/REPLACE blocks:\n<<<<<<< SEARCH\n:start_line:N\n-------\n[exact current lines]\n=======\n[new lines]\n>>>>>>> REPLACE\nRequires intent_id and mutation_class.",
        )
    }
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let mutation_class = validate_mutation_class(&args.mutation_class)?;
        let path = resolve(cx, &args.path)?;
        let Some(old) = current_bytes(&path)? else {
            return Err(ToolError::Failed(format!(
                "{} does not exist; create it with write_to_file",
                path.display()
            )));
        };
        let text = std::str::from_utf8(&old)
            .map_err(|_| ToolError::Failed(format!("{} is not UTF-8 text", path.display())))?;
        let applied = search_replace::apply(text, &args.diff).map_err(|e| match e {
            search_replace::SearchReplaceError::Parse { .. }
            | search_replace::SearchReplaceError::Empty => {
                ToolError::InvalidArguments(format!("apply_diff on {}: {e}", path.display()))
            }
            other => ToolError::Failed(format!("apply_diff on {}: {other}", path.display())),
        })?;
        Ok(Planned {
            target: path.display().to_string(),
            action: Action::Write(WriteAction {
                path,
                old: Some(old),
                new_content: applied.content,
                intent_id: args.intent_id,
                mutation_class,
            }),
            effect: Effect::Write,
        })
    }
}

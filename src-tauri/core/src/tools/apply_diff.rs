//! `apply_diff`: SEARCH/REPLACE edits to an existing file, under the intent the task holds.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::search_replace;
use super::{
    current_bytes, resolve, validate_mutation_class, AgentTool, Plan, RunCx, ToolCx, ToolError,
    ToolOutput,
};
use crate::hooks::{Action, WriteAction};
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

#[async_trait]
impl AgentTool for ApplyDiff {
    type Args = Args;
    type Work = ();
    const NAME: &'static str = "apply_diff";
    const KIND: ToolKind = ToolKind::Mutate;
    const DESCRIPTION: &'static str = "Edit an existing file with SEARCH/REPLACE blocks:
<<<<<<< SEARCH
:start_line:N
-------
[exact current lines]
=======
[new lines]
>>>>>>> REPLACE
Requires intent_id and mutation_class.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<()>, ToolError> {
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
        Ok(Plan {
            target: path.display().to_string(),
            action: Action::Write(WriteAction {
                path,
                old: Some(old),
                new_content: applied.content,
                intent_id: args.intent_id,
                mutation_class,
            }),
            work: (),
        })
    }

    async fn run(&self, action: Action, _: (), cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        super::write::apply(action, cx).await
    }
}

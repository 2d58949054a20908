//! `write_to_file`: the whole content of a file, under the intent the task holds.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{
    current_bytes, resolve, validate_mutation_class, AgentTool, Plan, RunCx, ToolCx, ToolError,
    ToolOutput,
};
use crate::hooks::{Action, WriteAction};
use crate::protocol::ToolKind;

/// Write a file's complete content (creating it and its directories if needed). Cite the intent
/// you work under and classify the change. Read an existing file first; prefer apply_diff for
/// small edits to large files.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path relative to the workspace root.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
    /// The id of the intent you selected with select_active_intent.
    pub intent_id: String,
    /// AST_REFACTOR (moves, renames, reformatting only) or INTENT_EVOLUTION (new or changed behaviour).
    pub mutation_class: String,
}

pub struct WriteToFile;

#[async_trait]
impl AgentTool for WriteToFile {
    type Args = Args;
    type Work = ();
    const NAME: &'static str = "write_to_file";
    const KIND: ToolKind = ToolKind::Mutate;
    const DESCRIPTION: &'static str = "Write the complete content of a file under your active intent. Requires intent_id and mutation_class.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<()>, ToolError> {
        let mutation_class = validate_mutation_class(&args.mutation_class)?;
        let path = resolve(cx, &args.path)?;
        let old = current_bytes(&path)?;
        // Models often drop the final newline; keep the file's convention.
        let mut content = args.content;
        if old.as_deref().is_some_and(|o| o.ends_with(b"\n"))
            && !content.is_empty()
            && !content.ends_with('\n')
        {
            content.push('\n');
        }
        if old
            .as_deref()
            .is_some_and(|o| memchr::memmem::find(o, b"\r\n").is_some())
            && !content.contains("\r\n")
        {
            content = content.replace('\n', "\r\n");
        }
        Ok(Plan {
            target: path.display().to_string(),
            action: Action::Write(WriteAction {
                path,
                old,
                new_content: content,
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

//! `write_to_file`: the whole content of a file, under the intent the task holds.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    current_bytes, parse_args, resolve, spec_for, validate_mutation_class, Effect, Planned, Tool,
    ToolCx, ToolError,
};
use crate::hooks::{Action, WriteAction};
use crate::llm::ToolSpec;
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

impl Tool for WriteToFile {
    fn name(&self) -> &'static str {
        "write_to_file"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Mutate
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(self.name(), "Write the complete content of a file under your active intent. Requires intent_id and mutation_class.")
    }
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
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
        Ok(Planned {
            target: path.display().to_string(),
            action: Action::Write(WriteAction {
                path,
                old,
                new_content: content,
                intent_id: args.intent_id,
                mutation_class,
            }),
            effect: Effect::Write,
        })
    }
}

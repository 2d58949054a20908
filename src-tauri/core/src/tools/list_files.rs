//! `list_files`: entries of a directory, optionally recursive; respects .gitignore.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{parse_args, resolve, spec_for, Effect, Planned, Tool, ToolCx, ToolError};
use crate::hooks::Action;
use crate::llm::ToolSpec;
use crate::protocol::ToolKind;

/// List files and directories (directories end with `/`). Ignores what .gitignore ignores.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory relative to the workspace root (`.` for the root).
    pub path: String,
    /// List everything below, not only the direct entries.
    pub recursive: Option<bool>,
}

pub struct ListFiles;

impl Tool for ListFiles {
    fn name(&self) -> &'static str {
        "list_files"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(self.name(), "List the files in a workspace directory (recursive optional). Respects .gitignore; output is bounded.")
    }
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let path = resolve(cx, &args.path)?;
        Ok(Planned {
            target: path.display().to_string(),
            action: Action::Read { path: path.clone() },
            effect: Effect::ListFiles {
                path,
                recursive: args.recursive.unwrap_or(false),
            },
        })
    }
}

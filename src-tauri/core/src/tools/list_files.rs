//! `list_files`: entries of a directory, optionally recursive; respects .gitignore.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, resolve, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;
use crate::workspace::ResolvedPath;

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

pub struct Work {
    path: ResolvedPath,
    recursive: bool,
}

#[async_trait]
impl AgentTool for ListFiles {
    type Args = Args;
    type Work = Work;
    const NAME: &'static str = "list_files";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "List the files in a workspace directory (recursive optional). Respects .gitignore; output is bounded.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<Work>, ToolError> {
        let path = resolve(cx, &args.path)?;
        Ok(Plan {
            target: path.display().to_string(),
            action: Action::Read { path: path.clone() },
            work: Work {
                path,
                recursive: args.recursive.unwrap_or(false),
            },
        })
    }

    async fn run(&self, _: Action, work: Work, _: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let text = blocking("listing", move || {
            super::walk::list_for_model(&work.path, work.recursive)
        })
        .await?;
        let n = text.lines().count();
        Ok(ToolOutput::text(format!("{n} entries"), text))
    }
}

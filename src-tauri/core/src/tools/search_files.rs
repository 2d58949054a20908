//! `search_files`: a regex across files, with context lines; respects .gitignore.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, resolve, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;
use crate::workspace::ResolvedPath;

/// Search file contents with a regular expression (Rust regex syntax). Results show the file,
/// the line number and a line of context around each match; output is bounded.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory (or file) relative to the workspace root.
    pub path: String,
    /// The regular expression.
    pub regex: String,
    /// Only files whose name matches this glob, e.g. `*.rs`.
    pub file_pattern: Option<String>,
}

pub struct SearchFiles;

pub struct Work {
    path: ResolvedPath,
    regex: String,
    file_pattern: Option<String>,
}

#[async_trait]
impl AgentTool for SearchFiles {
    type Args = Args;
    type Work = Work;
    const NAME: &'static str = "search_files";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "Search the workspace with a regex (optionally only files matching file_pattern). Respects .gitignore; shows context lines; output is bounded.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<Work>, ToolError> {
        if args.regex.is_empty() {
            return Err(ToolError::InvalidArguments("regex is empty".into()));
        }
        regex::RegexBuilder::new(&args.regex)
            .size_limit(10 << 20)
            .build()
            .map_err(|e| ToolError::InvalidArguments(format!("regex does not compile: {e}")))?;
        if let Some(p) = &args.file_pattern {
            globset::Glob::new(p).map_err(|e| {
                ToolError::InvalidArguments(format!("file_pattern `{p}` is not a glob: {e}"))
            })?;
        }
        let path = resolve(cx, &args.path)?;
        Ok(Plan {
            target: format!("/{}/ in {}", args.regex, path.display()),
            action: Action::Read { path: path.clone() },
            work: Work {
                path,
                regex: args.regex,
                file_pattern: args.file_pattern,
            },
        })
    }

    async fn run(&self, _: Action, work: Work, _: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let (text, n) = blocking("search", move || {
            super::walk::search(&work.path, &work.regex, work.file_pattern.as_deref(), 1)
        })
        .await?;
        Ok(ToolOutput::text(format!("{n} matches"), text))
    }
}

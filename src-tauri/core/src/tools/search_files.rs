//! `search_files`: a regex across files, with context lines; respects .gitignore.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{parse_args, resolve, spec_for, Effect, Planned, Tool, ToolCx, ToolError};
use crate::hooks::Action;
use crate::llm::ToolSpec;
use crate::protocol::ToolKind;

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

impl Tool for SearchFiles {
    fn name(&self) -> &'static str {
        "search_files"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(self.name(), "Search the workspace with a regex (optionally only files matching file_pattern). Respects .gitignore; shows context lines; output is bounded.")
    }
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
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
        Ok(Planned {
            target: format!("/{}/ in {}", args.regex, path.display()),
            action: Action::Read { path: path.clone() },
            effect: Effect::SearchFiles {
                path,
                regex: args.regex,
                file_pattern: args.file_pattern,
            },
        })
    }
}

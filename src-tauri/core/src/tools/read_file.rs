//! `read_file`: a text file with line numbers, optionally a line range.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, resolve, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;
use crate::workspace::ResolvedPath;

/// Files above this size must be read by line range.
const MAX_WHOLE_FILE: usize = 512 * 1024;
/// At most this many lines are returned at once.
const MAX_LINES: usize = 2000;

/// Read a text file from the workspace. Lines come back numbered (`N | text`). For large files,
/// read a range with start_line/end_line (1-based, inclusive). Reading a file is required before
/// overwriting or editing it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path relative to the workspace root.
    pub path: String,
    /// First line to read (1-based).
    pub start_line: Option<u64>,
    /// Last line to read (1-based, inclusive).
    pub end_line: Option<u64>,
}

pub struct ReadFile;

pub struct Work {
    path: ResolvedPath,
    start_line: Option<usize>,
    end_line: Option<usize>,
}

#[async_trait]
impl AgentTool for ReadFile {
    type Args = Args;
    type Work = Work;
    const NAME: &'static str = "read_file";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "Read a text file from the workspace with line numbers; optionally only start_line..end_line. Read a file before you change it.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<Work>, ToolError> {
        let to_usize = |v: Option<u64>, name: &str| -> Result<Option<usize>, ToolError> {
            match v {
                Some(0) => Err(ToolError::InvalidArguments(format!(
                    "{name} is 1-based; 0 is not a line"
                ))),
                Some(n) => Ok(Some(n.min(usize::MAX as u64) as usize)),
                None => Ok(None),
            }
        };
        let start_line = to_usize(args.start_line, "start_line")?;
        let end_line = to_usize(args.end_line, "end_line")?;
        if let (Some(s), Some(e)) = (start_line, end_line) {
            if e < s {
                return Err(ToolError::InvalidArguments(format!(
                    "end_line {e} is before start_line {s}"
                )));
            }
        }
        let path = resolve(cx, &args.path)?;
        Ok(Plan {
            target: path.display().to_string(),
            action: Action::Read { path: path.clone() },
            work: Work {
                path,
                start_line,
                end_line,
            },
        })
    }

    async fn run(&self, _: Action, work: Work, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let rel = work.path.rel.clone();
        let (text, hash) = blocking("read", move || {
            read_for_model(&work.path, work.start_line, work.end_line)
        })
        .await?;
        cx.task.record_read(&rel, hash);
        let lines = text.lines().count();
        Ok(ToolOutput::text(format!("read {lines} lines"), text))
    }
}

/// The text for the model and the SHA-256 of the file's raw bytes (for the stale guard).
pub fn read_for_model(
    path: &ResolvedPath,
    start_line: Option<usize>,
    end_line: Option<usize>,
) -> Result<(String, String), ToolError> {
    let meta = std::fs::metadata(&path.abs)
        .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", path.display())))?;
    if meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "{} is a directory; use list_files",
            path.display()
        )));
    }
    let bytes = std::fs::read(&path.abs)
        .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", path.display())))?;
    let hash = crate::fsutil::sha256_hex(&bytes);
    let sniff = &bytes[..bytes.len().min(8192)];
    if memchr::memchr(0, sniff).is_some() {
        return Err(ToolError::Failed(format!(
            "{} is a binary file ({} bytes); read_file only reads text",
            path.display(),
            bytes.len()
        )));
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        ToolError::Failed(format!(
            "{} is not UTF-8 text ({e}); read_file only reads text",
            path.display()
        ))
    })?;
    if bytes.len() > MAX_WHOLE_FILE && start_line.is_none() && end_line.is_none() {
        return Err(ToolError::Failed(format!(
            "{} is {} KB, too large to read whole; read it in parts with start_line and end_line (it has {} lines)",
            path.display(),
            bytes.len() / 1024,
            text.lines().count()
        )));
    }
    let total = text.lines().count();
    let start = start_line.unwrap_or(1);
    if total == 0 {
        return Ok((format!("{} is empty.", path.display()), hash));
    }
    if start > total {
        return Err(ToolError::Failed(format!(
            "{} has {total} lines; start_line {start} is past the end",
            path.display()
        )));
    }
    let end = end_line.unwrap_or(total).min(total);
    let end = end.min(start + MAX_LINES - 1);
    let width = end.to_string().len();
    let mut out = String::with_capacity((end - start + 1) * 40);
    for (i, line) in text
        .lines()
        .enumerate()
        .skip(start - 1)
        .take(end - start + 1)
    {
        out.push_str(&format!(
            "{:>width$} | {}\n",
            i + 1,
            line.trim_end_matches('\r')
        ));
    }
    if end < total {
        out.push_str(&format!(
            "[lines {start}-{end} of {total}; read more with start_line={}]\n",
            end + 1
        ));
    }
    Ok((out, hash))
}

//! `list_code_definitions`: the definitions of a file, or of every file in a folder, with their
//! lines and signatures: the shape of the code without reading it whole.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, resolve, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;
use crate::workspace::ResolvedPath;

/// List the definitions (functions, classes, types, methods...) of a source file, or of every
/// source file under a folder, with the line each starts on and its first line. Read only the
/// parts you need afterwards with read_file and a line range.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// A file or a folder, relative to the workspace root (`.` for all of it).
    pub path: String,
}

pub struct ListCodeDefinitions;

/// At most this many lines of output.
const MAX_LINES: usize = 600;

#[async_trait]
impl AgentTool for ListCodeDefinitions {
    type Args = Args;
    type Work = ResolvedPath;
    const NAME: &'static str = "list_code_definitions";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "List the definitions of a source file or folder, with lines and signatures.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<ResolvedPath>, ToolError> {
        let path = resolve(cx, &args.path)?;
        Ok(Plan {
            target: path.display().to_string(),
            action: Action::Read { path: path.clone() },
            work: path,
        })
    }

    async fn run(
        &self,
        _: Action,
        path: ResolvedPath,
        cx: &RunCx<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let gov = cx.gov.clone();
        let (text, files, defs) = blocking("listing definitions", move || {
            let listed = if path.abs.is_dir() {
                let prefix = match path.rel.as_str() {
                    "" => String::new(),
                    rel => format!("{rel}/"),
                };
                gov.code_map
                    .scan(gov.root())
                    .into_iter()
                    .filter(|(rel, _)| rel.starts_with(&prefix))
                    .filter_map(|(rel, s)| s.map(|s| (rel, s)))
                    .collect::<Vec<_>>()
            } else {
                let lang = crate::code::Lang::of(&path.rel).ok_or_else(|| {
                    ToolError::Failed(format!(
                        "{} is not a file of a language Mandate parses (Rust, TypeScript, JavaScript, Python, Go, Java, C, C++); read it with read_file",
                        path.rel
                    ))
                })?;
                let bytes = std::fs::read(&path.abs)
                    .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", path.rel)))?;
                let symbols = crate::code::symbols(lang, &bytes).unwrap_or_default();
                vec![(path.rel.clone(), std::sync::Arc::new(symbols))]
            };
            Ok(format_listing(&listed))
        })
        .await?;
        Ok(ToolOutput::text(
            format!("{defs} definitions in {files} files"),
            text,
        ))
    }
}

/// The listing, cut at [`MAX_LINES`]; with how many files and definitions it names.
fn format_listing(
    listed: &[(String, std::sync::Arc<crate::code::Symbols>)],
) -> (String, usize, usize) {
    let mut out = String::new();
    let (mut lines, mut files, mut defs) = (0, 0, 0);
    for (rel, symbols) in listed {
        if symbols.definitions.is_empty() {
            continue;
        }
        if lines >= MAX_LINES {
            out.push_str(&format!(
                "(cut at {MAX_LINES} lines: list a narrower folder for the rest)\n"
            ));
            break;
        }
        files += 1;
        out.push_str(&format!("{rel}:\n"));
        lines += 1;
        for d in &symbols.definitions {
            out.push_str(&format!(
                "  {}-{} {} {}: {}\n",
                d.start_line, d.end_line, d.kind, d.name, d.line
            ));
            lines += 1;
            defs += 1;
        }
    }
    if out.is_empty() {
        out.push_str("No definitions found (no source file of a parsed language there).");
    }
    (out, files, defs)
}

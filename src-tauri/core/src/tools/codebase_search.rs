//! `codebase_search`: find code by what it is about, in the process (BM25 over the workspace's
//! definitions and text; see `code::search`), with path, lines, score and the chunk itself.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, resolve, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;
use crate::workspace::ResolvedPath;

/// Search the workspace's code by meaning-bearing words (names, terms in doc comments,
/// messages): returns the best matching definitions and passages with their path, lines and
/// text. Prefer it to reading whole files; use search_files for an exact regex.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What you look for, in words or identifiers, e.g. "retry backoff for http requests".
    pub query: String,
    /// Only under this folder or in this file (relative to the workspace root).
    #[serde(default)]
    pub path: Option<String>,
}

pub struct CodebaseSearch;

pub struct Work {
    query: String,
    under: ResolvedPath,
}

/// Results returned.
const RESULTS: usize = 10;
/// Candidates the words pick for the embeddings to rank again.
const POOL: usize = 50;

#[async_trait]
impl AgentTool for CodebaseSearch {
    type Args = Args;
    type Work = Work;
    const NAME: &'static str = "codebase_search";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "Find code by words and names (ranked definitions and passages with their lines).";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<Work>, ToolError> {
        let query = args.query.trim().to_string();
        if crate::code::search::terms(&query).is_empty() {
            return Err(ToolError::InvalidArguments(
                "query has no word to search for (two letters or more)".into(),
            ));
        }
        let under = resolve(cx, args.path.as_deref().unwrap_or("."))?;
        Ok(Plan {
            target: query.clone(),
            action: Action::Read {
                path: under.clone(),
            },
            work: Work { query, under },
        })
    }

    async fn run(&self, _: Action, work: Work, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let gov = cx.gov.clone();
        let embedder = gov.code_index.embedder();
        // With embeddings, the words pick a wider pool for the vectors to rank again.
        let pool = if embedder.is_some() { POOL } else { RESULTS };
        let query = work.query.clone();
        let mut hits = blocking("searching the code", move || {
            let ignore = gov.ignore().ok();
            let skip = |rel: &str| {
                rel.starts_with(".orchestration/")
                    || crate::workspace::protected_reason(rel).is_some()
                    || ignore.as_ref().is_some_and(|i| i.matched(rel).is_some())
            };
            Ok(gov
                .code_index
                .search(gov.root(), &work.query, &work.under.rel, pool, &skip))
        })
        .await?;
        let mut note = String::new();
        if let Some(embedder) = embedder {
            match crate::code::search::embed::rerank(&embedder, &query, hits.clone()).await {
                Ok(ranked) => hits = ranked,
                Err(e) => note = format!("(Ranked by words only: {e}.)\n\n"),
            }
            hits.truncate(RESULTS);
        }
        if hits.is_empty() {
            return Ok(ToolOutput::text(
                "no match",
                "Nothing matched. Try other words (names, terms from comments), or search_files with a regex.",
            ));
        }
        let mut text = note;
        for h in &hits {
            text.push_str(&format!(
                "{}:{}-{} (score {:.2})\n{}\n\n",
                h.path, h.start_line, h.end_line, h.score, h.text
            ));
        }
        Ok(ToolOutput::text(format!("{} results", hits.len()), text))
    }
}

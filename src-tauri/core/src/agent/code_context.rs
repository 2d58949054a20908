//! The repo map a task's model is given with the person's message: at the start, and again
//! whenever it changed since the task last saw it (files edited, added or removed). It leans
//! toward the files the task has worked with and the names and paths the person's message
//! mentions.

use super::{AgentEnv, TaskHandle};
use crate::code::map::MapRequest;

/// About how many tokens the map takes.
const MAP_TOKENS: usize = 1024;

/// The map to send with `text`, when it is news to the task.
pub(super) async fn repo_map(env: &AgentEnv, task: &TaskHandle, text: &str) -> Option<String> {
    let mut focus: Vec<String> = task.governance().read_hashes.into_keys().collect();
    focus.sort();
    let request = MapRequest {
        focus,
        mentioned: mentioned(text),
        budget_tokens: MAP_TOKENS,
    };
    let gov = env.gov.clone();
    let map = tokio::task::spawn_blocking(move || gov.code_map.render(gov.root(), &request))
        .await
        .ok()?;
    if map.trim().is_empty() || !env.gov.code_map.is_news(&task.id, &map) {
        return None;
    }
    Some(format!(
        "<repo_map>\nThe workspace's files that matter most here, with their definitions (line│ first line), the files the rest of the code relies on first. list_code_definitions and read_file with a line range reach the rest.\n{map}</repo_map>"
    ))
}

/// The identifiers and paths a message names (words of three characters or more).
fn mentioned(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')))
        .map(|w| w.trim_matches(|c| matches!(c, '.' | '/' | '-')))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_string)
        .collect();
    words.sort();
    words.dedup();
    words.truncate(200);
    words
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_message_mentions_its_identifiers_and_paths() {
        let words = super::mentioned("Fix parse_expr in src/parser.rs, then `Lexer::next`. Ok?");
        for w in [
            "parse_expr",
            "src/parser.rs",
            "Lexer",
            "next",
            "Fix",
            "then",
        ] {
            assert!(words.contains(&w.to_string()), "{w}: {words:?}");
        }
        assert!(!words.contains(&"Ok".to_string()));
    }
}

//! The system prompt: an ordered list of small sections, each a function of a fixed context.
//! Tool definitions go to the API as the tool catalog, not into this text.

mod sections;

use std::path::Path;

use crate::orchestration::intents::{Intent, IntentsSnapshot};
use crate::protocol::TraceChange;

/// Everything the prompt depends on, gathered once per turn so the builder itself is pure.
pub struct PromptContext<'a> {
    pub root: &'a Path,
    pub intents: &'a IntentsSnapshot,
    pub active_intent: Option<&'a Intent>,
    pub recent_history: &'a [TraceChange],
    pub rules: &'a [(String, String)],
    pub lessons: Option<&'a str>,
    pub os: &'a str,
    pub shell: &'a str,
    pub date: &'a str,
    pub objective: &'a str,
    pub custom_instructions: &'a str,
    pub tool_names: &'a [&'a str],
    /// The task's mode, every mode (to say which one to ask for), the mode's rules.
    pub mode: Option<&'a crate::modes::Mode>,
    pub modes: &'a [crate::modes::Mode],
    pub mode_rules: &'a [(String, String)],
}

type Section = fn(&PromptContext<'_>) -> Option<String>;

/// The sections in order. A section returns None when it has nothing to say.
const SECTIONS: &[(&str, Section)] = &[
    ("role", sections::role),
    ("tool use", sections::tool_use),
    ("capabilities", sections::capabilities),
    ("mode", sections::mode),
    ("intent protocol", sections::intent_protocol),
    ("active intent", sections::active_intent),
    ("workspace rules", sections::workspace_rules),
    ("shared lessons", sections::lessons),
    ("system information", sections::system_info),
    ("objective", sections::objective),
    ("user's custom instructions", sections::custom_instructions),
    ("mode-specific instructions", sections::mode_instructions),
];

pub fn build(cx: &PromptContext<'_>) -> String {
    SECTIONS
        .iter()
        .filter_map(|(title, section)| {
            section(cx)
                .map(|body| format!("====\n\n{}\n\n{}", title.to_uppercase(), body.trim_end()))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
        + "\n"
}

/// Rule files the workspace provides for agents, in a stable order, each capped.
pub fn load_rules(root: &Path) -> Vec<(String, String)> {
    const CAP: usize = 20_000;
    let mut candidates: Vec<String> = vec![
        "AGENTS.md".into(),
        ".cursorrules".into(),
        ".roo/rules.md".into(),
    ];
    for dir in [".roo"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                // `rules-{slug}` belongs to one mode (see `modes::mode_rules`).
                .filter(|n| n.starts_with("rules") && !n.starts_with("rules-"))
                .collect();
            names.sort();
            for name in names {
                let rel = format!("{dir}/{name}");
                let abs = root.join(&rel);
                if abs.is_dir() {
                    if let Ok(files) = std::fs::read_dir(&abs) {
                        let mut files: Vec<String> = files
                            .filter_map(|e| e.ok())
                            .filter(|e| e.path().is_file())
                            .map(|e| format!("{rel}/{}", e.file_name().to_string_lossy()))
                            .collect();
                        files.sort();
                        candidates.extend(files);
                    }
                } else if !candidates.contains(&rel) {
                    candidates.push(rel);
                }
            }
        }
    }
    candidates
        .into_iter()
        .filter_map(|rel| {
            let text = std::fs::read_to_string(root.join(&rel)).ok()?;
            let text = text.trim();
            if text.is_empty() {
                return None;
            }
            let capped = crate::text::first_chars(text, CAP).to_string();
            Some((rel, capped))
        })
        .collect()
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;

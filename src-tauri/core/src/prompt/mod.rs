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
    /// The person's skills and slash commands (names and descriptions only).
    pub skills: &'a [crate::modes::commands::Skill],
    pub commands: &'a [crate::modes::commands::SlashCommand],
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
    ("skills and commands", sections::skills_and_commands),
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

/// Rule files the person keeps for agents, in a stable order, each capped: the global ones in
/// the config directory (`rules/`), then the workspace's (`AGENTS.md`, `CLAUDE.md`,
/// `.cursorrules`, `.clinerules` (a file or a folder), `.roorules`, `.roo/rules.md`,
/// `.roo/rules*/`; `.roo/rules-{slug}/` belongs to one mode, see `modes::mode_rules`), then the
/// `AGENTS.md` and `CLAUDE.md` of the folders the task has worked in (`worked_on`: files it
/// read or wrote), nearest last.
pub fn load_rules(
    root: &Path,
    config: Option<&Path>,
    worked_on: &[String],
) -> Vec<(String, String)> {
    const CAP: usize = 20_000;
    /// Folders' own rule files looked at, at most.
    const MAX_FOLDERS: usize = 50;
    let mut found: Vec<(String, std::path::PathBuf)> = Vec::new();
    if let Some(config) = config {
        for rel in files_in(&config.join("rules")) {
            found.push((
                format!("~config/rules/{rel}"),
                config.join("rules").join(&rel),
            ));
        }
    }
    let mut candidates: Vec<String> = [
        "AGENTS.md",
        "CLAUDE.md",
        ".cursorrules",
        ".clinerules",
        ".roorules",
        ".roo/rules.md",
    ]
    .map(String::from)
    .to_vec();
    if root.join(".clinerules").is_dir() {
        candidates.retain(|c| c != ".clinerules");
        candidates.extend(
            files_in(&root.join(".clinerules"))
                .into_iter()
                .map(|f| format!(".clinerules/{f}")),
        );
    }
    if let Ok(entries) = std::fs::read_dir(root.join(".roo")) {
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            // `rules-{slug}` belongs to one mode (see `modes::mode_rules`).
            .filter(|n| n.starts_with("rules") && !n.starts_with("rules-"))
            .collect();
        names.sort();
        for name in names {
            let rel = format!(".roo/{name}");
            if root.join(&rel).is_dir() {
                candidates.extend(
                    files_in(&root.join(&rel))
                        .into_iter()
                        .map(|f| format!("{rel}/{f}")),
                );
            } else if !candidates.contains(&rel) {
                candidates.push(rel);
            }
        }
    }
    // The folders of the files worked on, each up to the root, nearest last.
    let mut folders: Vec<String> = Vec::new();
    for file in worked_on {
        let mut dir = Path::new(file).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            let d_text = d.to_string_lossy().into_owned();
            if !folders.contains(&d_text) {
                folders.push(d_text);
            }
            dir = d.parent();
        }
    }
    folders.sort_by_key(|f| (f.matches('/').count(), f.clone()));
    for folder in folders.into_iter().take(MAX_FOLDERS) {
        for name in ["AGENTS.md", "CLAUDE.md"] {
            candidates.push(format!("{folder}/{name}"));
        }
    }
    found.extend(
        candidates
            .into_iter()
            .map(|rel| (rel.clone(), root.join(&rel))),
    );
    found
        .into_iter()
        .filter_map(|(shown, path)| {
            // Only regular files, and not through a link to elsewhere.
            let meta = std::fs::symlink_metadata(&path).ok()?;
            if !meta.is_file() || meta.len() > 1024 * 1024 {
                return None;
            }
            let text = std::fs::read_to_string(&path).ok()?;
            let text = text.trim();
            if text.is_empty() {
                return None;
            }
            Some((shown, crate::text::first_chars(text, CAP).to_string()))
        })
        .collect()
}

/// The files under `dir`, recursively, as paths relative to it, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>, depth: u32) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = format!("{prefix}{}", e.file_name().to_string_lossy());
            match e.file_type() {
                Ok(t) if t.is_dir() && depth < 4 => {
                    walk(&e.path(), &format!("{name}/"), out, depth + 1)
                }
                Ok(t) if t.is_file() => out.push(name),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out, 0);
    out
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;

//! Reading the person's modes as they wrote them.
//!
//! - Roo Code's `.roomodes` in the workspace and `custom_modes.yaml` in the config directory:
//!   YAML (or JSON, which YAML reads too) with `customModes:`, each mode with `slug`, `name`,
//!   `roleDefinition`, `whenToUse`, `description`, `customInstructions` and `groups`, where a
//!   group is `read`, `edit`, `command`, `mcp` (`browser` has no tools here) or
//!   `[edit, {fileRegex, description}]`.
//! - Claude Code's subagents, `.claude/agents/*.md`: frontmatter `name`, `description`,
//!   `tools` (Read, Grep, Glob, LS → read; Edit, Write, MultiEdit, NotebookEdit → edit; Bash
//!   → command; `mcp__…` → mcp; none listed: all of them) and `model`; the body is the role.
//!
//! Later sources replace earlier ones by slug: built-in, global, Claude agents, `.roomodes`.
//! A mode that cannot be read is left out and named in [`LoadedModes::problems`].

use std::path::Path;

use serde_norway::Value;

use super::{built_in_modes, Group, Mode, ModeSource};

/// The person's global modes, in the config directory.
pub const GLOBAL_MODES_FILE: &str = "custom_modes.yaml";
/// Bigger mode or rule files are not read.
const MAX_FILE: u64 = 512 * 1024;

/// Every mode, and what could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedModes {
    pub modes: Vec<Mode>,
    pub problems: Vec<String>,
}

impl LoadedModes {
    pub fn get(&self, slug: &str) -> Option<&Mode> {
        self.modes.iter().find(|m| m.slug == slug)
    }
}

/// The modes of the workspace at `root`, with the person's global ones from `config`.
pub fn load_modes(root: &Path, config: Option<&Path>) -> LoadedModes {
    let mut loaded = LoadedModes {
        modes: built_in_modes(),
        problems: Vec::new(),
    };
    if let Some(config) = config {
        let path = config.join(GLOBAL_MODES_FILE);
        let shown = path.display().to_string();
        if let Some(text) = read_capped(&path, &shown, &mut loaded.problems) {
            for mode in parse_roo(&text, &shown, ModeSource::Global, &mut loaded.problems) {
                put(&mut loaded.modes, mode);
            }
        }
    }
    for mode in claude_agents(root, &mut loaded.problems) {
        put(&mut loaded.modes, mode);
    }
    if let Some(text) = read_capped(&root.join(".roomodes"), ".roomodes", &mut loaded.problems) {
        let source = ModeSource::Project {
            file: ".roomodes".into(),
        };
        for mode in parse_roo(&text, ".roomodes", source, &mut loaded.problems) {
            put(&mut loaded.modes, mode);
        }
    }
    loaded
}

fn put(modes: &mut Vec<Mode>, mode: Mode) {
    match modes.iter_mut().find(|m| m.slug == mode.slug) {
        Some(slot) => *slot = mode,
        None => modes.push(mode),
    }
}

/// The text of the regular file at `path` (not a link to elsewhere: its text would go to the
/// model), shown to the person as `shown`; a file too large or unreadable is named in
/// `problems`. Modes, skills and commands are read through this.
pub(super) fn read_capped(path: &Path, shown: &str, problems: &mut Vec<String>) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.len() > MAX_FILE {
        problems.push(format!(
            "{shown} is larger than {} KiB and was not read",
            MAX_FILE / 1024
        ));
        return None;
    }
    match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) => {
            problems.push(format!("{shown} cannot be read: {e}"));
            None
        }
    }
}

fn valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= 64
        && slug
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

pub(super) fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Roo's `customModes` list.
pub(crate) fn parse_roo(
    text_in: &str,
    file: &str,
    source: ModeSource,
    problems: &mut Vec<String>,
) -> Vec<Mode> {
    if text_in.trim().is_empty() {
        return Vec::new();
    }
    let doc: Value = match serde_norway::from_str(text_in) {
        Ok(v) => v,
        Err(e) => {
            problems.push(format!("{file} is not valid YAML or JSON: {e}"));
            return Vec::new();
        }
    };
    let Some(list) = doc.get("customModes").and_then(Value::as_sequence) else {
        problems.push(format!("{file} has no `customModes:` list"));
        return Vec::new();
    };
    let mut modes = Vec::new();
    for (n, entry) in list.iter().enumerate() {
        let slug = text(entry, "slug");
        let at = format!(
            "{file}, mode {} ({})",
            n + 1,
            if slug.is_empty() { "no slug" } else { &slug }
        );
        if !valid_slug(&slug) {
            problems.push(format!(
                "{at}: the slug must be letters, digits and dashes; the mode was left out"
            ));
            continue;
        }
        let role = text(entry, "roleDefinition");
        if role.is_empty() {
            problems.push(format!(
                "{at}: it has no roleDefinition; the mode was left out"
            ));
            continue;
        }
        let Some((groups, edit_regex)) = parse_groups(entry.get("groups"), &at, problems) else {
            continue;
        };
        let name = text(entry, "name");
        modes.push(Mode {
            name: if name.is_empty() { slug.clone() } else { name },
            slug,
            role_definition: role,
            when_to_use: text(entry, "whenToUse"),
            description: text(entry, "description"),
            custom_instructions: text(entry, "customInstructions"),
            groups,
            edit_regex,
            model: Some(text(entry, "model")).filter(|m| !m.is_empty()),
            source: source.clone(),
        });
    }
    modes
}

/// A mode's groups; None (the mode left out) when they cannot be read.
fn parse_groups(
    value: Option<&Value>,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<(Vec<Group>, Option<String>)> {
    let Some(list) = value.and_then(Value::as_sequence) else {
        problems.push(format!(
            "{at}: `groups` must be a list; the mode was left out"
        ));
        return None;
    };
    let (mut groups, mut edit_regex) = (Vec::new(), None);
    for item in list {
        let (name, options) = match item {
            Value::String(s) => (s.as_str(), None),
            Value::Sequence(pair) => match pair.first().and_then(Value::as_str) {
                Some(name) => (name, pair.get(1)),
                None => {
                    problems.push(format!(
                        "{at}: a group entry is not `[name, options]`; the mode was left out"
                    ));
                    return None;
                }
            },
            _ => {
                problems.push(format!("{at}: a group entry is neither a name nor `[name, options]`; the mode was left out"));
                return None;
            }
        };
        let group = match name {
            "read" => Group::Read,
            "edit" => Group::Edit,
            "command" => Group::Command,
            "mcp" => Group::Mcp,
            // No browser tools here: the group gives nothing.
            "browser" => continue,
            other => {
                problems.push(format!("{at}: unknown group `{other}` (read, edit, command, mcp); the mode was left out"));
                return None;
            }
        };
        if group == Group::Edit {
            if let Some(re) = options
                .and_then(|o| o.get("fileRegex"))
                .and_then(Value::as_str)
            {
                if let Err(e) = regex::Regex::new(re) {
                    problems.push(format!(
                        "{at}: fileRegex `{re}` is not a valid regular expression ({e}); the mode can edit nothing until it is fixed"
                    ));
                }
                edit_regex = Some(re.to_string());
            }
        }
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    Some((groups, edit_regex))
}

/// Claude Code's subagents as modes.
fn claude_agents(root: &Path, problems: &mut Vec<String>) -> Vec<Mode> {
    let dir = root.join(".claude/agents");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let rel = format!(".claude/agents/{}", path.file_name()?.to_string_lossy());
            let text = read_capped(&path, &rel, problems)?;
            parse_claude_agent(&text, &rel, problems)
        })
        .collect()
}

/// The frontmatter (between `---` lines) and the body of a Markdown file.
pub(crate) fn frontmatter(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---")?;
    let rest = rest
        .strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))?;
    let end = rest.find("\n---")?;
    let body = &rest[end + 4..];
    let body = body.split_once('\n').map_or("", |(_, b)| b);
    Some((&rest[..end], body))
}

pub(crate) fn parse_claude_agent(
    text_in: &str,
    rel: &str,
    problems: &mut Vec<String>,
) -> Option<Mode> {
    let Some((front, body)) = frontmatter(text_in) else {
        problems.push(format!(
            "{rel} has no frontmatter (`---` lines with name and description)"
        ));
        return None;
    };
    let meta: Value = match serde_norway::from_str(front) {
        Ok(v) => v,
        Err(e) => {
            problems.push(format!("{rel}: its frontmatter is not valid YAML: {e}"));
            return None;
        }
    };
    let name = text(&meta, "name");
    if !valid_slug(&name) {
        problems.push(format!(
            "{rel}: `name` must be letters, digits and dashes; the agent was left out"
        ));
        return None;
    }
    let tools: Option<Vec<String>> = match meta.get("tools") {
        Some(Value::String(s)) => Some(
            s.split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
        ),
        Some(Value::Sequence(l)) => Some(
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        _ => None,
    };
    let groups = match tools {
        None => vec![Group::Read, Group::Edit, Group::Command, Group::Mcp],
        Some(tools) => {
            let mut groups = Vec::new();
            for tool in &tools {
                let group = match tool.as_str() {
                    "Read" | "Grep" | "Glob" | "LS" => Some(Group::Read),
                    "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => Some(Group::Edit),
                    "Bash" => Some(Group::Command),
                    t if t.starts_with("mcp__") => Some(Group::Mcp),
                    _ => None,
                };
                if let Some(g) = group.filter(|g| !groups.contains(g)) {
                    groups.push(g);
                }
            }
            groups
        }
    };
    let description = text(&meta, "description");
    let body = body.trim();
    Some(Mode {
        slug: name.clone(),
        name: name.clone(),
        role_definition: if body.is_empty() {
            description.clone()
        } else {
            body.to_string()
        },
        when_to_use: description.clone(),
        description,
        custom_instructions: String::new(),
        groups,
        edit_regex: None,
        model: Some(text(&meta, "model")).filter(|m| !m.is_empty() && m != "inherit"),
        source: ModeSource::Project {
            file: rel.to_string(),
        },
    })
}

/// The rules of one mode: `.roo/rules-{slug}/` (its files, sorted, recursively),
/// `.roorules-{slug}` and `.clinerules-{slug}` in the workspace, and `rules-{slug}/` in the
/// config directory; each as (where it came from, text).
pub fn mode_rules(root: &Path, config: Option<&Path>, slug: &str) -> Vec<(String, String)> {
    const CAP: usize = 20_000;
    if !valid_slug(slug) {
        return Vec::new();
    }
    let mut found: Vec<(String, std::path::PathBuf)> = Vec::new();
    if let Some(config) = config {
        files_under(
            &config.join(format!("rules-{slug}")),
            &format!("~config/rules-{slug}"),
            &mut found,
        );
    }
    files_under(
        &root.join(format!(".roo/rules-{slug}")),
        &format!(".roo/rules-{slug}"),
        &mut found,
    );
    for name in [format!(".roorules-{slug}"), format!(".clinerules-{slug}")] {
        let path = root.join(&name);
        if path.is_file() {
            found.push((name, path));
        }
    }
    found
        .into_iter()
        .filter_map(|(shown, path)| {
            if std::fs::metadata(&path).ok()?.len() > MAX_FILE {
                return None;
            }
            let text = std::fs::read_to_string(&path).ok()?;
            let text = text.trim();
            (!text.is_empty()).then(|| (shown, crate::text::first_chars(text, CAP).to_string()))
        })
        .collect()
}

fn files_under(dir: &Path, shown: &str, out: &mut Vec<(String, std::path::PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            files_under(&e.path(), &format!("{shown}/{name}"), out);
        } else if kind.is_file() {
            out.push((format!("{shown}/{name}"), e.path()));
        }
    }
}

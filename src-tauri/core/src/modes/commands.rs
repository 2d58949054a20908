//! The person's skills and slash commands, read as they wrote them.
//!
//! - Skills: a folder with a `SKILL.md` (frontmatter `name`, `description`) under
//!   `.roo/skills/`, `.agents/skills/` or `.claude/skills/` in the workspace, or `skills/` in the
//!   config directory. The prompt lists each by name and description; the `skill` tool loads
//!   the body only when the model uses it.
//! - Slash commands: `NAME.md` under `.roo/commands/` or `.claude/commands/` (or `commands/` in
//!   the config directory), with optional frontmatter `description`, `argument-hint` and `mode`;
//!   `$ARGUMENTS` in the body is replaced by what follows `/NAME`. A message that starts with
//!   `/NAME` runs it (window and `mandate run`), and so does the `run_slash_command` tool.
//!
//! Workspace files win over global ones of the same name; a file that cannot be read is left
//! out and named.

use std::path::{Path, PathBuf};

use serde_norway::Value;

use super::load::{frontmatter, read_capped, text};

/// A skill: what the prompt lists, and where its body is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// `SKILL.md`, shown as the person knows it (`.claude/skills/x/SKILL.md`).
    pub shown: String,
    pub path: PathBuf,
}

/// A slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommand {
    pub name: String,
    pub description: String,
    pub argument_hint: String,
    /// The mode it runs in, when it names one.
    pub mode: Option<String>,
    pub shown: String,
    pub body: String,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with('.')
}

/// Where skills and commands are looked for: (folder, how it is shown), global first.
fn places(root: &Path, config: Option<&Path>, kind: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    if let Some(config) = config {
        out.push((config.join(kind), format!("~config/{kind}")));
    }
    let dirs: &[&str] = if kind == "skills" {
        &[".agents", ".claude", ".roo"]
    } else {
        &[".claude", ".roo"]
    };
    for dir in dirs {
        out.push((root.join(dir).join(kind), format!("{dir}/{kind}")));
    }
    out
}

fn sorted_entries(dir: &Path) -> Vec<std::fs::DirEntry> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    entries.sort_by_key(|e| e.file_name());
    entries
}

/// Every skill; later places replace earlier ones of the same name.
pub fn load_skills(root: &Path, config: Option<&Path>, problems: &mut Vec<String>) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for (dir, shown_dir) in places(root, config, "skills") {
        for entry in sorted_entries(&dir) {
            let folder = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path().join("SKILL.md");
            let shown = format!("{shown_dir}/{folder}/SKILL.md");
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Some(body) = read_capped(&path, &shown, problems) else {
                continue;
            };
            let meta =
                frontmatter(&body).and_then(|(f, _)| serde_norway::from_str::<Value>(f).ok());
            let Some(meta) = meta else {
                problems.push(format!(
                    "{shown} has no frontmatter with a name and a description"
                ));
                continue;
            };
            let name = Some(text(&meta, "name"))
                .filter(|n| !n.is_empty())
                .unwrap_or(folder);
            let description = text(&meta, "description");
            if !valid_name(&name) || description.is_empty() {
                problems.push(format!(
                    "{shown}: a skill needs a name (letters, digits, dashes) and a description"
                ));
                continue;
            }
            let skill = Skill {
                name,
                description,
                shown,
                path,
            };
            match skills.iter_mut().find(|s| s.name == skill.name) {
                Some(slot) => *slot = skill,
                None => skills.push(skill),
            }
        }
    }
    skills
}

/// Every slash command; later places replace earlier ones of the same name.
pub fn load_commands(
    root: &Path,
    config: Option<&Path>,
    problems: &mut Vec<String>,
) -> Vec<SlashCommand> {
    let mut commands: Vec<SlashCommand> = Vec::new();
    for (dir, shown_dir) in places(root, config, "commands") {
        for entry in sorted_entries(&dir) {
            let file = entry.file_name().to_string_lossy().into_owned();
            let Some(name) = file.strip_suffix(".md") else {
                continue;
            };
            let shown = format!("{shown_dir}/{file}");
            if !valid_name(name) {
                problems.push(format!(
                    "{shown}: a command's name is letters, digits and dashes"
                ));
                continue;
            }
            let Some(text_in) = read_capped(&entry.path(), &shown, problems) else {
                continue;
            };
            let (meta, body) = match frontmatter(&text_in) {
                Some((front, body)) => match serde_norway::from_str::<Value>(front) {
                    Ok(meta) => (meta, body.to_string()),
                    Err(e) => {
                        problems.push(format!("{shown}: its frontmatter is not valid YAML: {e}"));
                        continue;
                    }
                },
                None => (Value::Null, text_in.clone()),
            };
            let command = SlashCommand {
                name: name.to_string(),
                description: text(&meta, "description"),
                argument_hint: text(&meta, "argument-hint"),
                mode: Some(text(&meta, "mode")).filter(|m| !m.is_empty()),
                shown,
                body: body.trim().to_string(),
            };
            match commands.iter_mut().find(|c| c.name == command.name) {
                Some(slot) => *slot = command,
                None => commands.push(command),
            }
        }
    }
    commands
}

impl SlashCommand {
    /// The command as the message box and Settings offer it.
    pub fn info(&self) -> crate::protocol::CommandInfo {
        crate::protocol::CommandInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            argument_hint: self.argument_hint.clone(),
            source: self.shown.clone(),
        }
    }

    /// The command's body with `$ARGUMENTS` replaced.
    pub fn expand(&self, arguments: &str) -> String {
        let arguments = arguments.trim();
        if self.body.contains("$ARGUMENTS") {
            self.body.replace("$ARGUMENTS", arguments)
        } else if arguments.is_empty() {
            self.body.clone()
        } else {
            format!("{}\n\nArguments: {arguments}", self.body)
        }
    }
}

/// `/name rest` split into the name and the rest; None when `message` is not a command call.
pub fn command_call(message: &str) -> Option<(&str, &str)> {
    let rest = message.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    valid_name(name).then_some((name, args))
}

/// What the person's message becomes: the command's text when it starts with a known
/// `/NAME` (with the command, for its mode), otherwise the message as it is.
pub fn expand_message<'c>(
    message: &str,
    commands: &'c [SlashCommand],
) -> (String, Option<&'c SlashCommand>) {
    if let Some((name, args)) = command_call(message) {
        if let Some(command) = commands.iter().find(|c| c.name == name) {
            let expanded = format!(
                "<command name=\"/{}\" from=\"{}\">\n{}\n</command>",
                command.name,
                command.shown,
                command.expand(args)
            );
            return (expanded, Some(command));
        }
    }
    (message.to_string(), None)
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;

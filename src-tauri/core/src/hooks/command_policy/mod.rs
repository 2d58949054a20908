//! Classifies the shell command lines the agent wants to run as SAFE (read-only, may run
//! without asking when the user allows it) or DESTRUCTIVE (always needs human approval).
//!
//! The line is parsed into simple commands (`parse`, `words`), each command is unwrapped
//! from `sudo`, `env`, `xargs`, `sh -c` and the like (`classify`, `wrappers`), and the
//! command that really runs is checked against rules loaded from YAML (`rules`). Anything
//! not known to be read-only is destructive: the agent's commands are hostile input.

mod classify;
mod confinement;
mod options;
mod parse;
mod protected;
mod redirects;
mod rules;
#[cfg(test)]
mod tests;
mod words;
mod wrappers;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;
use serde::Deserialize;

use rules::{DestructiveRule, SafeRule, ValueOptions};

pub use confinement::{BuildOutput, ConfinementSettings};
pub use protected::{protected_target, ProtectedTarget};

/// The built-in policy, also the template for a workspace's own policy file.
const DEFAULT_POLICY: &str = include_str!("../default_command_policy.yaml");
const BUILTIN_PATH: &str = "<built-in>";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandClass {
    Safe,
    Destructive,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub class: CommandClass,
    /// Human-readable reasons, one per finding, e.g. "`rm -rf build` deletes files". Empty for Safe.
    pub reasons: Vec<String>,
    /// The simple commands found in the line, in order, as text (for display).
    pub segments: Vec<String>,
    /// What the command needs beyond the confinement's defaults, from the rules that matched
    /// (`npm install` needs the network, `git commit` writes `.git/`). The person grants or
    /// refuses each on the approval card; nothing is granted without approval.
    pub needs: CommandNeeds,
}

/// Rights a command asks for beyond what confinement grants by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CommandNeeds {
    /// It reaches the network (a package registry, a remote repository).
    pub network: bool,
    /// It writes the repository's own database, `.git/`.
    pub write_git: bool,
}

impl CommandNeeds {
    fn merge(&mut self, other: CommandNeeds) {
        self.network |= other.network;
        self.write_git |= other.write_git;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("command policy {path}: {message}")]
    Parse { path: String, message: String },
    #[error("command policy {path}: rule `{rule}`: {message}")]
    BadRule {
        path: String,
        rule: String,
        message: String,
    },
    #[error("command policy {path}: example `{command}` is classified {actual:?} but the policy says {expected:?}{detail}")]
    ExampleMismatch {
        path: String,
        command: String,
        expected: CommandClass,
        actual: CommandClass,
        detail: String,
    },
}

/// Compiled rules, ready to classify command lines.
#[derive(Debug, Clone)]
pub struct CommandPolicy {
    safe: Vec<SafeRule>,
    destructive: Vec<DestructiveRule>,
    /// Variables whose assignment can change what later commands run (`PATH`, `LD_PRELOAD`).
    protected_variables: Vec<Regex>,
    value_options: ValueOptions,
    confinement: ConfinementSettings,
    /// Lines already judged (a task runs the same few lines again and again): a line's class
    /// depends on the rules and the line alone. A changed policy file is a new policy, with
    /// none.
    seen: Arc<Mutex<HashMap<String, Seen>>>,
}

/// A judged line, and for a destructive one its parse: each call searches the parse for
/// protected paths again (they follow the files as they are now), but parsing the line again
/// took about 20 µs, ten times the pre-hook's whole decision on a safe line already judged.
#[derive(Debug, Clone)]
struct Seen {
    classification: Classification,
    script: Option<Arc<parse::Script>>,
}

/// How many judged lines a policy keeps (emptied when full), and the longest kept.
const SEEN_LINES: usize = 512;
const SEEN_LINE_BYTES: usize = 4096;

impl CommandPolicy {
    pub const FILE_NAME: &'static str = "command_policy.yaml";

    /// The built-in policy. Never fails: should the embedded file ever be broken (a unit
    /// test proves it is not), every command is destructive.
    pub fn builtin() -> CommandPolicy {
        static BUILTIN: OnceLock<CommandPolicy> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                CommandPolicy::from_yaml(DEFAULT_POLICY, BUILTIN_PATH).unwrap_or(CommandPolicy {
                    safe: Vec::new(),
                    destructive: Vec::new(),
                    protected_variables: Vec::new(),
                    value_options: ValueOptions::default(),
                    confinement: ConfinementSettings::default(),
                    seen: Arc::default(),
                })
            })
            .clone()
    }

    /// Compiles the rules in `text`, then checks that every example is classified as it says.
    pub fn from_yaml(text: &str, path_for_errors: &str) -> Result<CommandPolicy, PolicyError> {
        let path = path_for_errors;
        let file: PolicyFile =
            crate::orchestration::yaml::from_str(text).map_err(|e| PolicyError::Parse {
                path: path.to_string(),
                message: e.to_string(),
            })?;
        if file.version != 1 {
            return Err(PolicyError::Parse {
                path: path.to_string(),
                message: format!(
                    "unsupported `version: {}` (this version of Mandate reads version 1)",
                    file.version
                ),
            });
        }
        let bad_rule = |rule: String, message: String| PolicyError::BadRule {
            path: path.to_string(),
            rule,
            message,
        };
        let mut protected_variables = Vec::new();
        for (i, pattern) in file.protected_variables.iter().enumerate() {
            let regex = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
                bad_rule(
                    format!("protected_variables #{}", i + 1),
                    format!("bad regex `{pattern}`: {e}"),
                )
            })?;
            protected_variables.push(regex);
        }
        let safe = file
            .safe
            .into_iter()
            .enumerate()
            .map(|(i, spec)| {
                SafeRule::compile(spec)
                    .map_err(|(name, m)| bad_rule(format!("safe #{} ({name})", i + 1), m))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let destructive = file
            .destructive
            .into_iter()
            .enumerate()
            .map(|(i, spec)| {
                DestructiveRule::compile(spec)
                    .map_err(|(name, m)| bad_rule(format!("destructive #{} ({name})", i + 1), m))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let confinement = ConfinementSettings::compile(file.confinement)
            .map_err(|m| bad_rule("confinement".into(), m))?;
        let policy = CommandPolicy {
            confinement,
            value_options: ValueOptions::gather(&safe, &destructive),
            safe,
            destructive,
            protected_variables,
            seen: Arc::default(),
        };
        for example in &file.examples {
            let expected = match example.class {
                ExampleClass::Safe => CommandClass::Safe,
                ExampleClass::Destructive => CommandClass::Destructive,
            };
            let found = policy.classify(&example.command);
            if found.class != expected {
                // Say why it is destructive, or what was found to be read-only.
                let detail = if !found.reasons.is_empty() {
                    format!(" ({})", found.reasons.join("; "))
                } else if !found.segments.is_empty() {
                    format!(" (read-only: `{}`)", found.segments.join("`, `"))
                } else {
                    String::new()
                };
                return Err(PolicyError::ExampleMismatch {
                    path: path.to_string(),
                    command: example.command.clone(),
                    expected,
                    actual: found.class,
                    detail,
                });
            }
        }
        Ok(policy)
    }

    /// Loads `<root>/.orchestration/command_policy.yaml` if it exists, else the built-in policy.
    /// A workspace file replaces the built-in policy entirely.
    pub fn load(workspace_root: &Path) -> Result<CommandPolicy, PolicyError> {
        let path = crate::orchestration::dir(workspace_root).join(Self::FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => CommandPolicy::from_yaml(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(CommandPolicy::builtin()),
            Err(e) => Err(PolicyError::Parse {
                path: path.display().to_string(),
                message: format!("cannot read the file: {e}"),
            }),
        }
    }

    /// What the policy says about confinement: build-output directories that commands may
    /// write, and the environment commands get.
    pub fn confinement(&self) -> &ConfinementSettings {
        &self.confinement
    }

    pub fn classify(&self, command_line: &str) -> Classification {
        if let Some(seen) = self.seen(command_line) {
            return seen.classification;
        }
        self.judged(command_line, parse::parse(command_line, 0))
            .classification
    }

    /// The class of `command_line` and, when it is destructive, the first word that reaches a
    /// protected path run in `cwd` (see [`protected_target`]); the line is parsed once, and a
    /// safe line is not searched (nothing would be refused for it). The search is made for
    /// every call: it follows the paths as they are now.
    pub fn classify_in(
        &self,
        command_line: &str,
        workspace_root: &Path,
        cwd: &Path,
    ) -> (Classification, Option<ProtectedTarget>) {
        let seen = match self.seen(command_line) {
            Some(seen) => seen,
            None => self.judged(command_line, parse::parse(command_line, 0)),
        };
        let target = match (&seen.script, seen.classification.class) {
            (Some(script), CommandClass::Destructive) => {
                protected::in_script(script, workspace_root, cwd)
            }
            _ => None,
        };
        (seen.classification, target)
    }

    fn seen(&self, command_line: &str) -> Option<Seen> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(command_line).cloned()
    }

    /// Classifies a parsed line and keeps the result (with the parse, for a destructive line)
    /// for the next time.
    fn judged(&self, command_line: &str, parsed: parse::Result<parse::Script>) -> Seen {
        let classification = self.classified(parsed.as_ref());
        let script = match (parsed, classification.class) {
            (Ok(script), CommandClass::Destructive) => Some(Arc::new(script)),
            _ => None,
        };
        let judged = Seen {
            classification,
            script,
        };
        if command_line.len() <= SEEN_LINE_BYTES {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            if seen.len() >= SEEN_LINES {
                seen.clear();
            }
            seen.insert(command_line.to_string(), judged.clone());
        }
        judged
    }

    fn classified(
        &self,
        parsed: std::result::Result<&parse::Script, &parse::ParseError>,
    ) -> Classification {
        let (reasons, segments, needs) = match parsed {
            Ok(script) => classify::classify_script(self, script),
            Err(e) => (
                vec![format!("could not parse the command line: {e}")],
                Vec::new(),
                CommandNeeds::default(),
            ),
        };
        let class = if reasons.is_empty() {
            CommandClass::Safe
        } else {
            CommandClass::Destructive
        };
        Classification {
            class,
            reasons,
            segments,
            needs,
        }
    }
}

// ---- The file format (see the comments at the top of default_command_policy.yaml) ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    version: u32,
    #[serde(default)]
    protected_variables: Vec<String>,
    #[serde(default)]
    safe: Vec<SafeRuleSpec>,
    #[serde(default)]
    destructive: Vec<DestructiveRuleSpec>,
    #[serde(default)]
    examples: Vec<ExampleSpec>,
    #[serde(default)]
    confinement: confinement::ConfinementSpec,
}

/// `command: ls` or `command: [ls, dir]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Names {
    One(Name),
    Many(Vec<Name>),
}

/// YAML reads a bare `true` or `false` as a boolean; as a command name it is the command.
#[derive(Deserialize)]
#[serde(untagged)]
enum Name {
    Text(String),
    Boolean(bool),
}

impl Name {
    fn into_string(self) -> String {
        match self {
            Name::Text(name) => name,
            Name::Boolean(value) => value.to_string(),
        }
    }
}

impl Names {
    fn into_vec(self) -> Vec<String> {
        match self {
            Names::One(name) => vec![name.into_string()],
            Names::Many(names) => names.into_iter().map(Name::into_string).collect(),
        }
    }
}

/// `"^-i"` or `{ pattern: "^-i", reason: "edits files in place" }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum UnlessSpec {
    Pattern(String),
    Explained(ExplainedPattern),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExplainedPattern {
    pattern: String,
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SafeRuleSpec {
    command: Names,
    #[serde(default)]
    subcommands: Vec<String>,
    #[serde(default)]
    value_options: Vec<String>,
    #[serde(default)]
    unless_args: Vec<UnlessSpec>,
    #[serde(default)]
    unless_options: Vec<OptionRefusalSpec>,
    max_operands: Option<usize>,
    program: Option<ProgramSpec>,
}

/// `{ options: [-i, --in-place], reason: "edits files in place" }`: long options match by
/// any prefix, short ones inside clusters, as the program reads them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionRefusalSpec {
    options: Vec<String>,
    reason: String,
}

/// The program a command runs from its arguments (sed's script): checked on its own, so
/// that file names are not mistaken for it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramSpec {
    #[serde(default)]
    options: Vec<String>,
    unless: Vec<UnlessSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DestructiveRuleSpec {
    command: Names,
    #[serde(default)]
    subcommands: Vec<String>,
    #[serde(default)]
    value_options: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default)]
    unless_args: Vec<String>,
    reason: String,
    #[serde(default)]
    needs: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExampleSpec {
    command: String,
    class: ExampleClass,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum ExampleClass {
    Safe,
    Destructive,
}

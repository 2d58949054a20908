//! The project's own check (`cargo check`, `tsc --noEmit`, `ruff`/`pyright`, `go vet`, or the
//! command the person configured): which one a workspace has, the problems it prints, and
//! which of them are new since the last run. Running it confined is `check_run.rs`; when it
//! runs and what the model is told, `agent/check_steps.rs`.
//!
//! The person chooses in `.mandate/check.json` (a path only the person edits, like the hooks
//! beside it): `{"command": "cargo clippy --message-format=short", "format": "cargo"}`,
//! `{"command": "off"}`, or only `{"timeout_seconds": 300}` to keep what is detected. The model
//! never chooses the command.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use super::check_parse::parse;

/// The person's choice of check, in the workspace.
pub const CONFIG_FILE: &str = ".mandate/check.json";

/// How long a check may run before it is killed, unless the person says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// At most this long, whatever the file says.
const MAX_TIMEOUT: Duration = Duration::from_secs(1800);

/// The program whose output a check prints, which says how to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    Cargo,
    Tsc,
    Ruff,
    Pyright,
    GoVet,
    /// A configured command that is none of the above: `path:line:col: message` lines.
    Other,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Cargo => "cargo",
            Tool::Tsc => "tsc",
            Tool::Ruff => "ruff",
            Tool::Pyright => "pyright",
            Tool::GoVet => "go vet",
            Tool::Other => "check",
        }
    }

    /// The tool a configured command line runs, by its program's name.
    fn of_line(line: &str) -> Tool {
        let program = line
            .split_whitespace()
            .find(|w| !w.contains('='))
            .unwrap_or("");
        let name = program.rsplit('/').next().unwrap_or(program);
        match name {
            "cargo" => Tool::Cargo,
            "tsc" => Tool::Tsc,
            "ruff" => Tool::Ruff,
            "pyright" | "basedpyright" => Tool::Pyright,
            "go" => Tool::GoVet,
            "npx" if line.contains(" tsc") => Tool::Tsc,
            _ => Tool::Other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One problem a check printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// Workspace-relative where the file is inside it (absolute otherwise); empty for a
    /// problem of the project as a whole.
    pub path: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub severity: Severity,
    pub message: String,
    pub source: Tool,
}

impl Problem {
    /// What makes two problems the same across edits: not the line, which edits move.
    fn key(&self) -> (&str, Severity, &str) {
        (&self.path, self.severity, &self.message)
    }

    /// `path:line:col: severity: message (tool)`.
    pub fn describe(&self) -> String {
        let mut at = self.path.clone();
        if let Some(line) = self.line {
            at.push_str(&format!(":{line}"));
            if let Some(column) = self.column {
                at.push_str(&format!(":{column}"));
            }
        }
        let at = if at.is_empty() {
            String::new()
        } else {
            format!("{at}: ")
        };
        format!(
            "{at}{}: {} ({})",
            self.severity.name(),
            self.message,
            self.source.name()
        )
    }
}

/// One check to run: its line (for `bash -c`, in the workspace root), the tool that reads its
/// output, and how long it may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckCommand {
    pub tool: Tool,
    pub line: String,
    pub timeout: Duration,
}

/// What the person chose in [`CONFIG_FILE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// No file (or no `command`): what [`detect`] finds.
    Detect,
    /// `"command": "off"`.
    Off,
    Command {
        line: String,
        tool: Tool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSetting {
    pub choice: Choice,
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{CONFIG_FILE} is not valid: {0}")]
pub struct ConfigError(pub String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    command: Option<String>,
    format: Option<Tool>,
    timeout_seconds: Option<u64>,
}

/// The person's choice for the workspace `root`; [`Choice::Detect`] without a file.
pub fn setting(root: &Path) -> Result<CheckSetting, ConfigError> {
    let text = match std::fs::read_to_string(root.join(CONFIG_FILE)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(CheckSetting {
                choice: Choice::Detect,
                timeout: DEFAULT_TIMEOUT,
            })
        }
        Err(e) => return Err(ConfigError(e.to_string())),
    };
    let file: ConfigFile = serde_json::from_str(&text).map_err(|e| ConfigError(e.to_string()))?;
    let timeout = match file.timeout_seconds {
        None => DEFAULT_TIMEOUT,
        Some(0) => return Err(ConfigError("timeout_seconds must be at least 1".into())),
        Some(s) => Duration::from_secs(s).min(MAX_TIMEOUT),
    };
    let choice = match file.command.as_deref().map(str::trim) {
        None | Some("") => Choice::Detect,
        Some(off) if off.eq_ignore_ascii_case("off") => Choice::Off,
        Some(line) if line.contains('\0') || line.contains('\n') => {
            return Err(ConfigError("the command must be one line".into()))
        }
        Some(line) => Choice::Command {
            tool: file.format.unwrap_or_else(|| Tool::of_line(line)),
            line: line.to_string(),
        },
    };
    Ok(CheckSetting { choice, timeout })
}

/// The checks of the workspace `root`: the configured one, or those detected (several in a
/// workspace of several languages), or none.
pub fn commands(root: &Path) -> Result<Vec<CheckCommand>, ConfigError> {
    let setting = setting(root)?;
    Ok(match setting.choice {
        Choice::Off => Vec::new(),
        Choice::Command { line, tool } => vec![CheckCommand {
            tool,
            line,
            timeout: setting.timeout,
        }],
        Choice::Detect => detect(root, &|name| {
            let path = std::env::var("PATH").unwrap_or_default();
            crate::sandbox::find_program(name, &[("PATH".into(), path)], root)
        })
        .into_iter()
        .map(|(tool, line)| CheckCommand {
            tool,
            line,
            timeout: setting.timeout,
        })
        .collect(),
    })
}

/// The checks the files at `root` call for, of those installed (`find` looks a program up on
/// the `PATH`): `Cargo.toml` → cargo, `tsconfig.json` with the project's own `tsc`,
/// `pyproject.toml`/`ruff.toml` → ruff (else pyright), `go.mod` → go vet.
pub fn detect(root: &Path, find: &dyn Fn(&str) -> Option<PathBuf>) -> Vec<(Tool, String)> {
    let has = |name: &str| root.join(name).is_file();
    let local = |rel: &str| {
        std::fs::metadata(root.join(rel)).is_ok_and(|m| {
            m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
        })
    };
    // A program the project keeps (a virtual environment's, `node_modules`'), else the PATH's.
    let program = |name: &str, dirs: &[&str]| -> Option<String> {
        dirs.iter()
            .map(|d| format!("{d}/{name}"))
            .find(|rel| local(rel))
            .or_else(|| find(name).map(|_| name.to_string()))
    };
    let mut found = Vec::new();
    if has("Cargo.toml") && find("cargo").is_some() {
        found.push((
            Tool::Cargo,
            "cargo check --message-format=short".to_string(),
        ));
    }
    if has("tsconfig.json") && local("node_modules/.bin/tsc") {
        found.push((
            Tool::Tsc,
            "node_modules/.bin/tsc --noEmit --pretty false".to_string(),
        ));
    }
    let python = [
        "pyproject.toml",
        "ruff.toml",
        ".ruff.toml",
        "pyrightconfig.json",
    ];
    if python.iter().any(|f| has(f)) {
        let venvs = [".venv/bin", "venv/bin"];
        if let Some(ruff) = program("ruff", &venvs) {
            found.push((
                Tool::Ruff,
                format!("{ruff} check --output-format=concise --no-cache"),
            ));
        } else if let Some(pyright) = program("pyright", &[".venv/bin", "node_modules/.bin"]) {
            found.push((Tool::Pyright, pyright));
        }
    }
    if has("go.mod") && find("go").is_some() {
        found.push((Tool::GoVet, "go vet ./...".to_string()));
    }
    found
}

/// The problems of `now` that were not in `before`: compared by path, severity and message
/// (not by line, which edits move), each occurrence counted, so a second copy of an old
/// problem is new.
pub fn new_problems(before: &[Problem], now: &[Problem]) -> Vec<Problem> {
    let mut left: std::collections::HashMap<(&str, Severity, &str), usize> = Default::default();
    for p in before {
        *left.entry(p.key()).or_default() += 1;
    }
    now.iter()
        .filter(|p| match left.get_mut(&p.key()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect()
}

/// The problems one per line, errors first, at most `max`, then how many more there are.
pub fn describe(problems: &[Problem], max: usize) -> String {
    let mut sorted: Vec<&Problem> = problems.iter().collect();
    sorted.sort_by(|a, b| (a.severity, &a.path, a.line).cmp(&(b.severity, &b.path, b.line)));
    let mut lines: Vec<String> = sorted.iter().take(max).map(|p| p.describe()).collect();
    if problems.len() > max {
        lines.push(format!("… and {} more", problems.len() - max));
    }
    lines.join("\n")
}

/// How many errors and warnings, in words: `2 errors and 1 warning`.
pub fn counted(problems: &[Problem]) -> String {
    let errors = problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    let others = problems.len() - errors;
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    match (errors, others) {
        (e, 0) => plural(e, "error"),
        (0, o) => plural(o, "warning"),
        (e, o) => format!("{} and {}", plural(e, "error"), plural(o, "warning")),
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;

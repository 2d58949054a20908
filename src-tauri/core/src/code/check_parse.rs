//! Reading a check's output into problems: `cargo check --message-format=short`,
//! `tsc --pretty false`, `ruff check --output-format=concise`, pyright's text output,
//! `go vet`, and for any other command the common `path:line:col: message` lines.

use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use super::check::{Problem, Severity, Tool};

/// At most this many problems are kept from one run (a broken build can print thousands).
const MAX_PROBLEMS: usize = 2000;
/// A message longer than this is cut.
const MAX_MESSAGE: usize = 600;

struct Patterns {
    /// `path(line,col): rest` (tsc).
    parens: Regex,
    /// `  path:line:col - rest` (pyright).
    dash: Regex,
    /// `path:line[:col]: rest` (cargo's short format, ruff, go, compilers at large).
    colon: Regex,
    /// ` --> path:line:col` under a located-nowhere cargo error (a manifest's).
    arrow: Regex,
    /// `error[E0308]: rest`, `warning: rest`, `error TS2322: rest`.
    severity: Regex,
}

fn patterns() -> Option<&'static Patterns> {
    static PATTERNS: OnceLock<Option<Patterns>> = OnceLock::new();
    PATTERNS
        .get_or_init(|| {
            Some(Patterns {
                parens: Regex::new(r"^([^\s(:][^(:]*?)\((\d+),(\d+)\): (.+)$").ok()?,
                dash: Regex::new(r"^\s*([^\s:][^:]*?):(\d+):(\d+) - (.+)$").ok()?,
                colon: Regex::new(r"^(?:vet: )?([^\s:][^:]*?):(\d+)(?::(\d+))?: (.+)$").ok()?,
                arrow: Regex::new(r"^\s*--> ([^:]+):(\d+):(\d+)\s*$").ok()?,
                severity: Regex::new(
                    r"^(?i)(error|warning|warn|note|help|info|information|hint)(?:\[(\w+)\]| (TS\d+))?: (.*)$",
                )
                .ok()?,
            })
        })
        .as_ref()
}

/// The problems in the output of a check run by `tool` in the workspace `root`.
pub fn parse(tool: Tool, output: &str, root: &Path) -> Vec<Problem> {
    let Some(p) = patterns() else {
        return Vec::new();
    };
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut problems: Vec<Problem> = Vec::new();
    // A cargo error located nowhere yet, waiting for its ` --> ` line.
    let mut unplaced: Option<Problem> = None;
    for line in output.lines() {
        if problems.len() >= MAX_PROBLEMS {
            break;
        }
        let line = line.trim_end();
        if let Some(c) = p.arrow.captures(line) {
            if let Some(mut problem) = unplaced.take() {
                problem.path = relative(&c[1], root, &real_root);
                problem.line = c[2].parse().ok();
                problem.column = c[3].parse().ok();
                problems.push(problem);
            }
            continue;
        }
        problems.extend(unplaced.take());
        let located = p
            .parens
            .captures(line)
            .filter(|_| matches!(tool, Tool::Tsc | Tool::Other))
            .or_else(|| {
                p.dash
                    .captures(line)
                    .filter(|_| matches!(tool, Tool::Pyright | Tool::Other))
            })
            .or_else(|| p.colon.captures(line));
        if let Some(c) = located {
            let (severity, message) = judged(tool, &c[4], p);
            problems.push(Problem {
                path: relative(&c[1], root, &real_root),
                line: c[2].parse().ok(),
                column: c.get(3).and_then(|m| m.as_str().parse().ok()),
                severity,
                message: cut(message),
                source: tool,
            });
            continue;
        }
        let continues = line.starts_with(char::is_whitespace) && !line.trim().is_empty();
        if continues && matches!(tool, Tool::Tsc | Tool::Pyright) {
            if let Some(last) = problems.last_mut() {
                last.message = cut(format!("{} {}", last.message, line.trim()));
            }
            continue;
        }
        if let Some(problem) = unlocated(tool, line, p) {
            match tool {
                Tool::Cargo => unplaced = Some(problem),
                _ => problems.push(problem),
            }
        }
    }
    problems.extend(unplaced);
    problems.truncate(MAX_PROBLEMS);
    problems
}

/// The severity and the message of what follows a location.
fn judged(tool: Tool, rest: &str, p: &Patterns) -> (Severity, String) {
    let rest = rest.trim();
    if tool == Tool::Ruff {
        // `F401 [*] `os` imported but unused`; a syntax error is an error, a rule a warning.
        let message = rest.replacen(" [*] ", " ", 1);
        let code = message.split_whitespace().next().unwrap_or("");
        let error =
            code.starts_with("SyntaxError") || code.starts_with("invalid-syntax") || code == "E999";
        let severity = if error {
            Severity::Error
        } else {
            Severity::Warning
        };
        return (severity, message);
    }
    match p.severity.captures(rest) {
        Some(c) => {
            let code = c.get(2).or_else(|| c.get(3)).map(|m| m.as_str());
            let message = match code {
                Some(code) => format!("{} [{code}]", &c[4]),
                None => c[4].to_string(),
            };
            (severity_of(&c[1]), message)
        }
        // `go vet` names no severity: what it finds is a likely bug, as a type error is.
        None => (Severity::Error, rest.to_string()),
    }
}

fn severity_of(word: &str) -> Severity {
    match word.to_ascii_lowercase().as_str() {
        "error" => Severity::Error,
        "warning" | "warn" => Severity::Warning,
        _ => Severity::Info,
    }
}

/// A problem the tool names without a file (a broken manifest, a configuration error), or
/// None for the lines around problems (summaries, progress).
fn unlocated(tool: Tool, line: &str, p: &Patterns) -> Option<Problem> {
    let c = p.severity.captures(line)?;
    let severity = severity_of(&c[1]);
    let message = c[4].trim();
    let summary = [
        "could not compile",
        "aborting due to",
        "build failed",
        "Found ",
        "generated ",
    ];
    let is_summary = summary.iter().any(|s| message.contains(s))
        || message.starts_with('`')
        || message.is_empty();
    let wanted = match tool {
        Tool::Cargo | Tool::Tsc | Tool::Other => severity == Severity::Error,
        Tool::Ruff | Tool::Pyright | Tool::GoVet => false,
    };
    (wanted && !is_summary).then(|| Problem {
        path: String::new(),
        line: None,
        column: None,
        severity,
        message: cut(match c.get(3) {
            Some(code) => format!("{message} [{}]", code.as_str()),
            None => message.to_string(),
        }),
        source: tool,
    })
}

/// `path` as the workspace knows it: relative when inside `root`, `./` dropped.
fn relative(path: &str, root: &Path, real_root: &Path) -> String {
    let path = path.trim();
    let as_path = Path::new(path);
    if as_path.is_absolute() {
        for base in [root, real_root] {
            if let Ok(rel) = as_path.strip_prefix(base) {
                return rel.to_string_lossy().into_owned();
            }
        }
        return path.to_string();
    }
    let mut rel = path;
    while let Some(rest) = rel.strip_prefix("./") {
        rel = rest;
    }
    rel.to_string()
}

fn cut(message: String) -> String {
    if message.len() <= MAX_MESSAGE {
        return message;
    }
    format!("{}…", crate::text::first_chars(&message, MAX_MESSAGE))
}

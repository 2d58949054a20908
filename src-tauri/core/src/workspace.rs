//! Path resolution inside the workspace root. Every path from the model or the UI goes through
//! [`Workspace::resolve`] before anything is read, matched against a scope, or written.
//!
//! The relative path used for scope matching is the *real* one: symlinks are resolved, so a link
//! inside an owned directory that points elsewhere in the tree is matched where it lands.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path is empty")]
    Empty,
    #[error("the path `{0}` contains a NUL byte or a control character")]
    Control(String),
    #[error("the path `{0}` uses `\\` separators; use `/`")]
    Backslash(String),
    #[error("the path `{path}` contains the invisible or look-alike character U+{code:04X}")]
    Unicode { path: String, code: u32 },
    #[error("the path `{0}` is outside the workspace")]
    Outside(String),
    #[error("the path `{path}` leads outside the workspace through the symlink `{link}`")]
    SymlinkEscape { path: String, link: String },
    #[error("could not resolve `{path}`: {message}")]
    Io { path: String, message: String },
}

/// A path known to be inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute path, symlinks in existing parents resolved.
    pub abs: PathBuf,
    /// Workspace-relative, `/`-separated, symlinks resolved; empty for the root itself.
    pub rel: String,
}

impl ResolvedPath {
    pub fn display(&self) -> &str {
        if self.rel.is_empty() {
            "."
        } else {
            &self.rel
        }
    }
}

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// The root is canonicalized once; everything is compared against that.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Self {
            root: root.canonicalize()?,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path given by the model or the user.
    pub fn resolve(&self, input: &str) -> Result<ResolvedPath, PathError> {
        check_characters(input)?;
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(PathError::Empty);
        }
        let path = Path::new(trimmed);
        let relative: PathBuf = if path.is_absolute() {
            match path.strip_prefix(&self.root) {
                Ok(rest) => rest.to_path_buf(),
                Err(_) => return Err(PathError::Outside(trimmed.to_string())),
            }
        } else {
            path.to_path_buf()
        };
        // Lexical normalisation: `..` may not climb above the root.
        let mut parts: Vec<String> = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(PathError::Outside(trimmed.to_string()));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(PathError::Outside(trimmed.to_string()))
                }
            }
        }
        self.resolve_parts(trimmed, &parts)
    }

    /// Follows symlinks in the part of the path that exists; the rest is new and cannot be a link.
    fn resolve_parts(&self, input: &str, parts: &[String]) -> Result<ResolvedPath, PathError> {
        let mut existing = self.root.clone();
        let mut consumed = 0;
        for part in parts {
            let next = existing.join(part);
            match std::fs::symlink_metadata(&next) {
                Ok(meta) => {
                    if meta.file_type().is_symlink() {
                        let target = next.canonicalize().map_err(|e| PathError::Io {
                            path: input.to_string(),
                            message: format!("the symlink `{part}` cannot be followed ({e})"),
                        })?;
                        if !target.starts_with(&self.root) {
                            return Err(PathError::SymlinkEscape {
                                path: input.to_string(),
                                link: parts[..=consumed].join("/"),
                            });
                        }
                        existing = target;
                    } else {
                        existing = next;
                    }
                    consumed += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) => {
                    return Err(PathError::Io {
                        path: input.to_string(),
                        message: e.to_string(),
                    })
                }
            }
        }
        let mut abs = existing;
        for part in &parts[consumed..] {
            abs.push(part);
        }
        let rel = abs
            .strip_prefix(&self.root)
            .map_err(|_| PathError::Outside(input.to_string()))?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        Ok(ResolvedPath { abs, rel })
    }

    /// The workspace-relative POSIX form of an absolute path under the root.
    pub fn relative(&self, abs: &Path) -> Option<String> {
        let rest = abs.strip_prefix(&self.root).ok()?;
        Some(
            rest.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/"),
        )
    }
}

/// Paths no agent action may write, whatever the intent says: `rel` is workspace-relative and
/// already resolved (`Workspace::resolve`), so `./.orchestration`, `x/../.orchestration` and a
/// symlink to it all arrive here as `.orchestration/…`. Names are compared without case, for
/// case-insensitive file systems.
pub fn protected_reason(rel: &str) -> Option<&'static str> {
    let mut parts = rel.split('/').filter(|p| !p.is_empty() && *p != ".");
    let first = parts.next()?.to_ascii_lowercase();
    match first.as_str() {
        ".orchestration" => return Some(
            "`.orchestration/` holds the intents and the trace ledger; only Mandate writes there",
        ),
        ".intentignore" => {
            return Some(
                "`.intentignore` lists the paths no intent may change; only the person edits it",
            )
        }
        // The person's own hooks run on every tool call: the agent must not write them.
        ".mandate" => {
            return Some("`.mandate/` holds the person's hooks; only the person edits it")
        }
        ".claude" => {
            return Some(
                "`.claude/` holds the person's Claude Code settings and hooks; only the person edits it",
            )
        }
        // The servers it defines run as programs; headless `--trust-mcp NAME` trusts by name.
        ".mcp.json" => {
            return Some(
                "`.mcp.json` defines the workspace's MCP servers; only the person edits it",
            )
        }
        // Modes, rules, commands and skills say what the agent may do and how: the person's.
        ".roomodes" => {
            return Some(
                "`.roomodes` defines the workspace's modes and what each may do; only the person edits it",
            )
        }
        ".roo" => {
            return Some(
                "`.roo/` holds the person's rules, commands and skills; only the person edits it",
            )
        }
        ".agents" => {
            return Some("`.agents/` holds the person's skills; only the person edits it")
        }
        n if n.starts_with(".roorules") || n.starts_with(".clinerules") => {
            return Some("rule files for agents are the person's; only the person edits them")
        }
        _ => {}
    }
    let last = rel.rsplit('/').find(|p| !p.is_empty() && *p != ".")?;
    if last.eq_ignore_ascii_case("AGENTS.md") || last.eq_ignore_ascii_case("CLAUDE.md") {
        return Some(
            "`AGENTS.md` and `CLAUDE.md` are the person's instructions to agents; only the person edits them",
        );
    }
    if first == ".git" {
        return Some("`.git/` is the repository's own database");
    }
    // A submodule's or a nested clone's database (or its `.git` file pointing at one): git
    // runs the hooks and commands it names when the person works there.
    if rel.split('/').any(|p| p.eq_ignore_ascii_case(".git")) {
        return Some(NESTED_GIT);
    }
    None
}

/// Why nothing below the workspace's own `.git` may be named `.git`, whatever an intent owns.
pub const NESTED_GIT: &str = "git configuration in a nested repository: git runs the hooks and commands a `.git` names (`core.fsmonitor`, a hook, a `gitdir:` pointer) with the person's rights when they use git there, so only the person creates or changes one";

fn check_characters(input: &str) -> Result<(), PathError> {
    if input.is_empty() {
        return Err(PathError::Empty);
    }
    if input.len() > 4096 {
        return Err(PathError::Io {
            path: crate::text::ellipsize(input, 40).into_owned(),
            message: "the path is longer than 4096 bytes".into(),
        });
    }
    for c in input.chars() {
        if c == '\0' || c.is_control() {
            return Err(PathError::Control(input.escape_debug().to_string()));
        }
        if c == '\\' {
            return Err(PathError::Backslash(input.to_string()));
        }
        if is_deceptive(c) {
            return Err(PathError::Unicode {
                path: input.escape_debug().to_string(),
                code: c as u32,
            });
        }
    }
    Ok(())
}

/// Invisible formatting characters (which hide what a path really says) and characters that
/// look like `/` or `.` (which make a path read as something else).
fn is_deceptive(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
        | 0xFEFF | 0xFFA0 | 0xFFF9..=0xFFFB | 0xE0000..=0xE0FFF
        // slashes and dots that are not `/` and `.`
        | 0x2215 | 0x2044 | 0x29F8 | 0xFF0F | 0x2571 | 0x3033 | 0x1735
        | 0x2024 | 0x2025 | 0x2026 | 0xFF0E | 0x3002 | 0xFE52)
}

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;

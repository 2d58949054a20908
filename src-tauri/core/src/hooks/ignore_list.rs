//! `.intentignore` in the workspace root: gitignore syntax, a deny-list no intent can override;
//! beside it, the paths the repository's git configuration names (its hooks directory, files it
//! includes: see [`crate::git_config`]) and the code the person's hooks run (see
//! [`crate::user_hooks::code`]), which no intent may change either.

use std::path::{Path, PathBuf};

use crate::git_config::{named_paths, NamedPath};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

pub const INTENTIGNORE_FILE: &str = ".intentignore";

/// Why `.intentignore` cannot be used (writes are then refused).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IgnoreError {
    #[error("cannot read {INTENTIGNORE_FILE}: {0}")]
    Read(String),
    #[error("{INTENTIGNORE_FILE} line {line}: {message}")]
    Line { line: usize, message: String },
    #[error("{INTENTIGNORE_FILE}: {0}")]
    Build(String),
}

#[derive(Debug, Clone)]
pub struct IntentIgnore {
    matcher: Option<Gitignore>,
    /// The paths the repository's git configuration names.
    git_named: Vec<NamedPath>,
    /// The code the person's hooks run: a matcher of its rules, and why for each rule.
    hook_code: Option<(Gitignore, Vec<(String, String)>)>,
    /// The files read to find them (they change what is named).
    sources: Vec<PathBuf>,
}

impl IntentIgnore {
    pub fn empty() -> Self {
        Self {
            matcher: None,
            git_named: Vec::new(),
            hook_code: None,
            sources: Vec::new(),
        }
    }

    /// Loads the file, and what the repository's git configuration names; a line that does
    /// not parse is an error naming it (the caller fails closed).
    pub fn load(root: &Path) -> Result<Self, IgnoreError> {
        let found = named_paths(&root.canonicalize().unwrap_or_else(|_| root.to_path_buf()));
        let mut list = match std::fs::read_to_string(root.join(INTENTIGNORE_FILE)) {
            Ok(text) => Self::parse(root, &text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::empty(),
            Err(e) => return Err(IgnoreError::Read(e.to_string())),
        };
        list.git_named = found.paths;
        list.sources = found.sources;
        let code = crate::user_hooks::code::of_workspace(root);
        list.sources.extend(
            crate::user_hooks::config::SOURCES
                .iter()
                .map(|f| root.join(f))
                .chain(code.files.iter().cloned())
                .chain(code.trees.iter().cloned())
                .chain(code.search_dirs.iter().cloned()),
        );
        list.hook_code = hook_matcher(root, &code.rules);
        Ok(list)
    }

    /// Why no intent may change `rel`: `.intentignore` lists it (or a parent), or the
    /// repository's git configuration names it (or a parent).
    pub fn why(&self, rel: &str) -> Option<String> {
        if let Some(rule) = self.matched(rel) {
            return Some(format!("`.intentignore` lists it (`{rule}`)"));
        }
        self.git_named
            .iter()
            .find(|n| {
                rel == n.rel
                    || rel
                        .strip_prefix(n.rel.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
            .map(|n| n.why.clone())
            .or_else(|| self.hook_code(rel))
    }

    /// Why `rel` is the code of the person's hooks, if it is.
    fn hook_code(&self, rel: &str) -> Option<String> {
        let (matcher, why) = self.hook_code.as_ref()?;
        match matcher.matched_path_or_any_parents(rel, false) {
            ignore::Match::Ignore(glob) => {
                let rule = glob.original();
                let said = why
                    .iter()
                    .find(|(p, _)| p == rule)
                    .map_or("the person's hooks run it", |(_, w)| w.as_str());
                Some(format!("{said}, so only the person changes it"))
            }
            _ => None,
        }
    }

    /// The paths the repository's git configuration names (workspace-relative).
    pub fn git_named(&self) -> impl Iterator<Item = &str> {
        self.git_named.iter().map(|n| n.rel.as_str())
    }

    /// The files besides `.intentignore` whose change can change this list.
    pub fn sources(&self) -> &[PathBuf] {
        &self.sources
    }

    pub fn parse(root: &Path, text: &str) -> Result<Self, IgnoreError> {
        let mut builder = GitignoreBuilder::new(root);
        for (n, line) in text.lines().enumerate() {
            builder
                .add_line(None, line)
                .map_err(|e| IgnoreError::Line {
                    line: n + 1,
                    message: e.to_string(),
                })?;
        }
        let matcher = builder
            .build()
            .map_err(|e| IgnoreError::Build(e.to_string()))?;
        Ok(Self {
            matcher: Some(matcher),
            ..Self::empty()
        })
    }

    /// The `.intentignore` rule that excludes `rel` (or one of its parent directories), if any
    /// (see [`IntentIgnore::why`] for everything that does).
    pub fn matched(&self, rel: &str) -> Option<String> {
        let matcher = self.matcher.as_ref()?;
        match matcher.matched_path_or_any_parents(rel, false) {
            ignore::Match::Ignore(glob) => Some(glob.original().to_string()),
            _ => None,
        }
    }
}

/// The matcher of the hooks' code rules (None when there are none or they do not build: each
/// rule is a literal path built by Mandate, so that does not happen).
fn hook_matcher(
    root: &Path,
    rules: &[crate::user_hooks::code::CodeRule],
) -> Option<(Gitignore, Vec<(String, String)>)> {
    if rules.is_empty() {
        return None;
    }
    let mut builder = GitignoreBuilder::new(root);
    let mut why = Vec::new();
    for rule in rules {
        if builder.add_line(None, &rule.pattern).is_ok() {
            why.push((rule.pattern.clone(), rule.why.clone()));
        }
    }
    builder.build().ok().map(|m| (m, why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_semantics_with_negation_and_directories() {
        let root = Path::new("/ws");
        let list =
            IntentIgnore::parse(root, "secrets/\n*.pem\n!public.pem\n/build\n").expect("parse");
        assert_eq!(list.matched("secrets/a.txt").as_deref(), Some("secrets/"));
        assert_eq!(list.matched("src/key.pem").as_deref(), Some("*.pem"));
        assert_eq!(list.matched("public.pem"), None);
        assert!(list.matched("build/x").is_some());
        assert_eq!(list.matched("src/build/x"), None);
        assert_eq!(list.matched("src/main.rs"), None);
    }
}

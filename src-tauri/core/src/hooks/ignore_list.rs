//! `.intentignore` in the workspace root: gitignore syntax, a deny-list no intent can override.

use std::path::Path;

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
}

impl IntentIgnore {
    pub fn empty() -> Self {
        Self { matcher: None }
    }

    /// Loads the file; a line that does not parse is an error naming it (the caller fails closed).
    pub fn load(root: &Path) -> Result<Self, IgnoreError> {
        let text = match std::fs::read_to_string(root.join(INTENTIGNORE_FILE)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::empty()),
            Err(e) => return Err(IgnoreError::Read(e.to_string())),
        };
        Self::parse(root, &text)
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
        })
    }

    /// The rule that excludes `rel` (or one of its parent directories), if any.
    pub fn matched(&self, rel: &str) -> Option<String> {
        let matcher = self.matcher.as_ref()?;
        match matcher.matched_path_or_any_parents(rel, false) {
            ignore::Match::Ignore(glob) => Some(glob.original().to_string()),
            _ => None,
        }
    }
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

//! `.intentignore` in the workspace root: gitignore syntax, a deny-list no intent can override.

use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

pub const INTENTIGNORE_FILE: &str = ".intentignore";

#[derive(Debug, Clone)]
pub struct IntentIgnore {
    matcher: Option<Gitignore>,
}

impl IntentIgnore {
    pub fn empty() -> Self {
        Self { matcher: None }
    }

    /// Loads the file; a line that does not parse is an error naming it (the caller fails closed).
    pub fn load(root: &Path) -> Result<Self, String> {
        let path = root.join(INTENTIGNORE_FILE);
        if !path.exists() {
            return Ok(Self::empty());
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {INTENTIGNORE_FILE}: {e}"))?;
        Self::parse(root, &text)
    }

    pub fn parse(root: &Path, text: &str) -> Result<Self, String> {
        let mut builder = GitignoreBuilder::new(root);
        for (n, line) in text.lines().enumerate() {
            builder
                .add_line(None, line)
                .map_err(|e| format!("{INTENTIGNORE_FILE} line {}: {e}", n + 1))?;
        }
        let matcher = builder
            .build()
            .map_err(|e| format!("{INTENTIGNORE_FILE}: {e}"))?;
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

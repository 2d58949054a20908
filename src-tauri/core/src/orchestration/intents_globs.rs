//! The globs of an owned scope: checked at load, compiled when a matcher is first needed.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Longer globs are refused at load: a matcher built later must not fail on its size.
const MAX_GLOB_CHARS: usize = 1024;

/// Why a glob of an owned scope is refused, in words for the person and the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GlobError(pub String);

/// Checks one glob as `compile_glob` would, without keeping the result.
pub(super) fn check_glob(pattern: &str) -> Result<(), GlobError> {
    if pattern.len() > MAX_GLOB_CHARS {
        return Err(GlobError(format!(
            "an owned_scope entry is longer than {MAX_GLOB_CHARS} characters"
        )));
    }
    // Only classes and alternates can make a glob fail to parse; other globs are checked for
    // their shape alone, without building them (that is most of the cost of a large file).
    if pattern.contains(['[', ']', '{', '}']) {
        compile_glob(pattern).map(drop)
    } else {
        check_shape(pattern.trim())
    }
}

/// A workspace-relative, non-empty pattern with `/` separators and no `..`.
fn check_shape(trimmed: &str) -> Result<(), GlobError> {
    if trimmed.is_empty() {
        return Err(GlobError("an owned_scope entry is empty".into()));
    }
    if trimmed.starts_with('/') || trimmed.contains('\\') || trimmed.split('/').any(|c| c == "..") {
        return Err(GlobError(format!(
            "owned_scope entry `{trimmed}` must be a workspace-relative path with `/` separators and no `..`"
        )));
    }
    Ok(())
}

/// One glob of an owned scope. `dir/` means everything under `dir`; `*` does not cross `/`.
pub fn compile_glob(pattern: &str) -> Result<Glob, GlobError> {
    let trimmed = pattern.trim();
    check_shape(trimmed)?;
    let normalized = trimmed.trim_start_matches("./");
    let normalized = if let Some(dir) = normalized.strip_suffix('/') {
        format!("{dir}/**")
    } else {
        normalized.to_string()
    };
    GlobBuilder::new(&normalized)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| {
            GlobError(format!(
                "owned_scope entry `{trimmed}` is not a valid glob: {}",
                e.kind()
            ))
        })
}

pub fn compile_scope(patterns: &[String]) -> Result<GlobSet, GlobError> {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        builder.add(compile_glob(p)?);
    }
    builder.build().map_err(|e| GlobError(e.to_string()))
}

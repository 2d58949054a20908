//! Secret references in server definitions: `${keyring:NAME}`, `${NAME}` and `${NAME:-default}`
//! in an argument, an environment value, a header value or the URL.
//!
//! Every form resolves from the keyring, under an entry of that server's own (see
//! [`keyring_name`]), never from Mandate's environment: a `.mcp.json` written for another agent
//! (`"env": {"TOKEN": "${GITHUB_TOKEN}"}`) works once the person stores `GITHUB_TOKEN` for that
//! server, and a hostile workspace cannot name `${MANDATE_API_KEY}` and receive the app's key.
//! Project servers keep their secrets per workspace, so another workspace defining a server of
//! the same name does not get them.

use std::path::Path;

use crate::secrets::{Secret, SecretError};

use super::config::Source;

/// One reference found in a value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reference {
    /// Byte range of `${…}` in the value.
    start: usize,
    end: usize,
    name: String,
    default: Option<String>,
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    !name.is_empty()
        && name.len() <= 128
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

fn scan(value: &str) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = value[from..].find("${") {
        let start = from + pos;
        let Some(len) = value[start + 2..].find('}') else {
            break;
        };
        let inner = &value[start + 2..start + 2 + len];
        let end = start + 2 + len + 1;
        let (name, default) = match inner.strip_prefix("keyring:") {
            Some(name) => (name, None),
            None => match inner.split_once(":-") {
                Some((name, default)) => (name, Some(default.to_string())),
                None => (inner, None),
            },
        };
        if is_name(name) {
            out.push(Reference {
                start,
                end,
                name: name.to_string(),
                default,
            });
        }
        from = end;
    }
    out
}

/// The secret names a value refers to.
pub fn names(value: &str) -> Vec<String> {
    scan(value).into_iter().map(|r| r.name).collect()
}

/// The value with each reference replaced by a harmless word (to check a URL's shape).
pub fn placeholder(value: &str) -> String {
    replace(value, |_| Ok::<_, ()>("x".to_string())).unwrap_or_else(|()| value.to_string())
}

fn replace<E>(
    value: &str,
    mut with: impl FnMut(&Reference) -> Result<String, E>,
) -> Result<String, E> {
    let mut out = String::with_capacity(value.len());
    let mut at = 0;
    for r in scan(value) {
        out.push_str(&value[at..r.start]);
        out.push_str(&with(&r)?);
        at = r.end;
    }
    out.push_str(&value[at..]);
    Ok(out)
}

/// Whose secrets a server uses.
pub fn keyring_name(source: Source, root: &Path, server: &str, name: &str) -> String {
    match source {
        Source::Settings => format!("mcp:user:{server}:{name}"),
        Source::Project => format!(
            "mcp:ws-{}:{server}:{name}",
            crate::settings::workspace_key(root)
        ),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RefError {
    #[error("the secret `{0}` is not set: store it for this server in Settings → MCP servers (or `mandate mcp secret SERVER {0}`)")]
    Missing(String),
    #[error(transparent)]
    Keyring(#[from] SecretError),
}

/// Resolves the references of `value`; the secrets used are added to `used` (so that results
/// can be scrubbed of them).
pub fn expand(
    value: &str,
    lookup: &dyn Fn(&str) -> Result<Option<Secret>, SecretError>,
    used: &mut Vec<Secret>,
) -> Result<String, RefError> {
    replace(value, |r| match lookup(&r.name)? {
        Some(secret) => {
            let text = secret.expose().to_string();
            used.push(secret);
            Ok(text)
        }
        None => r
            .default
            .clone()
            .ok_or_else(|| RefError::Missing(r.name.clone())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn lookup(name: &str) -> Result<Option<Secret>, SecretError> {
        Ok((name == "TOKEN").then(|| Secret::new("s3cr3t-value")))
    }

    #[test]
    fn references_resolve_from_the_lookup_only() {
        let mut used = Vec::new();
        assert_eq!(
            expand("Bearer ${keyring:TOKEN}", &lookup, &mut used).expect("expand"),
            "Bearer s3cr3t-value"
        );
        assert_eq!(
            expand("${TOKEN}/${HOME:-/tmp}", &lookup, &mut used).expect("expand"),
            "s3cr3t-value//tmp"
        );
        assert_eq!(used.len(), 2);
        // Mandate's environment is never consulted.
        std::env::set_var("MCP_REFS_TEST_ONLY", "from-env");
        let err = expand("${MCP_REFS_TEST_ONLY}", &lookup, &mut used).expect_err("missing");
        assert!(
            err.to_string().contains("`MCP_REFS_TEST_ONLY` is not set"),
            "{err}"
        );
    }

    #[test]
    fn text_that_is_not_a_reference_stays() {
        let mut used = Vec::new();
        for plain in ["$HOME", "${", "${not a name}", "a}b${", "$$", "${}", "100%"] {
            assert_eq!(expand(plain, &lookup, &mut used).expect("plain"), plain);
        }
        assert!(used.is_empty());
        assert_eq!(
            names("x ${A} ${keyring:B} ${C:-d} ${bad name}"),
            ["A", "B", "C"]
        );
    }

    #[test]
    fn project_secrets_are_per_workspace() {
        let a = keyring_name(Source::Project, Path::new("/a"), "gh", "TOKEN");
        let b = keyring_name(Source::Project, Path::new("/b"), "gh", "TOKEN");
        assert_ne!(a, b);
        assert_eq!(
            keyring_name(Source::Settings, Path::new("/a"), "gh", "TOKEN"),
            "mcp:user:gh:TOKEN"
        );
    }
}

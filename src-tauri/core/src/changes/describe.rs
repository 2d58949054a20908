//! The out-of-scope changes of a process as the model and the person read them: each path with
//! what became of it, a created directory undone whole (a cloned repository's `.git`) as one
//! item, and why the paths that are out of scope whatever the intent owns are.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{shown, Change, RestoreOutcome};
use crate::workspace::NESTED_GIT;

/// The reason every path outside an intent's globs has: said once, by the caller.
const NOT_OWNED: &str = "the selected intent does not own it";

/// At most this many out-of-scope paths are listed to the model (a clone has thousands).
pub const MAX_PATHS_LISTED: usize = 200;

/// `paths` for the model: the first [`MAX_PATHS_LISTED`], then how many more there are.
pub fn listed(mut paths: Vec<String>) -> Vec<String> {
    if paths.len() > MAX_PATHS_LISTED {
        let more = paths.len() - MAX_PATHS_LISTED;
        paths.truncate(MAX_PATHS_LISTED);
        paths.push(format!("… and {more} more"));
    }
    paths
}

/// [`described`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// `a (undone), b (could not be undone: why), c (undone) and the 27 entries inside it`.
    pub list: String,
    /// One sentence per reason other than not being owned, naming its paths (may be empty).
    pub reasons: String,
}

/// Describes `out_of_scope` (path, why) with what `restored` says became of each.
pub fn described(out_of_scope: &[(Change, String)], restored: &[RestoreOutcome]) -> Described {
    let paths: HashSet<&str> = restored.iter().map(|r| r.path.as_str()).collect();
    // The top-most undone path above each one, if any.
    let top_of = |path: &str| -> Option<&str> {
        let mut top = None;
        let mut at = path;
        while let Some((parent, _)) = at.rsplit_once('/') {
            if let Some(found) = paths.get(parent) {
                top = Some(*found);
            }
            at = parent;
        }
        top
    };
    let ok: HashMap<&str, bool> = restored
        .iter()
        .map(|r| (r.path.as_str(), r.result.is_ok()))
        .collect();
    let mut inside: HashMap<&str, usize> = HashMap::new();
    let mut shown_paths: Vec<&RestoreOutcome> = Vec::new();
    for r in restored {
        match top_of(&r.path).filter(|top| ok.get(top).copied().unwrap_or(false)) {
            Some(top) if r.result.is_ok() => *inside.entry(top).or_default() += 1,
            _ => shown_paths.push(r),
        }
    }
    let list: Vec<String> = shown_paths
        .iter()
        .map(|r| {
            let name = shown(&r.path);
            let what = match &r.result {
                Ok(_) => "undone".to_string(),
                Err(why) => format!("could not be undone: {why}"),
            };
            match inside.get(r.path.as_str()) {
                Some(1) => format!("{name} ({what}) and the entry inside it"),
                Some(n) => format!("{name} ({what}) and the {n} entries inside it"),
                None => format!("{name} ({what})"),
            }
        })
        .collect();
    let why: HashMap<&str, &str> = out_of_scope
        .iter()
        .map(|(c, why)| (c.path.as_str(), why.as_str()))
        .collect();
    let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for r in &shown_paths {
        if let Some(reason) = why.get(r.path.as_str()).filter(|w| **w != NOT_OWNED) {
            by_reason
                .entry(reason)
                .or_default()
                .push(shown(&r.path).into_owned());
        }
    }
    let mut reasons: Vec<String> = by_reason
        .iter()
        .map(|(reason, paths)| format!("{}: {reason}.", paths.join(", ")))
        .collect();
    if by_reason
        .keys()
        .any(|r| r.contains(NESTED_GIT) || r.contains(super::BARE_REPOSITORY))
    {
        reasons.push("If the work needs a repository there (git clone, git init), say so with request_scope_expansion (intent_id, globs, reason): the person decides, and makes it.".into());
    }
    Described {
        list: list.join(", "),
        reasons: reasons.join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes::{ChangeKind, Restored};

    fn change(path: &str) -> Change {
        Change {
            path: path.into(),
            kind: ChangeKind::Created,
            before: None,
            after: None,
            hash_after: None,
        }
    }

    fn outcome(path: &str, result: Result<Restored, String>) -> RestoreOutcome {
        RestoreOutcome {
            path: path.into(),
            kind: ChangeKind::Created,
            result,
        }
    }

    #[test]
    fn a_directory_undone_whole_is_one_item_and_special_reasons_are_said_once() {
        let out = vec![
            (change("docs/a.md"), NOT_OWNED.to_string()),
            (change("docs/y/.git"), NESTED_GIT.to_string()),
            (change("docs/y/.git/HEAD"), NESTED_GIT.to_string()),
            (change("docs/y/.git/hooks"), NESTED_GIT.to_string()),
            (change("docs/y/.git/hooks/x"), NESTED_GIT.to_string()),
            (change("docs/y/.git-x"), NOT_OWNED.to_string()),
            (change("docs/z/.git"), NESTED_GIT.to_string()),
        ];
        let restored = vec![
            outcome("docs/a.md", Ok(Restored::Removed)),
            outcome("docs/y/.git", Ok(Restored::Removed)),
            outcome("docs/y/.git-x", Ok(Restored::Removed)),
            outcome("docs/y/.git/HEAD", Ok(Restored::Removed)),
            outcome("docs/y/.git/hooks", Ok(Restored::Removed)),
            outcome("docs/y/.git/hooks/x", Ok(Restored::Removed)),
            outcome("docs/z/.git", Err("gone".into())),
        ];
        let d = described(&out, &restored);
        assert_eq!(
            d.list,
            "docs/a.md (undone), docs/y/.git (undone) and the 3 entries inside it, docs/y/.git-x (undone), docs/z/.git (could not be undone: gone)"
        );
        assert!(
            d.reasons
                .starts_with(&format!("docs/y/.git, docs/z/.git: {NESTED_GIT}.")),
            "{}",
            d.reasons
        );
        assert!(d.reasons.contains("request_scope_expansion"));
    }

    #[test]
    fn what_could_not_be_undone_inside_a_directory_is_named() {
        let out = vec![
            (change("d"), NOT_OWNED.to_string()),
            (change("d/a"), NOT_OWNED.to_string()),
            (change("d/b"), NOT_OWNED.to_string()),
        ];
        let restored = vec![
            outcome("d", Err("not empty".into())),
            outcome("d/a", Ok(Restored::Removed)),
            outcome("d/b", Err("busy".into())),
        ];
        let d = described(&out, &restored);
        assert_eq!(
            d.list,
            "d (could not be undone: not empty), d/a (undone), d/b (could not be undone: busy)"
        );
        assert_eq!(d.reasons, "");
    }

    #[test]
    fn the_model_gets_at_most_so_many_paths_and_the_count_of_the_rest() {
        let few: Vec<String> = (0..3).map(|i| format!("p{i}")).collect();
        assert_eq!(listed(few.clone()), few);
        let many: Vec<String> = (0..MAX_PATHS_LISTED + 5).map(|i| format!("p{i}")).collect();
        let shown = listed(many);
        assert_eq!(shown.len(), MAX_PATHS_LISTED + 1);
        assert_eq!(shown.last().map(String::as_str), Some("… and 5 more"));
    }
}

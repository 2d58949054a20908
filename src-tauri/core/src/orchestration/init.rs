//! `mandate init`: sets a workspace up for Mandate, and its git repository for the ledger.
//! Idempotent: what is there already is left as it is (the driver's and the hook's command
//! are brought up to date with the `mandate` binary that runs).
//!
//! - `.orchestration/active_intents.yaml` with a commented example intent;
//! - `.orchestration/command_policy.yaml`, a copy of the built-in policy to edit;
//! - `.gitattributes`: the ledger merges with the `mandate-trace` driver;
//! - local git config: that driver is `mandate trace merge %O %A %B %P` (git config is not
//!   versioned: every clone runs `mandate init` once);
//! - the `prepare-commit-msg` hook that anchors the ledger's head in each commit, unless the
//!   repository has its own hook there (then it says what line to add) or `--no-hook`;
//! - `.gitignore`: the intent map is not tracked. It is derived (from the ledger, the intents
//!   and the files as they are), so two branches that both worked through Mandate would
//!   conflict on it at every merge, rebase and cherry-pick, and no merge driver can rebuild it
//!   (git merges each file before it writes any to the work tree). The `post-commit`,
//!   `post-merge` and `post-checkout` hooks rebuild it instead, from what git has just written.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::git;
use super::integrity::ledger_in_repo;
use super::intent_map::INTENT_MAP_FILE;
use super::ledger::LEDGER_FILE;
use crate::fsutil::write_atomic;

pub const DRIVER: &str = "mandate-trace";
const HOOK_MARK: &str = "# mandate: anchors the trace ledger";
const MAP_HOOK_MARK: &str = "# mandate: rebuilds the intent map";
/// The hooks after which the work tree may hold another ledger or other files: a commit (also
/// each commit a rebase or a cherry-pick makes), a merge, a checkout.
const MAP_HOOKS: [&str; 3] = ["post-commit", "post-merge", "post-checkout"];
/// The built-in command policy, also the template of a workspace's own.
const POLICY_TEMPLATE: &str = include_str!("../hooks/default_command_policy.yaml");

const INTENTS_TEMPLATE: &str = r#"# Intents: units of work the agent may carry out, each owning part of the workspace.
# The agent may change a file only under a selected intent whose owned_scope matches it.
# Add intents in the app (Intents), or here: replace `active_intents: []` with, e.g.,
#
# active_intents:
#   - id: INT-001
#     name: Clearer parser errors
#     status: IN_PROGRESS        # NOT_STARTED | IN_PROGRESS | DONE | BLOCKED
#     owned_scope: ["src/parser/**", "tests/parser/**"]
#     constraints: ["Keep the public API unchanged"]
#     acceptance_criteria: ["cargo test passes", "every error names the line"]
active_intents: []
"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub what: String,
    pub outcome: Outcome,
    /// Why it was skipped, or what to do by hand.
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Git(#[from] git::GitError),
}

fn step(what: impl Into<String>, outcome: Outcome, note: Option<String>) -> Step {
    Step {
        what: what.into(),
        outcome,
        note,
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InitError + '_ {
    move |source| InitError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn create_if_missing(root: &Path, rel: &str, text: &str) -> Result<Step, InitError> {
    let path = root.join(rel);
    if path.exists() {
        return Ok(step(rel, Outcome::Unchanged, None));
    }
    write_atomic(&path, text.as_bytes()).map_err(io(&path))?;
    Ok(step(rel, Outcome::Created, None))
}

/// Sets the workspace at `root` up; `mandate` is the binary git should run.
pub fn init(root: &Path, mandate: &Path, hook: bool) -> Result<Vec<Step>, InitError> {
    let mut steps = vec![
        create_if_missing(root, super::intents::INTENTS_FILE, INTENTS_TEMPLATE)?,
        create_if_missing(
            root,
            crate::orchestration_file!("command_policy.yaml"),
            POLICY_TEMPLATE,
        )?,
    ];
    let Some(repo) = git::discover(root) else {
        let note =
            Some("not a git repository: run `git init` and then `mandate init` again".to_string());
        steps.push(step("merge driver", Outcome::Skipped, note.clone()));
        steps.push(step("commit hook", Outcome::Skipped, note));
        return Ok(steps);
    };
    steps.push(with_line(
        root,
        ".gitattributes",
        &format!("{LEDGER_FILE} merge={DRIVER}"),
        "# The trace ledger merges with Mandate's driver (`mandate init` registers it).",
    )?);
    steps.push(driver(&repo, mandate)?);
    steps.push(untracked_map(&repo, root)?);
    if hook {
        let line = hook_line(&repo, root, mandate);
        let script = format!(
            "#!/bin/sh\n{HOOK_MARK}'s head in each commit message (installed by `mandate init`).\n{line}\nexit 0\n"
        );
        steps.push(install_hook(
            &repo,
            "prepare-commit-msg",
            HOOK_MARK,
            &line,
            &script,
        )?);
        let line = map_hook_line(&repo, root, mandate);
        let script = format!(
            "#!/bin/sh\n{MAP_HOOK_MARK} from the ledger and the files git wrote (installed by `mandate init`).\n{line}\nexit 0\n"
        );
        for name in MAP_HOOKS {
            steps.push(install_hook(&repo, name, MAP_HOOK_MARK, &line, &script)?);
        }
    } else {
        let skipped = |what: String| step(what, Outcome::Skipped, Some("--no-hook".into()));
        steps.push(skipped("commit hook (prepare-commit-msg)".into()));
        for name in MAP_HOOKS {
            steps.push(skipped(format!("intent map hook ({name})")));
        }
    }
    Ok(steps)
}

/// Adds `line` (after `comment`) to the file `rel` unless a line with the same words is there.
fn with_line(root: &Path, rel: &str, line: &str, comment: &str) -> Result<Step, InitError> {
    let path = root.join(rel);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(&path)(e)),
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    if text
        .lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == words)
    {
        return Ok(step(rel, Outcome::Unchanged, None));
    }
    let mut new = text.clone();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(comment);
    new.push('\n');
    new.push_str(line);
    new.push('\n');
    write_atomic(&path, new.as_bytes()).map_err(io(&path))?;
    let outcome = if text.is_empty() {
        Outcome::Created
    } else {
        Outcome::Updated
    };
    Ok(step(rel, outcome, None))
}

/// The intent map in `.gitignore`, and out of the index when an earlier commit tracked it.
fn untracked_map(repo: &git::Repo, root: &Path) -> Result<Step, InitError> {
    let mut s = with_line(
        root,
        ".gitignore",
        &format!("/{INTENT_MAP_FILE}"),
        "# Mandate's intent map is rebuilt from the ledger after each commit, merge and checkout.",
    )?;
    let Some(rel) = ledger_in_repo(repo, root)
        .map(|l| format!("{}{INTENT_MAP_FILE}", l.trim_end_matches(LEDGER_FILE)))
    else {
        return Ok(s);
    };
    let tracked = git::text(&repo.toplevel, &["ls-files", "--", &rel])
        .map(|t| !t.trim().is_empty())
        .unwrap_or(false);
    if tracked {
        git::run(&repo.toplevel, &["rm", "--cached", "-q", "--", &rel])?;
        s.outcome = Outcome::Updated;
        s.note = Some(format!(
            "{rel} is no longer tracked (the file stays): commit its removal"
        ));
    }
    Ok(s)
}

/// `'…'` for the shell, so paths with spaces or quotes survive.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn driver(repo: &git::Repo, mandate: &Path) -> Result<Step, InitError> {
    let command = format!(
        "{} trace merge %O %A %B %P",
        shell_quote(&mandate.to_string_lossy())
    );
    let key = format!("merge.{DRIVER}.driver");
    let current = git::text(&repo.toplevel, &["config", "--local", "--get", &key]).ok();
    if current.as_deref() == Some(command.as_str()) {
        return Ok(step("git merge driver", Outcome::Unchanged, None));
    }
    git::run(
        &repo.toplevel,
        &[
            "config",
            "--local",
            &format!("merge.{DRIVER}.name"),
            "Mandate trace ledger: both sides' records and a merge record",
        ],
    )?;
    git::run(&repo.toplevel, &["config", "--local", &key, &command])?;
    let outcome = if current.is_some() {
        Outcome::Updated
    } else {
        Outcome::Created
    };
    Ok(step("git merge driver", outcome, None))
}

/// The workspace as the hooks name it: the work tree's top level, or the folder below it.
fn workspace_arg(repo: &git::Repo, root: &Path) -> String {
    let rel = ledger_in_repo(repo, root)
        .map(|l| {
            l.trim_end_matches(LEDGER_FILE)
                .trim_end_matches('/')
                .to_string()
        })
        .unwrap_or_default();
    if rel.is_empty() {
        "\"$(git rev-parse --show-toplevel)\"".to_string()
    } else {
        format!("\"$(git rev-parse --show-toplevel)\"/{}", shell_quote(&rel))
    }
}

fn hook_line(repo: &git::Repo, root: &Path, mandate: &Path) -> String {
    let workspace = workspace_arg(repo, root);
    format!(
        "{} trace anchor --message-file \"$1\" --workspace {workspace} || echo 'mandate: the trace ledger was not anchored in this commit' >&2",
        shell_quote(&mandate.to_string_lossy())
    )
}

/// `mandate intents map` for the map hooks, quiet unless it fails.
fn map_hook_line(repo: &git::Repo, root: &Path, mandate: &Path) -> String {
    format!(
        "{} intents map --workspace {} >/dev/null || echo 'mandate: the intent map was not rebuilt' >&2",
        shell_quote(&mandate.to_string_lossy()),
        workspace_arg(repo, root)
    )
}

/// Installs the hook `name` as `script`, unless the repository has its own hook there (one
/// without `mark`): then the note says which line to add to it.
fn install_hook(
    repo: &git::Repo,
    name: &str,
    mark: &str,
    line: &str,
    script: &str,
) -> Result<Step, InitError> {
    let dir = git::text(&repo.toplevel, &["rev-parse", "--git-path", "hooks"])?;
    let dir = {
        let d = PathBuf::from(dir);
        if d.is_absolute() {
            d
        } else {
            repo.toplevel.join(d)
        }
    };
    let path = dir.join(name);
    let what = if mark == HOOK_MARK {
        format!("commit hook ({name})")
    } else {
        format!("intent map hook ({name})")
    };
    match std::fs::read_to_string(&path) {
        Ok(text) if text == script => return Ok(step(what, Outcome::Unchanged, None)),
        Ok(text) if !text.contains(mark) => {
            return Ok(step(
                what,
                Outcome::Skipped,
                Some(format!(
                    "{} is your own hook: add this line to it:\n  {line}",
                    path.display()
                )),
            ))
        }
        Ok(_) | Err(_) => {}
    }
    let existed = path.exists();
    write_atomic(&path, script.as_bytes()).map_err(io(&path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(io(&path))?;
    }
    Ok(step(
        what,
        if existed {
            Outcome::Updated
        } else {
            Outcome::Created
        },
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_templates_load() {
        let doc = super::super::intents::IntentsDoc::parse(INTENTS_TEMPLATE, "t")
            .expect("the intents template parses");
        assert!(doc.intents.is_empty());
        // The example, uncommented, is a valid intent.
        let example: String = INTENTS_TEMPLATE
            .lines()
            .skip_while(|l| !l.starts_with("# active_intents:"))
            .take_while(|l| l.starts_with('#'))
            .map(|l| format!("{}\n", l.strip_prefix("# ").unwrap_or("")))
            .collect();
        let doc = super::super::intents::IntentsDoc::parse(&example, "t").expect("example");
        assert_eq!(doc.intents.len(), 1);
        crate::hooks::command_policy::CommandPolicy::from_yaml(POLICY_TEMPLATE, "t")
            .expect("policy");
    }

    #[test]
    fn quoting_survives_spaces_and_quotes() {
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}

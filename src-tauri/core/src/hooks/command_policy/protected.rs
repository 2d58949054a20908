//! Whether a command line names the mandate itself (`.orchestration/`, `.intentignore`), the
//! person's hooks (`.mandate/`, `.claude/`) or the workspace's MCP servers (`.mcp.json`), by
//! the path each word resolves to rather than by substring: `./.orchestration`,
//! `x/../.orchestration`, a symlink to it, `.orch*` and `.orchestrat?on` are all found, and
//! `docs/orchestration-notes.md` is not. A convenience for a clear refusal: what a command can
//! really write is decided by the kernel (`crate::sandbox`), which never grants these paths.

use std::path::{Component, Path, PathBuf};

use globset::GlobBuilder;

use super::parse::{self, RedirectKind, Script, Stage, Word};

/// The top-level names only the person changes: the mandate, the person's hooks and the
/// workspace's MCP server definitions.
const MANDATE_NAMES: [&str; 9] = [
    crate::orchestration::DIR,
    ".intentignore",
    ".mandate",
    ".claude",
    crate::mcp::PROJECT_FILE,
    ".roomodes",
    ".roo",
    ".agents",
    "AGENTS.md",
];

/// A word of the command that refers to a protected path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedTarget {
    /// The word as written.
    pub word: String,
    /// The protected name it reaches (`.orchestration`, `.intentignore`, `.mandate`, `.claude`,
    /// `.mcp.json`).
    pub name: String,
}

/// The first word of `command_line` that reaches `.orchestration/` or `.intentignore` when
/// run in `cwd` (absolute, inside `workspace_root`). A line that does not parse names
/// nothing here (the classifier already asks for it).
pub fn protected_target(
    command_line: &str,
    workspace_root: &Path,
    cwd: &Path,
) -> Option<ProtectedTarget> {
    let script = parse::parse(command_line, 0).ok()?;
    in_script(&script, workspace_root, cwd)
}

/// [`protected_target`] of a line already parsed.
pub(super) fn in_script(
    script: &Script,
    workspace_root: &Path,
    cwd: &Path,
) -> Option<ProtectedTarget> {
    let mut finder = Finder {
        root: workspace_root,
        cwd: cwd.to_path_buf(),
    };
    finder.script(script)
}

struct Finder<'a> {
    root: &'a Path,
    /// Follows literal `cd DIR` in order, so `cd .orchestration && rm x` is found.
    cwd: PathBuf,
}

impl Finder<'_> {
    fn script(&mut self, script: &Script) -> Option<ProtectedTarget> {
        for word in &script.loose_words {
            if let Some(hit) = self.word(word, true) {
                return Some(hit);
            }
        }
        for pipeline in &script.pipelines {
            for stage in &pipeline.stages {
                let hit = match stage {
                    Stage::Simple(cmd) => {
                        // The program's name is looked up on PATH, not in the working
                        // directory, unless it holds a `/`: no link to look for there.
                        let hit = cmd
                            .words
                            .iter()
                            .enumerate()
                            .map(|(i, w)| (w, i > 0 || w.text.contains('/')))
                            .chain(
                                cmd.redirects
                                    .iter()
                                    .filter(|r| r.kind != RedirectKind::HereDoc)
                                    .map(|r| (&r.target, true)),
                            )
                            .find_map(|(w, path)| self.word(w, path));
                        if hit.is_none() {
                            self.follow_cd(&cmd.words);
                        }
                        hit
                    }
                    Stage::Group(group) => group
                        .redirects
                        .iter()
                        .find_map(|r| self.word(&r.target, true))
                        .or_else(|| self.script(&group.body)),
                };
                if hit.is_some() {
                    return hit;
                }
            }
        }
        None
    }

    fn follow_cd(&mut self, words: &[Word]) {
        if let [cd, dir] = words {
            if matches!(cd.text.as_str(), "cd" | "pushd") && !dir.expansion {
                self.cwd = normalize(&self.cwd.join(&dir.text));
            }
        }
    }

    /// `path`: the word may name a path in the working directory (links are looked for).
    fn word(&mut self, word: &Word, path: bool) -> Option<ProtectedTarget> {
        for substitution in &word.substitutions {
            if let Some(hit) = self.script(substitution) {
                return Some(hit);
            }
        }
        if word.text.is_empty() || (word.expansion && !word.glob) {
            return None;
        }
        // `--file=PATH`, `of=PATH`, `-oPATH` carry a path after a prefix.
        let mut candidates = vec![word.text.as_str()];
        if let Some((_, after)) = word.text.split_once('=') {
            candidates.push(after);
        }
        candidates.into_iter().find_map(|text| {
            self.names_protected(text, path)
                .map(|name| ProtectedTarget {
                    word: word.raw.clone(),
                    name,
                })
        })
    }

    /// The protected name `text` reaches as a path, lexically and through symlinks.
    fn names_protected(&self, text: &str, links: bool) -> Option<String> {
        let path = normalize(&self.cwd.join(text));
        let rel = path.strip_prefix(self.root).ok()?;
        if let Some(first) = rel.components().next() {
            let first = first.as_os_str().to_string_lossy();
            if let Some(name) = MANDATE_NAMES
                .iter()
                .find(|n| first.eq_ignore_ascii_case(n) || glob_reaches(&first, n))
            {
                return Some((*name).to_string());
            }
        }
        // A symlink in the existing part of the path may lead into a protected directory:
        // each existing component below the root is looked at (one `lstat` each, stopping at
        // the first that does not exist); only a path through a symlink is resolved.
        if !links {
            return None;
        }
        let mut at = self.root.to_path_buf();
        let mut through_link = false;
        for part in rel.components() {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    through_link = true;
                    break;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if !through_link {
            return None;
        }
        let mut existing = path.clone();
        while !existing.exists() {
            if !existing.pop() {
                return None;
            }
        }
        let real = existing.canonicalize().ok()?;
        let root = self.root.canonicalize().ok()?;
        let first = real.strip_prefix(&root).ok()?.components().next()?;
        let first = first.as_os_str().to_string_lossy();
        MANDATE_NAMES
            .iter()
            .find(|n| first.eq_ignore_ascii_case(n))
            .map(|n| (*n).to_string())
    }
}

/// Whether a path component written with glob characters can match `name` in bash, where a
/// leading `.` is only matched by a literal `.`.
fn glob_reaches(component: &str, name: &str) -> bool {
    if !component.contains(['*', '?', '[']) || !component.starts_with('.') {
        return false;
    }
    GlobBuilder::new(component)
        .literal_separator(true)
        .case_insensitive(true)
        .build()
        .is_ok_and(|g| g.compile_matcher().is_match(name))
}

/// `..` and `.` removed without touching the file system (symlinks are checked apart).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace with the mandate's directory, `src/`, and `notes` linking to the mandate.
    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().canonicalize().expect("root");
        std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::os::unix::fs::symlink(".orchestration", root.join("notes")).expect("link");
        (tmp, root)
    }

    fn hit(line: &str) -> Option<String> {
        let (_tmp, root) = workspace();
        protected_target(line, &root, &root.join("src")).map(|t| t.name)
    }

    /// Lines, run in `src/`, that change what only the person changes.
    const REACHING: [&str; 21] = [
        "sed -i s/a/b/ ../.orchestration/active_intents.yaml",
        "rm ./../.orchestration/agent_trace.jsonl",
        "cat x > ../x/../.orchestration/agent_trace.jsonl",
        "rm -rf ../.orch*",
        "rm -rf ../.orchestrat?on",
        "rm ../.ORCHESTRATION/agent_trace.jsonl",
        "truncate -s0 ../notes/agent_trace.jsonl",
        "echo '!*' > ../.intentignore",
        "dd of=../.intentignore if=/dev/null",
        "cd .. && rm -rf .orchestration",
        "cd ../.orchestration && rm agent_trace.jsonl",
        "echo $(rm ../.orchestration/x)",
        "for f in ../.orchestration/*; do rm $f; done",
        "echo '{}' > ../.mandate/hooks.json",
        "rm -rf ../.claude",
        "sed -i s/deny/allow/ ../.claude/hooks/check.sh",
        "cp evil.json ../.Mandate/hooks.json",
        "echo '{}' > ../.mcp.json",
        "cp evil.json ../.MCP.JSON",
        "sed -i s/srv/evil/ ../.mcp*",
        "cd .. && python3 -c pass > .mcp.json",
    ];

    #[test]
    fn finds_the_mandate_by_resolved_path_not_by_substring() {
        for line in REACHING {
            assert!(hit(line).is_some(), "{line}");
        }
    }

    /// The policy's one-parse judgement refuses each of these as its two steps did, and finds
    /// nothing to refuse in a safe line, even one that names the mandate.
    #[test]
    fn the_policy_finds_the_same_target_for_every_destructive_line_and_none_for_a_safe_one() {
        let (_tmp, root) = workspace();
        let cwd = root.join("src");
        let policy = super::super::CommandPolicy::builtin();
        for line in REACHING {
            let (class, target) = policy.classify_in(line, &root, &cwd);
            assert_eq!(
                class.class,
                super::super::CommandClass::Destructive,
                "{line}"
            );
            assert_eq!(target, protected_target(line, &root, &cwd), "{line}");
            assert!(target.is_some(), "{line}");
        }
        for line in [
            "cat ../.orchestration/active_intents.yaml",
            "ls -la ../notes",
            "grep -rn INT- ../.orchestration",
        ] {
            let (class, target) = policy.classify_in(line, &root, &cwd);
            assert_eq!(class.class, super::super::CommandClass::Safe, "{line}");
            assert_eq!(target, None, "{line}");
        }
    }

    /// A line judged before is not judged again, but where it reaches is looked up each time:
    /// a link made since the first judgement is followed.
    #[test]
    fn a_line_judged_before_is_searched_again_for_what_it_reaches_now() {
        let (_tmp, root) = workspace();
        let cwd = root.join("src");
        let policy = super::super::CommandPolicy::builtin();
        let line = "rm -rf ../later/agent_trace.jsonl";
        let (first, target) = policy.classify_in(line, &root, &cwd);
        assert_eq!(
            (first.class, target),
            (super::super::CommandClass::Destructive, None)
        );
        std::os::unix::fs::symlink(".orchestration", root.join("later")).expect("link");
        let (again, target) = policy.classify_in(line, &root, &cwd);
        assert_eq!(again, first);
        assert_eq!(target.map(|t| t.name).as_deref(), Some(".orchestration"));
    }

    /// The parse kept with a judged line is searched from where each command runs.
    #[test]
    fn a_line_judged_before_is_searched_from_the_directory_it_runs_in_now() {
        let (_tmp, root) = workspace();
        let policy = super::super::CommandPolicy::builtin();
        let line = "rm -rf .orchestration";
        let (first, target) = policy.classify_in(line, &root, &root.join("src"));
        assert_eq!(
            (first.class, target),
            (super::super::CommandClass::Destructive, None)
        );
        let (again, target) = policy.classify_in(line, &root, &root);
        assert_eq!(again, first);
        assert_eq!(target.map(|t| t.name).as_deref(), Some(".orchestration"));
        let (_, target) = policy.classify_in(line, &root, &root.join("src"));
        assert_eq!(target, None);
    }

    #[test]
    fn other_paths_are_not_the_mandate() {
        for line in [
            "cat ../docs/orchestration-notes.md",
            "rm -rf ../*",
            "ls ../.orchestration.md.bak/..",
            "grep -r orchestration .",
            "cat ../docs/claude-notes.md",
            "cp ../.mcp.json.bak ../docs/mcp.json",
        ] {
            assert_eq!(hit(line), None, "{line}");
        }
    }
}

//! No trace of the confinement in the workspace: harmless commands, run the way the agent runs
//! them ([`run_governed`]) at each confinement level this machine offers, in workspaces that
//! make the sandbox grant, create, re-bind, pin and hide things (build outputs beside
//! `package.json`, `Cargo.toml` and `pyproject.toml`, a new directory an intent owns, a nested
//! `.git`, a path `.intentignore` lists, Mandate's own directories inside the workspace), leave
//! the workspace exactly as it was: every path, its type, its mode and its content.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use super::tests::{levels, AgentPlace};
use super::*;
use crate::changes::hostile_git::git;
use crate::hooks::command_policy::{CommandNeeds, CommandPolicy};
use crate::hooks::ignore_list::IntentIgnore;
use crate::redact::Redactor;

/// Commands that change nothing, as the agent would run them.
const HARMLESS: &[&str] = &[
    "true > /dev/null",
    "printenv",
    "ls",
    "ls -laR",
    "cat package.json",
    "git status",
    "git log --oneline",
    "find . -type f | sort | head -50",
    "pwd; echo done 2>/dev/null",
];

/// One workspace to run the commands in.
struct Layout {
    name: &'static str,
    /// Files (relative path, content); their directories are made.
    files: &'static [(&'static str, &'static str)],
    /// Directories holding a repository of their own (`git init` and one commit).
    repositories: &'static [&'static str],
    /// The selected intent's globs.
    scope: &'static [&'static str],
    /// Where the commands start (relative).
    cwd: &'static str,
    /// Mandate's own directories, relative to the workspace (some may not exist).
    app_dirs: &'static [&'static str],
}

const LAYOUTS: &[Layout] = &[
    Layout {
        name: "package.json",
        files: &[
            ("package.json", "{\"name\": \"x\"}\n"),
            ("src/index.js", "1\n"),
        ],
        repositories: &[],
        scope: &["src/**"],
        cwd: ".",
        app_dirs: &[],
    },
    Layout {
        name: "Cargo.toml",
        files: &[
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            ("src/main.rs", "fn main() {}\n"),
        ],
        repositories: &[],
        scope: &["src/**"],
        cwd: ".",
        app_dirs: &[],
    },
    Layout {
        name: "pyproject.toml",
        files: &[
            ("pyproject.toml", "[project]\nname = \"x\"\n"),
            ("pkg/__init__.py", ""),
        ],
        repositories: &[],
        scope: &["pkg/**"],
        cwd: ".",
        app_dirs: &[],
    },
    Layout {
        name: "a package in the working directory",
        files: &[
            ("web/package.json", "{}\n"),
            ("web/Cargo.toml", "[package]\n"),
            ("README.md", "r\n"),
        ],
        repositories: &[],
        scope: &["web/**"],
        cwd: "web",
        app_dirs: &[],
    },
    Layout {
        name: "a new directory the intent owns",
        files: &[("README.md", "r\n")],
        repositories: &[],
        scope: &["newmod/**", "other/deeper/*.rs"],
        cwd: ".",
        app_dirs: &[],
    },
    Layout {
        name: "a nested .git",
        files: &[("vendor/lib/deep/a.rs", "a\n"), ("vendor/b.rs", "b\n")],
        repositories: &["vendor/lib/deep"],
        scope: &["vendor/**"],
        cwd: ".",
        app_dirs: &[],
    },
    Layout {
        name: "an .intentignore'd directory",
        files: &[
            (".intentignore", "src/private/\nsrc/key.pem\n"),
            ("src/private/secret.txt", "s\n"),
            ("src/key.pem", "k\n"),
            ("src/a.rs", "a\n"),
        ],
        repositories: &[],
        scope: &["src/**"],
        cwd: ".",
        app_dirs: &[],
    },
    Layout {
        name: "Mandate's own directories inside",
        files: &[
            ("data/settings.json", "{}\n"),
            ("data-file", "d\n"),
            ("src/a.rs", "a\n"),
        ],
        repositories: &[],
        scope: &["src/**"],
        cwd: ".",
        app_dirs: &["data", "data-file", "gone", "src/gone"],
    },
];

/// What the person sees of one entry: its type, its mode and its content (a symlink's
/// target).
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Dir(u32),
    File(u32, Bytes),
    Link(PathBuf),
    Other(u32),
}

/// A file's content, compared whole, shown as text when short (or by length and hash).
#[derive(PartialEq, Eq)]
struct Bytes(Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match std::str::from_utf8(&self.0) {
            Ok(text) if text.len() <= 120 => write!(f, "{text:?}"),
            _ => write!(
                f,
                "{} bytes, {}",
                self.0.len(),
                crate::fsutil::sha256_hex(&self.0)
            ),
        }
    }
}

/// Every entry under `root` (not following symlinks), by relative path, the root included.
fn tree(root: &Path) -> BTreeMap<String, Seen> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        let mode = meta.permissions().mode();
        let seen = if meta.file_type().is_symlink() {
            Seen::Link(std::fs::read_link(&path).expect("readlink"))
        } else if meta.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read_dir") {
                todo.push(entry.expect("entry").path());
            }
            Seen::Dir(mode)
        } else if meta.is_file() {
            Seen::File(mode, Bytes(std::fs::read(&path).expect("read")))
        } else {
            Seen::Other(mode)
        };
        let rel = path
            .strip_prefix(root)
            .expect("inside")
            .display()
            .to_string();
        out.insert(rel, seen);
    }
    out
}

struct Built {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    temp: PathBuf,
}

fn build(layout: &Layout) -> Built {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = tmp.path().canonicalize().expect("canonical");
    let root = base.join("ws");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    for (rel, text) in layout.files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    for repo in layout.repositories {
        let dir = root.join(repo);
        git(&dir, &["init", "-q"]);
        git(&dir, &["add", "."]);
        git(&dir, &["commit", "-qm", "nested"]);
    }
    git(&root, &["init", "-q"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "start"]);
    let temp = base.join("cmdtmp");
    std::fs::create_dir_all(&temp).expect("mkdir");
    Built {
        _tmp: tmp,
        root,
        temp,
    }
}

async fn governed(b: &Built, layout: &Layout, level: &Confinement, line: &str) -> GovernedRun {
    let app_dirs: Vec<PathBuf> = layout.app_dirs.iter().map(|d| b.root.join(d)).collect();
    let place = AgentPlace {
        root: &b.root,
        temp: &b.temp,
        cwd: layout.cwd,
        scope: layout.scope,
        granted: CommandNeeds::default(),
        app_dirs: &app_dirs,
    };
    place.run(level, line).await
}

/// What differs between two trees, one line per path.
fn differences(before: &BTreeMap<String, Seen>, after: &BTreeMap<String, Seen>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, seen) in after {
        match before.get(path) {
            None => out.push(format!("added {path:?}: {seen:?}")),
            Some(was) if was != seen => out.push(format!("changed {path:?}: {was:?} -> {seen:?}")),
            Some(_) => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("removed {path:?}"));
    }
    out
}

#[tokio::test]
async fn harmless_commands_leave_the_workspace_exactly_as_it_was() {
    let mut traces: Vec<String> = Vec::new();
    for level in levels() {
        for layout in LAYOUTS {
            let b = build(layout);
            let start = tree(&b.root);
            for line in HARMLESS {
                let run = governed(&b, layout, &level, line).await;
                let what = format!("{} / {} / `{line}`", level.summary(), layout.name);
                assert_eq!(run.run.spawn_error, None, "{what}");
                if !run.restored.is_empty() {
                    traces.push(format!("{what}: undone {:?}", run.restored));
                }
                let now = tree(&b.root);
                if now != start {
                    traces.push(format!("{what}: {:?}", differences(&start, &now)));
                }
            }
        }
    }
    assert_eq!(traces, Vec::<String>::new());
}

/// The paths bubblewrap mounts something on (the last word of each mount operation).
fn mount_points(args: &[std::ffi::OsString]) -> Vec<PathBuf> {
    let words: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let taken = match words[i] {
            "--bind" | "--ro-bind" => 2,
            "--tmpfs" | "--remount-ro" | "--dev" | "--proc" => 1,
            "--cap-drop" | "--chdir" => {
                i += 2;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.push(PathBuf::from(words[i + taken]));
        i += taken + 1;
    }
    out
}

#[test]
fn bubblewrap_is_given_no_mount_point_that_does_not_exist() {
    let layout = LAYOUTS
        .iter()
        .find(|l| l.name == "an .intentignore'd directory")
        .expect("layout");
    let b = build(layout);
    let policy = CommandPolicy::builtin();
    let ignore = IntentIgnore::load(&b.root).expect("ignore");
    let before = crate::changes::Snapshot::take(&b.root);
    let scope: Vec<String> = layout.scope.iter().map(|g| g.to_string()).collect();
    let app_dirs = vec![b.root.join("src/private/data")];
    std::fs::create_dir_all(&app_dirs[0]).expect("mkdir");
    let mut sandbox = SandboxRequest {
        workspace: &b.root,
        cwd: &b.root,
        owned_scope: &scope,
        ignore: &ignore,
        settings: policy.confinement(),
        before: &before,
        temp_dir: &b.temp,
        network: false,
        write_git: false,
        app_dirs: &app_dirs,
        redactor: &Redactor::new(),
    }
    .build()
    .expect("sandbox");
    // What was there when the sandbox was planned and is gone when the process starts.
    std::fs::remove_file(b.root.join("src/key.pem")).expect("rm");
    std::fs::remove_dir_all(&app_dirs[0]).expect("rm");
    sandbox.hidden.push(b.root.join("src/never-there"));
    let start = tree(&b.root);
    let missing: Vec<PathBuf> = mount_points(&bwrap::arguments(&sandbox, true))
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_err())
        .collect();
    assert_eq!(missing, Vec::<PathBuf>::new());
    if let Some(level) = levels().into_iter().find(|l| l.bwrap.is_some()) {
        let cmd = ConfinedCommand::command(&sandbox, &level, "ls -R; true").expect("command");
        let out = cmd.output().expect("run");
        assert!(out.status.success(), "{out:?}");
        assert_eq!(differences(&start, &tree(&b.root)), Vec::<String>::new());
    }
}

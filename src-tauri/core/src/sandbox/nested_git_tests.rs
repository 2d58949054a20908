//! A command whose scope covers nested repositories, run at each confinement level this machine
//! offers, with real git: what it tries in their `.git` is refused by the kernel (bubblewrap:
//! the nested `.git` and the directories above it are bound read-only or pinned) or undone
//! after it (Landlock alone), and afterwards the person's git runs none of it.

use std::path::{Path, PathBuf};

use super::tests::{levels, AgentPlace};
use super::*;
use crate::changes::hostile_git::{git, Payload, WHY};
use crate::hooks::command_policy::CommandNeeds;

struct Nested {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    temp: PathBuf,
    /// A repository outside the workspace whose configuration runs the payload.
    evil: PathBuf,
    head_w: String,
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// `vendor/x` and `vendor/w` are clones with a commit each; `vendor/sub` is a checkout whose
/// `.git` file points at `x`'s database.
fn nested(payload: &Payload) -> Nested {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = tmp.path().canonicalize().expect("canonical");
    let root = base.join("ws");
    write(&root, "src/main.rs", "fn main() {}\n");
    std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
    git(&root, &["init", "-q"]);
    for name in ["x", "w"] {
        let dir = root.join("vendor").join(name);
        write(&dir, "lib.rs", "pub fn f() {}\n");
        git(&dir, &["init", "-q"]);
        git(&dir, &["add", "."]);
        git(&dir, &["commit", "-qm", name]);
    }
    write(&root, "vendor/sub/.git", "gitdir: ../x/.git\n");
    let head_w = git(&root.join("vendor/w"), &["rev-parse", "HEAD"]);
    let temp = base.join("cmdtmp");
    std::fs::create_dir_all(&temp).expect("mkdir");
    git(&base, &["init", "-q", "--bare", "evil.git"]);
    let evil = base.join("evil.git");
    git(&evil, &["config", "core.bare", "false"]);
    let script = payload.script.display().to_string();
    git(&evil, &["config", "core.fsmonitor", &script]);
    Nested {
        _tmp: tmp,
        root,
        temp,
        evil,
        head_w,
    }
}

async fn governed(n: &Nested, level: &Confinement, line: &str) -> GovernedRun {
    governed_with(n, level, line, &["vendor/**"], CommandNeeds::default()).await
}

async fn governed_with(
    n: &Nested,
    level: &Confinement,
    line: &str,
    scope: &[&str],
    granted: CommandNeeds,
) -> GovernedRun {
    let place = AgentPlace {
        root: &n.root,
        temp: &n.temp,
        cwd: ".",
        scope,
        granted,
        app_dirs: &[],
    };
    place.run(level, line).await
}

fn reason<'a>(run: &'a GovernedRun, path: &str) -> Option<&'a str> {
    run.changes
        .out_of_scope
        .iter()
        .find(|(c, _)| c.path == path)
        .map(|(_, why)| why.as_str())
}

#[tokio::test]
async fn a_command_cannot_plant_git_configuration_or_hooks_in_a_nested_repository() {
    for level in levels() {
        let name = level.summary();
        let payload = Payload::new();
        let n = nested(&payload);
        let script = payload.script.display().to_string();
        let evil = n.evil.display().to_string();
        let line = format!(
            "git -C vendor/x config core.fsmonitor '{script}' || echo 'config refused'
             printf '#!/bin/sh\\n%s hook\\n' '{script}' > vendor/x/.git/hooks/post-checkout && chmod +x vendor/x/.git/hooks/post-checkout
             echo 'pub fn f() {{ 1 }}' > vendor/x/lib.rs
             git init -q vendor/y && git -C vendor/y config core.fsmonitor '{script}'
             mkdir -p vendor/z && printf 'gitdir: %s\\n' '{evil}' > vendor/z/.git
             printf 'gitdir: %s\\n' '{evil}' > vendor/sub/.git
             mv vendor/w vendor/w2 || echo 'move refused'
             true"
        );
        let run = governed(&n, &level, &line).await;
        let out = &run.run.output;
        assert_eq!(run.run.exit_code, Some(0), "{name}: {out}");
        let undone = crate::changes::not_undone(&run.restored);
        assert!(
            undone.is_empty(),
            "{name}: not undone {undone:?}: {:#?}",
            run.restored
        );
        for path in ["vendor/y/.git", "vendor/y/.git/config", "vendor/z/.git"] {
            let why = reason(&run, path).unwrap_or_else(|| panic!("{name}: {path} in scope"));
            assert!(why.contains(WHY), "{name}: {path}: {why}");
        }
        if level.level == ConfinementLevel::LandlockAndBwrap {
            // Refused up front: the nested `.git` (a directory or a file) is read-only, and
            // the directory holding it cannot be moved away.
            assert!(out.contains("config refused"), "{name}: {out}");
            assert!(out.contains("move refused"), "{name}: {out}");
            assert!(reason(&run, "vendor/x/.git/config").is_none(), "{name}");
        } else {
            let why = reason(&run, "vendor/x/.git/config").expect("changed");
            assert!(why.contains(WHY), "{name}: {why}");
            assert!(reason(&run, "vendor/sub/.git").is_some_and(|w| w.contains(WHY)));
        }
        let in_scope: Vec<&str> = run
            .changes
            .in_scope
            .iter()
            .map(|c| c.path.as_str())
            .collect();
        assert!(
            in_scope.contains(&"vendor/x/lib.rs"),
            "{name}: {in_scope:?}"
        );
        for dir in ["vendor/x", "vendor/y", "vendor/z", "vendor/sub", "vendor/w"] {
            let dir = n.root.join(dir);
            if dir.exists() {
                assert!(
                    !payload.fires_in(&dir),
                    "{name}: the payload ran in {dir:?}"
                );
            }
        }
        assert!(!n.root.join("vendor/y/.git").exists(), "{name}");
        assert!(!n.root.join("vendor/z/.git").exists(), "{name}");
        assert!(!n.root.join("vendor/w2/.git").exists(), "{name}");
        assert_eq!(
            git(&n.root.join("vendor/w"), &["rev-parse", "HEAD"]),
            n.head_w,
            "{name}"
        );
    }
}

/// The repository's own configuration names files in the workspace (husky's `core.hooksPath`,
/// an `include.path` of a tracked `.gitconfig`): a command whose scope covers them cannot make
/// git run its payload through them.
#[tokio::test]
async fn a_command_cannot_change_what_the_repositorys_configuration_runs_or_includes() {
    for level in levels() {
        let name = level.summary();
        let payload = Payload::new();
        let tmp = tempfile::tempdir().expect("tmp");
        let base = tmp.path().canonicalize().expect("canonical");
        let root = base.join("ws");
        write(&root, "src/main.rs", "fn main() {}\n");
        write(&root, ".husky/_/pre-commit", "#!/bin/sh\nexit 0\n");
        write(&root, ".gitconfig", "[user]\n\tname = Project\n");
        std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
        git(&root, &["init", "-q"]);
        git(&root, &["config", "core.hooksPath", ".husky/_"]);
        git(&root, &["config", "include.path", "../.gitconfig"]);
        git(&root, &["add", "."]);
        git(&root, &["commit", "-qm", "init"]);
        let temp = base.join("cmdtmp");
        std::fs::create_dir_all(&temp).expect("mkdir");
        let n = Nested {
            _tmp: tmp,
            root: root.clone(),
            temp,
            evil: base.clone(),
            head_w: String::new(),
        };
        let script = payload.script.display().to_string();
        let line = format!(
            "printf '[core]\\n\\tfsmonitor = %s\\n' '{script}' >> .gitconfig || echo 'include refused'
             printf '#!/bin/sh\\n%s\\n' '{script}' > .husky/_/post-checkout && chmod +x .husky/_/post-checkout || echo 'hook refused'
             echo changed > src/main.rs
             true"
        );
        let run = governed_with(&n, &level, &line, &["**"], CommandNeeds::default()).await;
        let out = &run.run.output;
        let undone = crate::changes::not_undone(&run.restored);
        assert!(undone.is_empty(), "{name}: not undone {undone:?}: {out}");
        for (path, what) in [
            (".gitconfig", "include.path"),
            (".husky/_/post-checkout", "core.hooksPath"),
        ] {
            if let Some(why) = reason(&run, path) {
                assert!(why.contains(what), "{name}: {path}: {why}");
            } else {
                assert!(
                    out.contains("refused"),
                    "{name}: {path} neither refused nor undone: {out}"
                );
            }
        }
        assert_eq!(
            std::fs::read_to_string(root.join(".gitconfig")).expect("read"),
            "[user]\n\tname = Project\n",
            "{name}"
        );
        assert!(!root.join(".husky/_/post-checkout").exists(), "{name}");
        assert!(!payload.fires_in(&root), "{name}: the payload ran: {out}");
        assert_eq!(
            std::fs::read_to_string(root.join("src/main.rs")).expect("read"),
            "changed\n",
            "{name}"
        );
    }
}

/// A repository database not named `.git` (a bare repository made to look non-bare): one
/// that was there is refused (bubblewrap) or undone, a new one is removed.
#[tokio::test]
async fn a_command_cannot_plant_or_change_a_repository_database_not_named_git() {
    for level in levels() {
        let name = level.summary();
        let payload = Payload::new();
        let n = nested(&payload);
        git(
            &n.root.join("vendor"),
            &["init", "-q", "--bare", "fixture.git"],
        );
        let fixture = n.root.join("vendor/fixture.git");
        let config_before = std::fs::read(fixture.join("config")).expect("config");
        let script = payload.script.display().to_string();
        let plant = |dir: &str| {
            format!(
                "git --git-dir={dir} config core.bare false && git --git-dir={dir} config core.worktree .. && git --git-dir={dir} config core.fsmonitor '{script}'"
            )
        };
        let line = format!(
            "{} || echo 'fixture refused'\n git init -q --bare vendor/evil && {}\n true",
            plant("vendor/fixture.git"),
            plant("vendor/evil")
        );
        let run = governed(&n, &level, &line).await;
        let out = &run.run.output;
        let undone = crate::changes::not_undone(&run.restored);
        assert!(undone.is_empty(), "{name}: not undone {undone:?}: {out}");
        let why = reason(&run, "vendor/evil/config").unwrap_or_else(|| panic!("{name}: {out}"));
        assert!(why.contains(WHY), "{name}: {why}");
        if level.level == ConfinementLevel::LandlockAndBwrap {
            assert!(out.contains("fixture refused"), "{name}: {out}");
        }
        assert!(!n.root.join("vendor/evil").exists(), "{name}");
        assert_eq!(
            std::fs::read(fixture.join("config")).expect("config"),
            config_before,
            "{name}"
        );
        assert!(!payload.fires_in(&fixture), "{name}: the payload ran");
    }
}

/// A command allowed to write `.git/` (an approved commit) keeps what git commands write, and
/// loses a hook or a setting that names a program.
#[tokio::test]
async fn a_command_allowed_to_write_git_keeps_what_git_writes_and_nothing_else() {
    let write_git = CommandNeeds {
        network: false,
        write_git: true,
    };
    for level in levels() {
        let name = level.summary();
        let payload = Payload::new();
        let n = nested(&payload);
        git(&n.root, &["add", "src"]);
        git(&n.root, &["commit", "-qm", "init"]);
        let commit = "git -c user.name=a -c user.email=a@b -c commit.gpgsign=false commit -q --allow-empty -m agent";
        let run = governed_with(
            &n,
            &level,
            &format!("{commit} && git branch -q --track feature main"),
            &["src/**"],
            write_git,
        )
        .await;
        let out = &run.run.output;
        assert_eq!(run.run.exit_code, Some(0), "{name}: {out}");
        assert!(
            run.changes.out_of_scope.is_empty(),
            "{name}: {:#?}",
            run.changes.out_of_scope
        );
        assert!(git(&n.root, &["config", "branch.feature.merge"]).contains("refs/heads/main"));

        let config_before = std::fs::read(n.root.join(".git/config")).expect("config");
        let script = payload.script.display().to_string();
        let line = format!(
            "{commit} && git config core.fsmonitor '{script}' && printf '#!/bin/sh\\n%s\\n' '{script}' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout"
        );
        let run = governed_with(&n, &level, &line, &["src/**"], write_git).await;
        let out = &run.run.output;
        assert_eq!(run.run.exit_code, Some(0), "{name}: {out}");
        let undone = crate::changes::not_undone(&run.restored);
        assert!(undone.is_empty(), "{name}: {undone:?}");
        let why = reason(&run, ".git/config").unwrap_or_else(|| panic!("{name}: {out}"));
        assert!(why.contains("core.fsmonitor"), "{name}: {why}");
        assert!(reason(&run, ".git/hooks/post-checkout").is_some(), "{name}");
        assert_eq!(
            std::fs::read(n.root.join(".git/config")).expect("config"),
            config_before,
            "{name}"
        );
        assert!(!n.root.join(".git/hooks/post-checkout").exists(), "{name}");
        assert!(
            git(&n.root, &["log", "--oneline"]).matches("agent").count() == 2,
            "{name}"
        );
        assert!(!payload.fires_in(&n.root), "{name}: the payload ran");
    }
}

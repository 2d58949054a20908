//! Real git repositories for the ledger's tests: a repository per person (own data directory,
//! so own ledger heads), the `mandate` binary run in them, and agents' records appended through
//! the `ledger-stress` helper (which appends through `Ledger`, as a governed write does).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::app::mandate_bin;

/// What a command printed and how it ended.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    fn from(out: Output) -> Ran {
        Ran {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", self.stdout, self.stderr))
    }
}

/// One person's clone: a work tree, and a home with their own Mandate data directory.
pub struct Person {
    pub dir: PathBuf,
    pub home: tempfile::TempDir,
    stress: PathBuf,
}

impl Person {
    /// A new repository on branch `main` in `dir`, owned by this person.
    pub fn init(dir: &Path, stress: &Path) -> Person {
        std::fs::create_dir_all(dir).expect("mkdir");
        let p = Person::at(dir, stress);
        p.git(&["init", "-q", "-b", "main"]);
        p.configure();
        p
    }

    /// A clone of `origin` in `dir`.
    pub fn clone_of(origin: &Path, dir: &Path, stress: &Path) -> Person {
        let p = Person::at(dir.parent().expect("parent"), stress);
        p.git(&[
            "clone",
            "-q",
            &origin.display().to_string(),
            &dir.display().to_string(),
        ]);
        let p = Person::at(dir, stress);
        p.configure();
        p
    }

    fn at(dir: &Path, stress: &Path) -> Person {
        Person {
            dir: dir.to_path_buf(),
            home: tempfile::Builder::new()
                .prefix("mandate-person-")
                .tempdir()
                .expect("home"),
            stress: stress.to_path_buf(),
        }
    }

    fn configure(&self) {
        self.git(&["config", "user.name", "Test Person"]);
        self.git(&["config", "user.email", "person@example.com"]);
        self.git(&["config", "commit.gpgsign", "false"]);
    }

    pub fn data(&self) -> PathBuf {
        self.home.path().join("data")
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("MANDATE_DATA_DIR", self.data())
            .env("MANDATE_CONFIG_DIR", self.home.path().join("config"))
            .env("HOME", self.home.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_EDITOR", "true")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE");
    }

    /// `git ARGS`, which must succeed; its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let r = self.git_may_fail(args);
        assert_eq!(
            r.code,
            Some(0),
            "git {args:?} failed:\n{}\n{}",
            r.stdout,
            r.stderr
        );
        r.stdout.trim().to_string()
    }

    pub fn git_may_fail(&self, args: &[&str]) -> Ran {
        let mut cmd = Command::new("git");
        cmd.current_dir(&self.dir).args(args);
        self.env(&mut cmd);
        Ran::from(cmd.output().expect("run git"))
    }

    /// `mandate ARGS --workspace DIR`.
    pub fn mandate(&self, args: &[&str]) -> Ran {
        let mut cmd = Command::new(mandate_bin());
        cmd.current_dir(&self.dir)
            .args(args)
            .arg("--workspace")
            .arg(&self.dir);
        self.env(&mut cmd);
        Ran::from(cmd.output().expect("run mandate"))
    }

    /// The `ledger-stress` helper with ARGS (the workspace is inserted second).
    pub fn helper(&self, mode: &str, args: &[&str]) -> Ran {
        let mut cmd = Command::new(&self.stress);
        cmd.current_dir(&self.dir)
            .arg(mode)
            .arg(&self.dir)
            .args(args);
        self.env(&mut cmd);
        Ran::from(cmd.output().expect("run ledger-stress"))
    }

    /// An agent writes `lines` at `start` of `path` (replacing `replace` lines there) and its
    /// record is appended; returns the record's id.
    pub fn agent_writes(
        &self,
        intent: &str,
        path: &str,
        start: usize,
        replace: usize,
        lines: &[&str],
    ) -> String {
        let file = self.dir.join(path);
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut all: Vec<String> = text.lines().map(str::to_string).collect();
        let at = (start - 1).min(all.len());
        let end = (at + replace).min(all.len());
        all.splice(at..end, lines.iter().map(|l| l.to_string()));
        self.write(path, &(all.join("\n") + "\n"));
        let (s, e) = (start.to_string(), (start + lines.len() - 1).to_string());
        let r = self.helper("record", &[intent, path, &s, &e, "openai/test-model"]);
        assert_eq!(r.code, Some(0), "record failed: {}", r.stderr);
        r.stdout.trim().to_string()
    }

    pub fn write(&self, path: &str, text: &str) {
        let file = self.dir.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(file, text).expect("write");
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.join(path)).unwrap_or_default()
    }

    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }
}

pub const LEDGER: &str = ".orchestration/agent_trace.jsonl";

/// `git ARGS` in `dir` as a test's fixture makes it: a fixed author, no signing, `main` as the
/// first branch, and none of this machine's or this user's configuration (`HOME` is `dir`).
pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git")
}

/// [`git_output`], which must succeed; its standard output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {dir:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

//! The programs of hooks and MCP servers, wherever they live. bubblewrap gives a confined
//! process a private `/tmp` and an empty `/run`, so a hook script or a server kept under the
//! real `/tmp` (a checkout there, an unpacked download) would not be there and its start would
//! fail with bubblewrap's `execvp: No such file or directory`. What the person's hook or server
//! runs is bound back read-only after those mounts: a binary alone, a script with the
//! directory it is in (what its interpreter loads beside it, never `/tmp` itself), and the
//! interpreter its `#!` line names. The person's home directory, kept under `/tmp`, is seen as
//! it would be anywhere else. A program inside a hidden path (the person's secrets, Mandate's
//! own directories) is refused with that reason: it is never shown again, and could not run.
//!
//! Only for the person's hooks and servers: the agent's commands keep the private `/tmp`
//! whatever their line names.

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

use super::{CommandSandbox, SandboxError};

/// The directories bubblewrap mounts afresh: what is under them is out of a process's sight.
const PRIVATE_MOUNTS: [&str; 2] = ["/tmp", "/run"];
/// A script's directory is shown only under this one (`/run` holds the buses' sockets).
const SCRIPT_DIRS_UNDER: &str = "/tmp";

/// The executable file `command` names: a path (relative to `cwd`), or a name looked up on
/// the `PATH` of `env` (relative entries from `cwd`), as the process's start will find it.
pub fn find_program(command: &str, env: &[(String, String)], cwd: &Path) -> Option<PathBuf> {
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let path = cwd.join(command);
        return runnable(&path).then_some(path);
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str());
    std::env::split_paths(path)
        .map(|dir| cwd.join(dir).join(command))
        .find(|p| runnable(p))
}

/// `path` made absolute from `cwd` with `.` and `..` taken away, symlinks left as they are.
fn lexical(cwd: &Path, path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in cwd.join(path).components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}

/// What a script's first line names as its interpreter (`#!/opt/py/bin/python3 -u`).
fn interpreter(path: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let word = text.split_whitespace().next()?;
    word.starts_with('/').then(|| PathBuf::from(word))
}

fn is_machine_code(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"\x7fELF")
}

impl CommandSandbox {
    /// Whether bubblewrap's fresh mounts hide `path` from the process: it is under `/tmp` or
    /// `/run` and not in what is bound back anyway (the workspace, the temporary and cache
    /// directories).
    fn out_of_sight(&self, path: &Path) -> bool {
        PRIVATE_MOUNTS.iter().any(|m| path.starts_with(m))
            && !path.starts_with(&self.workspace)
            && !path.starts_with(&self.temp_dir)
            && !self.cache_dir.as_ref().is_some_and(|c| path.starts_with(c))
    }

    /// Makes the files among `paths` (absolute, or relative to the working directory: the
    /// program a hook or server runs and the files its command line names; others are left
    /// alone) visible to the process, read-only, where bubblewrap's private `/tmp` would hide
    /// them. Refused when one of them, as named or symlinks resolved, is inside a hidden path.
    pub fn with_programs(
        mut self,
        paths: impl IntoIterator<Item = PathBuf>,
    ) -> Result<CommandSandbox, SandboxError> {
        let mut todo: Vec<PathBuf> = paths.into_iter().collect();
        let mut seen = 0;
        while let Some(named) = todo.pop() {
            seen += 1;
            if seen > MAX_PROGRAM_PATHS {
                break;
            }
            let given = lexical(&self.cwd, &named);
            if !std::fs::metadata(&given).is_ok_and(|m| m.is_file()) {
                continue;
            }
            let real = given.canonicalize().unwrap_or_else(|_| given.clone());
            for at in [&given, &real] {
                if let Some(hidden) = self.hidden.iter().find(|h| at.starts_with(h)) {
                    return Err(SandboxError::ProgramHidden {
                        program: given.display().to_string(),
                        protected: hidden.display().to_string(),
                    });
                }
            }
            let script = !is_machine_code(&real);
            for at in [given, real.clone()] {
                if !self.out_of_sight(&at) {
                    continue;
                }
                let dir = at.parent().filter(|d| {
                    script && d.starts_with(SCRIPT_DIRS_UNDER) && *d != Path::new(SCRIPT_DIRS_UNDER)
                });
                self.programs
                    .push(dir.map_or(at.clone(), Path::to_path_buf));
            }
            if script {
                todo.extend(interpreter(&real));
            }
        }
        self.programs.sort();
        self.programs.dedup();
        Ok(self)
    }

    /// What bubblewrap binds read-only back after its fresh mounts: the programs
    /// ([`CommandSandbox::with_programs`]) and the person's home directory when it is under
    /// `/tmp` (never `/tmp` itself, nor a hidden path).
    pub(super) fn shown_again(&self) -> Vec<PathBuf> {
        let home = self
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| PathBuf::from(v))
            .filter(|h| h.is_absolute() && h.is_dir())
            .map(|h| h.canonicalize().unwrap_or(h))
            .filter(|h| {
                h.starts_with(SCRIPT_DIRS_UNDER)
                    && *h != Path::new(SCRIPT_DIRS_UNDER)
                    && self.out_of_sight(h)
                    && !self.hidden.iter().any(|p| h.starts_with(p))
            });
        let mut out: Vec<PathBuf> = home.into_iter().chain(self.programs.clone()).collect();
        out.sort();
        out.dedup();
        out
    }
}

/// At most this many paths are looked at for one hook or server (its line, the interpreters).
const MAX_PROGRAM_PATHS: usize = 256;

//! What code a stdio server's command line runs, found the way its start will find it: the
//! program looked up on the `PATH` it is started with (relative entries from its working
//! directory, the workspace), every symbolic link followed one hop at a time, and the script
//! or package an interpreter or launcher is given.
//!
//! A grant to write in the workspace is the person's trust in *that code*. Code that lives in
//! the workspace can be changed by a branch, or by the agent through an in-scope write, and
//! would inherit the grant under the same command line; so [`examine`] refuses a command line
//! when any file it runs or names is reached through the workspace:
//!
//! - the program, or any `PATH` entry (the server's own children are found there too);
//! - any argument (or `--option=value` value) that exists and resolves inside the workspace,
//!   or that is written as a path (`./x`, `../x`, `/x`) into it; the workspace itself is
//!   allowed as an argument (it is the server's working directory anyway), never as code;
//! - the script or module of an interpreter (`node`, `python*`, `deno`, `bun`, shells, …),
//!   and code given inline (`-e`, `-c`) or read from the working directory (`python -m`
//!   without `-I`/`-P`, a shell without a script);
//! - a launcher's package when the workspace could take precedence over the registry:
//!   `npx` runs a package the workspace's `node_modules` or `package.json` provides and reads
//!   its `.npmrc`, so `npx` (and `npm exec`, `pnpm dlx`, `yarn dlx`, `bunx`) is refused when
//!   the workspace has any of them; `uvx` is refused when it has `.venv` or `.python-version`
//!   (interpreter discovery); `uv run`, `npm run` and the like always (they run the
//!   workspace's project);
//! - variables the definition sets whose values name workspace paths (`PYTHONPATH`,
//!   `NODE_OPTIONS=--require ./x.js`, …).
//!
//! What is not refused is bound by content ([`super::grant`]): the program file and every
//! existing file outside the workspace the command line names. Not covered: code a program
//! loads on its own from its working directory (a configuration file it looks for there),
//! and code reached from a bound file (a script's own imports, a binary's libraries).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The command line of a stdio server as it is started (secret references resolved).
pub struct CommandLine<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    /// The variables its definition sets.
    pub own_env: &'a [(String, String)],
    /// Its whole environment (the `PATH` its program is looked up on).
    pub env: &'a [(String, String)],
}

/// The code a command line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program file, symbolic links resolved.
    pub program: PathBuf,
    /// The other files outside the workspace it names (script, arguments, the programs of
    /// wrappers such as `env`), symbolic links resolved.
    pub files: Vec<PathBuf>,
}

/// Why a command line cannot be given the grant to write in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{what} `{given}` leads to {path}, inside the workspace, so a branch or the agent could change the code that would run with the grant")]
    InWorkspace {
        what: String,
        given: String,
        path: String,
    },
    #[error("{what} `{given}` is the workspace itself, so a branch or the agent could change the code that would run with the grant")]
    IsWorkspace { what: String, given: String },
    #[error("{what} `{given}` does not exist, so the code it runs cannot be bound to the grant")]
    Missing { what: String, given: String },
    #[error("its program `{0}` is not found on its PATH")]
    NotFound(String),
    #[error("{0}")]
    Runs(String),
}

/// Finds the code `line` runs from `root` (its working directory) and refuses it when that
/// code is reached through the workspace. Blocking: reads the file system.
pub fn examine(line: &CommandLine<'_>, root: &Path) -> Result<Launch, Refusal> {
    let root = root
        .canonicalize()
        .map_err(|e| Refusal::Runs(format!("the workspace cannot be resolved ({e})")))?;
    let mut ex = Examiner {
        root,
        files: Vec::new(),
    };
    for (name, value) in line.own_env {
        if name != "PATH" {
            ex.variable(name, value)?;
        }
    }
    let path = variable(line.env, "PATH").map(str::to_string);
    let program = ex.command_line(line.command, line.args, path.as_deref(), 0)?;
    let mut files = ex.files;
    files.sort();
    files.dedup();
    files.retain(|f| *f != program);
    Ok(Launch { program, files })
}

fn variable<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// What a walk through the file system found.
enum Walked {
    /// The path exists; `target` is where it leads, `inside` the first entry strictly inside
    /// the workspace it passed through (a symbolic link there counts).
    Found {
        target: PathBuf,
        inside: Option<PathBuf>,
    },
    Missing {
        inside: Option<PathBuf>,
    },
}

/// Follows `path` (absolute) one component and one symbolic link at a time, as the kernel
/// does, noting every directory entry it consults.
fn walk(path: &Path, root: &Path) -> Walked {
    let strictly_inside = |p: &Path| p.starts_with(root) && p != root;
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let push_front = |pending: &mut VecDeque<OsString>, p: &Path| {
        let parts: Vec<OsString> = p
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some(OsString::from("..")),
                _ => None,
            })
            .collect();
        for part in parts.into_iter().rev() {
            pending.push_front(part);
        }
    };
    push_front(&mut pending, path);
    let mut resolved = PathBuf::from("/");
    let mut inside: Option<PathBuf> = None;
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            resolved.pop();
            continue;
        }
        let next = resolved.join(&part);
        if inside.is_none() && strictly_inside(&next) {
            inside = Some(next.clone());
        }
        let Ok(meta) = std::fs::symlink_metadata(&next) else {
            return Walked::Missing { inside };
        };
        if !meta.file_type().is_symlink() {
            resolved = next;
            continue;
        }
        links += 1;
        let Ok(target) = std::fs::read_link(&next) else {
            return Walked::Missing { inside };
        };
        if links > 40 {
            return Walked::Missing { inside };
        }
        if target.is_absolute() {
            resolved = PathBuf::from("/");
        }
        push_front(&mut pending, &target);
    }
    // Named by where it ends when that is inside too (the file, not its directory).
    let inside = inside.map(|hop| {
        if strictly_inside(&resolved) {
            resolved.clone()
        } else {
            hop
        }
    });
    Walked::Found {
        target: resolved,
        inside,
    }
}

/// Whether an argument is written as a path (so that even a missing one names a place).
fn written_as_path(given: &str) -> bool {
    given == "."
        || given == ".."
        || given.starts_with("./")
        || given.starts_with("../")
        || given.starts_with('/')
}

/// A name on the command line, for messages: control characters escaped, length capped.
fn shown(given: &str) -> String {
    super::config::printable(given, 200)
}

struct Examiner {
    root: PathBuf,
    files: Vec<PathBuf>,
}

impl Examiner {
    fn locate(&self, given: &str) -> PathBuf {
        let p = Path::new(given);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.root.join(p)
        }
    }

    fn in_workspace(&self, what: &str, given: &str, at: &Path) -> Refusal {
        Refusal::InWorkspace {
            what: what.to_string(),
            given: shown(given),
            path: at.display().to_string(),
        }
    }

    /// An argument that may name a file: refused when it leads through the workspace (the
    /// workspace itself only when `allow_root`); a file outside it is bound.
    fn path_arg(&mut self, what: &str, given: &str, allow_root: bool) -> Result<(), Refusal> {
        if given.is_empty() || given.contains("://") || given.contains('\0') {
            return Ok(());
        }
        match walk(&self.locate(given), &self.root) {
            Walked::Found { target, inside } => {
                if let Some(at) = inside {
                    return Err(self.in_workspace(what, given, &at));
                }
                if target == self.root {
                    if allow_root {
                        return Ok(());
                    }
                    return Err(Refusal::IsWorkspace {
                        what: what.to_string(),
                        given: shown(given),
                    });
                }
                if target.is_file() {
                    self.files.push(target);
                }
                Ok(())
            }
            Walked::Missing { inside: Some(at) } if written_as_path(given) => {
                Err(self.in_workspace(what, given, &at))
            }
            Walked::Missing { .. } => Ok(()),
        }
    }

    /// A file of code (a script, a module given by path): it must exist, outside the
    /// workspace; a file is bound.
    fn code_arg(&mut self, what: &str, given: &str) -> Result<(), Refusal> {
        self.path_arg(what, given, false)?;
        if given.contains("://") {
            return Ok(());
        }
        match walk(&self.locate(given), &self.root) {
            Walked::Found { .. } => Ok(()),
            Walked::Missing { .. } => Err(Refusal::Missing {
                what: what.to_string(),
                given: shown(given),
            }),
        }
    }

    /// An argument of the program: itself, or the value of `--option=value`.
    fn plain_arg(&mut self, given: &str) -> Result<(), Refusal> {
        let value = match given.strip_prefix('-') {
            Some(option) => match option.split_once('=') {
                Some((_, value)) => value,
                None => return Ok(()),
            },
            None => given,
        };
        self.path_arg("the argument", value, true)
    }

    /// The value of an option: every word and `:`-separated part that may be a path.
    fn option_value(&mut self, option: &str, value: &str) -> Result<(), Refusal> {
        let what = format!("the value of `{}`", shown(option));
        for word in value.split(char::is_whitespace) {
            let word = match word.strip_prefix('-') {
                Some(opt) => opt.split_once('=').map_or("", |(_, v)| v),
                None => word,
            };
            self.path_arg(&what, word, false)?;
            if word.contains(':') && !word.contains("://") {
                for part in word.split(':') {
                    self.path_arg(&what, part, false)?;
                }
            }
        }
        Ok(())
    }

    /// A variable the definition sets: those that steer what code runs never name the
    /// workspace; others may name the workspace itself, not a file in it.
    fn variable(&mut self, name: &str, value: &str) -> Result<(), Refusal> {
        let steers_code = steers_code(name);
        let what = format!("the variable {name}");
        for word in value.split(char::is_whitespace) {
            let word = match word.strip_prefix('-') {
                Some(opt) => opt.split_once('=').map_or("", |(_, v)| v),
                None => word,
            };
            let parts: Vec<&str> = if word.contains("://") {
                vec![word]
            } else {
                word.split(':').collect()
            };
            for part in parts {
                if steers_code && part.is_empty() && value.contains(':') {
                    // An empty entry of a search path is the working directory.
                    return Err(Refusal::IsWorkspace {
                        what,
                        given: shown(value),
                    });
                }
                self.path_arg(&what, part, !steers_code)?;
            }
        }
        Ok(())
    }

    /// Every entry of the `PATH` the program (and everything it starts by name) is looked up
    /// on must be outside the workspace; an empty or relative entry is the workspace.
    fn search_path(&mut self, path: &str) -> Result<(), Refusal> {
        for entry in path.split(':') {
            let given = if entry.is_empty() { "." } else { entry };
            match walk(&self.locate(given), &self.root) {
                Walked::Found {
                    inside: Some(at), ..
                }
                | Walked::Missing { inside: Some(at) } => {
                    return Err(self.in_workspace("its PATH entry", given, &at))
                }
                Walked::Found { target, .. } if target == self.root => {
                    return Err(Refusal::IsWorkspace {
                        what: "its PATH entry".into(),
                        given: shown(given),
                    })
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The program as the spawn finds it: a path from the working directory, or the first
    /// executable file of that name on `path`.
    fn program(&mut self, command: &str, path: Option<&str>) -> Result<PathBuf, Refusal> {
        let found = |target: &Path| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::metadata(target)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        let candidates: Vec<PathBuf> = if command.contains('/') {
            vec![self.locate(command)]
        } else {
            let path = path.unwrap_or("/usr/local/bin:/usr/bin:/bin");
            self.search_path(path)?;
            path.split(':')
                .map(|dir| {
                    self.locate(if dir.is_empty() { "." } else { dir })
                        .join(command)
                })
                .collect()
        };
        for candidate in candidates {
            match walk(&candidate, &self.root) {
                Walked::Found {
                    inside: Some(at), ..
                } => return Err(self.in_workspace("its program", command, &at)),
                Walked::Found { target, .. } if found(&target) => return Ok(target),
                Walked::Missing { inside: Some(at) } if command.contains('/') => {
                    return Err(self.in_workspace("its program", command, &at))
                }
                _ => {}
            }
        }
        Err(Refusal::NotFound(shown(command)))
    }

    /// One command line (a wrapper such as `env` names another): its program, then what that
    /// program makes of its arguments.
    fn command_line(
        &mut self,
        command: &str,
        args: &[String],
        path: Option<&str>,
        depth: usize,
    ) -> Result<PathBuf, Refusal> {
        if depth > 4 {
            return Err(Refusal::Runs(
                "it wraps one program in another too many times to follow".into(),
            ));
        }
        let program = self.program(command, path)?;
        let kind = super::launchers::kind_of(command)
            .or_else(|| {
                program
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(super::launchers::kind_of)
            })
            .unwrap_or(super::launchers::Kind::Program);
        super::launchers::examine_args(self, kind, args, path, depth)?;
        self.interpreter_line(&program, path)?;
        Ok(program)
    }

    /// A program that is a script (`#!INTERPRETER [ARG]`) runs its interpreter, which the
    /// kernel finds by path (a relative one from the working directory) or, through `env`,
    /// on the `PATH`: it must be outside the workspace too, and is bound.
    fn interpreter_line(&mut self, program: &Path, path: Option<&str>) -> Result<(), Refusal> {
        let Some((interpreter, arg)) = shebang(program) else {
            return Ok(());
        };
        let what = "its program's interpreter";
        match walk(&self.locate(&interpreter), &self.root) {
            Walked::Found {
                inside: Some(at), ..
            }
            | Walked::Missing { inside: Some(at) } => {
                return Err(self.in_workspace(what, &interpreter, &at))
            }
            Walked::Found { target, .. } => {
                if target.is_file() {
                    self.files.push(target);
                }
            }
            Walked::Missing { inside: None } => {}
        }
        let by_env = interpreter.rsplit('/').next() == Some("env");
        match arg {
            Some(arg) if by_env && arg.starts_with('-') => Err(Refusal::Runs(format!(
                "its program's interpreter line `#!{} {}` cannot be followed",
                shown(&interpreter),
                shown(&arg)
            ))),
            Some(arg) if by_env => {
                let found = self.program(&arg, path)?;
                self.files.push(found);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// The interpreter line of a script: its path and its one optional argument.
fn shebang(program: &Path) -> Option<(String, Option<String>)> {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = String::from_utf8_lossy(line);
    let mut words = line.trim().splitn(2, [' ', '\t']);
    let interpreter = words.next().filter(|w| !w.is_empty())?.to_string();
    let arg = words
        .next()
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty());
    Some((interpreter, arg))
}

/// What the launcher rules may ask of the examiner.
pub(super) trait Checks {
    fn root(&self) -> &Path;
    /// An argument of the program (the workspace itself allowed).
    fn plain_arg(&mut self, given: &str) -> Result<(), Refusal>;
    /// The value of an option (never the workspace).
    fn option_value(&mut self, option: &str, value: &str) -> Result<(), Refusal>;
    /// A file of code: exists, outside the workspace.
    fn code_arg(&mut self, what: &str, given: &str) -> Result<(), Refusal>;
    /// A variable set on the command line (`env NAME=VALUE`).
    fn variable(&mut self, name: &str, value: &str) -> Result<(), Refusal>;
    /// Another command line, run by this one.
    fn command_line(
        &mut self,
        command: &str,
        args: &[String],
        path: Option<&str>,
        depth: usize,
    ) -> Result<(), Refusal>;
}

impl Checks for Examiner {
    fn root(&self) -> &Path {
        &self.root
    }
    fn plain_arg(&mut self, given: &str) -> Result<(), Refusal> {
        Examiner::plain_arg(self, given)
    }
    fn option_value(&mut self, option: &str, value: &str) -> Result<(), Refusal> {
        Examiner::option_value(self, option, value)
    }
    fn code_arg(&mut self, what: &str, given: &str) -> Result<(), Refusal> {
        Examiner::code_arg(self, what, given)
    }
    fn variable(&mut self, name: &str, value: &str) -> Result<(), Refusal> {
        Examiner::variable(self, name, value)
    }
    fn command_line(
        &mut self,
        command: &str,
        args: &[String],
        path: Option<&str>,
        depth: usize,
    ) -> Result<(), Refusal> {
        let program = Examiner::command_line(self, command, args, path, depth)?;
        self.files.push(program);
        Ok(())
    }
}

/// Variables that decide which code runs (search paths, preloads, interpreter options, and
/// `HOME`/`XDG_*`, where programs find their user configuration such as `.npmrc` and Python's
/// user site-packages): never the workspace, not even its root.
fn steers_code(name: &str) -> bool {
    const NAMES: [&str; 10] = [
        "PATH",
        "HOME",
        "CLASSPATH",
        "BASH_ENV",
        "ENV",
        "ZDOTDIR",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "VIRTUAL_ENV",
    ];
    const PREFIXES: [&str; 13] = [
        "XDG_",
        "LD_",
        "PYTHON",
        "NODE_",
        "npm_config_",
        "NPM_CONFIG_",
        "UV_",
        "PIP_",
        "DENO_",
        "BUN_",
        "RUBY",
        "PERL",
        "GEM_",
    ];
    NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
#[path = "launch_tests.rs"]
mod tests;

//! A hook's own code: what the person's hooks run, found the way their interpreters find it,
//! so that it is the person's like the hooks themselves (no intent may change it, see
//! [`crate::hooks::ignore_list`]) and a change to it asks the person again ([`super::trust`]).
//!
//! From each hook's command line (`python3 .claude/hooks/check.py`, `bash scripts/guard.sh`,
//! `node tools/hook.mjs`, `./check.sh`):
//! - **Python**: the script, every module it imports that lies in the workspace (resolved on
//!   the script's directory, `PYTHONPATH` and the directories it adds to `sys.path`, first
//!   match wins, packages whole), and in each of those directories every name an import could
//!   find first (`*.py`, `*/__init__.py`, `*.so`, `*.pth`, `__pycache__`): a new `json.py`
//!   beside a module would shadow the standard library's.
//! - **Node**: the script and every relative `require`/`import` with each name Node would try
//!   (`x`, `x.js`, `x/index.js`, …), and for a package name every `node_modules` from the
//!   script's directory up to the workspace root.
//! - **Shell**: the script, what it sources, and what its lines run (traced the same way).
//! - Files the hook reads by a literal name (`open("policy.yaml")`, `readFileSync('x.json')`).
//! - **Where it cannot be known** (an import computed at run time, `exec`, a program Mandate
//!   cannot read — Ruby, Perl, a binary): the whole directory tree the script lives in.
//!
//! Only what lies inside the workspace is listed: the agent's tools and commands write nothing
//! outside it.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::config::{HookCommand, HookConfig};

/// At most this many files are read while tracing, each up to this many bytes.
const MAX_TRACED: usize = 256;
const MAX_READ_BYTES: u64 = 1024 * 1024;
/// At most this many rules are kept (beyond, the traced scripts' directories stand for the rest).
const MAX_RULES: usize = 2048;

/// One rule of a hook's code: a gitignore-style line anchored at the workspace root, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRule {
    pub pattern: String,
    pub why: String,
}

/// What the hooks of a workspace run, inside it.
#[derive(Debug, Clone, Default)]
pub struct HookCode {
    pub rules: Vec<CodeRule>,
    /// The files read (absolute): hashed for the fingerprint, watched for a reload.
    pub files: BTreeSet<PathBuf>,
    /// Directories whose whole tree is the hook's (absolute).
    pub trees: BTreeSet<PathBuf>,
    /// Directories an import searches (absolute): the names in them matter.
    pub search_dirs: BTreeSet<PathBuf>,
}

impl HookCode {
    /// Every path whose change can change the code or its fingerprint: the files, everything
    /// in the trees, the searched directories.
    pub fn watched(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.files.iter().cloned().collect();
        for tree in &self.trees {
            out.push(tree.clone());
            out.extend(super::trust::entries_under(tree));
        }
        out.extend(self.search_dirs.iter().cloned());
        out
    }

    /// The workspace-relative paths to show the person: files, then trees (ending in `/`).
    pub fn shown(&self, root: &Path) -> Vec<String> {
        let rel = |p: &Path| p.strip_prefix(root).ok().map(slashed);
        let mut out: Vec<String> = self.files.iter().filter_map(|f| rel(f)).collect();
        out.extend(self.trees.iter().filter_map(|t| rel(t)).map(|t| {
            if t.is_empty() {
                "./ (the whole workspace)".to_string()
            } else {
                format!("{t}/")
            }
        }));
        out
    }
}

/// `text` with `$CLAUDE_PROJECT_DIR` and `$MANDATE_PROJECT_DIR` (either spelling) replaced by
/// `root`, as a hook's shell sees them.
pub fn with_project_dir(root: &Path, text: &str) -> String {
    let root = root.display().to_string();
    let mut line = text.to_string();
    for var in ["CLAUDE_PROJECT_DIR", "MANDATE_PROJECT_DIR"] {
        line = line
            .replace(&format!("${{{var}}}"), &root)
            .replace(&format!("${var}"), &root);
    }
    line
}

/// The code of the hooks configured in the workspace at `root` (none when the configuration
/// does not load: then no hook runs and tools that change things are refused anyway).
pub fn of_workspace(root: &Path) -> HookCode {
    match super::config::load(root) {
        Ok(config) => trace(root, &config),
        Err(_) => HookCode::default(),
    }
}

/// The code of `config`'s hooks in the workspace at `root`.
pub fn trace(root: &Path, config: &HookConfig) -> HookCode {
    let Ok(root) = root.canonicalize() else {
        return HookCode::default();
    };
    let mut tracer = Tracer {
        root: root.clone(),
        code: HookCode::default(),
        read: 0,
        seen: BTreeSet::new(),
        why: String::new(),
    };
    for hook in &config.hooks {
        let HookCommand::Shell(command) = &hook.command else {
            continue;
        };
        tracer.why = format!("the person's hook `{}` runs it", hook.name);
        tracer.command_text(command, None, &[]);
    }
    tracer.code.rules.truncate(MAX_RULES);
    tracer.code
}

/// A file to trace, read.
enum Read {
    Text(String),
    /// Traced already.
    Again,
    /// Not text, unreadable, or beyond the bounds.
    Unknown,
}

/// How a file is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Python,
    Node,
    Shell,
    /// Mandate cannot follow what it loads.
    Opaque,
}

struct Tracer {
    root: PathBuf,
    code: HookCode,
    read: usize,
    seen: BTreeSet<PathBuf>,
    /// Why the rules being added are the hook's.
    why: String,
}

fn slashed(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// `rel` as a literal gitignore path (special characters escaped).
fn escaped(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len() + 4);
    for c in rel.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '!' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `path` with `.` and `..` folded, without touching the disk.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The programs whose file arguments are data, never code run.
const DATA_PROGRAMS: &[&str] = &[
    "cat", "grep", "egrep", "fgrep", "rg", "jq", "yq", "head", "tail", "test", "[", "[[", "echo",
    "printf", "sed", "cut", "tr", "wc", "sort", "uniq", "diff", "cmp", "ls", "stat", "file", "git",
    "true", "false", "exit", "read", "cd", "mkdir", "touch", "date", "tee", "xargs",
];
/// Words that run the next word as the program.
const WRAPPERS: &[&str] = &["env", "exec", "command", "nice", "nohup", "time", "timeout"];

fn is_python(name: &str) -> bool {
    name.strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        || name == "uv"
}

fn is_node(name: &str) -> bool {
    matches!(
        name,
        "node" | "nodejs" | "bun" | "deno" | "tsx" | "ts-node" | "npx"
    )
}

fn is_shell(name: &str) -> bool {
    matches!(name, "bash" | "sh" | "dash" | "zsh" | "ksh")
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a valid pattern"))
}

impl Tracer {
    fn inside(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.root).ok()?;
        Some(slashed(rel))
    }

    fn rule(&mut self, rel: &str, suffix: &str) {
        let pattern = if rel.is_empty() {
            suffix.trim_start_matches('/').to_string()
        } else {
            format!("/{}{suffix}", escaped(rel))
        };
        let pattern = if pattern.is_empty() {
            "*".to_string()
        } else {
            pattern
        };
        if !self.code.rules.iter().any(|r| r.pattern == pattern) {
            self.code.rules.push(CodeRule {
                pattern,
                why: self.why.clone(),
            });
        }
    }

    /// A file of the hook (absolute): listed exactly.
    fn file(&mut self, path: &Path) {
        if let Some(rel) = self.inside(path) {
            if !rel.is_empty() {
                self.rule(&rel, "");
                self.code.files.insert(path.to_path_buf());
            }
        }
    }

    /// A directory whose whole tree is the hook's.
    fn tree(&mut self, dir: &Path) {
        if let Some(rel) = self.inside(dir) {
            self.rule(&rel, if rel.is_empty() { "*" } else { "" });
            self.code.trees.insert(dir.to_path_buf());
        }
    }

    /// A directory Python imports from: the names found there first are the hook's.
    fn python_search_dir(&mut self, dir: &Path) {
        if let Some(rel) = self.inside(dir) {
            for suffix in [
                "/*.py",
                "/*.pyc",
                "/*.so",
                "/*.pth",
                "/*/__init__.py",
                "/__pycache__",
            ] {
                self.rule(&rel, suffix);
            }
            self.code.search_dirs.insert(dir.to_path_buf());
        }
    }

    /// Reads a file to trace, once, within the bounds.
    fn read(&mut self, path: &Path) -> Read {
        if !self.seen.insert(path.to_path_buf()) {
            return Read::Again;
        }
        if self.read >= MAX_TRACED {
            return Read::Unknown;
        }
        self.read += 1;
        let mut bytes = Vec::new();
        let read =
            std::fs::File::open(path).and_then(|f| f.take(MAX_READ_BYTES).read_to_end(&mut bytes));
        match read.ok().and_then(|_| String::from_utf8(bytes).ok()) {
            Some(text) => Read::Text(text),
            None => Read::Unknown,
        }
    }

    /// The workspace path `word` names from `base`, if it exists.
    fn existing(&self, word: &str, base: &Path) -> Option<PathBuf> {
        if word.is_empty() || word.starts_with('-') || word.contains('$') {
            return None;
        }
        let path = if Path::new(word).is_absolute() {
            PathBuf::from(word)
        } else {
            base.join(word)
        };
        let real = path.canonicalize().ok()?;
        real.starts_with(&self.root).then_some(real)
    }

    /// A command line (a hook's, or a line of a shell script in `script_dir`).
    fn command_text(&mut self, text: &str, script_dir: Option<&Path>, inherited: &[PathBuf]) {
        let text = self.substitute(text, script_dir);
        for segment in text.split(['\n', ';', '|', '&']) {
            let words = split_words(segment);
            self.segment(&words, script_dir, inherited);
        }
    }

    /// `$CLAUDE_PROJECT_DIR` and the usual spellings of "this script's directory".
    fn substitute(&self, text: &str, script_dir: Option<&Path>) -> String {
        let mut line = with_project_dir(&self.root, text);
        if let Some(dir) = script_dir {
            let dir = dir.display().to_string();
            static HERE: OnceLock<Regex> = OnceLock::new();
            let here = regex(
                &HERE,
                r#"\$\(\s*dirname\s+"?\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?\s*\)|\$\{(?:BASH_SOURCE(?:\[0\])?|0)%/\*\}"#,
            );
            line = here.replace_all(&line, dir.as_str()).into_owned();
            static CD_PWD: OnceLock<Regex> = OnceLock::new();
            let cd = regex(
                &CD_PWD,
                r#"\$\(\s*cd\s+"?([^"&;)]+?)"?\s*(?:&&|;)\s*pwd(?:\s+-P)?\s*\)"#,
            );
            line = cd.replace_all(&line, "$1").into_owned();
            // `DIR=…; source "$DIR/lib.sh"`: a variable set to the script's directory.
            static SET_HERE: OnceLock<Regex> = OnceLock::new();
            let set = regex(
                &SET_HERE,
                r#"(?m)^\s*(?:readonly\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)="?([^"\s;]+)"?\s*$"#,
            );
            let mut vars: Vec<(String, String)> = Vec::new();
            for cap in set.captures_iter(&line) {
                if Path::new(&cap[2]).is_absolute() && !cap[2].contains('$') {
                    vars.push((cap[1].to_string(), cap[2].to_string()));
                }
            }
            for (name, value) in vars {
                line = line
                    .replace(&format!("${{{name}}}"), &value)
                    .replace(&format!("${name}"), &value);
            }
        }
        line
    }

    fn segment(&mut self, words: &[String], script_dir: Option<&Path>, inherited: &[PathBuf]) {
        let mut search: Vec<PathBuf> = inherited.to_vec();
        let mut node_path: Vec<PathBuf> = Vec::new();
        let mut i = 0;
        // Leading assignments and wrappers.
        while i < words.len() {
            let w = &words[i];
            if let Some((name, value)) = w.split_once('=').filter(|(n, _)| {
                !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }) {
                let dirs = value
                    .split(':')
                    .filter_map(|d| self.existing(d, &self.root))
                    .filter(|d| d.is_dir());
                match name {
                    "PYTHONPATH" => search.extend(dirs),
                    "NODE_PATH" => node_path.extend(dirs),
                    _ => {}
                }
                i += 1;
            } else if WRAPPERS.contains(&w.as_str()) || (w.starts_with('-') && i > 0) {
                i += 1;
            } else if w.chars().all(|c| c.is_ascii_digit() || c == '.') && i > 0 {
                // `timeout 5 …`
                i += 1;
            } else {
                break;
            }
        }
        for dir in node_path {
            self.tree(&dir);
        }
        let Some(program) = words.get(i) else {
            return;
        };
        let rest = &words[i + 1..];
        let name = program.rsplit('/').next().unwrap_or(program).to_string();
        let name = if name.is_empty() {
            program.clone()
        } else {
            name
        };
        let base = self.root.clone();
        // A program in the workspace (`./check.sh`, `.venv/bin/python`) is the hook's.
        let program_path = (program.contains('/'))
            .then(|| self.existing(program, &base))
            .flatten();
        if let Some(path) = &program_path {
            let interpreter = is_python(&name) || is_node(&name) || is_shell(&name);
            if interpreter {
                // A virtual environment's interpreter: the environment is the hook's.
                let env = path
                    .parent()
                    .filter(|b| b.file_name().is_some_and(|n| n == "bin"))
                    .and_then(Path::parent)
                    .unwrap_or_else(|| path.parent().unwrap_or(path));
                self.tree(env);
            } else if path.is_file() {
                self.script(path, None, &search);
                self.data_words(rest, script_dir);
                return;
            }
        }
        let known = is_python(&name)
            || is_node(&name)
            || is_shell(&name)
            || matches!(name.as_str(), "source" | ".")
            || DATA_PROGRAMS.contains(&name.as_str());
        if known {
            // What it is given to read (`--policy policy.yaml`) is the hook's too.
            self.data_words(rest, script_dir);
        }
        if is_python(&name) {
            self.python_command(rest, &search);
        } else if is_node(&name) {
            self.node_command(rest);
        } else if is_shell(&name) {
            self.shell_command(rest, &search);
        } else if matches!(name.as_str(), "source" | ".") {
            for word in rest.iter().take(1) {
                self.sourced(word, script_dir, &search);
            }
        } else if !known {
            // A program Mandate cannot read (Ruby, Perl, …): the first file it is given is
            // its script, and that script's directory is the hook's.
            let mut first = true;
            for word in rest {
                if let Some(path) = self.existing(word, &base) {
                    if first && path.is_file() {
                        if let Some(dir) = path.parent() {
                            self.tree(dir);
                        }
                        first = false;
                    } else {
                        self.named(&path);
                    }
                }
            }
        }
    }

    /// Words naming workspace files a program reads: those files are the hook's.
    fn data_words(&mut self, words: &[String], script_dir: Option<&Path>) {
        let base = self.root.clone();
        for word in words {
            let found = self
                .existing(word, &base)
                .or_else(|| script_dir.and_then(|d| self.existing(word, d)));
            if let Some(path) = found {
                self.named(&path);
            }
        }
    }

    /// A path a hook names: a file exactly, never a whole directory (a hook that names `src`
    /// to guard it does not make `src` unwritable).
    fn named(&mut self, path: &Path) {
        if path.is_file() {
            self.file(path);
        }
    }

    fn python_command(&mut self, args: &[String], search: &[PathBuf]) {
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "-m" => {
                    if let Some(module) = it.next() {
                        let mut dirs = vec![self.root.clone()];
                        dirs.extend_from_slice(search);
                        for dir in &dirs {
                            self.python_search_dir(dir);
                        }
                        self.python_import(module, &[], &dirs);
                    }
                    return;
                }
                "-c" => {
                    if let Some(code) = it.next() {
                        let mut dirs = vec![self.root.clone()];
                        dirs.extend_from_slice(search);
                        let root = self.root.clone();
                        self.python_text(code, &root, &dirs);
                    }
                    return;
                }
                "run" | "-u" | "-B" | "-E" | "-I" | "-O" | "-OO" | "-S" | "-s" | "-q" => {}
                "-W" | "-X" | "--with" => {
                    it.next();
                }
                other if other.starts_with('-') => {}
                script => {
                    if let Some(path) = self.existing(script, &self.root.clone()) {
                        self.script(&path, Some(Kind::Python), search);
                    }
                    return;
                }
            }
        }
    }

    fn node_command(&mut self, args: &[String]) {
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "-e" | "--eval" | "-p" | "--print" => {
                    if let Some(code) = it.next() {
                        let root = self.root.clone();
                        self.node_text(code, &root);
                    }
                    return;
                }
                "-r" | "--require" | "--import" | "--loader" => {
                    if let Some(spec) = it.next() {
                        let root = self.root.clone();
                        self.node_spec(spec, &root);
                    }
                }
                other if other.starts_with('-') => {}
                script => {
                    if let Some(path) = self.existing(script, &self.root.clone()) {
                        self.script(&path, Some(Kind::Node), &[]);
                    }
                    return;
                }
            }
        }
    }

    fn shell_command(&mut self, args: &[String], search: &[PathBuf]) {
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "-c" => {
                    if let Some(code) = it.next() {
                        self.command_text(code, None, search);
                    }
                    return;
                }
                "-o" | "+o" => {
                    it.next();
                }
                other if other.starts_with('-') || other.starts_with('+') => {}
                script => {
                    if let Some(path) = self.existing(script, &self.root.clone()) {
                        self.script(&path, Some(Kind::Shell), search);
                    }
                    return;
                }
            }
        }
    }

    /// `source WORD` / `. WORD`: bash looks beside the current directory (the workspace root
    /// for a hook) after `PATH`; a name Mandate cannot resolve leaves the script's directory
    /// to the hook.
    fn sourced(&mut self, word: &str, script_dir: Option<&Path>, search: &[PathBuf]) {
        let root = self.root.clone();
        let found = self
            .existing(word, &root)
            .or_else(|| script_dir.and_then(|d| self.existing(word, d)));
        match found {
            Some(path) if path.is_file() => self.script(&path, Some(Kind::Shell), search),
            Some(_) => {}
            None if word.contains('$') || word.contains('`') => {
                if let Some(dir) = script_dir {
                    self.tree(dir);
                }
            }
            None => {}
        }
    }

    /// A script file (absolute, in the workspace), run as `hint` if known.
    fn script(&mut self, path: &Path, hint: Option<Kind>, search: &[PathBuf]) {
        self.file(path);
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        let text = match self.read(path) {
            Read::Text(text) => text,
            Read::Again => return,
            // A binary, or beyond what is read: nothing can be followed.
            Read::Unknown => return self.tree(&dir),
        };
        match hint.unwrap_or_else(|| kind_of(path, &text)) {
            Kind::Python => {
                let mut dirs = vec![dir.clone()];
                dirs.extend_from_slice(search);
                self.python_text(&text, &dir, &dirs);
            }
            Kind::Node => self.node_text(&text, &dir),
            Kind::Shell => self.command_text(&text, Some(&dir), search),
            Kind::Opaque => self.tree(&dir),
        }
    }
}

mod languages;
mod words;

use words::{kind_of, split_words};

#[cfg(test)]
mod tests;

//! Paths inside the workspace that the repository's own git configuration names as more
//! configuration or as programs to run: the hooks directory of `core.hooksPath` (husky sets
//! `.husky/_`), a file `include.path` or `includeIf.*.path` reads (`../.gitconfig`), the
//! program `core.fsmonitor` runs, and every path named in a setting whose value is a command
//! git runs ([`names_a_program`]: clean and smudge filters, diff text conversion, merge drivers,
//! the pager, the editor, credential helpers, `!` aliases, …). Git runs what they say with the
//! person's rights on their next `git status`, `git diff` or `git commit`, so no intent may
//! change them, whatever its globs ([`crate::hooks::ignore_list::IntentIgnore`] holds them
//! beside `.intentignore`).
//!
//! The configuration itself (`.git/config`) is protected already; this reads it, the person's
//! own (system and global: a relative path there names a path in every repository), and the
//! files they include, without running git (whose own reading could run what the
//! configuration names). Conditions of `includeIf` are not evaluated: every file it could
//! include counts.

use std::path::{Component, Path, PathBuf};

/// Included files are followed this deep (git itself stops at 10).
const MAX_DEPTH: usize = 10;
/// Configuration files larger than this are not read (nothing is taken from them).
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// A path the configuration names, relative to the workspace root (`/`-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPath {
    pub rel: String,
    /// Why no intent may change it, in the person's words.
    pub why: String,
}

/// What [`named_paths`] found: the paths, and the files it read (to see when they change).
#[derive(Debug, Clone, Default)]
pub struct GitNamed {
    pub paths: Vec<NamedPath>,
    pub sources: Vec<PathBuf>,
}

/// One `section.subsection.key = value` of a configuration file (section and key lowercased).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    section: String,
    subsection: Option<String>,
    key: String,
    value: Option<String>,
}

/// The paths inside `root` (canonical) that the configuration of the repository at `root`
/// names, the person's own configuration included (see the module's documentation).
pub fn named_paths(root: &Path) -> GitNamed {
    named_paths_with(root, &person_configs())
}

/// The configuration files git reads for every repository of this person, in git's order
/// (later settings win): the system's (unless `GIT_CONFIG_NOSYSTEM`), then the global ones
/// (`GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`). A relative
/// path in them (`core.hooksPath = .githooks`, a filter's `tools/clean.sh`) names a path in
/// every repository, this workspace included.
fn person_configs() -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let home = var("HOME").filter(|h| h.is_absolute());
    let mut out = Vec::new();
    if var("GIT_CONFIG_NOSYSTEM").is_none() {
        out.push(var("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    }
    match var("GIT_CONFIG_GLOBAL") {
        Some(global) => out.push(global),
        None => {
            let xdg = var("XDG_CONFIG_HOME")
                .filter(|x| x.is_absolute())
                .or_else(|| home.as_ref().map(|h| h.join(".config")));
            out.extend(xdg.map(|x| x.join("git/config")));
            out.extend(home.map(|h| h.join(".gitconfig")));
        }
    }
    out
}

/// [`named_paths`] with the person's configuration files `person` (read before the
/// repository's own).
fn named_paths_with(root: &Path, person: &[PathBuf]) -> GitNamed {
    let mut found = GitNamed::default();
    let dot_git = root.join(".git");
    found.sources.push(dot_git.clone());
    let Some(git_dir) = repository_dir(&dot_git) else {
        return found;
    };
    let mut configs: Vec<PathBuf> = person.to_vec();
    configs.extend([git_dir.join("config"), git_dir.join("config.worktree")]);
    // A linked worktree's shared configuration lives in the common directory.
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        let common = git_dir.join(common.trim());
        configs.insert(person.len(), common.join("config"));
        found.sources.push(git_dir.join("commondir"));
    }
    let (mut hooks, mut fsmonitor) = (None, None);
    let mut included: Vec<PathBuf> = Vec::new();
    let mut programs: Vec<(String, String)> = Vec::new();
    for config in configs {
        read_config(
            &config,
            0,
            &mut found.sources,
            &mut |entry, file_dir| match (entry.section.as_str(), entry.key.as_str()) {
                ("core", "hookspath") if entry.subsection.is_none() => {
                    hooks = entry.value.clone();
                }
                ("core", "fsmonitor") if entry.subsection.is_none() => {
                    fsmonitor = entry.value.clone().filter(|v| !is_boolean(v));
                }
                ("include", "path") | ("includeif", "path") => {
                    if let Some(path) = &entry.value {
                        included.push(resolve(path, file_dir));
                    }
                }
                _ => {
                    if let (Some(value), Some(setting)) = (&entry.value, names_a_program(entry)) {
                        programs.push((setting, value.clone()));
                    }
                }
            },
        );
    }
    // Each path is held as named (a symlink there could be pointed elsewhere) and where it
    // really leads.
    let mut add = |path: PathBuf, why: &str| {
        let real = path.canonicalize().unwrap_or_else(|_| path.clone());
        for path in [path, real] {
            if let Some(rel) = inside(root, &path) {
                found.paths.push(NamedPath {
                    rel,
                    why: why.to_string(),
                });
            }
        }
    };
    if let Some(dir) = hooks {
        let why = "git runs the hooks in it (the repository's `core.hooksPath`) with the person's rights when they commit, check out or push; only the person changes them";
        let dir = literal(&dir, root);
        // Husky's `.husky/_` holds stubs that run the hooks one level up (`.husky/pre-commit`).
        if dir.file_name().is_some_and(|n| n == "_") {
            if let Some(parent) = dir.parent() {
                add(parent.to_path_buf(), why);
            }
        }
        add(dir, why);
    }
    if let Some(program) = fsmonitor {
        let why = "git runs it on every `git status` (the repository's `core.fsmonitor`) with the person's rights; only the person changes it";
        add(literal(&program, root), why);
        for path in command_paths(&program, root) {
            add(path, why);
        }
    }
    for file in included {
        add(
            file,
            "git reads it as the repository's configuration (`include.path` or `includeIf`), which can name programs git runs with the person's rights; only the person changes it",
        );
    }
    for (setting, command) in programs {
        for path in command_paths(&command, root) {
            add(
                path,
                &format!("git runs it (the repository's `{setting}`) with the person's rights; only the person changes it"),
            );
        }
    }
    found.paths.sort_by(|a, b| a.rel.cmp(&b.rel));
    found.paths.dedup_by(|a, b| a.rel == b.rel);
    found
}

/// The settings (`section.key`, subsections shown as `*`) that differ between two versions of
/// a repository's configuration and that no git command a person approves writes: all but
/// what `init`, `submodule`, `branch --track`/`--set-upstream-to`, `worktree` and `clone`
/// set. What is left are the settings that can name programs git runs (`core.fsmonitor`,
/// `core.hooksPath`, `include.path`, `alias.*`, `*.command`, `remote.*.uploadpack`, …) or
/// change what it trusts; an allow-list, so one nobody thought of counts too.
pub fn unexpected_changes(before: &str, after: &str) -> Vec<String> {
    let entries = |text: &str| -> Vec<(String, Option<String>, String, Option<String>)> {
        parse(text)
            .into_iter()
            .map(|e| (e.section, e.subsection, e.key, e.value))
            .collect()
    };
    let (was, now) = (entries(before), entries(after));
    let mut keys: Vec<String> = now
        .iter()
        .filter(|e| !was.contains(e))
        .chain(was.iter().filter(|e| !now.contains(e)))
        .filter(|(section, sub, key, value)| !written_by_git(section, sub.is_some(), key, value))
        .map(|(section, sub, key, _)| match sub {
            Some(_) => format!("{section}.*.{key}"),
            None => format!("{section}.{key}"),
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Whether git commands write this setting themselves (and it names no program).
fn written_by_git(section: &str, has_sub: bool, key: &str, value: &Option<String>) -> bool {
    let command = value
        .as_deref()
        .is_some_and(|v| v.trim_start().starts_with('!'));
    match (section, has_sub) {
        ("core", false) => matches!(
            key,
            "repositoryformatversion"
                | "filemode"
                | "bare"
                | "logallrefupdates"
                | "ignorecase"
                | "precomposeunicode"
                | "symlinks"
        ),
        ("extensions", false) => matches!(key, "worktreeconfig" | "objectformat"),
        ("submodule", true) => {
            !command
                && matches!(
                    key,
                    "url" | "active" | "update" | "branch" | "fetchrecursesubmodules" | "ignore"
                )
        }
        ("branch", true) => matches!(
            key,
            "remote" | "merge" | "rebase" | "pushremote" | "description"
        ),
        ("remote", true) => matches!(
            key,
            "url" | "pushurl" | "fetch" | "tagopt" | "prune" | "mirror" | "promisor"
        ),
        _ => false,
    }
}

/// The repository directory `.git` stands for: itself, or where its `gitdir:` line points.
fn repository_dir(dot_git: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(resolve(target, dot_git.parent()?))
}

/// Reads one configuration file and, depth first, the files it includes, calling `on` with
/// each entry and the directory of the file it is in.
fn read_config(
    path: &Path,
    depth: usize,
    sources: &mut Vec<PathBuf>,
    on: &mut dyn FnMut(&Entry, &Path),
) {
    // Each file once: what it names is the same the second time (and a cycle ends).
    if depth > MAX_DEPTH || sources.iter().any(|s| s == path) {
        return;
    }
    sources.push(path.to_path_buf());
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return;
    }
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    for entry in parse(&String::from_utf8_lossy(&bytes)) {
        on(&entry, dir);
        let includes = matches!(entry.section.as_str(), "include" | "includeif");
        if let (true, "path", Some(value)) = (includes, entry.key.as_str(), &entry.value) {
            read_config(&resolve(value, dir), depth + 1, sources, on);
        }
    }
}

/// The setting's name (`filter.*.clean`) when its value is a command git runs, through the
/// shell or directly: filters and diff text conversions run on `git status`, `git diff` and
/// `git add` without anyone asking for a program, the pager on every `git log`, the editor
/// and signing program on `git commit`, credential helpers and SSH commands on `git fetch`.
fn names_a_program(entry: &Entry) -> Option<String> {
    let (section, sub, key) = (
        entry.section.as_str(),
        entry.subsection.is_some(),
        entry.key.as_str(),
    );
    let starts_with_bang = entry
        .value
        .as_deref()
        .is_some_and(|v| v.trim_start().starts_with('!'));
    let program = match (section, sub) {
        ("core", false) => matches!(
            key,
            "pager" | "editor" | "sshcommand" | "askpass" | "gitproxy" | "alternaterefscommand"
        ),
        ("sequence", false) => key == "editor",
        ("gpg", _) => matches!(key, "program" | "defaultkeycommand"),
        ("sendemail", _) => matches!(
            key,
            "sendmailcmd" | "smtpserver" | "tocmd" | "cccmd" | "headercmd"
        ),
        ("trailer", true) => matches!(key, "command" | "cmd"),
        ("tar", true) => key == "command",
        ("imap", false) => key == "tunnel",
        ("browser" | "man" | "difftool" | "mergetool", true) => matches!(key, "cmd" | "path"),
        ("guitool", true) => key == "cmd",
        ("hook", true) => key == "command",
        ("lfs", true) => matches!(key, "path" | "clean" | "smudge"),
        ("submodule", true) => key == "update" && starts_with_bang,
        ("filter", true) => matches!(key, "clean" | "smudge" | "process"),
        ("diff", true) => matches!(key, "textconv" | "command"),
        ("diff", false) => key == "external",
        ("merge", true) => key == "driver",
        ("credential", _) => key == "helper",
        ("pager", false) => true,
        ("interactive", false) => key == "difffilter",
        ("remote", true) => matches!(key, "uploadpack" | "receivepack"),
        // An alias without `!` can still name a program: `-c core.pager=… log`.
        ("alias", false) => {
            starts_with_bang || entry.value.as_deref().is_some_and(|v| v.contains("-c"))
        }
        _ => false,
    };
    program.then(|| match &entry.subsection {
        Some(_) => format!("{section}.*.{key}"),
        None => format!("{section}.{key}"),
    })
}

/// The paths a command can name inside `root`, generously (a path that names no file of the
/// workspace protects nothing that exists): split at whitespace, quotes, the shell's operators,
/// `:` and `,`, every word with a `/` (relative to the root, where git runs these; with its
/// leading `/` dropped too, for `$(git rev-parse --show-toplevel)/x`; and an option's value,
/// `-Fconfig/x` or `--file=x/y`), and every bare word that names a file in the root (`sh
/// clean.sh`). A bare name that is no file there is looked up in `PATH`, not the workspace.
fn command_paths(command: &str, root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let words = command.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\''
                    | '`'
                    | ';'
                    | '|'
                    | '&'
                    | '('
                    | ')'
                    | '<'
                    | '>'
                    | '!'
                    | '$'
                    | '{'
                    | '}'
                    | ':'
                    | ','
            )
    });
    for word in words.filter(|w| !w.is_empty()) {
        // An option's value, or a setting's (`name=value`), else the word itself.
        let mut forms: Vec<&str> = Vec::new();
        match word.split_once('=') {
            Some((_, value)) => forms.push(value),
            None if word.starts_with("--") => {}
            None if word.starts_with('-') => forms.extend(word.get(2..)),
            None => forms.push(word),
        }
        for form in forms {
            if form.contains('/') {
                out.push(literal(form, root));
                if let Some(relative) = form.strip_prefix('/') {
                    out.push(literal(relative.trim_start_matches('/'), root));
                }
            } else if !form.is_empty() && !form.starts_with('-') && root.join(form).is_file() {
                out.push(root.join(form));
            }
        }
    }
    out
}

fn is_boolean(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0"
    )
}

/// `value` as a path, as written: `~/` is the home directory, a relative path is relative to
/// `base`; `.` and `..` are resolved without the file system, symlinks are not followed.
fn literal(value: &str, base: &Path) -> PathBuf {
    let joined = match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(rest),
        None => base.join(value),
    };
    let mut clean = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean
}

/// [`literal`], then symlinks followed where it exists.
fn resolve(value: &str, base: &Path) -> PathBuf {
    let clean = literal(value, base);
    clean.canonicalize().unwrap_or(clean)
}

/// `path` relative to `root`, when it is inside it (and not the root itself).
fn inside(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The entries of a configuration file, in order (git's syntax; what does not parse is
/// skipped, as it names nothing).
fn parse(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let (mut section, mut subsection) = (String::new(), None);
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix('[') {
            let Some((header, after)) = header(rest) else {
                section.clear();
                continue;
            };
            (section, subsection) = header;
            // A variable may follow the header on the same line.
            if !after.trim().is_empty() {
                if let Some(entry) = variable(after, &mut lines, &section, &subsection) {
                    entries.push(entry);
                }
            }
            continue;
        }
        if section.is_empty() || line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(entry) = variable(line, &mut lines, &section, &subsection) {
            entries.push(entry);
        }
    }
    entries
}

type Header = (String, Option<String>);

/// `section]`, `section "sub"]` or the old `section.sub]`, and what follows the `]`.
fn header(rest: &str) -> Option<(Header, &str)> {
    if let Some(quote) = rest.find('"') {
        let name = rest[..quote].trim().to_ascii_lowercase();
        let mut sub = String::new();
        let mut chars = rest[quote + 1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => sub.extend(chars.next().map(|(_, c)| c)),
                '"' => {
                    let after = rest[quote + 1 + i + 1..].trim_start().strip_prefix(']')?;
                    return Some(((name, Some(sub)), after));
                }
                c => sub.push(c),
            }
        }
        return None;
    }
    let close = rest.find(']')?;
    let name = rest[..close].trim();
    let after = &rest[close + 1..];
    Some(match name.split_once('.') {
        Some((s, sub)) => (
            (s.to_ascii_lowercase(), Some(sub.to_ascii_lowercase())),
            after,
        ),
        None => ((name.to_ascii_lowercase(), None), after),
    })
}

/// `key = value` (value quoted in parts, with escapes, `#`/`;` comments, and `\` at the end
/// of a line continuing it), or `key` alone (true).
fn variable<'a>(
    line: &'a str,
    more: &mut impl Iterator<Item = &'a str>,
    section: &str,
    subsection: &Option<String>,
) -> Option<Entry> {
    let line = line.trim_start();
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(line.len());
    if end == 0 {
        return None;
    }
    let key = line[..end].to_ascii_lowercase();
    let rest = line[end..].trim_start();
    let value = match rest.strip_prefix('=') {
        Some(raw) => Some(value(raw, more)),
        None if rest.is_empty() || rest.starts_with(['#', ';']) => None,
        None => return None,
    };
    Some(Entry {
        section: section.to_string(),
        subsection: subsection.clone(),
        key,
        value,
    })
}

fn value<'a>(raw: &'a str, more: &mut impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    // Whitespace outside quotes is kept only between words.
    let mut pending_space = false;
    let mut quoted = false;
    let mut line = raw;
    'lines: loop {
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    None => {
                        // A continued line.
                        line = more.next().unwrap_or("");
                        continue 'lines;
                    }
                    Some(escaped) => {
                        if pending_space {
                            out.push(' ');
                            pending_space = false;
                        }
                        out.push(match escaped {
                            'n' => '\n',
                            't' => '\t',
                            'b' => '\u{8}',
                            other => other,
                        });
                    }
                },
                '"' => quoted = !quoted,
                '#' | ';' if !quoted => break 'lines,
                c if c.is_whitespace() && !quoted => pending_space = !out.is_empty(),
                c => {
                    if pending_space {
                        out.push(' ');
                        pending_space = false;
                    }
                    out.push(c);
                }
            }
        }
        break;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_config_syntax_is_read_as_git_reads_it() {
        let text = "[core]\n\thooksPath = .husky/_ ; husky\n\tbare\n[Include]\n  PATH = \"../a b.cfg\"\n[includeIf \"gitdir:~/w/\"]\n\tpath = ../c\\\n.cfg\n[remote \"o\\\"x\"] url = u # c\n[bad\n  path = nothing\n";
        let entries = parse(text);
        let got: Vec<(String, Option<String>, String, Option<String>)> = entries
            .into_iter()
            .map(|e| (e.section, e.subsection, e.key, e.value))
            .collect();
        let s = |v: &str| v.to_string();
        assert_eq!(
            got,
            vec![
                (s("core"), None, s("hookspath"), Some(s(".husky/_"))),
                (s("core"), None, s("bare"), None),
                (s("include"), None, s("path"), Some(s("../a b.cfg"))),
                (
                    s("includeif"),
                    Some(s("gitdir:~/w/")),
                    s("path"),
                    Some(s("../c.cfg"))
                ),
                (s("remote"), Some(s("o\"x")), s("url"), Some(s("u"))),
            ]
        );
    }

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .status()
            .expect("git");
        assert!(ok.success());
    }

    #[test]
    fn hooks_path_includes_and_fsmonitor_inside_the_workspace_are_named() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().canonicalize().expect("canonical");
        git(&root, &["init", "-q"]);
        git(&root, &["config", "core.hooksPath", ".husky/_"]);
        git(&root, &["config", "include.path", "../.gitconfig"]);
        git(&root, &["config", "core.fsmonitor", "tools/fsmon.sh"]);
        git(
            &root,
            &[
                "config",
                "--add",
                "include.path",
                "/etc/gitconfig-elsewhere",
            ],
        );
        std::fs::write(
            root.join(".gitconfig"),
            "[includeIf \"onbranch:main\"]\n\tpath = config/more.cfg\n",
        )
        .expect("write");
        // A cycle ends.
        std::fs::create_dir_all(root.join("config")).expect("mkdir");
        std::fs::write(
            root.join("config/more.cfg"),
            "[include]\n\tpath = ../.gitconfig\n",
        )
        .expect("write");
        let found = named_paths_with(&root, &[]);
        let rels: Vec<&str> = found.paths.iter().map(|p| p.rel.as_str()).collect();
        assert_eq!(
            rels,
            [
                ".gitconfig",
                ".husky",
                ".husky/_",
                "config/more.cfg",
                "tools/fsmon.sh"
            ]
        );
        assert!(found.sources.contains(&root.join(".git/config")));
        assert!(found.sources.contains(&root.join(".gitconfig")));
    }

    #[test]
    fn programs_the_configuration_runs_are_named_wherever_a_command_names_them() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().canonicalize().expect("canonical");
        git(&root, &["init", "-q"]);
        for (key, value) in [
            ("filter.strip.clean", "./tools/clean.sh %f"),
            ("filter.strip.smudge", "cat"),
            ("filter.lfs.process", "git-lfs filter-process"),
            ("diff.nb.textconv", "python3 scripts/nb2txt.py"),
            ("merge.lock.driver", "bin/merge-lock %O %A %B"),
            ("core.pager", "node_modules/.bin/delta --dark"),
            ("core.editor", "vim"),
            ("credential.helper", "!f() { ./tools/cred.sh \"$@\"; }; f"),
            ("alias.ship", "!sh -c 'scripts/ship.sh --now'"),
            ("alias.st", "status --short"),
            ("pager.log", "../outside/pager"),
            ("gpg.ssh.program", "tools/sign"),
            ("core.sshCommand", "ssh -i ~/.ssh/key -F config/ssh_config"),
        ] {
            git(&root, &["config", key, value]);
        }
        let found = named_paths_with(&root, &[]);
        let rels: Vec<&str> = found.paths.iter().map(|p| p.rel.as_str()).collect();
        assert_eq!(
            rels,
            [
                "bin/merge-lock",
                "config/ssh_config",
                "node_modules/.bin/delta",
                "scripts/nb2txt.py",
                "scripts/ship.sh",
                "tools/clean.sh",
                "tools/cred.sh",
                "tools/sign",
            ]
        );
        let why = |rel: &str| &found.paths.iter().find(|p| p.rel == rel).expect(rel).why;
        assert!(why("tools/clean.sh").contains("`filter.*.clean`"));
        assert!(why("scripts/ship.sh").contains("`alias.ship`"));
    }

    /// The ways a command names a file that a word with a `/` alone misses: a symlink (held
    /// as named and where it leads), a bare name of a file in the root, the top level spelled
    /// by git itself, an option's value, a program `core.fsmonitor` hands a script to.
    #[test]
    fn symlinks_bare_names_options_and_the_top_level_are_followed() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().canonicalize().expect("canonical");
        git(&root, &["init", "-q"]);
        for dir in ["tools", "bin"] {
            std::fs::create_dir_all(root.join(dir)).expect("mkdir");
        }
        std::fs::write(root.join("tools/real.sh"), "#!/bin/sh\n").expect("write");
        std::fs::write(root.join("clean.sh"), "#!/bin/sh\n").expect("write");
        std::os::unix::fs::symlink("../tools/real.sh", root.join("bin/lint")).expect("link");
        for (key, value) in [
            ("core.pager", "bin/lint"),
            ("filter.x.clean", "sh clean.sh"),
            (
                "diff.y.textconv",
                "\"$(git rev-parse --show-toplevel)/tools/top.sh\"",
            ),
            ("core.sshCommand", "ssh -Fconfig/ssh_config"),
            ("sendemail.sendmailCmd", "scripts/send --file=mail/tpl"),
            ("core.fsmonitor", "sh tools/fsm.sh"),
            ("alias.lg", "-c core.pager=tools/pager log"),
        ] {
            git(&root, &["config", key, value]);
        }
        let found = named_paths_with(&root, &[]);
        let rels: Vec<&str> = found.paths.iter().map(|p| p.rel.as_str()).collect();
        assert_eq!(
            rels,
            [
                "bin/lint",
                "clean.sh",
                "config/ssh_config",
                "mail/tpl",
                "scripts/send",
                "sh tools/fsm.sh",
                "tools/fsm.sh",
                "tools/pager",
                "tools/real.sh",
                "tools/top.sh",
            ]
        );
    }

    /// The person's own configuration names paths in every repository when they are relative:
    /// a global `core.hooksPath = .githooks`, a global filter's script; the repository's own
    /// setting wins where both set one.
    #[test]
    fn the_persons_own_configuration_names_paths_in_the_workspace_too() {
        let tmp = tempfile::tempdir().expect("tmp");
        let base = tmp.path().canonicalize().expect("canonical");
        let root = base.join("repo");
        std::fs::create_dir(&root).expect("mkdir");
        git(&root, &["init", "-q"]);
        let global = base.join("gitconfig");
        std::fs::write(
            &global,
            "[core]\n\thooksPath = .githooks\n[filter \"g\"]\n\tclean = tools/g.sh\n",
        )
        .expect("write");
        let system = base.join("system");
        std::fs::write(&system, "[diff \"s\"]\n\ttextconv = bin/conv\n").expect("write");
        let found = named_paths_with(&root, &[system.clone(), global.clone()]);
        let rels: Vec<&str> = found.paths.iter().map(|p| p.rel.as_str()).collect();
        assert_eq!(rels, [".githooks", "bin/conv", "tools/g.sh"]);
        assert!(found.sources.contains(&global));
        // The repository's own hooks path wins.
        git(&root, &["config", "core.hooksPath", "hooks"]);
        let found = named_paths_with(&root, &[system, global]);
        let rels: Vec<&str> = found.paths.iter().map(|p| p.rel.as_str()).collect();
        assert_eq!(rels, ["bin/conv", "hooks", "tools/g.sh"]);
    }

    /// A linked worktree: `.git` is a file, the configuration the main repository's.
    #[test]
    fn a_worktree_reads_the_shared_configuration() {
        let tmp = tempfile::tempdir().expect("tmp");
        let base = tmp.path().canonicalize().expect("canonical");
        let main = base.join("main");
        std::fs::create_dir(&main).expect("mkdir");
        git(&main, &["init", "-q"]);
        git(
            &main,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
        );
        git(&main, &["worktree", "add", "-q", "../wt"]);
        git(&main, &["config", "core.hooksPath", "hooks"]);
        let found = named_paths_with(&base.join("wt"), &[]);
        let rels: Vec<&str> = found.paths.iter().map(|p| p.rel.as_str()).collect();
        assert_eq!(rels, ["hooks"]);
    }

    #[test]
    fn only_what_git_commands_write_may_change_in_the_configuration() {
        let before = "[core]\n\tbare = false\n\tfilemode = true\n";
        let legit = "[core]\n\tbare = false\n\tfilemode = true\n[submodule \"lib\"]\n\turl = ../lib\n\tactive = true\n[branch \"f\"]\n\tremote = .\n\tmerge = refs/heads/main\n";
        assert!(unexpected_changes(before, legit).is_empty());
        let hostile = "[core]\n\tbare = false\n\tfilemode = true\n\tfsmonitor = /x\n[alias]\n\tst = !sh\n[submodule \"lib\"]\n\tupdate = !sh -c x\n[remote \"o\"]\n\tuploadpack = /x\n";
        assert_eq!(
            unexpected_changes(before, hostile),
            [
                "alias.st",
                "core.fsmonitor",
                "remote.*.uploadpack",
                "submodule.*.update"
            ]
        );
        // Taking a setting away counts too (a hooks path gone makes `.git/hooks` run again).
        assert_eq!(
            unexpected_changes("[core]\n\thooksPath = h\n", ""),
            ["core.hookspath"]
        );
    }
}

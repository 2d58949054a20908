//! Following Python's and Node's imports in a hook's scripts (see the parent module).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::{normal, regex, Kind, Tracer};

/// The string literals of a line of code, in order (no escapes inside).
fn literals(code: &str) -> Vec<String> {
    static LITERAL: OnceLock<Regex> = OnceLock::new();
    regex(&LITERAL, r#""([^"\\\n]*)"|'([^'\\\n]*)'|`([^`\\$]*)`"#)
        .captures_iter(code)
        .filter_map(|c| c.get(1).or(c.get(2)).or(c.get(3)))
        .map(|m| m.as_str().to_string())
        .collect()
}

/// A line of Python without its comment (a `#` outside quotes).
fn without_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &line[..i],
            None => {}
        }
    }
    line
}

/// Python statements: lines, with a parenthesised `from … import (…)` joined into one.
fn statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        let code = without_comment(line);
        if let Some(mut acc) = open.take() {
            acc.push(' ');
            acc.push_str(code);
            if code.contains(')') {
                out.push(acc);
            } else {
                open = Some(acc);
            }
            continue;
        }
        let trimmed = code.trim_start();
        if trimmed.starts_with("from ") && code.contains('(') && !code.contains(')') {
            open = Some(code.to_string());
        } else {
            out.push(code.to_string());
        }
    }
    out.extend(open);
    out
}

const NODE_BUILTINS: &[&str] = &[
    "assert",
    "buffer",
    "child_process",
    "crypto",
    "events",
    "fs",
    "fs/promises",
    "http",
    "https",
    "net",
    "os",
    "path",
    "process",
    "readline",
    "stream",
    "string_decoder",
    "timers",
    "tty",
    "url",
    "util",
    "zlib",
];

impl Tracer {
    /// The directories a line of Python points at with its literals: each literal and all of
    /// them joined, from the script's directory (or the one `__file__`'s parents name), and
    /// from the workspace root (the hook's working directory).
    fn literal_dirs(&self, code: &str, dir: &Path) -> Vec<PathBuf> {
        let words = literals(code);
        let mut bases = vec![dir.to_path_buf(), self.root.clone()];
        if code.contains("__file__") {
            let parents =
                code.matches(".parent").count() as i64 - code.matches(".parents").count() as i64;
            let mut up = (parents - 1).max(0) as usize;
            up += code.matches("dirname(").count().saturating_sub(1);
            static PARENTS: OnceLock<Regex> = OnceLock::new();
            if let Some(c) = regex(&PARENTS, r"\.parents\[(\d+)\]").captures(code) {
                up += c[1].parse::<usize>().unwrap_or(0);
            }
            let mut base = dir.to_path_buf();
            for _ in 0..up {
                base.pop();
            }
            bases.insert(0, base);
        }
        let mut candidates: Vec<PathBuf> = Vec::new();
        for base in &bases {
            let mut joined = base.clone();
            for w in &words {
                joined.push(w);
                candidates.push(base.join(w));
            }
            candidates.push(joined);
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        for c in candidates {
            let c = normal(&c);
            if c.is_dir() && !dirs.contains(&c) && !words.is_empty() {
                dirs.push(c.canonicalize().unwrap_or(c));
            }
        }
        dirs
    }

    /// The code of one Python file in `dir`, imports searched in `search` (first match wins).
    pub(super) fn python_text(&mut self, text: &str, dir: &Path, search: &[PathBuf]) {
        let mut search = search.to_vec();
        let mut dynamic = false;
        let mut extra: Vec<PathBuf> = Vec::new();
        for code in statements(text) {
            if code.contains("sys.path") || code.contains("site.addsitedir") {
                let adds = ["insert", "append", "extend", "+=", "addsitedir", "="]
                    .iter()
                    .any(|w| code.contains(w));
                if adds {
                    let dirs = self.literal_dirs(&code, dir);
                    if dirs.is_empty() {
                        dynamic = true;
                    }
                    for d in dirs {
                        if !search.contains(&d) {
                            extra.push(d.clone());
                            search.insert(0, d);
                        }
                    }
                }
            }
        }
        for d in search.clone() {
            self.python_search_dir(&d);
        }
        static IMPORT: OnceLock<Regex> = OnceLock::new();
        static FROM: OnceLock<Regex> = OnceLock::new();
        static CALL: OnceLock<Regex> = OnceLock::new();
        let import = regex(&IMPORT, r"^\s*import\s+(.+)$");
        let from = regex(&FROM, r"^\s*from\s+(\.*)([\w.]*)\s+import\s+(.+)$");
        let call = regex(
            &CALL,
            r"(import_module|__import__|exec|execfile|run_path|run_module|spec_from_file_location|load_source|SourceFileLoader|compile)\s*\(\s*(.?)",
        );
        for code in statements(text) {
            for stmt in code.split(';') {
                if let Some(c) = from.captures(stmt) {
                    let names: Vec<String> = c[3]
                        .split(',')
                        .map(|n| {
                            n.trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace())
                                .split_whitespace()
                                .next()
                                .unwrap_or("")
                                .to_string()
                        })
                        .filter(|n| !n.is_empty() && n != "*")
                        .collect();
                    if c[1].is_empty() {
                        self.python_import(&c[2], &names, &search);
                    } else {
                        let mut base = dir.to_path_buf();
                        for _ in 1..c[1].len() {
                            base.pop();
                        }
                        self.python_import(&c[2], &names, &[base]);
                    }
                } else if let Some(c) = import.captures(stmt) {
                    for module in c[1].split(',') {
                        let module = module.split_whitespace().next().unwrap_or("");
                        self.python_import(module, &[], &search);
                    }
                }
            }
            for c in call.captures_iter(&code) {
                let literal = matches!(&c[2], "\"" | "'");
                let args = literals(&code[c.get(0).map_or(0, |m| m.end()) - c[2].len()..]);
                match (&c[1], literal, args.first()) {
                    ("import_module" | "__import__" | "run_module", true, Some(module)) => {
                        let module = module.clone();
                        self.python_import(&module, &[], &search);
                    }
                    (_, true, Some(_)) => {
                        for arg in args {
                            let found = self
                                .existing(&arg, dir)
                                .or_else(|| self.existing(&arg, &self.root.clone()));
                            if let Some(path) = found.filter(|p| p.is_file()) {
                                self.script(&path, Some(Kind::Python), &search);
                            }
                        }
                    }
                    ("compile", _, _) => {}
                    _ => dynamic = true,
                }
            }
            if [
                "open(",
                "read_text(",
                "read_bytes(",
                "load(",
                "loads(",
                "safe_load(",
            ]
            .iter()
            .any(|w| code.contains(w))
            {
                self.literal_files(&code, dir);
            }
        }
        if dynamic {
            // An import computed at run time: the script's directory and every directory it
            // imports from are the hook's.
            self.tree(dir);
            for d in extra {
                self.tree(&d);
            }
        }
    }

    /// Files a line names by literal (from the script's directory or the workspace root).
    fn literal_files(&mut self, code: &str, dir: &Path) {
        for word in literals(code) {
            let root = self.root.clone();
            let found = self
                .existing(&word, &root)
                .or_else(|| self.existing(&word, dir));
            if let Some(path) = found {
                self.named(&path);
            }
        }
    }

    /// `import module` (and `from module import names`, each perhaps a submodule) resolved in
    /// `search`: the first directory that has the top-level name wins, as in Python.
    pub(super) fn python_import(&mut self, module: &str, names: &[String], search: &[PathBuf]) {
        let parts: Vec<&str> = module.split('.').filter(|p| !p.is_empty()).collect();
        let valid = |p: &str| p.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !parts.iter().all(|p| valid(p)) {
            return;
        }
        for dir in search {
            let Some(top) = parts.first() else {
                // `from . import names`: modules of the package directory itself.
                for name in names {
                    let file = dir.join(format!("{name}.py"));
                    if file.is_file() {
                        self.script(&file, Some(Kind::Python), search);
                    } else if dir.join(name).is_dir() {
                        self.tree(&dir.join(name));
                    }
                }
                return;
            };
            let file = dir.join(format!("{top}.py"));
            let package = dir.join(top);
            if package.is_dir() {
                self.tree(&package);
                let mut at = package.clone();
                let mut files = vec![at.join("__init__.py")];
                for part in &parts[1..] {
                    at.push(part);
                    files.push(at.join("__init__.py"));
                    files.push(at.with_extension("py"));
                }
                for name in names {
                    files.push(at.join(format!("{name}.py")));
                    files.push(at.join(name).join("__init__.py"));
                }
                for f in files.into_iter().filter(|f| f.is_file()) {
                    let f = f.canonicalize().unwrap_or(f);
                    if f.starts_with(&self.root) {
                        self.script(&f, Some(Kind::Python), search);
                    }
                }
                return;
            }
            if file.is_file() {
                let file = file.canonicalize().unwrap_or(file);
                if file.starts_with(&self.root) {
                    self.script(&file, Some(Kind::Python), search);
                }
                return;
            }
        }
    }

    /// The code of one JavaScript or TypeScript file in `dir`.
    pub(super) fn node_text(&mut self, text: &str, dir: &Path) {
        static SPEC: OnceLock<Regex> = OnceLock::new();
        static DYNAMIC: OnceLock<Regex> = OnceLock::new();
        let spec = regex(
            &SPEC,
            r#"(?:require(?:\.resolve)?\s*\(\s*|\bimport\s*\(\s*|\bfrom\s*|^\s*import\s*)["'`]([^"'`\n]+)["'`]"#,
        );
        let dynamic = regex(&DYNAMIC, r#"(?:\brequire|\bimport)\s*\(\s*[^"'`\s)]"#);
        let mut computed = false;
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for c in spec.captures_iter(line) {
                self.node_spec(&c[1], dir);
            }
            if dynamic.is_match(line) {
                computed = true;
            }
            if ["readFileSync(", "readFile(", "createReadStream("]
                .iter()
                .any(|w| line.contains(w))
            {
                self.literal_files(line, dir);
            }
        }
        if computed {
            self.tree(dir);
        }
    }

    /// One module specifier, from a file in `dir`.
    pub(super) fn node_spec(&mut self, spec: &str, dir: &Path) {
        if spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/') {
            let base = normal(&dir.join(spec));
            let Some(rel) = self.inside(&base) else {
                return;
            };
            // Every name Node would try for it: `x`, `x.js`, `x/index.js`, …
            self.rule(&rel, "");
            self.rule(&rel, ".*");
            if base.is_dir() {
                self.tree(&base);
            }
            let mut found: Vec<PathBuf> = vec![base.clone()];
            for ext in ["js", "mjs", "cjs", "json", "ts", "mts", "cts"] {
                let mut name = base.clone().into_os_string();
                name.push(format!(".{ext}"));
                found.push(PathBuf::from(name));
                found.push(base.join(format!("index.{ext}")));
            }
            for f in found.into_iter().filter(|f| f.is_file()) {
                let is_json = f.extension().is_some_and(|e| e == "json");
                if is_json {
                    self.file(&f);
                } else {
                    self.script(&f, Some(Kind::Node), &[]);
                }
            }
            return;
        }
        if spec.starts_with("node:") || spec.starts_with('#') || NODE_BUILTINS.contains(&spec) {
            return;
        }
        let mut parts = spec.split('/');
        let package = match parts.next() {
            Some(scope) if scope.starts_with('@') => match parts.next() {
                Some(name) => format!("{scope}/{name}"),
                None => return,
            },
            Some(name) => name.to_string(),
            None => return,
        };
        // From the script's directory up: every `node_modules/<package>` Node would look in
        // until the one it finds (one planted lower down would be found first).
        let mut at = Some(dir.to_path_buf());
        while let Some(d) = at.filter(|d| d.starts_with(&self.root)) {
            let candidate = d.join("node_modules").join(&package);
            self.tree(&candidate);
            if candidate.exists() {
                break;
            }
            at = d.parent().map(Path::to_path_buf);
        }
    }
}

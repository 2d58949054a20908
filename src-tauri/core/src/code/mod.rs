//! What Mandate understands of code, with tree-sitter: the definitions and references of a file
//! (for the repo map and `list_code_definitions`) and the syntax errors in it (said to the model
//! right after it writes one). Rust, TypeScript/TSX, JavaScript, Python, Go, Java, C and C++;
//! other files are known by name only.

pub mod check;
mod check_parse;
pub mod check_run;
mod grammar;
pub mod map;
pub mod search;

use std::sync::OnceLock;

use tree_sitter::Language;
use tree_sitter_tags::{TagsConfiguration, TagsContext};

/// A language Mandate parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    Rust,
    TypeScript,
    Tsx,
    JavaScript,
    Python,
    Go,
    Java,
    C,
    Cpp,
}

const ALL: [Lang; 9] = [
    Lang::Rust,
    Lang::TypeScript,
    Lang::Tsx,
    Lang::JavaScript,
    Lang::Python,
    Lang::Go,
    Lang::Java,
    Lang::C,
    Lang::Cpp,
];

impl Lang {
    /// The language of a file, by its name.
    pub fn of(path: &str) -> Option<Lang> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "rs" => Lang::Rust,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "py" | "pyi" => Lang::Python,
            "go" => Lang::Go,
            "java" => Lang::Java,
            "c" | "h" => Lang::C,
            "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Lang::Cpp,
            _ => return None,
        })
    }

    /// The name of the language's grammar (its entry point is `tree_sitter_<name>`).
    fn grammar_name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "javascript",
            Lang::Python => "python",
            Lang::Go => "go",
            Lang::Java => "java",
            Lang::C => "c",
            Lang::Cpp => "cpp",
        }
    }

    /// The language's grammar, loaded once per process on first use; None if it cannot be
    /// loaded (then the language's files are known by name only, and the reason is logged).
    fn language(self) -> Option<&'static Language> {
        static LANGUAGES: [OnceLock<Option<Language>>; 9] = [const { OnceLock::new() }; 9];
        LANGUAGES[self.index()]
            .get_or_init(|| {
                let name = self.grammar_name();
                let loaded = grammar::embedded(name)
                    .ok_or_else(|| grammar::GrammarError::NoEntry(name.to_string()))
                    .and_then(|packed| grammar::load(name, packed));
                match loaded {
                    Ok(language) => Some(language),
                    Err(e) => {
                        tracing::error!(lang = ?self, error = %e, "grammar not loaded");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// The grammar's own tags query (TypeScript's adds to JavaScript's; C++'s to C's).
    fn tags_query(self) -> String {
        macro_rules! tags {
            ($name:literal) => {
                include_str!(concat!(env!("OUT_DIR"), "/tags-", $name, ".scm"))
            };
        }
        match self {
            Lang::Rust => tags!("rust").into(),
            Lang::TypeScript | Lang::Tsx => {
                format!("{}\n{}", tags!("javascript"), tags!("typescript"))
            }
            Lang::JavaScript => tags!("javascript").into(),
            Lang::Python => tags!("python").into(),
            Lang::Go => tags!("go").into(),
            Lang::Java => tags!("java").into(),
            Lang::C => tags!("c").into(),
            Lang::Cpp => format!("{}\n{}", tags!("c"), tags!("cpp")),
        }
    }

    fn index(self) -> usize {
        ALL.iter().position(|l| *l == self).unwrap_or(0)
    }

    /// The compiled tags query, made once per language; None if it does not compile (then
    /// the language's files are known by name only).
    fn tags(self) -> Option<&'static TagsConfiguration> {
        static CONFIGS: [OnceLock<Option<TagsConfiguration>>; 9] = [const { OnceLock::new() }; 9];
        CONFIGS[self.index()]
            .get_or_init(|| {
                let language = self.language()?.clone();
                match TagsConfiguration::new(language, &self.tags_query(), "") {
                    Ok(config) => Some(config),
                    Err(e) => {
                        // A pattern of one grammar's query that the other grammar lacks: the
                        // language's own query alone.
                        tracing::warn!(lang = ?self, error = %e, "tags query did not compile");
                        None
                    }
                }
            })
            .as_ref()
    }
}

/// A definition in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    /// `function`, `method`, `class`, `interface`, `module`, `type`, ...
    pub kind: String,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    /// The definition's first line, trimmed (its signature, most often).
    pub line: String,
}

/// What a file defines and the names it uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Symbols {
    pub definitions: Vec<Definition>,
    pub references: Vec<String>,
}

/// The definitions and references of `source` (a file of `lang`); None when the language's
/// query is not available.
pub fn symbols(lang: Lang, source: &[u8]) -> Option<Symbols> {
    thread_local! {
        static CONTEXT: std::cell::RefCell<TagsContext> = std::cell::RefCell::new(TagsContext::new());
    }
    let config = lang.tags()?;
    CONTEXT.with(|cx| {
        let mut cx = cx.borrow_mut();
        let (tags, _) = cx.generate_tags(config, source, None).ok()?;
        let mut out = Symbols::default();
        for tag in tags.flatten() {
            let name = String::from_utf8_lossy(source.get(tag.name_range.clone())?).into_owned();
            if tag.is_definition {
                let line = String::from_utf8_lossy(source.get(tag.line_range.clone())?);
                out.definitions.push(Definition {
                    name,
                    kind: config.syntax_type_name(tag.syntax_type_id).to_string(),
                    start_line: u32::try_from(tag.span.start.row + 1).unwrap_or(u32::MAX),
                    end_line: end_line(source, &tag.range),
                    line: crate::text::first_chars(line.trim(), 160).to_string(),
                });
            } else {
                out.references.push(name);
            }
        }
        Some(out)
    })
}

/// The 1-based line on which `range` ends.
fn end_line(source: &[u8], range: &std::ops::Range<usize>) -> u32 {
    let end = range.end.min(source.len());
    let lines = source[..end].iter().filter(|b| **b == b'\n').count() + 1;
    u32::try_from(lines).unwrap_or(u32::MAX)
}

/// The bytes of the regular file `rel` under `root`, read only if it is inside the workspace:
/// not a link, and no folder on its way a link out of it (a command may have put one there
/// since the file was listed). At most `max` bytes.
/// `real_root` is `root` with its links resolved (worked out once by the caller).
pub(crate) fn read_inside(
    root: &std::path::Path,
    real_root: &std::path::Path,
    rel: &str,
    max: u64,
) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = root.join(rel);
    let real = path.canonicalize().ok()?;
    if !real.starts_with(real_root) || real != real_root.join(rel) {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// A syntax error in a file: where, and what the parser found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxProblem {
    pub line: u32,
    pub column: u32,
    pub what: String,
}

/// At most this many problems are named per file.
const MAX_PROBLEMS: usize = 5;

/// The syntax errors tree-sitter finds in `text` as a file at `path` (none for a language it
/// does not parse).
pub fn syntax_problems(path: &str, text: &str) -> Vec<SyntaxProblem> {
    let Some(lang) = Lang::of(path) else {
        return Vec::new();
    };
    let Some(language) = lang.language() else {
        return Vec::new();
    };
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(language).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(text, None) else {
        return Vec::new();
    };
    let root = tree.root_node();
    if !root.has_error() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let mut cursor = root.walk();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if problems.len() >= MAX_PROBLEMS {
            break;
        }
        if node.is_missing() || node.is_error() {
            let at = node.start_position();
            let what = if node.is_missing() {
                format!("missing `{}`", node.kind())
            } else {
                let snippet = text.get(node.byte_range()).unwrap_or("");
                let snippet = snippet.lines().next().unwrap_or("").trim();
                format!("unexpected `{}`", crate::text::first_chars(snippet, 40))
            };
            problems.push(SyntaxProblem {
                line: u32::try_from(at.row + 1).unwrap_or(u32::MAX),
                column: u32::try_from(at.column + 1).unwrap_or(u32::MAX),
                what,
            });
            continue;
        }
        if node.has_error() {
            let children: Vec<_> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
    }
    problems.sort_by_key(|p| (p.line, p.column));
    problems
}

/// The problems in words, one per line, for the model.
pub fn describe_problems(problems: &[SyntaxProblem]) -> String {
    problems
        .iter()
        .map(|p| format!("line {}, column {}: {}", p.line, p.column, p.what))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;

#[cfg(test)]
#[path = "search_tests.rs"]
mod search_tests;

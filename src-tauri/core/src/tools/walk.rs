//! Walking and searching the workspace the way ripgrep does (its own libraries: a parallel,
//! .gitignore-aware walker and the grep searcher), with output bounded for the model.
//! Hidden files are included (agents need `.github/`, `.env.example`); `.git/` never is.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::{WalkBuilder, WalkState};

use super::ToolError;
use crate::workspace::ResolvedPath;

pub const MAX_LIST_ENTRIES: usize = 1000;
pub const MAX_MATCHES: usize = 300;
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

fn walker(dir: &Path, max_depth: Option<usize>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(dir);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .parents(true)
        .max_depth(max_depth)
        .threads(num_threads())
        .filter_entry(|e| e.file_name() != ".git");
    builder
}

fn num_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().min(12))
        .unwrap_or(2)
}

fn rel_of(base: &Path, base_rel: &str, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(base).ok()?;
    let rest = rest.to_string_lossy();
    if rest.is_empty() {
        return None;
    }
    Some(if base_rel.is_empty() {
        rest.into_owned()
    } else {
        format!("{base_rel}/{rest}")
    })
}

/// Every file (and, when not recursive, directory) under `dir`, workspace-relative and sorted.
/// Returns the entries (at most `limit`) and the total count.
pub fn list(
    dir: &ResolvedPath,
    recursive: bool,
    limit: usize,
) -> Result<(Vec<String>, usize), ToolError> {
    if !dir.abs.is_dir() {
        return Err(ToolError::Failed(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let entries = Mutex::new(Vec::new());
    let depth = if recursive { None } else { Some(1) };
    walker(&dir.abs, depth).build_parallel().run(|| {
        let mut collector = Collector {
            local: Vec::new(),
            shared: &entries,
        };
        let base = dir.abs.as_path();
        let base_rel = dir.rel.as_str();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if recursive && is_dir {
                return WalkState::Continue;
            }
            if let Some(rel) = rel_of(base, base_rel, entry.path()) {
                collector
                    .local
                    .push(if is_dir { format!("{rel}/") } else { rel });
            }
            WalkState::Continue
        })
    });
    let mut all = entries.into_inner().unwrap_or_else(|p| p.into_inner());
    all.sort_unstable();
    let total = all.len();
    all.truncate(limit);
    Ok((all, total))
}

/// Every regular file under `root` (workspace-relative) with its size and modification time
/// (nanoseconds), found by the walk itself: stats made in parallel, unsorted.
pub fn files_stamped(root: &Path, limit: usize) -> Vec<(String, (u64, i128))> {
    use std::os::unix::fs::MetadataExt;
    let found = Mutex::new(Vec::new());
    let count = AtomicUsize::new(0);
    walker(root, None).build_parallel().run(|| {
        let count = &count;
        let mut collector = Collector {
            local: Vec::new(),
            shared: &found,
        };
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if count.fetch_add(1, Ordering::Relaxed) >= limit {
                return WalkState::Quit;
            }
            let (Ok(meta), Some(rel)) = (entry.metadata(), rel_of(root, "", entry.path())) else {
                return WalkState::Continue;
            };
            let stamp = (
                meta.len(),
                i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            );
            collector.local.push((rel, stamp));
            WalkState::Continue
        })
    });
    found.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// Formats a listing for the model.
pub fn list_for_model(dir: &ResolvedPath, recursive: bool) -> Result<String, ToolError> {
    let (entries, total) = list(dir, recursive, MAX_LIST_ENTRIES)?;
    if total == 0 {
        return Ok(format!(
            "{} is empty (or everything in it is ignored).",
            dir.display()
        ));
    }
    let mut out = entries.join("\n");
    out.push('\n');
    if total > entries.len() {
        out.push_str(&format!(
            "[{} of {total} entries shown; list a subdirectory to see more]\n",
            entries.len()
        ));
    }
    Ok(out)
}

/// One walker thread's finds, added to the shared list once, when the thread drops it.
struct Collector<'a, T = String> {
    local: Vec<T>,
    shared: &'a Mutex<Vec<T>>,
}

impl<T> Drop for Collector<'_, T> {
    fn drop(&mut self) {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(&mut self.local);
    }
}

/// One file's matches, already formatted.
struct FileHits {
    rel: String,
    text: String,
    matches: usize,
}

struct HitSink<'a> {
    out: &'a mut String,
    matches: usize,
    last_line: u64,
    budget_left: &'a AtomicUsize,
}

impl HitSink<'_> {
    fn push_line(&mut self, n: u64, sep: char, bytes: &[u8]) {
        if self.last_line != 0 && n > self.last_line + 1 {
            self.out.push_str("  --\n");
        }
        self.last_line = n;
        let line = String::from_utf8_lossy(bytes);
        let line = line.trim_end_matches(['\n', '\r']);
        let shown = crate::text::first_chars(line, 300);
        self.out.push_str(&format!("{n:>6}{sep} {shown}\n"));
    }
}

impl Sink for HitSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let first = m.line_number().unwrap_or(0);
        for (i, line) in m.lines().enumerate() {
            self.push_line(first + i as u64, ':', line);
        }
        self.matches += 1;
        // Stop searching once the whole search has enough matches.
        let left = self.budget_left.fetch_sub(1, Ordering::Relaxed);
        Ok(left > 1)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        self.push_line(c.line_number().unwrap_or(0), '-', c.bytes());
        Ok(true)
    }
}

/// Searches with a regex; returns the formatted result for the model.
pub fn search(
    dir: &ResolvedPath,
    regex: &str,
    file_pattern: Option<&str>,
    context: usize,
) -> Result<(String, usize), ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(regex)
        .map_err(|e| ToolError::InvalidArguments(format!("regex does not compile: {e}")))?;
    let pattern = match file_pattern {
        Some(p) => Some(
            globset::GlobBuilder::new(p)
                .literal_separator(p.contains('/'))
                .build()
                .map_err(|e| ToolError::InvalidArguments(format!("file_pattern `{p}`: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let (hits, stopped) = search_files(dir, &matcher, pattern.as_ref(), context);
    Ok(format_hits(hits, stopped, regex, dir))
}

/// The matches in every file under `dir` (in parallel), and whether the search stopped at
/// [`MAX_MATCHES`].
fn search_files(
    dir: &ResolvedPath,
    matcher: &grep_regex::RegexMatcher,
    pattern: Option<&globset::GlobMatcher>,
    context: usize,
) -> (Vec<FileHits>, bool) {
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let budget_left = AtomicUsize::new(MAX_MATCHES);
    let done = AtomicBool::new(false);
    let single_file = dir.abs.is_file();
    walker(&dir.abs, None).build_parallel().run(|| {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let (hits, budget_left, done) = (&hits, &budget_left, &done);
        let (base, base_rel) = (dir.abs.as_path(), dir.rel.as_str());
        Box::new(move |entry| {
            if done.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let rel = if single_file {
                base_rel.to_string()
            } else {
                match rel_of(base, base_rel, entry.path()) {
                    Some(r) => r,
                    None => return WalkState::Continue,
                }
            };
            if let Some(glob) = pattern {
                let name = entry.file_name().to_string_lossy();
                if !(glob.is_match(name.as_ref()) || glob.is_match(&rel)) {
                    return WalkState::Continue;
                }
            }
            let mut text = String::new();
            let mut sink = HitSink {
                out: &mut text,
                matches: 0,
                last_line: 0,
                budget_left,
            };
            let _ = searcher.search_path(&matcher, entry.path(), &mut sink);
            let matches = sink.matches;
            if matches > 0 {
                hits.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(FileHits { rel, text, matches });
            }
            if budget_left.load(Ordering::Relaxed) == 0
                || budget_left.load(Ordering::Relaxed) > MAX_MATCHES
            {
                done.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    let hits = hits.into_inner().unwrap_or_else(|p| p.into_inner());
    (hits, done.load(Ordering::Relaxed))
}

/// The matches by file, in path order, within the output budget.
fn format_hits(
    mut hits: Vec<FileHits>,
    stopped: bool,
    regex: &str,
    dir: &ResolvedPath,
) -> (String, usize) {
    hits.sort_by(|a, b| a.rel.cmp(&b.rel));
    let total: usize = hits.iter().map(|h| h.matches).sum();
    if total == 0 {
        return (format!("No matches for /{regex}/ in {}.", dir.display()), 0);
    }
    let mut out = String::new();
    for h in &hits {
        if out.len() > MAX_OUTPUT_BYTES {
            out.push_str("[output truncated; narrow the search with a path or file_pattern]\n");
            break;
        }
        out.push_str(&h.rel);
        out.push('\n');
        out.push_str(&h.text);
    }
    if stopped {
        out.push_str(&format!(
            "[stopped after {MAX_MATCHES} matches; narrow the search with a path or file_pattern]\n"
        ));
    }
    (out, total)
}

/// Which workspace files each glob of an owned scope matches now (the first 50 of each), for the
/// scope editor and the scope-expansion card.
pub fn glob_previews(root: &Path, globs: &[String]) -> Vec<crate::protocol::GlobPreview> {
    let all = crate::workspace::Workspace::new(root)
        .ok()
        .and_then(|ws| ws.resolve(".").ok())
        .and_then(|r| list(&r, true, 200_000).ok())
        .map(|(files, _)| files)
        .unwrap_or_default();
    globs
        .iter()
        .map(|g| match crate::orchestration::intents::compile_glob(g) {
            Err(e) => crate::protocol::GlobPreview {
                glob: g.clone(),
                error: Some(e.to_string()),
                matches: Vec::new(),
                total: 0,
            },
            Ok(glob) => {
                let m = glob.compile_matcher();
                let hits: Vec<&String> = all.iter().filter(|f| m.is_match(f.as_str())).collect();
                crate::protocol::GlobPreview {
                    glob: g.clone(),
                    error: None,
                    total: hits.len() as u32,
                    matches: hits.into_iter().take(50).cloned().collect(),
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, crate::workspace::Workspace) {
        let tmp = tempfile::tempdir().expect("tmp");
        let r = tmp.path();
        for (p, c) in [
            ("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n"),
            ("src/lib.rs", "pub fn add() {}\n// TODO: more\n"),
            ("target/debug/x.rs", "fn main() {}\n"),
            (".github/ci.yml", "on: push\n"),
            ("bin.dat", "\0\0fn main"),
            (".gitignore", "target/\n"),
        ] {
            std::fs::create_dir_all(r.join(p).parent().expect("parent")).expect("mkdir");
            std::fs::write(r.join(p), c).expect("write");
        }
        std::fs::create_dir_all(r.join(".git")).expect("mkdir");
        std::fs::write(r.join(".git/config"), "fn main").expect("write");
        let ws = crate::workspace::Workspace::new(r).expect("ws");
        (tmp, ws)
    }

    #[test]
    fn lists_respect_gitignore_and_include_hidden_files() {
        let (_t, ws) = tree();
        let root = ws.resolve(".").expect("root");
        let (all, total) = list(&root, true, 100).expect("list");
        assert_eq!(
            all,
            vec![
                ".github/ci.yml",
                ".gitignore",
                "bin.dat",
                "src/lib.rs",
                "src/main.rs"
            ]
        );
        assert_eq!(total, 5);
        let (top, _) = list(&root, false, 100).expect("list");
        assert_eq!(top, vec![".github/", ".gitignore", "bin.dat", "src/"]);
        let (some, total) = list(&root, true, 2).expect("list");
        assert_eq!((some.len(), total), (2, 5));
    }

    #[test]
    fn search_finds_with_context_and_skips_ignored_and_binary() {
        let (_t, ws) = tree();
        let root = ws.resolve(".").expect("root");
        let (out, n) = search(&root, "fn main", None, 1).expect("search");
        assert_eq!(n, 1, "{out}");
        assert!(
            out.starts_with("src/main.rs\n     1: fn main() {\n     2-"),
            "{out}"
        );
        let (out, n) = search(&root, "fn", Some("lib.rs"), 0).expect("search");
        assert_eq!(n, 1, "{out}");
        let (_, n) =
            search(&ws.resolve("src/lib.rs").expect("file"), "TODO", None, 0).expect("search");
        assert_eq!(n, 1);
        assert!(search(&root, "(", None, 0).is_err());
    }
}

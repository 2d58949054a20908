//! `codebase_search`'s index: BM25 over chunks of the workspace's files, in the process, with no
//! server and no network. A chunk is a definition tree-sitter found (with the comment lines just
//! above it, where its documentation is), or a window of lines in a file of another kind. Files
//! are indexed again only when they change (size and modification time), checked at most every
//! few seconds and at once for a file Mandate itself wrote. What `.gitignore` or `.intentignore`
//! leaves out, and the person's protected files, are never indexed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{symbols, Lang};

/// Files larger than this are not indexed.
const MAX_BYTES: u64 = 512 * 1024;
/// Lines of a window in a file of no parsed language, and of a definition at most.
const WINDOW: usize = 40;
const MAX_CHUNK_LINES: usize = 120;
/// Comment lines kept above a definition (its documentation).
const DOC_LINES: usize = 6;
/// How long a listing of the workspace is trusted before files are checked again.
const FRESH_FOR: Duration = Duration::from_secs(3);
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// A search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub score: f64,
    pub text: String,
}

#[derive(Debug, Clone)]
struct Chunk {
    path: String,
    start_line: u32,
    end_line: u32,
    len: u32,
    live: bool,
}

#[derive(Default)]
struct Index {
    chunks: Vec<Chunk>,
    /// term → (chunk, term frequency)
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Each file's stamp and chunks.
    files: HashMap<String, ((u64, i128), Vec<u32>)>,
    live_chunks: usize,
    total_len: u64,
    checked: Option<Instant>,
    /// The copy on disk was looked for.
    loaded: bool,
    /// Changed since it was last saved.
    dirty: bool,
}

/// The workspace's search index (one per workspace).
#[derive(Default)]
pub struct SearchIndex {
    index: Mutex<Index>,
    /// Files Mandate wrote since the last check: indexed again before the next search.
    touched: Mutex<Vec<String>>,
    /// Where the index is kept between runs, in the data directory (None: memory only).
    store: Option<PathBuf>,
    /// The person's embeddings endpoint, when Settings name one.
    embedder: std::sync::RwLock<Option<std::sync::Arc<embed::Embedder>>>,
}

/// Where a workspace's index is kept: in the data directory, named by the workspace's path.
pub fn index_path(data: &Path, root: &Path) -> PathBuf {
    use sha2::Digest;
    let id = hex::encode(sha2::Sha256::digest(root.as_os_str().as_encoded_bytes()));
    data.join("code-index").join(format!("{}.idx", &id[..16]))
}

/// The words of `text` as the index keeps them: lowercase identifiers and their parts
/// (`parseExpr` and `parse_expr` give `parseexpr`/`parse_expr`, `parse`, `expr`).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if word.len() < 2 || word.len() > 64 {
            continue;
        }
        let lower = word.to_lowercase();
        let mut parts: Vec<String> = Vec::new();
        let mut current = String::new();
        let mut prev_lower = false;
        for c in word.chars() {
            if c == '_' {
                parts.push(std::mem::take(&mut current));
                prev_lower = false;
                continue;
            }
            if c.is_uppercase() && prev_lower {
                parts.push(std::mem::take(&mut current));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        }
        parts.push(current);
        let parts: Vec<String> = parts.into_iter().filter(|p| p.len() >= 2).collect();
        if parts.len() > 1 {
            out.extend(parts);
        }
        out.push(lower);
    }
    out
}

fn stamp(meta: &std::fs::Metadata) -> (u64, i128) {
    use std::os::unix::fs::MetadataExt;
    (
        meta.len(),
        i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    )
}

/// The line ranges (1-based, inclusive) a file is cut into.
fn ranges(rel: &str, text: &str) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    if n == 0 {
        return Vec::new();
    }
    let defs = Lang::of(rel)
        .and_then(|lang| symbols(lang, text.as_bytes()))
        .map(|s| s.definitions)
        .unwrap_or_default();
    let mut out = Vec::new();
    for d in &defs {
        let start = d.start_line as usize;
        let end = (d.end_line as usize)
            .min(start + MAX_CHUNK_LINES - 1)
            .min(n);
        // Its documentation: the comment lines right above.
        let mut first = start;
        while first > 1 && start - first < DOC_LINES {
            let above = lines[first - 2].trim_start();
            let comment = ["//", "#", "/*", "*", "--", "\"\"\"", "@"]
                .iter()
                .any(|m| above.starts_with(m));
            if !comment {
                break;
            }
            first -= 1;
        }
        out.push((first, end.max(start)));
    }
    if out.is_empty() {
        let mut at = 1;
        while at <= n {
            out.push((at, (at + WINDOW - 1).min(n)));
            at += WINDOW;
        }
    }
    out
}

impl Index {
    fn remove(&mut self, rel: &str) {
        if let Some((_, ids)) = self.files.remove(rel) {
            self.dirty = true;
            for id in ids {
                let chunk = &mut self.chunks[id as usize];
                if chunk.live {
                    chunk.live = false;
                    self.live_chunks -= 1;
                    self.total_len -= u64::from(chunk.len);
                }
            }
        }
    }

    fn add(&mut self, rel: &str, stamp: (u64, i128), text: &str) {
        let lines: Vec<&str> = text.lines().collect();
        let mut ids = Vec::new();
        for (start, end) in ranges(rel, text) {
            let body = lines[start - 1..end].join("\n");
            let mut counts: HashMap<String, u32> = HashMap::new();
            // The path's words count too (a search for `parser` finds parser.rs).
            for t in terms(&body).into_iter().chain(terms(rel)) {
                *counts.entry(t).or_default() += 1;
            }
            let id = u32::try_from(self.chunks.len()).unwrap_or(u32::MAX);
            let len: u32 = counts.values().sum();
            for (term, tf) in counts {
                self.postings.entry(term).or_default().push((id, tf));
            }
            self.chunks.push(Chunk {
                path: rel.to_string(),
                start_line: u32::try_from(start).unwrap_or(u32::MAX),
                end_line: u32::try_from(end).unwrap_or(u32::MAX),
                len,
                live: true,
            });
            self.live_chunks += 1;
            self.total_len += u64::from(len);
            ids.push(id);
        }
        self.files.insert(rel.to_string(), (stamp, ids));
        self.dirty = true;
    }

    /// Drops what is dead when it is most of the index.
    fn compact(&mut self) {
        if self.chunks.len() < 1024 || self.live_chunks * 2 > self.chunks.len() {
            return;
        }
        let mut fresh = Index {
            checked: self.checked,
            loaded: self.loaded,
            dirty: true,
            ..Index::default()
        };
        let old = std::mem::take(&mut self.chunks);
        let mut remap = HashMap::new();
        for (i, c) in old.into_iter().enumerate() {
            if c.live {
                remap.insert(i as u32, fresh.chunks.len() as u32);
                fresh.total_len += u64::from(c.len);
                fresh.live_chunks += 1;
                fresh.chunks.push(c);
            }
        }
        for (term, list) in std::mem::take(&mut self.postings) {
            let kept: Vec<(u32, u32)> = list
                .into_iter()
                .filter_map(|(id, tf)| remap.get(&id).map(|&n| (n, tf)))
                .collect();
            if !kept.is_empty() {
                fresh.postings.insert(term, kept);
            }
        }
        for (rel, (stamp, ids)) in std::mem::take(&mut self.files) {
            let ids = ids.iter().filter_map(|id| remap.get(id).copied()).collect();
            fresh.files.insert(rel, (stamp, ids));
        }
        *self = fresh;
    }
}

impl SearchIndex {
    /// An index kept at `path` between runs: read from there when first used, saved there
    /// after a check of the whole workspace found changes.
    pub fn stored_at(path: PathBuf) -> Self {
        Self {
            store: Some(path),
            ..Self::default()
        }
    }

    /// Ranks by meaning too, with vectors from `endpoint` (None: by words alone). The vectors
    /// already fetched are kept while the endpoint stays the same.
    pub fn use_embeddings(&self, endpoint: Option<embed::Endpoint>) {
        let mut slot = self.embedder.write().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().map(|e| &e.endpoint) != endpoint.as_ref() {
            *slot = endpoint.map(|e| std::sync::Arc::new(embed::Embedder::new(e)));
        }
    }

    pub fn embedder(&self) -> Option<std::sync::Arc<embed::Embedder>> {
        self.embedder
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The copy on disk, once, before the first check (a damaged one is ignored).
    fn load(&self, index: &mut Index) {
        if index.loaded {
            return;
        }
        index.loaded = true;
        let Some(path) = &self.store else { return };
        let Ok(bytes) = std::fs::read(path) else {
            return;
        };
        match store::decode(&bytes) {
            Some(mut kept) => {
                kept.loaded = true;
                *index = kept;
            }
            None => {
                tracing::warn!(path = %path.display(), "the search index on disk is damaged; it is built again")
            }
        }
    }

    /// Saves the index in the background (readers see the old copy or the new, never a mix).
    fn save(&self, index: &mut Index) {
        let Some(path) = self.store.clone() else {
            return;
        };
        if !index.dirty {
            return;
        }
        index.dirty = false;
        let bytes = store::encode(index);
        std::thread::spawn(move || {
            if let Err(e) = crate::fsutil::write_atomic(&path, &bytes) {
                tracing::warn!(error = %e, "the search index was not saved");
            }
        });
    }

    /// Mandate wrote `rel`: it is indexed again before the next search.
    pub fn touched(&self, rel: &str) {
        self.touched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(rel.to_string());
    }

    /// Brings the index up to date: every file when the last check is old, else the touched
    /// ones. `skip` says which files are never indexed.
    fn refresh(&self, root: &Path, index: &mut Index, skip: &dyn Fn(&str) -> bool) {
        self.load(index);
        let touched = std::mem::take(&mut *self.touched.lock().unwrap_or_else(|p| p.into_inner()));
        let stale = index.checked.is_none_or(|t| t.elapsed() > FRESH_FOR);
        let paths: Vec<String> = if stale {
            let top = crate::workspace::ResolvedPath {
                abs: root.to_path_buf(),
                rel: String::new(),
            };
            let listed = crate::tools::walk::list(&top, true, 200_000)
                .map(|l| l.0)
                .unwrap_or_default();
            let present: std::collections::HashSet<&String> = listed.iter().collect();
            let gone: Vec<String> = index
                .files
                .keys()
                .filter(|k| !present.contains(k))
                .cloned()
                .collect();
            for rel in gone {
                index.remove(&rel);
            }
            index.checked = Some(Instant::now());
            listed
        } else {
            touched
        };
        let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        for rel in paths {
            if skip(&rel) {
                index.remove(&rel);
                continue;
            }
            // The file itself, never what a link points to (it may be outside the workspace).
            let Ok(meta) = std::fs::symlink_metadata(root.join(&rel)) else {
                index.remove(&rel);
                continue;
            };
            let now = stamp(&meta);
            if index.files.get(&rel).is_some_and(|(s, _)| *s == now) {
                continue;
            }
            index.remove(&rel);
            if !meta.is_file() || meta.len() > MAX_BYTES {
                continue;
            }
            let Some(bytes) = super::read_inside(root, &real_root, &rel, MAX_BYTES) else {
                continue;
            };
            // Text only: a NUL in the first 8 KiB means a binary file.
            if bytes.iter().take(8192).any(|b| *b == 0) {
                continue;
            }
            index.add(&rel, now, &String::from_utf8_lossy(&bytes));
        }
        index.compact();
        if stale {
            self.save(index);
        }
    }

    /// The `limit` best chunks for `query`, under `under` (a folder or file, "" for all).
    pub fn search(
        &self,
        root: &Path,
        query: &str,
        under: &str,
        limit: usize,
        skip: &dyn Fn(&str) -> bool,
    ) -> Vec<Hit> {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(root, &mut index, skip);
        let mut wanted = terms(query);
        wanted.sort();
        wanted.dedup();
        let n = index.live_chunks.max(1) as f64;
        let average = index.total_len as f64 / n;
        // Scores in a table by chunk (a term common to most files touches most chunks), with
        // the chunks scored so far listed apart; a score is never 0 once a term counted.
        let mut scores = vec![0.0f64; index.chunks.len()];
        let mut scored: Vec<u32> = Vec::new();
        for term in &wanted {
            let Some(list) = index.postings.get(term) else {
                continue;
            };
            let chunks = &index.chunks;
            let df = list
                .iter()
                .filter(|(id, _)| chunks[*id as usize].live)
                .count() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(id, tf) in list {
                let chunk = &chunks[id as usize];
                if !chunk.live {
                    continue;
                }
                let (len, tf) = (f64::from(chunk.len), f64::from(tf));
                let score =
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / average.max(1.0)));
                let slot = &mut scores[id as usize];
                if *slot == 0.0 {
                    scored.push(id);
                }
                *slot += score;
            }
        }
        let prefix = under.trim_matches('/');
        let folder = format!("{prefix}/");
        let mut ranked: Vec<(u32, f64)> = scored
            .into_iter()
            .filter(|id| {
                let path = &index.chunks[*id as usize].path;
                prefix.is_empty() || path == prefix || path.starts_with(&folder)
            })
            .map(|id| (id, scores[id as usize]))
            .collect();
        let order = |a: &(u32, f64), b: &(u32, f64)| {
            b.1.partial_cmp(&a.1)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.0.cmp(&b.0))
        };
        // The best `limit` first, then only those sorted.
        if limit > 0 && ranked.len() > limit {
            ranked.select_nth_unstable_by(limit - 1, order);
            ranked.truncate(limit);
        }
        ranked.sort_by(order);
        ranked.truncate(limit);
        let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        ranked
            .into_iter()
            .map(|(id, score)| {
                let c = &index.chunks[id as usize];
                Hit {
                    path: c.path.clone(),
                    start_line: c.start_line,
                    end_line: c.end_line,
                    score,
                    text: chunk_text(root, &real_root, c),
                }
            })
            .collect()
    }
}

#[path = "search_store.rs"]
mod store;

#[path = "embed.rs"]
pub mod embed;

#[cfg(test)]
#[path = "embed_tests.rs"]
mod embed_tests;

#[cfg(test)]
pub(super) fn store_decodes(bytes: &[u8]) -> bool {
    store::decode(bytes).is_some()
}

/// The chunk's lines as the file holds them now (at most 30).
fn chunk_text(root: &Path, real_root: &Path, c: &Chunk) -> String {
    let bytes = super::read_inside(root, real_root, &c.path, MAX_BYTES).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let start = c.start_line as usize;
    let take = (c.end_line as usize + 1).saturating_sub(start).min(30);
    let mut out: Vec<&str> = text
        .lines()
        .skip(start.saturating_sub(1))
        .take(take)
        .collect();
    if (c.end_line as usize + 1).saturating_sub(start) > 30 {
        out.push("…");
    }
    out.join("\n")
}

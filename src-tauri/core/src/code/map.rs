//! The repo map: the workspace's files ranked by how much the rest of the code leans on them,
//! biased toward the files of the conversation and the names the person mentioned, each with
//! its definitions (line and signature), cut to a token budget. Files are parsed once and again
//! only when they change (size and modification time); a file of another language is listed by
//! name only.

use std::collections::HashMap;

// Seeded per process (a repository cannot pick names that collide), and fast on short keys.
use foldhash::HashMap as FastMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::{symbols, Lang, Symbols};

/// Files larger than this are listed by name only (generated or vendored code, most often).
const MAX_PARSED_BYTES: u64 = 512 * 1024;
/// At most this many files are considered.
const MAX_FILES: usize = 100_000;
/// A scan parses for at most this long; the files left are listed by name and parsed by the
/// next scan (a first map of a very large repository comes in a few steps).
const PARSE_FOR: std::time::Duration = std::time::Duration::from_secs(3);

/// What a map is asked for.
#[derive(Debug, Clone, Default)]
pub struct MapRequest {
    /// Files of the conversation: they and their neighbours come first.
    pub focus: Vec<String>,
    /// Identifiers the person mentioned: the files that define them come first.
    pub mentioned: Vec<String>,
    /// About how many tokens the map may take (4 characters a token).
    pub budget_tokens: usize,
}

#[derive(Clone)]
struct Parsed {
    stamp: (u64, i128),
    symbols: Option<Arc<Symbols>>,
    /// The last scan that saw the file.
    scan: u64,
}

/// Parsed files, kept between maps (one per workspace), and the map each task was last shown.
#[derive(Default)]
pub struct RepoMap {
    parsed: Mutex<HashMap<String, Parsed>>,
    shown: Mutex<HashMap<String, u64>>,
    scans: std::sync::atomic::AtomicU64,
}

impl RepoMap {
    /// The symbols of every file under `root` (parsed again only where changed), sorted by
    /// path; files of no known language carry None. What needs parsing is parsed on every
    /// core, each taking the next file from a shared counter.
    pub fn scan(&self, root: &Path) -> Vec<(String, Option<Arc<Symbols>>)> {
        let mut files = crate::tools::walk::files_stamped(root, MAX_FILES);
        files.retain(|(rel, _)| !rel.starts_with(".orchestration/"));
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        let generation = self
            .scans
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let until = std::time::Instant::now() + PARSE_FOR;
        // What is known already, or None where the file must be read and parsed (again).
        let mut known: Vec<Option<Option<Arc<Symbols>>>> = files
            .iter()
            .map(|(rel, now)| match parsed.get(rel) {
                Some(p) if p.stamp == *now => Some(p.symbols.clone()),
                _ if Lang::of(rel).is_none() || now.0 > MAX_PARSED_BYTES => Some(None),
                _ => None,
            })
            .collect();
        let todo: Vec<usize> = (0..files.len()).filter(|&i| known[i].is_none()).collect();
        if !todo.is_empty() {
            let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
            let done = parse_all(root, &real_root, &files, &todo, until);
            for (i, symbols) in done {
                known[i] = Some(symbols);
            }
        }
        let mut out = Vec::with_capacity(files.len());
        let mut kept = 0;
        for ((rel, now), symbols) in files.into_iter().zip(known) {
            // Not reached before the deadline: listed by name, parsed by the next scan.
            let Some(symbols) = symbols else {
                parsed.remove(&rel);
                out.push((rel, None));
                continue;
            };
            kept += 1;
            match parsed.get_mut(&rel) {
                Some(p) => {
                    p.stamp = now;
                    p.symbols.clone_from(&symbols);
                    p.scan = generation;
                }
                None => {
                    parsed.insert(
                        rel.clone(),
                        Parsed {
                            stamp: now,
                            symbols: symbols.clone(),
                            scan: generation,
                        },
                    );
                }
            }
            out.push((rel, symbols));
        }
        // Files gone since are forgotten.
        if parsed.len() != kept {
            parsed.retain(|_, p| p.scan == generation);
        }
        out
    }

    /// Whether `map` differs from the one `task_id` was last shown (and remembers it).
    pub fn is_news(&self, task_id: &str, map: &str) -> bool {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        map.hash(&mut h);
        let digest = h.finish();
        let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        shown.insert(task_id.to_string(), digest) != Some(digest)
    }

    /// The map of the workspace at `root`, as the model reads it.
    pub fn render(&self, root: &Path, request: &MapRequest) -> String {
        let files = self.scan(root);
        render(&files, request)
    }
}

/// Reads and parses the files `todo` (indices into `files`) on every core until `until`;
/// returns what each parsed file gave (a file not reached is left out).
pub(super) fn parse_all(
    root: &Path,
    real_root: &Path,
    files: &[(String, (u64, i128))],
    todo: &[usize],
    until: std::time::Instant,
) -> Vec<(usize, Option<Arc<Symbols>>)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let work = || {
        let mut mine = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = todo.get(k) else { break };
            if std::time::Instant::now() > until {
                break;
            }
            let rel = &files[i].0;
            let symbols = Lang::of(rel).and_then(|lang| {
                let bytes = super::read_inside(root, real_root, rel, MAX_PARSED_BYTES)?;
                symbols(lang, &bytes).map(Arc::new)
            });
            mine.push((i, symbols));
        }
        mine
    };
    // A few files are parsed here: a thread costs more than it saves.
    let threads = if todo.len() < 16 {
        1
    } else {
        crate::orchestration::chain::threads()
    };
    if threads == 1 {
        return work();
    }
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for h in helpers {
            all.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        all
    })
}

/// The files that define a name, in order, each once.
enum Definers {
    One([u32; 1]),
    Many(Vec<u32>),
}

impl Definers {
    fn push(&mut self, file: u32) {
        match self {
            Definers::One([only]) if *only != file => *self = Definers::Many(vec![*only, file]),
            Definers::One(_) => {}
            Definers::Many(list) => {
                if list.last() != Some(&file) {
                    list.push(file);
                }
            }
        }
    }

    fn as_slice(&self) -> &[u32] {
        match self {
            Definers::One(one) => one,
            Definers::Many(list) => list,
        }
    }
}

/// Each file's rank: a PageRank over "file A uses a name file B defines" (weighted by how
/// often, and shared among the files that define the name), personalized toward `focus` and
/// toward the files that define a `mentioned` name.
pub fn rank(files: &[(String, Option<Arc<Symbols>>)], request: &MapRequest) -> Vec<f64> {
    let n = files.len();
    if n == 0 {
        return Vec::new();
    }
    let total: usize = files
        .iter()
        .filter_map(|(_, s)| s.as_ref())
        .map(|s| s.definitions.len())
        .sum();
    // Most names have one definer: no list is allocated for them (a list per name was most of
    // a warm map's time at 10k files).
    let mut definers: FastMap<&str, Definers> = FastMap::default();
    definers.reserve(total);
    for (i, (_, s)) in files.iter().enumerate() {
        for d in s.iter().flat_map(|s| &s.definitions) {
            definers
                .entry(d.name.as_str())
                .and_modify(|list| list.push(i as u32))
                .or_insert(Definers::One([i as u32]));
        }
    }
    // Edges: from the file that uses a name to the files that define it, each file's weights
    // summing to 1.
    let mut out_edges: Vec<Vec<(u32, f64)>> = Vec::with_capacity(n);
    for (i, (_, s)) in files.iter().enumerate() {
        let mut edges: Vec<(u32, f64)> = Vec::new();
        for name in s.iter().flat_map(|s| &s.references) {
            let Some(defs) = definers.get(name.as_str()) else {
                continue;
            };
            // A name many files define (`new`, `get`) says little about any of them.
            let weight = 1.0 / defs.as_slice().len() as f64;
            edges.extend(
                defs.as_slice()
                    .iter()
                    .filter(|&&d| d as usize != i)
                    .map(|&d| (d, weight)),
            );
        }
        edges.sort_unstable_by_key(|e| e.0);
        edges.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        let sum: f64 = edges.iter().map(|e| e.1).sum();
        for e in &mut edges {
            e.1 /= sum;
        }
        out_edges.push(edges);
    }
    let mut personal = vec![0.0; n];
    let position: FastMap<&str, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (p, _))| (p.as_str(), i))
        .collect();
    for f in &request.focus {
        if let Some(&i) = position.get(f.as_str()) {
            personal[i] += 1.0;
        }
    }
    for name in request.mentioned.iter().filter(|n| n.len() > 2) {
        for &i in definers
            .get(name.as_str())
            .map_or(&[][..], Definers::as_slice)
        {
            personal[i as usize] += 1.0;
        }
        // A mentioned file name (`parser.rs`, `src/parser`) counts too.
        let folder = format!("/{name}/");
        for (i, (p, _)) in files.iter().enumerate() {
            if p.ends_with(name.as_str()) || p.contains(&folder) {
                personal[i] += 1.0;
            }
        }
    }
    let total: f64 = personal.iter().sum();
    let personal: Vec<f64> = if total > 0.0 {
        personal.iter().map(|p| p / total).collect()
    } else {
        vec![1.0 / n as f64; n]
    };
    let damping = 0.85;
    let mut rank = personal.clone();
    let mut next = vec![0.0; n];
    for _ in 0..20 {
        let mut dangling = 0.0;
        for (x, p) in next.iter_mut().zip(&personal) {
            *x = (1.0 - damping) * p;
        }
        for (i, edges) in out_edges.iter().enumerate() {
            if edges.is_empty() {
                dangling += rank[i];
                continue;
            }
            let share = damping * rank[i];
            for &(j, w) in edges {
                next[j as usize] += share * w;
            }
        }
        for (x, p) in next.iter_mut().zip(&personal) {
            *x += damping * dangling * p;
        }
        let moved: f64 = rank.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
        std::mem::swap(&mut rank, &mut next);
        // Settled: the order will not change any more.
        if moved < 1e-6 {
            break;
        }
    }
    rank
}

/// The map text: files by rank, each with its definitions, then other files by name, until the
/// budget is used.
pub fn render(files: &[(String, Option<Arc<Symbols>>)], request: &MapRequest) -> String {
    let ranks = rank(files, request);
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| {
        ranks[b]
            .partial_cmp(&ranks[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| files[a].0.cmp(&files[b].0))
    });
    let budget = request.budget_tokens.max(64) * 4;
    let mut out = String::new();
    let mut by_name_only = Vec::new();
    let mut left_out = 0usize;
    for i in order {
        let (path, symbols) = &files[i];
        let defs = symbols.as_ref().map(|s| &s.definitions[..]).unwrap_or(&[]);
        if defs.is_empty() {
            by_name_only.push(path.as_str());
            continue;
        }
        // Full: the rest is only counted.
        if out.len() + path.len() + 16 > budget {
            left_out += 1;
            continue;
        }
        let mut block = format!("{path}:\n");
        let mut shown = std::collections::HashSet::new();
        for d in defs {
            if shown.insert((d.start_line, d.name.as_str())) {
                block.push_str(&format!("  {:>5}│ {}\n", d.start_line, d.line));
            }
        }
        if out.len() + block.len() > budget {
            left_out += 1;
            continue;
        }
        out.push_str(&block);
    }
    let mut names = String::new();
    for path in &by_name_only {
        if out.len() + names.len() + path.len() + 1 > budget {
            left_out += 1;
            continue;
        }
        names.push_str(path);
        names.push('\n');
    }
    if !names.is_empty() {
        out.push_str("Other files:\n");
        out.push_str(&names);
    }
    if left_out > 0 {
        out.push_str(&format!(
            "({left_out} more files left out for space: list_files, search_files and list_code_definitions reach them.)\n"
        ));
    }
    out
}

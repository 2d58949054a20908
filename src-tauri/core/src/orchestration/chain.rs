//! The ledger's hash chain, with merges.
//!
//! Every record names its parent line by hash (`prev`, the SHA-256 of that line's bytes). On
//! one branch the parent is always the line just before. When two branches' ledgers are
//! merged (`mandate trace merge`), the merged file holds both sides' records byte for byte:
//! the records of the second side still name their own parents, which are earlier lines but
//! not the line just before, and a **merge record** at the end names the tips it joins
//! (`metadata["dev.mandate"].merge.parents`). So the chain is a graph, and the rule is:
//!
//! - every record's `prev` is the hash of an earlier line (the first record's is all zeros);
//! - every line but the last is a parent of some later line (through `prev`, or as a merge
//!   parent): a line nobody continues from is a branch that was never merged, which is what an
//!   inserted, removed or reordered line looks like.
//!
//! A linear ledger costs nothing extra: the graph is only built when some record's parent is
//! not the line before it.

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::ledger::{record_digest, unhex32, GENESIS, VENDOR_KEY};

/// What the chain needs to know about one line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    /// SHA-256 of the raw line: the `prev` of the line that continues from it.
    pub hash: [u8; 32],
    /// None when the line is not a Mandate record (a torn write, a hand edit).
    pub prev: Option<[u8; 32]>,
    /// The record's `digest` matches its content.
    pub digest_ok: bool,
    /// A merge record's parents (the tips it joins), empty for other lines.
    pub merge_parents: Vec<[u8; 32]>,
    /// A record saying a person accepted appending to the ledger while it was broken.
    pub accepts_break: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// `prev` names no earlier line: the line before was edited, removed or reordered.
    UnknownParent,
    /// The line before is continued by nothing: a record was inserted, or the ledger forks
    /// without a merge record.
    Unmerged,
    /// A merge record names a parent that is not an earlier line.
    UnknownMergeParent,
}

impl Break {
    pub fn explain(self) -> &'static str {
        match self {
            Break::UnknownParent | Break::Unmerged => {
                "the chain is broken here: the line before was edited, removed or reordered"
            }
            Break::UnknownMergeParent => {
                "this merge record names a parent that is not an earlier line of the ledger"
            }
        }
    }
}

/// The chain of a whole ledger.
#[derive(Debug, Default)]
pub struct Chain {
    /// 0-based line index and what is wrong there; at most one per line, in line order.
    pub breaks: Vec<(usize, Break)>,
    /// Parent lines of each line, when the ledger is not linear (None: line i's parent is i-1).
    parents: Option<Vec<Vec<u32>>>,
}

const PREV_KEY: &[u8] = b"\"prev\":\"";
const DIGEST_KEY: &[u8] = b"\"digest\":\"";
const MERGE_KEY: &[u8] = b"\"merge\":{\"parents\":[";
const ACCEPT_KEY: &[u8] = b"\"accepted_break\":{";

/// Forward finders (they have a vector prefilter; the reverse ones do not) for the two keys.
fn finders() -> &'static [memchr::memmem::Finder<'static>; 2] {
    static FINDERS: std::sync::OnceLock<[memchr::memmem::Finder<'static>; 2]> =
        std::sync::OnceLock::new();
    FINDERS.get_or_init(|| {
        [
            memchr::memmem::Finder::new(PREV_KEY),
            memchr::memmem::Finder::new(DIGEST_KEY),
        ]
    })
}

/// How far from the end of a record `prev` and `digest` usually sit: the last occurrence is
/// looked for in this tail first, forward and vectorized, and in the whole line only when the
/// tail has none (a reverse search byte by byte was a tenth of verify's time).
const TAIL: usize = 512;

/// The last match of `finder` in `hay`.
fn last_match(hay: &[u8], finder: &memchr::memmem::Finder<'_>) -> Option<usize> {
    let mut from = hay.len().saturating_sub(TAIL);
    loop {
        // A match that starts in the tail lies wholly in it, so the last match in the tail is
        // the last in the line; a match straddling the tail's start is found by the retry.
        let mut last = None;
        let mut next = from;
        // One byte on from each match, not past it: matches of a key may overlap.
        while let Some(at) = finder.find(&hay[next..]) {
            last = Some(next + at);
            next += at + 1;
        }
        if last.is_some() {
            return last;
        }
        if from == 0 {
            return None;
        }
        from = 0;
    }
}

/// The last `"key":"<64 hex>"` in the line. In canonical JSON a key can only appear as a key
/// (quotes inside strings are escaped), and `prev` and `digest` sit near the end of a record.
fn hex_at(
    line: &[u8],
    finder: &memchr::memmem::Finder<'_>,
    key_len: usize,
) -> Option<(usize, [u8; 32])> {
    let start = last_match(line, finder)?;
    let value = line.get(start + key_len..start + key_len + 64)?;
    if line.get(start + key_len + 64) != Some(&b'"') {
        return None;
    }
    Some((start, unhex32(value)?))
}

/// The link of one line. Records written canonically are read without parsing JSON: the
/// digest is the SHA-256 of the line with its `"digest":"…",` member cut out. Other lines fall
/// back to a full parse, so a valid record in another layout is still judged on its content.
pub fn link(line: &[u8]) -> Link {
    if let Some(c) = canonical(line) {
        let (hash, digest) = super::sha_lanes::hash_lines(&[c.cut(line)])[0];
        return c.link(hash, digest);
    }
    let mut l = parsed_link(line);
    l.hash = link_hash(line);
    l
}

/// What a canonical record says of its links, before any hashing.
pub(crate) struct Canonical {
    prev: [u8; 32],
    digest: [u8; 32],
    /// Where the `"digest":"…",` member starts, and ends after its comma.
    member: (usize, usize),
    merge_parents: Vec<[u8; 32]>,
    accepts_break: bool,
}

impl Canonical {
    /// The line and the cut its digest is computed without.
    pub(crate) fn cut<'a>(&self, line: &'a [u8]) -> super::sha_lanes::LineCut<'a> {
        super::sha_lanes::LineCut {
            line,
            member_start: self.member.0,
            member_end: self.member.1,
        }
    }

    /// The link, given the line's hash and the hash of the line without its digest member.
    pub(crate) fn link(self, hash: [u8; 32], computed: [u8; 32]) -> Link {
        Link {
            hash,
            prev: Some(self.prev),
            digest_ok: computed == self.digest,
            merge_parents: self.merge_parents,
            accepts_break: self.accepts_break,
        }
    }
}

/// A record written canonically, read without parsing JSON; None for any other line (a torn
/// one, another layout), which the full parse judges.
pub(crate) fn canonical(line: &[u8]) -> Option<Canonical> {
    if !(line.starts_with(b"{\"files\":") && line.ends_with(b"}")) {
        return None;
    }
    let [prev_finder, digest_finder] = finders();
    let (prev_at, prev) = hex_at(line, prev_finder, PREV_KEY.len())?;
    // Keys are sorted: `digest` comes before `prev` in the same object; look only there.
    let (start, digest) = hex_at(&line[..prev_at], digest_finder, DIGEST_KEY.len())?;
    let member_end = start + DIGEST_KEY.len() + 64 + 1;
    if line.get(member_end) != Some(&b',') {
        return None;
    }
    // Only Mandate's own structural records (merges, acceptances) have no files.
    let structural = line.starts_with(b"{\"files\":[],");
    let merge_parents = if structural {
        merge_parents_at(line)?
    } else {
        Vec::new()
    };
    Some(Canonical {
        prev,
        digest,
        member: (start, member_end + 1),
        merge_parents,
        accepts_break: structural && memchr::memmem::find(line, ACCEPT_KEY).is_some(),
    })
}

/// `"merge":{"parents":["<hex>",…]` in a canonical line; Some(empty) when there is none.
fn merge_parents_at(line: &[u8]) -> Option<Vec<[u8; 32]>> {
    let Some(at) = memchr::memmem::find(line, MERGE_KEY) else {
        return Some(Vec::new());
    };
    let mut rest = &line[at + MERGE_KEY.len()..];
    let mut out = Vec::new();
    loop {
        let value = rest.get(1..65)?;
        if rest.first() != Some(&b'"') || rest.get(65) != Some(&b'"') {
            return None;
        }
        out.push(unhex32(value)?);
        match rest.get(66) {
            Some(b',') => rest = &rest[67..],
            Some(b']') => return Some(out),
            _ => return None,
        }
    }
}

/// A record's `prev` and merge parents, without checking its digest (the merge driver keeps
/// records as they are; verify judges their digests). None for a line that is not a record.
pub fn parents_of(line: &[u8]) -> Option<([u8; 32], Vec<[u8; 32]>)> {
    if line.starts_with(b"{\"files\":") {
        let [prev_finder, _] = finders();
        if let Some((_, prev)) = hex_at(line, prev_finder, PREV_KEY.len()) {
            let parents = if line.starts_with(b"{\"files\":[],") {
                merge_parents_at(line)
            } else {
                Some(Vec::new())
            };
            if let Some(parents) = parents {
                return Some((prev, parents));
            }
        }
    }
    let l = parsed_link(line);
    Some((l.prev?, l.merge_parents))
}

fn parsed_link(line: &[u8]) -> Link {
    let Ok(record) = serde_json::from_slice::<Value>(line) else {
        return Link::default();
    };
    let Some(vendor) = record.get("metadata").and_then(|m| m.get(VENDOR_KEY)) else {
        return Link::default();
    };
    let hex = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .and_then(|p| unhex32(p.as_bytes()))
    };
    Link {
        hash: [0; 32],
        // A record whose `prev` is not a hash links to nothing.
        prev: Some(hex(vendor.get("prev")).unwrap_or([0xff; 32])),
        digest_ok: vendor.get("digest").and_then(Value::as_str)
            == Some(record_digest(&record).as_str()),
        merge_parents: vendor
            .pointer("/merge/parents")
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .map(|p| hex(Some(p)).unwrap_or([0xff; 32]))
                    .collect()
            })
            .unwrap_or_default(),
        accepts_break: vendor.get("accepted_break").is_some(),
    }
}

/// SHA-256 of one line: what the next line's `prev` names.
pub fn link_hash(line: &[u8]) -> [u8; 32] {
    Sha256::digest(line).into()
}

/// Splits the ledger into lines (without their `\n`); a final line without one is kept.
pub fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines = Vec::with_capacity(bytes.len() / 512 + 1);
    lines.extend(each_line(bytes));
    lines
}

/// The lines of `bytes` without their `\n`, a last line without one included, as
/// [`split_lines`] cuts them; lazily, so that each line can be worked on while it is in cache.
pub fn each_line(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut newlines = memchr::memchr_iter(b'\n', bytes);
    std::iter::from_fn(move || match newlines.next() {
        Some(nl) => {
            let line = &bytes[start..nl];
            start = nl + 1;
            Some(line)
        }
        None if start < bytes.len() => {
            let line = &bytes[start..];
            start = bytes.len();
            Some(line)
        }
        None => None,
    })
}

/// Line hashes are SHA-256 already: their first eight bytes are as good as any hash of them.
#[derive(Default, Clone, Copy)]
pub struct ByPrefix;

impl std::hash::BuildHasher for ByPrefix {
    type Hasher = PrefixHasher;
    fn build_hasher(&self) -> PrefixHasher {
        PrefixHasher(0)
    }
}

pub struct PrefixHasher(u64);

impl std::hash::Hasher for PrefixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // `[u8; 32]` hashes as its length then its bytes; keep the first eight of the bytes.
        for &b in bytes.iter().take(8) {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_usize(&mut self, _: usize) {}
}

pub fn genesis() -> [u8; 32] {
    unhex32(GENESIS.as_bytes()).unwrap_or_default()
}

impl Chain {
    /// Checks the chain of `links` (one per line, in order).
    pub fn check(links: &[Link]) -> Chain {
        let mut linear = true;
        let mut before = genesis();
        for l in links {
            if l.prev.is_some_and(|p| p != before) || !l.merge_parents.is_empty() {
                linear = false;
                break;
            }
            before = l.hash;
        }
        if linear {
            return Chain::default();
        }
        Self::check_graph(links)
    }

    fn check_graph(links: &[Link]) -> Chain {
        let mut first_at: HashMap<[u8; 32], u32, ByPrefix> =
            HashMap::with_capacity_and_hasher(links.len(), ByPrefix);
        let mut parents: Vec<Vec<u32>> = Vec::with_capacity(links.len());
        let mut continued = vec![false; links.len()];
        let mut breaks = Vec::new();
        let genesis = genesis();
        for (i, l) in links.iter().enumerate() {
            let mut mine = Vec::new();
            let mut broken = None;
            match l.prev {
                // Not a record: it follows the line before (verify reports it as malformed).
                None if i > 0 => mine.push(i as u32 - 1),
                None => {}
                // A root: the first record, or the first of a merged side that began empty.
                Some(p) if p == genesis => {}
                Some(p) if i > 0 && links[i - 1].hash == p => mine.push(i as u32 - 1),
                Some(p) => match first_at.get(&p) {
                    Some(&j) => mine.push(j),
                    None => broken = Some(Break::UnknownParent),
                },
            }
            for mp in &l.merge_parents {
                match first_at.get(mp) {
                    Some(&j) => mine.push(j),
                    None => broken = broken.or(Some(Break::UnknownMergeParent)),
                }
            }
            for &j in &mine {
                continued[j as usize] = true;
            }
            if let Some(b) = broken {
                breaks.push((i, b));
            }
            first_at.entry(l.hash).or_insert(i as u32);
            parents.push(mine);
        }
        // A line nothing continues from: reported at the line after it, once per line.
        let mut unmerged: Vec<(usize, Break)> = continued
            .iter()
            .enumerate()
            .take(links.len().saturating_sub(1))
            .filter(|(_, c)| !**c)
            .map(|(k, _)| (k + 1, Break::Unmerged))
            .collect();
        unmerged.retain(|(line, _)| breaks.binary_search_by_key(line, |(l, _)| *l).is_err());
        breaks.extend(unmerged);
        breaks.sort_by_key(|(l, _)| *l);
        Chain {
            breaks,
            parents: Some(parents),
        }
    }

    pub fn is_linear(&self) -> bool {
        self.parents.is_none()
    }

    /// Marks `tips` (0-based lines) and every line they descend from.
    pub fn ancestors(&self, len: usize, tips: &[usize]) -> Vec<bool> {
        let mut seen = vec![false; len];
        match &self.parents {
            None => {
                if let Some(&max) = tips.iter().max() {
                    for s in seen.iter_mut().take(max + 1) {
                        *s = true;
                    }
                }
            }
            Some(parents) => {
                let mut stack: Vec<usize> = tips.to_vec();
                while let Some(i) = stack.pop() {
                    if i >= len || seen[i] {
                        continue;
                    }
                    seen[i] = true;
                    stack.extend(parents[i].iter().map(|&p| p as usize));
                }
            }
        }
        seen
    }
}

pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
}

/// Below this many lines, hashing them on one core costs less than starting threads.
const PARALLEL_LINES: usize = 64;

/// How many jobs [`par_map`] should split `n` lines into.
pub fn line_jobs(n: usize) -> usize {
    if n < PARALLEL_LINES {
        1
    } else {
        threads()
    }
}

/// Runs `f` over `items`, split into at most `jobs` runs each on a scoped thread (one job:
/// on this thread), keeping the order. A worker that panicked panics here too: a check that
/// did not run must not read as one that passed.
pub fn par_map<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if jobs <= 1 || items.len() <= 1 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(jobs);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|c| scope.spawn(move || c.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// `bytes` cut into at most `n` runs of whole lines (each but the last ends with `\n`), in
/// order, so that each core can take one.
pub fn line_runs(bytes: &[u8], n: usize) -> Vec<&[u8]> {
    let mut runs = Vec::with_capacity(n);
    let mut from = 0;
    for k in 1..n.max(1) {
        let at = (bytes.len() * k / n).max(from);
        let Some(nl) = memchr::memchr(b'\n', &bytes[at..]) else {
            break;
        };
        runs.push(&bytes[from..at + nl + 1]);
        from = at + nl + 1;
    }
    if from < bytes.len() || runs.is_empty() {
        runs.push(&bytes[from..]);
    }
    runs
}

/// The links of every line of `bytes`, hashed on every core.
pub fn links_of(lines: &[&[u8]]) -> Vec<Link> {
    par_map(lines, line_jobs(lines.len()), |l| link(l))
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;

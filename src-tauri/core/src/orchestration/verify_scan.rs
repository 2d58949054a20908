//! Reading the ledger for `trace verify`: each line's link (`chain::link`) and the ranges it
//! records, flat and already sorted by the core that will check their files.
//!
//! A canonical record's leading `files` array is read in place: its ranges go straight into
//! the flat list through a reused scratch list, with no list built per record, file or
//! conversation (those allocations were a tenth of verify's time at 1M records). Anything
//! that does not read that way — another layout, a missing field — is read again by a full
//! parse, which is lenient, so a valid record in another layout is still judged on its content.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::orchestration::chain::{self, Link};
use crate::orchestration::ledger::content_hash_bytes;

/// One recorded range, flat: the line it is recorded on (0-based within its run of lines).
pub(crate) struct Recorded<'a> {
    pub line: u32,
    pub start: u32,
    pub end: u32,
    /// Read while the line is at hand: reading it from the ledger when its file is checked
    /// was a cache miss per range (a third of the file checks' time at 1M records).
    pub hash: Option<[u8; 32]>,
    pub path: Cow<'a, str>,
    /// A hash of the path: which core checks the file, and the key its ranges are grouped by.
    pub path_hash: u64,
    /// A hash of the path's directory: files of one directory are checked one after another.
    pub dir_hash: u64,
}

/// One run of whole lines of the ledger, as read by one core.
#[derive(Default)]
pub(crate) struct Run<'a> {
    pub lines: Vec<&'a [u8]>,
    pub links: Vec<Link>,
    /// The recorded ranges, already sorted by the core that will check their files.
    pub ranges: Vec<Vec<Recorded<'a>>>,
}

#[path = "verify_compact.rs"]
mod compact;

/// A range before its file's path is known (`conversations` comes before `path`).
type Pending = (u32, u32, Option<[u8; 32]>);

/// Where one line's ranges go.
struct Sink<'s, 'a> {
    line: u32,
    out: &'s mut [Vec<Recorded<'a>>],
    scratch: &'s mut Vec<Pending>,
    /// How long each list of `out` was before this line (reused from line to line).
    before: &'s mut Vec<usize>,
}

impl<'a> Sink<'_, 'a> {
    fn push_file(&mut self, path: Cow<'a, str>) {
        let path_hash = path_share(&path);
        let dir_hash = path_share(path.rsplit_once('/').map_or("", |(dir, _)| dir));
        let shares = self.out.len() as u64;
        let share = &mut self.out[(path_hash % shares) as usize];
        for &(start, end, hash) in self.scratch.iter() {
            share.push(Recorded {
                line: self.line,
                start,
                end,
                hash,
                path: path.clone(),
                path_hash,
                dir_hash,
            });
        }
        self.scratch.clear();
    }

    /// Takes back what this line pushed (a reading that failed half-way).
    fn undo(&mut self) {
        for (share, len) in self.out.iter_mut().zip(self.before.iter()) {
            share.truncate(*len);
        }
        self.scratch.clear();
    }
}

pub(crate) fn scan_run(bytes: &[u8], shares: usize) -> Run<'_> {
    populate(bytes);
    // Each line is cut, hashed and read while it is in cache: cutting the whole run first
    // read the ledger from memory twice.
    let guess = bytes.len() / 512 + 1;
    let mut lines = Vec::with_capacity(guess);
    let mut links = Vec::with_capacity(guess);
    let mut ranges: Vec<Vec<Recorded>> = (0..shares.max(1))
        .map(|_| Vec::with_capacity(guess / shares.max(1) + 1))
        .collect();
    let (mut scratch, mut before) = (Vec::new(), Vec::new());
    // Canonical records are hashed a batch at a time, many side by side (`sha_lanes`).
    let mut batch = Batch::default();
    for (n, line) in chain::each_line(bytes).enumerate() {
        lines.push(line);
        let link = match chain::canonical(line) {
            Some(c) => {
                batch.cuts.push(c.cut(line));
                batch.records.push((n, c));
                Link::default()
            }
            None => chain::link(line),
        };
        if link.prev.is_some() || batch.records.last().is_some_and(|(m, _)| *m == n) {
            let mut sink = Sink {
                line: n as u32,
                out: &mut ranges,
                scratch: &mut scratch,
                before: &mut before,
            };
            read_ranges(line, &mut sink);
        }
        links.push(link);
        if batch.cuts.len() == BATCH {
            batch.hash_into(&mut links);
        }
    }
    batch.hash_into(&mut links);
    Run {
        lines,
        links,
        ranges,
    }
}

/// Lines hashed together: enough to fill the lanes many times over, few enough to still be
/// in cache when hashed.
const BATCH: usize = 128;

/// Canonical records waiting to be hashed: their lines' cuts, and their line numbers and links.
#[derive(Default)]
struct Batch<'a> {
    cuts: Vec<crate::orchestration::sha_lanes::LineCut<'a>>,
    records: Vec<(usize, chain::Canonical)>,
}

impl Batch<'_> {
    fn hash_into(&mut self, links: &mut [Link]) {
        let hashes = crate::orchestration::sha_lanes::hash_lines(&self.cuts);
        for ((n, c), (hash, digest)) in self.records.drain(..).zip(hashes) {
            links[n] = c.link(hash, digest);
        }
        self.cuts.clear();
    }
}

/// Maps a big run's pages of the ledger in one call, rather than one page fault per 64 KiB as
/// the run is read (the faults were a few percent of verify at 1M records).
fn populate(bytes: &[u8]) {
    const PAGE: usize = 4096;
    if bytes.len() < 1 << 20 {
        return;
    }
    let start = bytes.as_ptr() as usize & !(PAGE - 1);
    let len = bytes.as_ptr() as usize + bytes.len() - start;
    // SAFETY: advice only; the range is inside the ledger's map (its first page may begin
    // before the run, never before the map, which is page-aligned). An old kernel refuses
    // the advice and the pages fault in as they are read.
    unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_POPULATE_READ) };
}

/// The ranges of one record into `sink`: in place for a canonical record, else by a full parse.
fn read_ranges<'a>(line: &'a [u8], sink: &mut Sink<'_, 'a>) {
    sink.before.clear();
    sink.before.extend(sink.out.iter().map(Vec::len));
    if let Some(rest) = line.strip_prefix(b"{\"files\":".as_slice()) {
        if compact::read_files(rest, sink).is_some() {
            return;
        }
        sink.undo();
        if in_place(rest, sink) {
            return;
        }
        sink.undo();
    }
    let files = serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|r| r.get("files").and_then(Value::as_array).cloned())
        .unwrap_or_default();
    for file in &files {
        if let Some(path) = owned_ranges(file, sink.scratch) {
            sink.push_file(Cow::Owned(path));
        }
        sink.scratch.clear();
    }
}

/// The `files` array at the start of `rest` read by serde in place. The deserializer stops at
/// the end of the array; what follows is not read.
fn in_place<'a>(rest: &'a [u8], sink: &mut Sink<'_, 'a>) -> bool {
    let mut de = serde_json::Deserializer::from_slice(rest);
    de.deserialize_seq(FilesVisitor(sink)).is_ok()
}

/// A file of a fully parsed record, leniently: its path, its ranges into `scratch`.
fn owned_ranges(file: &Value, scratch: &mut Vec<Pending>) -> Option<String> {
    let path = file.get("path")?.as_str()?.to_string();
    for c in file.get("conversations")?.as_array()? {
        let Some(ranges) = c.get("ranges").and_then(Value::as_array) else {
            continue;
        };
        // A line number past `u32` is skipped like any other that is not a line number, not
        // wrapped round to a small one that would then be checked.
        let line = |r: &Value, key: &str| u32::try_from(r.get(key)?.as_u64()?).ok();
        scratch.extend(ranges.iter().filter_map(|r| {
            Some((
                line(r, "start_line")?,
                line(r, "end_line")?,
                r.get("content_hash")
                    .and_then(Value::as_str)
                    .and_then(content_hash_bytes),
            ))
        }));
    }
    Some(path)
}

/// FNV-1a of the path: paths are short, and SipHash showed up in the profile.
pub(crate) fn path_share(path: &str) -> u64 {
    path.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

// ---- the `files` array read in place ----------------------------------------------------
// The same fields as the Agent Trace schema's, read as strictly as serde's derive would: a
// missing `path`, a duplicate field or a wrong type is an error, and the line is read again
// by the lenient full parse.

#[derive(Deserialize)]
struct RangeEntry<'a> {
    start_line: u32,
    end_line: u32,
    #[serde(default, borrow)]
    content_hash: Cow<'a, str>,
}

struct FilesVisitor<'s, 't, 'a>(&'s mut Sink<'t, 'a>);

impl<'de, 'a> Visitor<'de> for FilesVisitor<'_, '_, 'a>
where
    'de: 'a,
{
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the files of a record")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(File(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

struct File<'s, 't, 'a>(&'s mut Sink<'t, 'a>);

impl<'de, 'a> DeserializeSeed<'de> for File<'_, '_, 'a>
where
    'de: 'a,
{
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de, 'a> Visitor<'de> for File<'_, '_, 'a>
where
    'de: 'a,
{
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a file of a record")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error;
        self.0.scratch.clear();
        let (mut path, mut conversations) = (None::<Cow<'de, str>>, false);
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Path if path.is_some() => return Err(A::Error::duplicate_field("path")),
                Key::Path => path = Some(map.next_value_seed(Text)?),
                Key::Conversations if conversations => {
                    return Err(A::Error::duplicate_field("conversations"))
                }
                Key::Conversations => {
                    conversations = true;
                    map.next_value_seed(Conversations(&mut *self.0.scratch))?;
                }
                Key::Ranges | Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let path = path.ok_or_else(|| A::Error::missing_field("path"))?;
        self.0.push_file(path);
        Ok(())
    }
}

/// A file's `conversations`: each one's `ranges` into the scratch list.
struct Conversations<'s>(&'s mut Vec<Pending>);

impl<'de> DeserializeSeed<'de> for Conversations<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Conversations<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Conversation(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// A conversation: its `ranges` into the scratch list, the rest skipped.
struct Conversation<'s>(&'s mut Vec<Pending>);

impl<'de> DeserializeSeed<'de> for Conversation<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Conversation<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a conversation")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let mut ranges = false;
        while let Some(key) = map.next_key::<Key>()? {
            if key != Key::Ranges {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if ranges {
                return Err(A::Error::duplicate_field("ranges"));
            }
            ranges = true;
            map.next_value_seed(Ranges(&mut *self.0))?;
        }
        Ok(())
    }
}

/// A conversation's `ranges` into the scratch list.
struct Ranges<'s>(&'s mut Vec<Pending>);

impl<'de> DeserializeSeed<'de> for Ranges<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Ranges<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of ranges")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(r) = seq.next_element::<RangeEntry>()? {
            let hash = content_hash_bytes(&r.content_hash);
            self.0.push((r.start_line, r.end_line, hash));
        }
        Ok(())
    }
}

/// The keys that matter, read without making a string of each (serde reads a `Cow<str>` as an
/// owned string: a few allocations per record).
#[derive(PartialEq, Eq)]
enum Key {
    Path,
    Conversations,
    Ranges,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Key, D::Error> {
        de.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "path" => Key::Path,
            "conversations" => Key::Conversations,
            "ranges" => Key::Ranges,
            _ => Key::Other,
        })
    }
}

/// A string, borrowed from the line when it has no escapes.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Cow<'de, str>, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }
}

/// One reading of a record's ranges: start, end, content hash, path.
#[cfg(test)]
pub(crate) type Reading = Vec<(u32, u32, Option<[u8; 32]>, String)>;

/// The ranges of a whole record line as the compact reader and as serde in place read them;
/// None where one of them does not read the line.
#[cfg(test)]
pub(crate) fn both_readings(line: &[u8]) -> [Option<Reading>; 2] {
    let rest = line.strip_prefix(b"{\"files\":".as_slice()).unwrap_or(b"");
    let read = |compact: bool| {
        let (mut out, mut scratch, mut before) = (vec![Vec::new()], Vec::new(), vec![0]);
        let mut sink = Sink {
            line: 0,
            out: &mut out,
            scratch: &mut scratch,
            before: &mut before,
        };
        let ok = if compact {
            compact::read_files(rest, &mut sink).is_some()
        } else {
            in_place(rest, &mut sink)
        };
        ok.then(|| {
            out[0]
                .iter()
                .map(|r| (r.start, r.end, r.hash, r.path.to_string()))
                .collect()
        })
    };
    [read(true), read(false)]
}

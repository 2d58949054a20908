//! The search index on disk, in Mandate's data directory (never in the workspace): a compact
//! binary file read when the workspace opens, so a large repository is not read and parsed
//! again at every start. Each file's stamp is kept, so only what changed meanwhile is indexed
//! again. A file that cannot be read whole and checked is ignored and the index rebuilt.

use std::collections::HashMap;

use super::{Chunk, Index};

const MAGIC: &[u8; 8] = b"MNDIDX01";

struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, n: u32) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(u32::try_from(s.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(s.as_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
}

/// The index's bytes (its live part only; dead chunks are not kept).
pub(super) fn encode(index: &Index) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(1 << 20));
    w.0.extend_from_slice(MAGIC);
    w.len(index.chunks.len());
    for c in &index.chunks {
        w.str(&c.path);
        w.u32(c.start_line);
        w.u32(c.end_line);
        w.u32(c.len);
        w.0.push(u8::from(c.live));
    }
    w.len(index.files.len());
    for (rel, ((size, mtime), ids)) in &index.files {
        w.str(rel);
        w.0.extend_from_slice(&size.to_le_bytes());
        w.0.extend_from_slice(&mtime.to_le_bytes());
        w.len(ids.len());
        for id in ids {
            w.u32(*id);
        }
    }
    w.len(index.postings.len());
    for (term, list) in &index.postings {
        w.str(term);
        w.len(list.len());
        for (id, tf) in list {
            w.u32(*id);
            w.u32(*tf);
        }
    }
    w.0
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn count(&mut self) -> Option<usize> {
        let n = self.u32()? as usize;
        // A count can never exceed what is left to read: a damaged file cannot make us
        // reserve gigabytes.
        (n <= self.0.len()).then_some(n)
    }
    fn str(&mut self) -> Option<String> {
        let n = self.count()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

/// The index these bytes hold, or None when they are not a whole, consistent index.
pub(super) fn decode(bytes: &[u8]) -> Option<Index> {
    let mut r = Reader(bytes.strip_prefix(MAGIC.as_slice())?);
    let mut index = Index::default();
    for _ in 0..r.count()? {
        let chunk = Chunk {
            path: r.str()?,
            start_line: r.u32()?,
            end_line: r.u32()?,
            len: r.u32()?,
            live: r.take(1)?[0] == 1,
        };
        if chunk.live {
            index.live_chunks += 1;
            index.total_len += u64::from(chunk.len);
        }
        index.chunks.push(chunk);
    }
    let n = u32::try_from(index.chunks.len()).ok()?;
    let valid = |id: u32| (id < n).then_some(id);
    let mut files = HashMap::new();
    for _ in 0..r.count()? {
        let rel = r.str()?;
        let size = u64::from_le_bytes(r.take(8)?.try_into().ok()?);
        let mtime = i128::from_le_bytes(r.take(16)?.try_into().ok()?);
        let ids = (0..r.count()?)
            .map(|_| valid(r.u32()?))
            .collect::<Option<Vec<u32>>>()?;
        files.insert(rel, ((size, mtime), ids));
    }
    index.files = files;
    for _ in 0..r.count()? {
        let term = r.str()?;
        let list = (0..r.count()?)
            .map(|_| Some((valid(r.u32()?)?, r.u32()?)))
            .collect::<Option<Vec<(u32, u32)>>>()?;
        index.postings.insert(term, list);
    }
    r.0.is_empty().then_some(index)
}

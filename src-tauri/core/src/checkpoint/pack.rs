//! Packs: the store's objects appended one after the other to a few large files instead of one
//! file each. Making a file costs the file system an inode (and on some, a search through the
//! recently freed ones): two per governed write, one per file kept before a command. Appending
//! to a file already open costs a copy into the page cache.
//!
//! Each process appends only to a pack it made and holds an exclusive `flock` on for as long as
//! it writes there; the pack is named (renamed from a hidden name) only once locked, so a prune
//! in another process never rewrites a pack someone still writes to. A record is
//! `MCP1 | SHA-256 (32 bytes) | length (u64 LE) | written at (u64 LE, seconds) | bytes`. A
//! process killed in the middle of one leaves a record cut short at its pack's end; readers stop
//! there, and no one appends after it. What a record holds is checked against its hash on read,
//! as a loose object's is.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MAGIC: &[u8; 4] = b"MCP1";
const HEADER: u64 = 4 + 32 + 8 + 8;
/// A pack this large is closed and the next object goes to a new one.
#[cfg(not(test))]
const ROTATE: u64 = 64 << 20;
#[cfg(test)]
const ROTATE: u64 = 1 << 20;

pub(super) type Hash = [u8; 32];

pub(super) fn parse_hash(text: &str) -> Option<Hash> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// Where one object's bytes are.
#[derive(Debug, Clone)]
struct Loc {
    pack: Arc<str>,
    offset: u64,
    len: u64,
}

/// One record as read from a pack.
pub(super) struct Record {
    pub hash: Hash,
    pub len: u64,
    pub at: SystemTime,
    offset: u64,
}

/// The pack this process appends to.
struct Own {
    file: File,
    name: Arc<str>,
    len: u64,
}

#[derive(Default)]
struct State {
    loaded: bool,
    index: HashMap<Hash, Loc>,
    /// How far each pack has been read.
    scanned: HashMap<Arc<str>, u64>,
    own: Option<Own>,
    /// Packs this process filled, still locked: what it stored there may not be in the ledger
    /// yet (a file kept before a command is recorded after it). Released by its own prune.
    full: Vec<File>,
}

pub(super) struct Packs {
    dir: PathBuf,
    state: Mutex<State>,
}

impl Packs {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.loaded {
            self.refresh(&mut state);
            state.loaded = true;
        }
        state
    }

    pub fn contains(&self, hash: &Hash) -> bool {
        let mut state = self.state();
        self.present(&mut state, hash)
    }

    /// Whether the index holds `hash` in a pack that still exists (a prune elsewhere removes
    /// packs; names are never reused, so a pack that exists still holds what was indexed).
    fn present(&self, state: &mut State, hash: &Hash) -> bool {
        let Some(loc) = state.index.get(hash) else {
            return false;
        };
        let own = state.own.as_ref().is_some_and(|o| o.name == loc.pack);
        if own || self.dir.join(&*loc.pack).exists() {
            return true;
        }
        self.refresh(state);
        state.index.contains_key(hash)
    }

    /// Appends the object unless a pack already holds it.
    pub fn put(&self, hash: &Hash, bytes: &[u8]) -> io::Result<()> {
        self.put_at(hash, bytes, SystemTime::now())
    }

    pub(super) fn put_at(&self, hash: &Hash, bytes: &[u8], at: SystemTime) -> io::Result<()> {
        let mut state = self.state();
        if self.present(&mut state, hash) {
            return Ok(());
        }
        if state.own.as_ref().is_none_or(|own| own.len >= ROTATE) {
            let new = self.create()?;
            if let Some(full) = state.own.replace(new) {
                state.full.push(full.file);
            }
        }
        let own = state.own.as_mut().expect("made above");
        let record = encode(hash, at, bytes);
        if let Err(e) = own.file.write_all(&record) {
            // What was written of it stays cut short at the end; nothing goes after it.
            state.own = None;
            return Err(e);
        }
        let loc = Loc {
            pack: own.name.clone(),
            offset: own.len + HEADER,
            len: bytes.len() as u64,
        };
        own.len += record.len() as u64;
        let (name, end) = (own.name.clone(), own.len);
        state.scanned.insert(name, end);
        state.index.insert(*hash, loc);
        Ok(())
    }

    /// A new pack, locked before it is named.
    fn create(&self) -> io::Result<Own> {
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_millis();
        let name = format!("{stamp}-{}.pack", uuid::Uuid::new_v4().simple());
        let hidden = self.dir.join(format!(".{name}.new"));
        let open = || {
            fs::OpenOptions::new()
                .append(true)
                .create_new(true)
                .open(&hidden)
        };
        let file = match open() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(&self.dir)?;
                open()?
            }
            other => other?,
        };
        let named = lock(&file, false).and_then(|()| fs::rename(&hidden, self.dir.join(&name)));
        if let Err(e) = named {
            let _ = fs::remove_file(&hidden);
            return Err(e);
        }
        Ok(Own {
            file,
            name: name.into(),
            len: 0,
        })
    }

    /// The bytes of the object, `None` when no pack holds it. A copy that is not `intact` is
    /// passed over for another one; `InvalidData` when no pack holds an intact one.
    pub fn get(&self, hash: &Hash, intact: impl Fn(&[u8]) -> bool) -> Option<io::Result<Vec<u8>>> {
        for attempt in 0..2 {
            let loc = {
                let mut state = self.state();
                if attempt > 0 || !state.index.contains_key(hash) {
                    // Appended or moved by another process since this one last looked.
                    self.refresh(&mut state);
                }
                state.index.get(hash).cloned()
            }?;
            match self.read(&loc) {
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempt == 0 => continue,
                Ok(bytes) if !intact(&bytes) => {
                    let damaged = || io::Error::from(io::ErrorKind::InvalidData);
                    return Some(self.other_copy(hash, &loc, &intact).ok_or_else(damaged));
                }
                other => return Some(other),
            }
        }
        None
    }

    /// Another intact copy of a damaged object, looked for in every pack (it is then the one
    /// indexed).
    fn other_copy(
        &self,
        hash: &Hash,
        damaged: &Loc,
        intact: impl Fn(&[u8]) -> bool,
    ) -> Option<Vec<u8>> {
        for name in self.names() {
            let Ok(file) = File::open(self.dir.join(&name)) else {
                continue;
            };
            let name: Arc<str> = name.into();
            for record in records(&file, 0).filter(|r| r.hash == *hash) {
                let loc = Loc {
                    pack: name.clone(),
                    offset: record.offset,
                    len: record.len,
                };
                if loc.pack == damaged.pack && loc.offset == damaged.offset {
                    continue;
                }
                if let Some(bytes) = self.read(&loc).ok().filter(|b| intact(b)) {
                    self.state().index.insert(*hash, loc);
                    return Some(bytes);
                }
            }
        }
        None
    }

    fn read(&self, loc: &Loc) -> io::Result<Vec<u8>> {
        let file = File::open(self.dir.join(&*loc.pack))?;
        read_at(&file, loc.offset, loc.len)
    }

    /// Reads what was appended since the last look, and forgets packs that are gone.
    fn refresh(&self, state: &mut State) {
        let names = self.names();
        if state
            .scanned
            .keys()
            .any(|n| !names.iter().any(|m| **n == **m))
        {
            // Another copy of a dropped entry may be in a pack already scanned: read all again.
            state.scanned.clear();
            state.index.clear();
        }
        for name in names {
            let name: Arc<str> = state
                .scanned
                .get_key_value(name.as_str())
                .map_or_else(|| name.into(), |(k, _)| k.clone());
            let from = state.scanned.get(&name).copied().unwrap_or(0);
            let Ok(file) = File::open(self.dir.join(&*name)) else {
                continue;
            };
            let mut end = from;
            for record in records(&file, from) {
                let loc = Loc {
                    pack: name.clone(),
                    offset: record.offset,
                    len: record.len,
                };
                state.index.entry(record.hash).or_insert(loc);
                end = record.offset + record.len;
            }
            state.scanned.insert(name, end);
        }
    }

    /// The packs' file names, oldest first.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".pack") && !n.starts_with('.'))
            .collect();
        names.sort();
        names
    }

    /// Closes this process's pack, so that a prune may rewrite it.
    fn retire(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.own = None;
        state.full.clear();
    }

    /// Every pack no process writes to, locked (and so kept from other prunes) while held.
    pub fn idle(&self) -> Vec<Idle> {
        self.retire();
        let mut out = Vec::new();
        for name in self.names() {
            let path = self.dir.join(&name);
            // Opened for writing too: where `flock` is emulated with byte-range locks (NFS), an
            // exclusive lock needs it.
            let Ok(file) = fs::OpenOptions::new().read(true).write(true).open(&path) else {
                continue;
            };
            if lock(&file, true).is_err() || !same_file(&file, &path) {
                // Written to, or rewritten and removed by another prune since it was listed.
                continue;
            }
            let records = records(&file, 0).collect();
            out.push(Idle {
                path,
                file,
                records,
            });
        }
        out
    }

    /// Bytes held by packs some process still writes to (counted, never pruned).
    pub fn busy_bytes(&self, idle: &[Idle]) -> u64 {
        self.names()
            .iter()
            .map(|n| self.dir.join(n))
            .filter(|p| !idle.iter().any(|i| &i.path == p))
            .filter_map(|p| File::open(p).ok())
            .map(|f| records(&f, 0).map(|r| r.len).sum::<u64>())
            .sum()
    }

    /// Writes `pack` again without the records at `drop` (offsets); removes it when none is
    /// left. The new pack is synced before the old one goes: what is kept is what undo needs.
    pub fn rewrite(&self, pack: &Idle, drop: &HashSet<u64>) -> io::Result<()> {
        let kept: Vec<&Record> = pack
            .records
            .iter()
            .filter(|r| !drop.contains(&r.offset))
            .collect();
        if !kept.is_empty() {
            let new = self.create()?;
            let written = (|| {
                let mut file = &new.file;
                for record in kept {
                    let bytes = read_at(&pack.file, record.offset, record.len)?;
                    file.write_all(&encode(&record.hash, record.at, &bytes))?;
                }
                file.sync_all()?;
                // The new name on disk before the old pack goes.
                crate::fsutil::sync_dir(&self.dir)
            })();
            if let Err(e) = written {
                let _ = fs::remove_file(self.dir.join(&*new.name));
                return Err(e);
            }
        }
        fs::remove_file(&pack.path)?;
        // The index is read again at the next use; the packs this process writes stay its own.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (own, full) = (state.own.take(), std::mem::take(&mut state.full));
        *state = State {
            own,
            full,
            ..State::default()
        };
        Ok(())
    }
}

/// One record: header and bytes.
fn encode(hash: &Hash, at: SystemTime, bytes: &[u8]) -> Vec<u8> {
    let seconds = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut record = Vec::with_capacity(HEADER as usize + bytes.len());
    record.extend_from_slice(MAGIC);
    record.extend_from_slice(hash);
    record.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    record.extend_from_slice(&seconds.to_le_bytes());
    record.extend_from_slice(bytes);
    record
}

/// A pack no process writes to, held locked.
pub(super) struct Idle {
    pub path: PathBuf,
    file: File,
    pub records: Vec<Record>,
}

/// `len` bytes at `offset`, the room asked for first (a length read from a pack can be any).
fn read_at(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(io::Error::other)?;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(io::Error::other)?;
    bytes.resize(len, 0);
    file.read_exact_at(&mut bytes, offset)?;
    Ok(bytes)
}

/// Whether `file` is still the one at `path`.
fn same_file(file: &File, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

fn lock(file: &File, wait_not: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let flags = libc::LOCK_EX | if wait_not { libc::LOCK_NB } else { 0 };
    // SAFETY: an open descriptor; flock touches nothing else.
    if unsafe { libc::flock(file.as_raw_fd(), flags) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The whole records of a pack from `from`, stopping at the first that is cut short or not a
/// record (a length past the end is never allocated).
fn records(file: &File, from: u64) -> impl Iterator<Item = Record> + '_ {
    let size = file.metadata().map_or(0, |m| m.len());
    let mut at = from;
    std::iter::from_fn(move || {
        let mut header = [0u8; HEADER as usize];
        if at.checked_add(HEADER)? > size || file.read_exact_at(&mut header, at).is_err() {
            return None;
        }
        if &header[..4] != MAGIC {
            return None;
        }
        let hash: Hash = header[4..36].try_into().ok()?;
        let len = u64::from_le_bytes(header[36..44].try_into().ok()?);
        let seconds = u64::from_le_bytes(header[44..52].try_into().ok()?);
        let offset = at + HEADER;
        let end = offset.checked_add(len)?;
        if end > size {
            return None;
        }
        at = end;
        Some(Record {
            hash,
            len,
            at: UNIX_EPOCH
                .checked_add(Duration::from_secs(seconds))
                .unwrap_or(UNIX_EPOCH),
            offset,
        })
    })
}

impl Record {
    pub fn hex(&self) -> String {
        hex::encode(self.hash)
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }
}

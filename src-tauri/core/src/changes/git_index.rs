//! Whether a tracked file was clean before a command, decided after the command from git's
//! index, which commands cannot write (`.git/` is not writable unless granted): the index
//! keeps each file's stat data as of when git last saw it unchanged; if the snapshot taken
//! before the command has the same data, the file then had the index's content, and that blob
//! can bring it back. Asked only for the paths that need restoring, so a command that stays in
//! scope costs nothing here.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use super::Stamp;

/// One index entry's blob and the stat data git recorded with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct IndexEntry {
    pub blob: String,
    mtime: (u32, u32),
    ctime: (u32, u32),
    inode: u32,
    size: u32,
}

impl IndexEntry {
    /// Whether `before` (the file's stamp before the command) is the state git recorded,
    /// and not racily so: a file changed in the same instant the index was written may
    /// carry the same stat data with other content.
    pub(super) fn matches(&self, before: &Stamp, index_mtime_ns: i128) -> bool {
        let split = |ns: i128| {
            (
                (ns.div_euclid(1_000_000_000) as u64 & 0xffff_ffff) as u32,
                ns.rem_euclid(1_000_000_000) as u32,
            )
        };
        split(before.mtime_ns) == self.mtime
            && split(before.ctime_ns) == self.ctime
            && (before.inode & 0xffff_ffff) as u32 == self.inode
            && (before.size & 0xffff_ffff) as u32 == self.size
            && before.mtime_ns < index_mtime_ns
    }
}

/// The index entries (stage 0) of `paths` (keys: see [`super::key_of`]), keyed the same way,
/// with the index file's own modification time.
pub(super) fn entries(root: &Path, paths: &[&str]) -> (HashMap<String, IndexEntry>, i128) {
    let index_mtime = std::fs::metadata(root.join(".git/index"))
        .map(|m| Stamp::of(&m).mtime_ns)
        .unwrap_or(i128::MIN);
    if paths.is_empty() {
        return (HashMap::new(), index_mtime);
    }
    let out = Command::new("git")
        .args([
            "-c",
            "core.fsmonitor=false",
            "ls-files",
            "-s",
            "--debug",
            "-z",
            "--",
        ])
        .args(paths.iter().map(|p| {
            let mut spec = OsString::from(":(literal)");
            spec.push(super::real_path(p).as_os_str());
            spec
        }))
        .current_dir(root)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        return (HashMap::new(), index_mtime);
    };
    (parse(&out.stdout), index_mtime)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `<mode> <blob> <stage>\t<path>\0` followed by indented `ctime: s:ns`, `mtime: s:ns`,
/// `dev: d\tino: i`, `uid: u\tgid: g`, `size: s\tflags: f` lines, for each entry. Paths are
/// bytes as git keeps them (`-z`: never quoted).
fn parse(out: &[u8]) -> HashMap<String, IndexEntry> {
    let mut entries = HashMap::new();
    let mut rest = out;
    while let Some(nul) = rest.iter().position(|b| *b == 0) {
        let (header, after) = (&rest[..nul], &rest[nul + 1..]);
        let Some(tab) = header.iter().position(|b| *b == b'\t') else {
            break;
        };
        let info = String::from_utf8_lossy(&header[..tab]);
        let path = super::key_of(OsStr::from_bytes(&header[tab + 1..]));
        let mut fields = info.split(' ');
        let (_mode, blob, stage) = (fields.next(), fields.next(), fields.next());
        let end = find(after, b"flags:").and_then(|f| {
            after[f..]
                .iter()
                .position(|b| *b == b'\n')
                .map(|n| f + n + 1)
        });
        let Some(end) = end else { break };
        let debug = String::from_utf8_lossy(&after[..end]);
        rest = &after[end..];
        let value = |key: &str| {
            debug
                .split(['\n', '\t'])
                .map(str::trim)
                .find_map(|field| field.strip_prefix(key))
                .map(str::trim)
        };
        let pair = |key: &str| -> Option<(u32, u32)> {
            let (s, ns) = value(key)?.split_once(':')?;
            Some((s.parse().ok()?, ns.parse().ok()?))
        };
        let number = |key: &str| value(key).and_then(|v| v.parse::<u32>().ok());
        if let (Some(blob), Some("0"), Some(mtime), Some(ctime), Some(inode), Some(size)) = (
            blob,
            stage,
            pair("mtime:"),
            pair("ctime:"),
            number("ino:"),
            number("size:"),
        ) {
            entries.insert(
                path.to_string(),
                IndexEntry {
                    blob: blob.to_string(),
                    mtime,
                    ctime,
                    inode,
                    size,
                },
            );
        }
    }
    entries
}

/// The content of a blob.
pub(super) fn blob(root: &Path, id: &str) -> Result<Vec<u8>, String> {
    let out = Command::new("git")
        .args(["cat-file", "blob", id])
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!("git could not give back blob {id}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_debug_listing() {
        let text = "100644 45b983be36b73c0788dc9cbcb76cbb80fc7bb057 0\ta\0  ctime: 1795364005:587173417\n  mtime: 1795364005:587173418\n  dev: 65024\tino: 10265201\n  uid: 0\tgid: 0\n  size: 3\tflags: 0\n100644 587be6b4c3f93f93c489c0111bba5596147a26cb 0\td/b c\0  ctime: 1:2\n  mtime: 3:4\n  dev: 1\tino: 5\n  uid: 0\tgid: 0\n  size: 2\tflags: 0\n";
        let entries = parse(text.as_bytes());
        assert_eq!(entries.len(), 2);
        let a = &entries["a"];
        assert_eq!(a.blob, "45b983be36b73c0788dc9cbcb76cbb80fc7bb057");
        assert_eq!(
            (a.mtime, a.ctime, a.inode, a.size),
            (
                (1795364005, 587173418),
                (1795364005, 587173417),
                10265201,
                3
            )
        );
        assert_eq!(entries["d/b c"].inode, 5);
    }
}

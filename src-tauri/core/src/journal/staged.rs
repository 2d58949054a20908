//! The new bytes of a governed write, beside the target: written unnamed (`O_TMPFILE`) and
//! synced on another thread while the write prepares its record and journal entry, then named
//! so the rename can put them in place.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::FileWrite;
use crate::fsutil::Background;

/// The new bytes of a write, written beside the target and not yet known to be on disk.
pub(super) struct Staged {
    file: fs::File,
    /// Written unnamed (`O_TMPFILE`): named `temp` once synced.
    unnamed: bool,
}

impl Staged {
    /// Writes the new bytes and syncs them on another thread, started at once, so that the
    /// write goes on with its record and journal entry meanwhile; None for a removal.
    /// [`Syncing::finish`] waits for them and names them `temp_name` beside the target.
    pub(super) fn start(
        w: &FileWrite,
        temp_name: &str,
        current_mode: Option<u32>,
    ) -> Option<Syncing> {
        let new = w.new.clone()?;
        let dir = w.path.abs.parent().unwrap_or(Path::new(".")).to_path_buf();
        let temp = dir.join(temp_name);
        let mode = current_mode.or(w.mode);
        let (at, creates) = (temp.clone(), current_mode.is_none());
        let synced = Background::start(move || {
            let staged = Staged::write(&dir, &at, &new, mode, creates)?;
            match staged.file.sync_all() {
                Ok(()) => Ok((staged.file, staged.unnamed)),
                Err(e) => {
                    discard(staged.unnamed, &at);
                    Err(e)
                }
            }
        });
        Some(Syncing {
            synced: Some(synced),
            temp,
        })
    }

    /// Writes `new` to a file in `dir` (named `temp` when it cannot be unnamed), with `mode`.
    fn write(
        dir: &Path,
        temp: &Path,
        new: &[u8],
        mode: Option<u32>,
        creates: bool,
    ) -> io::Result<Self> {
        if creates {
            // A new file, maybe in a new directory (a replaced file's directory exists).
            fs::create_dir_all(dir)?;
        }
        // Written and synced unnamed, then named: a new name synced with its file costs a
        // synchronous write of the directory on some filesystems.
        // (An unnamed file is named through /proc; without it, a named temporary file.)
        static PROC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let unnamed = if *PROC.get_or_init(|| Path::new("/proc/self/fd").is_dir()) {
            use std::os::unix::fs::OpenOptionsExt as _;
            // The mode a new file gets (0o666 less the umask), as `create_new` gives.
            fs::OpenOptions::new()
                .write(true)
                .mode(0o666)
                .custom_flags(libc::O_TMPFILE)
                .open(dir)
        } else {
            Err(io::ErrorKind::Unsupported.into())
        };
        let staged = match unnamed {
            Ok(file) => Staged {
                file,
                unnamed: true,
            },
            Err(_) => Staged {
                file: fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(temp)?,
                unnamed: false,
            },
        };
        let written = (|| {
            if let Some(mode) = mode {
                staged
                    .file
                    .set_permissions(fs::Permissions::from_mode(mode))?;
            }
            (&staged.file).write_all(new)
        })();
        match written {
            Ok(()) => Ok(staged),
            Err(e) => {
                discard(staged.unnamed, temp);
                Err(e)
            }
        }
    }
}

/// Staged bytes on their way to the disk: the file and whether it is unnamed, once synced
/// (a failure has removed what it wrote). Dropped unfinished (the write stopped), what was
/// written is removed.
pub(super) struct Syncing {
    synced: Option<Background<io::Result<(fs::File, bool)>>>,
    temp: PathBuf,
}

impl Syncing {
    /// Waits until the bytes are on disk and names them; returns the temporary file's path.
    pub(super) fn finish(mut self) -> io::Result<PathBuf> {
        let synced = self.synced.take().map(Background::wait);
        let (file, unnamed) = synced
            .unwrap_or_else(|| Err(io::Error::other("the staged bytes were waited for twice")))
            .and_then(|synced| synced)?;
        if unnamed {
            crate::fsutil::link_unnamed(&file, &self.temp)?;
        }
        Ok(std::mem::take(&mut self.temp))
    }
}

impl Drop for Syncing {
    fn drop(&mut self) {
        if let Some(Ok(Ok((_, unnamed)))) = self.synced.take().map(Background::wait) {
            discard(unnamed, &self.temp);
        }
    }
}

/// Removes a named temporary file (an unnamed one goes with its last descriptor).
fn discard(unnamed: bool, temp: &Path) {
    if !unnamed {
        let _ = fs::remove_file(temp);
    }
}

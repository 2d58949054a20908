//! The new bytes of a governed write, beside the target: written unnamed (`O_TMPFILE`), synced
//! on another thread while the write prepares its record and journal entry, then named so the
//! rename can put them in place.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::FileWrite;
use crate::fsutil::Background;

/// The new bytes of a write, written beside the target and not yet known to be on disk.
pub(super) struct Staged {
    file: fs::File,
    temp: PathBuf,
    /// Written unnamed (`O_TMPFILE`): named `temp` once synced.
    unnamed: bool,
}

impl Staged {
    /// Writes the new bytes to a file beside the target (None for a removal).
    pub(super) fn write(
        w: &FileWrite,
        temp_name: &str,
        current_mode: Option<u32>,
    ) -> io::Result<Option<Self>> {
        let Some(new) = &w.new else {
            return Ok(None);
        };
        let dir = w.path.abs.parent().unwrap_or(Path::new("."));
        if current_mode.is_none() {
            // A new file, maybe in a new directory (a replaced file's directory exists).
            fs::create_dir_all(dir)?;
        }
        let temp = dir.join(temp_name);
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
                temp,
                unnamed: true,
            },
            Err(_) => Staged {
                file: fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&temp)?,
                temp,
                unnamed: false,
            },
        };
        let written = (|| {
            if let Some(mode) = current_mode.or(w.mode) {
                staged
                    .file
                    .set_permissions(fs::Permissions::from_mode(mode))?;
            }
            (&staged.file).write_all(new)
        })();
        match written {
            Ok(()) => Ok(Some(staged)),
            Err(e) => {
                discard(staged.unnamed, &staged.temp);
                Err(e)
            }
        }
    }

    /// Starts syncing the bytes on another thread; [`Syncing::finish`] waits for it.
    pub(super) fn sync(self) -> Syncing {
        let Staged {
            file,
            temp,
            unnamed,
        } = self;
        Syncing {
            synced: Background::start(move || file.sync_all().map(|()| file)),
            temp,
            unnamed,
        }
    }
}

/// Staged bytes on their way to the disk.
pub(super) struct Syncing {
    synced: Background<io::Result<fs::File>>,
    temp: PathBuf,
    unnamed: bool,
}

impl Syncing {
    /// Waits until the bytes are on disk and names them; returns the temporary file's path.
    pub(super) fn finish(self) -> io::Result<PathBuf> {
        let named = self.synced.wait().and_then(|synced| {
            let file = synced?;
            if self.unnamed {
                crate::fsutil::link_unnamed(&file, &self.temp)
            } else {
                Ok(())
            }
        });
        match named {
            Ok(()) => Ok(self.temp),
            Err(e) => {
                discard(self.unnamed, &self.temp);
                Err(e)
            }
        }
    }
}

/// Removes a named temporary file (an unnamed one goes with its last descriptor).
fn discard(unnamed: bool, temp: &Path) {
    if !unnamed {
        let _ = fs::remove_file(temp);
    }
}

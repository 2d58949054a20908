//! Directories made in the workspace only so that a command can be granted them: a build
//! output beside its marker before the first build (`node_modules/` beside `package.json`), a
//! new top-level directory the intent owns. The kernel grants rights on existing paths and
//! bubblewrap binds only what exists, so they are made before the command; afterwards each is
//! removed again if it is still the very directory made and still empty, so that a command that
//! wrote nothing there leaves no trace. Nothing that existed before is ever touched.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// One directory made for a command's sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeDir {
    path: PathBuf,
    /// Which directory it was (device, inode): one replaced since is not this one.
    id: (u64, u64),
}

impl MadeDir {
    /// Makes `path`, which must not exist (its parent must): `None` when it was not made.
    pub(super) fn make(path: &Path) -> Option<MadeDir> {
        std::fs::create_dir(path).ok()?;
        match std::fs::symlink_metadata(path) {
            Ok(meta) => Some(MadeDir {
                path: path.to_path_buf(),
                id: (meta.dev(), meta.ino()),
            }),
            Err(_) => {
                let _ = std::fs::remove_dir(path);
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory if it is still the one made and empty (`rmdir` refuses a
    /// directory with anything in it). Whether it is gone.
    fn remove_if_unused(&self) -> bool {
        let same = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.is_dir() && (m.dev(), m.ino()) == self.id);
        same && std::fs::remove_dir(&self.path).is_ok()
    }
}

/// Removes those of `made` the command left empty, deepest first; returns the paths removed.
pub(super) fn remove_unused(made: &[MadeDir]) -> Vec<PathBuf> {
    let mut order: Vec<&MadeDir> = made.iter().collect();
    order.sort_by(|a, b| b.path.cmp(&a.path));
    order
        .into_iter()
        .filter(|m| m.remove_if_unused())
        .map(|m| m.path.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_directory_made_is_removed_and_only_while_empty() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        let made = |name: &str| MadeDir::make(&root.join(name)).expect("made");
        let (empty, used, replaced) = (made("empty"), made("used"), made("replaced"));
        std::fs::write(root.join("used/file"), "x").expect("write");
        // Replaced by a link to an empty directory: not the directory made.
        std::fs::remove_dir(root.join("replaced")).expect("rmdir");
        std::fs::create_dir(root.join("there")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("there"), root.join("replaced")).expect("link");
        assert!(MadeDir::make(&root.join("there")).is_none());
        let removed = remove_unused(&[empty, used, replaced]);
        assert_eq!(removed, vec![root.join("empty")]);
        for kept in ["used/file", "replaced", "there"] {
            assert!(root.join(kept).exists(), "{kept}");
        }
    }
}

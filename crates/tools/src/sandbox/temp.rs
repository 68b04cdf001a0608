//! The private temp folder each sandbox gives its commands (`TMPDIR`). It
//! lives as long as the sandbox, but a process killed outright cannot
//! remove it. So each folder has a lock file beside it, locked while the
//! folder is in use (the kernel lets go of the lock when its process dies,
//! however it dies), and the first sandbox a process makes removes the
//! folders whose lock nobody holds. The lock file sits outside the folder,
//! where the sandbox's commands cannot write.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::Duration;

use agentloop_core::{Error, Result};

const PREFIX: &str = "agentloop-sandbox-";
const LOCK: &str = ".lock";

/// How old an unheld lock file must be before its folder is removed: its
/// owner creates it a moment before locking it.
const GRACE: Duration = Duration::from_secs(10);

/// A sandbox's temp folder, removed with its lock file when dropped.
pub(super) struct PrivateTemp {
    /// The canonical path commands see.
    pub(super) path: PathBuf,
    lock_path: Option<PathBuf>,
    _lock: Option<File>,
    _dir: tempfile::TempDir,
}

impl PrivateTemp {
    /// A fresh folder in the system's temp folder; the first one a process
    /// makes also removes the folders of processes that are gone.
    pub(super) fn new() -> Result<Self> {
        static SWEPT: Once = Once::new();
        let base = std::env::temp_dir();
        SWEPT.call_once(|| sweep(&base));
        Self::new_in(&base)
    }

    fn new_in(base: &Path) -> Result<Self> {
        let dir =
            tempfile::Builder::new().prefix(PREFIX).tempdir_in(base).map_err(|e| Error::other(format!("cannot create the sandbox's temp folder ({e})")))?;
        let path = dir.path().canonicalize().map_err(|e| Error::other(format!("cannot open the sandbox's temp folder ({e})")))?;
        // Without its lock the folder is only left behind if the process is
        // killed, never removed while in use: a sweep acts on locks alone.
        let lock_path = PathBuf::from(format!("{}{LOCK}", dir.path().display()));
        let lock = File::create(&lock_path).ok().filter(try_lock);
        let lock_path = match lock {
            Some(_) => Some(lock_path),
            None => {
                let _ = std::fs::remove_file(&lock_path);
                None
            }
        };
        Ok(Self { path, lock_path, _lock: lock, _dir: dir })
    }
}

impl Drop for PrivateTemp {
    fn drop(&mut self) {
        // The lock file goes first, so no sweep takes the folder for an orphan.
        if let Some(lock) = &self.lock_path {
            let _ = std::fs::remove_file(lock);
        }
    }
}

/// Removes the sandbox temp folders in `base` whose lock nobody holds.
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(folder) = name.strip_prefix(PREFIX).and_then(|rest| rest.strip_suffix(LOCK)).map(|rest| base.join(format!("{PREFIX}{rest}"))) else {
            continue;
        };
        let Ok(file) = File::open(entry.path()) else { continue };
        let old = file.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age > GRACE);
        if old && try_lock(&file) {
            let _ = std::fs::remove_dir_all(&folder);
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Takes the file's exclusive lock if nobody holds it.
fn try_lock(file: &File) -> bool {
    // SAFETY: flock on a descriptor this function borrows for the call.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn a_folder_whose_process_is_gone_is_removed_and_one_in_use_stays() {
        let base = tempfile::tempdir().unwrap();
        let live = PrivateTemp::new_in(base.path()).unwrap();
        // What a killed process leaves: its folder and an unheld, old lock.
        let orphan = base.path().join(format!("{PREFIX}gone"));
        std::fs::create_dir(&orphan).unwrap();
        std::fs::write(orphan.join("left.txt"), "x").unwrap();
        let orphan_lock = base.path().join(format!("{PREFIX}gone{LOCK}"));
        let lock = File::create(&orphan_lock).unwrap();
        lock.set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();
        drop(lock);
        // An older version's folder has no lock: nothing says it is free.
        let unlocked = base.path().join(format!("{PREFIX}older"));
        std::fs::create_dir(&unlocked).unwrap();
        // The live folder's lock is old too, but held.
        File::options().write(true).open(live.lock_path.as_ref().unwrap()).unwrap().set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();

        sweep(base.path());
        assert!(!orphan.exists() && !orphan_lock.exists(), "the orphan and its lock are removed");
        assert!(live.path.exists() && live.lock_path.as_ref().unwrap().exists(), "the folder in use stays");
        assert!(unlocked.exists());
        let (folder, lock) = (live.path.clone(), live.lock_path.clone().unwrap());
        drop(live);
        assert!(!folder.exists() && !lock.exists(), "dropped: folder and lock gone");
    }
}

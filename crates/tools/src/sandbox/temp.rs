//! The private temp folder each sandbox gives its commands (`TMPDIR`). It
//! lives as long as the sandbox, but a process killed outright cannot
//! remove it. So each folder has a lock file beside it, locked while the
//! folder is in use (the kernel lets go of the lock when its process dies,
//! however it dies), and the first sandbox a process makes removes the
//! folders whose lock nobody holds. The lock file sits outside the folder,
//! where the sandbox's commands cannot write.
//!
//! The process between agentloop and each command keeps the lock's
//! descriptor, so the lock is held while any command of the folder lives.
//! A held lock whose owner (named in the file) is gone means commands
//! outlived their agentloop: the sweep kills them before it goes on, so a
//! resumed session never runs beside what its earlier run left behind.

use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
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
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::other(format!("cannot make the sandbox's temp folder private ({e})")))?;
        // Without its lock the folder is only left behind if the process is
        // killed, never removed while in use: a sweep acts on locks alone.
        let lock_path = PathBuf::from(format!("{}{LOCK}", dir.path().display()));
        let lock = std::fs::OpenOptions::new().create(true).truncate(true).write(true).mode(0o600).open(&lock_path).ok().filter(try_lock);
        // One write, so a sweep never reads half of it.
        if let Some(mut file) = lock.as_ref() {
            let _ = file.write_all(Owner::me().to_string().as_bytes());
        }
        let lock_path = match lock {
            Some(_) => Some(lock_path),
            None => {
                let _ = std::fs::remove_file(&lock_path);
                None
            }
        };
        Ok(Self { path, lock_path, _lock: lock, _dir: dir })
    }

    /// The lock's descriptor, for the processes that must hold it too.
    pub(super) fn lock_fd(&self) -> Option<libc::c_int> {
        self._lock.as_ref().map(File::as_raw_fd)
    }
}

/// The process that made a folder: its id and its start time, so that a
/// new process with a reused id is not taken for it.
#[derive(PartialEq, Eq)]
struct Owner {
    pid: u32,
    started: u64,
}

impl Owner {
    fn me() -> Self {
        let pid = std::process::id();
        Self { pid, started: started(pid).unwrap_or(0) }
    }

    fn parse(text: &str) -> Option<Self> {
        let (pid, started) = text.trim().split_once(' ')?;
        Some(Self { pid: pid.parse().ok()?, started: started.parse().ok()? })
    }

    fn alive(&self) -> bool {
        started(self.pid) == Some(self.started)
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.pid, self.started)
    }
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`).
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; the fields after
    // its closing one are plain. The start time is field 22, the 20th after it.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// Kills every process that has `lock` open: the waiting processes a
/// killed agentloop left behind, whose commands die with them. Those
/// live in user namespaces of their own, so no agentloop (which lives in
/// this one) is ever taken for them.
fn kill_holders(lock: &Path) {
    let Ok(procs) = std::fs::read_dir("/proc") else { return };
    let ours = std::fs::read_link("/proc/self/ns/user").ok();
    for pid in procs.filter_map(|e| e.ok()).filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())) {
        if ours.is_none() || std::fs::read_link(format!("/proc/{pid}/ns/user")).ok() == ours {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        if fds.filter_map(|e| e.ok()).any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == lock)) {
            // SAFETY: kill only sends a signal.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
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
        let owner = std::fs::read_to_string(entry.path()).ok().and_then(|t| Owner::parse(&t));
        if !try_lock(&file) && owner.is_some_and(|o| !o.alive()) {
            // Its agentloop is gone but something holds the lock: commands
            // it left. They are killed, and the folder goes once they are.
            kill_holders(&entry.path());
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while !try_lock(&file) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
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

    /// A killed agentloop's commands still hold its folder's lock: the
    /// sweep of the next process (a resume) kills them first, then removes
    /// the folder. A holder that lives in agentloop's own user namespace
    /// (an agentloop, not a command's waiting process) is never killed.
    #[test]
    fn what_a_dead_agentloop_left_running_is_killed_before_its_folder_goes() {
        use std::os::unix::process::CommandExt;
        let base = tempfile::tempdir().unwrap();
        let folder = base.path().join(format!("{PREFIX}left"));
        std::fs::create_dir(&folder).unwrap();
        let lock_path = base.path().join(format!("{PREFIX}left{LOCK}"));
        // Its owner: a process id with a start time no process has.
        std::fs::write(&lock_path, "1 1").unwrap();
        let hold = |own_namespace: bool| {
            let mut cmd = std::process::Command::new("sh");
            cmd.args(["-c", "exec 3<\"$0\"; flock -n 3 || exit 9; exec sleep 60"]).arg(&lock_path);
            if own_namespace {
                // SAFETY: unshare is a plain system call.
                unsafe {
                    cmd.pre_exec(|| if libc::unshare(libc::CLONE_NEWUSER) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) });
                }
            }
            cmd.spawn().unwrap()
        };
        let mut left = hold(true);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while try_lock(&File::open(&lock_path).unwrap()) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        sweep(base.path());
        let status = left.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL), "the leftover was not killed");

        // Held by a process of this namespace: left alone.
        File::create(&lock_path).unwrap().set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();
        let mut other = hold(false);
        while try_lock(&File::open(&lock_path).unwrap()) && std::time::Instant::now() < deadline + Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::fs::write(&lock_path, "1 1").unwrap();
        sweep(base.path());
        assert!(other.try_wait().unwrap().is_none(), "a process of agentloop's own namespace was killed");
        other.kill().unwrap();
        let _ = other.wait();
    }
}

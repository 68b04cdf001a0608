//! A pids cgroup that bounds how many processes a sandbox's commands may
//! have at once. `RLIMIT_NPROC` does this for an ordinary user, but the
//! kernel exempts root from it, so under root a cgroup of the sandbox's
//! own does it instead, where the system lets root make one (the pids
//! controller of cgroup v1, or of v2 when it is enabled for children).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A cgroup made for one sandbox, removed with it.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    /// Its `cgroup.procs`: a process that writes `0` there joins it.
    pub procs: PathBuf,
}

impl Cgroup {
    /// A fresh pids cgroup bounded to `max` tasks, or `None` where none can be made.
    pub fn new(max: u64) -> Option<Self> {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let parent = pids_hierarchy()?;
        let dir = parent.join(format!("agentloop-{}-{}", std::process::id(), COUNT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir(&dir).ok()?;
        let made = Self { procs: dir.join("cgroup.procs"), dir };
        std::fs::write(made.dir.join("pids.max"), max.to_string()).ok()?;
        Some(made)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Empty once its commands are gone; a cgroup is removed with rmdir.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The folder of this process's own cgroup in a hierarchy with the pids
/// controller.
fn pids_hierarchy() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in mounts.lines() {
        // mountinfo: ID PARENT DEV ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
        let Some((before, after)) = line.split_once(" - ") else { continue };
        let point = before.split(' ').nth(4)?;
        let mut rest = after.split(' ');
        let (kind, _source, options) = (rest.next()?, rest.next()?, rest.next().unwrap_or_default());
        let path = match kind {
            "cgroup" if options.split(',').any(|o| o == "pids") => own_path(&own, |controllers| controllers.split(',').any(|c| c == "pids")),
            "cgroup2" => own_path(&own, str::is_empty).filter(|p| {
                let here = Path::new(point).join(p.trim_start_matches('/'));
                std::fs::read_to_string(here.join("cgroup.subtree_control")).is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"))
            }),
            _ => None,
        };
        if let Some(path) = path {
            return Some(Path::new(point).join(path.trim_start_matches('/')));
        }
    }
    None
}

/// This process's path in the hierarchy whose controllers field matches.
fn own_path(text: &str, matches: impl Fn(&str) -> bool) -> Option<String> {
    text.lines().find_map(|l| {
        let mut fields = l.splitn(3, ':');
        let (_id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        matches(controllers).then(|| path.to_string())
    })
}

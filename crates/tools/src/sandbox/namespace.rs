//! A user, mount and PID namespace of its own for each command. Landlock
//! cannot see three things a confined command could still do, and this
//! closes them:
//!
//! - **metadata outside the workspace** (mode, owner, times, extended
//!   attributes of files the user owns): every mount but the workspace and
//!   the temp folder is read-only in the command's view;
//! - **pathname Unix sockets outside the workspace** (an `ssh-agent`'s):
//!   each one listening when the command starts is covered with
//!   `/dev/null`, unless `[sandbox] unix_sockets` lists it;
//! - **processes that outlive the command** (`setsid` children): the
//!   command is process 1 of its PID namespace, and when it ends the kernel
//!   kills everything else in it. The process between agentloop and the
//!   command watches agentloop through a pipe only agentloop holds open
//!   ([`lifeline`]): when agentloop dies, however it dies, the pipe closes
//!   and the command's whole namespace is killed. (`/proc` stays the
//!   system's: Landlock's grants name its inodes, and a fresh one would
//!   fall outside them; other processes' environments are kept out by the
//!   dropped capabilities.)
//! - **what git and agentloop run from the workspace**: its `.git`,
//!   `agentloop.toml` and `.agentloop` are bound read-only in the
//!   command's view, so no hook, git config or agentloop config can be
//!   planted there for the user's next `git status` or run;
//! - **setuid files**: the writable folders are bound `nosuid,nodev`;
//! - **shared kernel objects**: System V IPC lives in a namespace of the
//!   command's own, and `/dev/shm` is a fresh, empty one.
//!
//! The plan (paths, maps, flags) is made in the parent; between fork and
//! exec only system calls run, as code there must.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

/// What to do in the child, prepared in the parent.
#[derive(Debug)]
pub struct Plan {
    setgroups: CString,
    uid_map: CString,
    gid_map: CString,
    uid_map_text: CString,
    gid_map_text: CString,
    /// Folders bound onto themselves before the rest goes read-only, so they stay writable.
    writable: Vec<CString>,
    /// The flags each writable folder's remount keeps.
    writable_flags: Vec<libc::c_ulong>,
    /// Paths inside the writable folders bound read-only, with their flags.
    protected: Vec<(CString, libc::c_ulong)>,
    /// Every other mount point, with the flags a remount must keep.
    read_only: Vec<(CString, libc::c_ulong)>,
    /// `/dev/shm`, when this system has one, and the folder of the
    /// sandbox's own bound over it in its place.
    shm: Option<(CString, CString)>,
    /// The pids cgroup each command joins before it starts (its `cgroup.procs`).
    cgroup_procs: Option<CString>,
}

impl Plan {
    /// A plan for a command that may write only under `writable`, except
    /// `protected` paths inside them (which exist), and that joins the pids
    /// cgroup whose `cgroup.procs` is given.
    /// `/dev/shm`, when given its own folder `shm`, is that folder.
    pub fn new(writable: &[&Path], protected: &[PathBuf], cgroup_procs: Option<&Path>, shm: Option<&Path>) -> io::Result<Self> {
        // SAFETY: getuid and getgid only read the caller's ids.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mounts = mount_points()?;
        let read_only =
            mounts.into_iter().filter(|m| !writable.iter().any(|w| m.starts_with(w))).filter_map(|m| Some((c_path(&m).ok()?, kept_flags(&m)))).collect();
        Ok(Self {
            setgroups: CString::from(c"/proc/self/setgroups"),
            uid_map: CString::from(c"/proc/self/uid_map"),
            gid_map: CString::from(c"/proc/self/gid_map"),
            uid_map_text: CString::new(format!("{uid} {uid} 1")).map_err(io::Error::other)?,
            gid_map_text: CString::new(format!("{gid} {gid} 1")).map_err(io::Error::other)?,
            writable: writable.iter().map(|w| c_path(w)).collect::<io::Result<_>>()?,
            writable_flags: writable.iter().map(|w| kept_flags(w) | libc::MS_NOSUID | libc::MS_NODEV).collect(),
            protected: protected.iter().map(|p| Ok((c_path(p)?, kept_flags(p) | libc::MS_NOSUID | libc::MS_NODEV))).collect::<io::Result<_>>()?,
            read_only,
            shm: shm.filter(|_| Path::new("/dev/shm").is_dir()).map(|own| Ok::<_, io::Error>((CString::from(c"/dev/shm"), c_path(own)?))).transpose()?,
            cgroup_procs: cgroup_procs.map(c_path).transpose()?,
        })
    }

    /// Enters the namespaces, makes the view, and forks: returns in the
    /// command's process (process 1 of the new PID namespace); the process
    /// that called it waits for the command and exits as it did.
    ///
    /// # Safety
    /// Call only between fork and exec, in a single-threaded child.
    pub unsafe fn enter(&self, sockets: &[CString], keep: &[libc::c_int]) -> io::Result<()> {
        // Joined first, while this process is still agentloop's: the
        // command and all it starts count against the cgroup's bound.
        if let Some(procs) = &self.cgroup_procs {
            write_file(procs, b"0")?;
        }
        check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC))?;
        // Older kernels have no setgroups file; the maps are what matter.
        let _ = write_file(&self.setgroups, b"deny");
        write_file(&self.uid_map, self.uid_map_text.as_bytes())?;
        write_file(&self.gid_map, self.gid_map_text.as_bytes())?;
        check(libc::mount(std::ptr::null(), c"/".as_ptr(), std::ptr::null(), libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()))?;
        // The working folder is re-entered after the binds: the one entered
        // before them lies on a mount about to go read-only.
        let mut cwd = [0u8; 4096];
        let have_cwd = !libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()).is_null();
        for (w, flags) in self.writable.iter().zip(&self.writable_flags) {
            check(libc::mount(w.as_ptr(), w.as_ptr(), std::ptr::null(), libc::MS_BIND | libc::MS_REC, std::ptr::null()))?;
            check(libc::mount(std::ptr::null(), w.as_ptr(), std::ptr::null(), libc::MS_REMOUNT | libc::MS_BIND | flags, std::ptr::null()))?;
        }
        for (p, flags) in &self.protected {
            // One removed since the plan was made has nothing to protect.
            if libc::mount(p.as_ptr(), p.as_ptr(), std::ptr::null(), libc::MS_BIND | libc::MS_REC, std::ptr::null()) != 0 {
                if *libc::__errno_location() == libc::ENOENT {
                    continue;
                }
                return Err(io::Error::last_os_error());
            }
            check(libc::mount(std::ptr::null(), p.as_ptr(), std::ptr::null(), libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags, std::ptr::null()))?;
        }
        for s in sockets {
            // A socket that went away meanwhile needs no cover.
            let _ = libc::mount(c"/dev/null".as_ptr(), s.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null());
        }
        for (m, flags) in &self.read_only {
            let r = libc::mount(std::ptr::null(), m.as_ptr(), std::ptr::null(), libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags, std::ptr::null());
            // The root must go read-only; a mount hidden under another
            // cannot be reached by the command either.
            if r != 0 && m.as_bytes() == b"/" {
                return Err(io::Error::last_os_error());
            }
        }
        // A fresh /dev/shm over the system's: what others keep there is not
        // the command's to read. (It is mounted after the read-only pass,
        // which would otherwise reach it too.)
        // The sandbox's own folder, not a fresh tmpfs: Landlock's rules name
        // inodes that exist when they are made, so only a folder made
        // before can be granted to the command to write in.
        if let Some((shm, own)) = &self.shm {
            check(libc::mount(own.as_ptr(), shm.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()))?;
            let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            check(libc::mount(std::ptr::null(), shm.as_ptr(), std::ptr::null(), flags, std::ptr::null()))?;
        }
        if have_cwd {
            check(libc::chdir(cwd.as_ptr().cast()))?;
        }
        let mut alive = [0 as libc::c_int; 2];
        check(libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC))?;
        // agentloop may have died since it forked: then nothing starts.
        if let Some(lifeline) = keep.first() {
            if gone(*lifeline, 0) {
                libc::_exit(137);
            }
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid > 0 {
            wait_and_exit_as(pid, alive[1], keep);
        }
        // The command's process: it dies with the waiting one, and if that
        // one is already gone (its end of the pipe closed), it stops here.
        libc::close(alive[1]);
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) as libc::c_int)?;
        let mut poll = libc::pollfd { fd: alive[0], events: libc::POLLIN, revents: 0 };
        if libc::poll(&mut poll, 1, 0) != 0 {
            libc::_exit(137);
        }
        libc::close(alive[0]);
        Ok(())
    }
}

/// The command's process id, for the signal forwarder.
static COMMAND: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int) {
    // SAFETY: kill is async-signal-safe.
    unsafe {
        libc::kill(COMMAND.load(Ordering::Relaxed), signal);
    }
}

/// Whether the other end of the pipe `fd` reads from has closed, waiting
/// at most `timeout_ms` (`-1`: for ever) for it.
unsafe fn gone(fd: libc::c_int, timeout_ms: libc::c_int) -> bool {
    let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    libc::poll(&mut poll, 1, timeout_ms) > 0 && poll.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLIN) != 0
}

/// The waiting process: holds nothing the caller waits on (its standard
/// streams and the spawn's error pipe are closed) but `also` (the lifeline
/// first, then what must stay locked while the command lives), passes
/// termination signals on, kills the command when agentloop is gone, and
/// exits as the command did.
unsafe fn wait_and_exit_as(pid: libc::pid_t, keep: libc::c_int, also: &[libc::c_int]) -> ! {
    COMMAND.store(pid, Ordering::Relaxed);
    for fd in 0..3 {
        libc::close(fd);
    }
    // Close every descriptor but the kept ones (`also` holds at most a few).
    let mut kept = [keep, -1, -1, -1, -1];
    for (slot, fd) in kept.iter_mut().skip(1).zip(also) {
        *slot = *fd;
    }
    kept.sort_unstable();
    let mut from: u32 = 3;
    for fd in kept.iter().filter(|fd| **fd >= 3) {
        if (*fd as u32) > from {
            libc::syscall(libc::SYS_close_range, from, (*fd - 1) as u32, 0u32);
        }
        from = *fd as u32 + 1;
    }
    libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32);
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2] {
        libc::signal(signal, forward as extern "C" fn(libc::c_int) as libc::sighandler_t);
    }
    // Wait for whichever comes first: the command's end, or agentloop's.
    let pidfd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as libc::c_int;
    if let (Some(lifeline), true) = (also.first(), pidfd >= 0) {
        loop {
            let mut polls = [libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 }, libc::pollfd { fd: *lifeline, events: libc::POLLIN, revents: 0 }];
            if libc::poll(polls.as_mut_ptr(), 2, -1) < 0 {
                continue;
            }
            if polls[0].revents != 0 {
                break;
            }
            if polls[1].revents != 0 {
                // Process 1 of the namespace takes all the others with it.
                libc::kill(pid, libc::SIGKILL);
                break;
            }
        }
    }
    let mut status = 0;
    while libc::waitpid(pid, &mut status, 0) < 0 && *libc::__errno_location() == libc::EINTR {}
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal);
    }
    libc::_exit(libc::WEXITSTATUS(status))
}

unsafe fn write_file(path: &CString, content: &[u8]) -> io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let written = libc::write(fd, content.as_ptr().cast(), content.len());
    libc::close(fd);
    if written != content.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
}

/// The read end of a pipe whose write end only agentloop holds (both ends
/// close on exec, and each waiting process closes the write end): it reads
/// as closed the moment agentloop is gone. Made once per process.
pub fn lifeline() -> Option<libc::c_int> {
    static LIFELINE: std::sync::OnceLock<Option<libc::c_int>> = std::sync::OnceLock::new();
    *LIFELINE.get_or_init(|| {
        let mut ends = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into `ends`; both are kept
        // open for the life of the process on purpose.
        (unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } == 0).then_some(ends[0])
    })
}

/// Every mount point this process sees, parents first.
fn mount_points() -> io::Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mut points: Vec<PathBuf> = text.lines().filter_map(|l| l.split(' ').nth(4)).map(|p| PathBuf::from(unescape(p))).collect();
    points.sort();
    points.dedup();
    Ok(points)
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 4).and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The flags a read-only remount of `mount` must repeat: the kernel locks
/// them for a namespace like ours and refuses a remount that drops one.
fn kept_flags(mount: &Path) -> libc::c_ulong {
    let Ok(path) = c_path(mount) else { return 0 };
    // SAFETY: `stat` is written by the call; the path is NUL-ended.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs.iter().filter(|(st, _)| stat.f_flag & st != 0).fold(0, |acc, (_, ms)| acc | ms)
}

/// The pathname Unix sockets listening now (this network namespace's),
/// except those under `own` folders and those `allowed`.
pub fn foreign_sockets(own: &[&Path], allowed: &[PathBuf]) -> Vec<CString> {
    let Ok(text) = std::fs::read_to_string("/proc/net/unix") else { return Vec::new() };
    let mut paths: Vec<PathBuf> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| !own.iter().any(|o| p.starts_with(o)) && !allowed.iter().any(|a| a == p))
        .collect();
    paths.sort();
    paths.dedup();
    paths.iter().filter_map(|p| c_path(p).ok()).collect()
}

/// Whether this system lets agentloop make the namespaces (asked once, by
/// starting `true` in them).
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let mut cmd = std::process::Command::new("true");
        cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        // SAFETY: unshare is a plain system call.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC))
            });
        }
        cmd.status().is_ok_and(|s| s.success())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_mount_points_are_read_back() {
        assert_eq!(unescape("/mnt/my\\040disk"), "/mnt/my disk");
        assert_eq!(unescape("/a\\\\b"), "/a\\\\b");
        assert_eq!(unescape("/plain"), "/plain");
    }
}

//! A stdio MCP server's process. It runs in a process group of its own
//! (the sandbox starts a session for it), dies with agentloop even when
//! agentloop is killed with `kill -9` (`PR_SET_PDEATHSIG`), and its whole
//! group is killed and reaped when this handle is dropped: on every exit
//! path of a session, no server is left behind and none becomes a zombie.
//!
//! What the server starts itself dies with it too. Under the sandbox's PID
//! namespace the kernel sees to that. Without one, a guard process leads
//! the group: it outlives the server by a moment, and when either the
//! server or agentloop ends, it kills the whole group.

use std::io::{self, Read};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

/// Bytes of the server's standard error kept for error messages.
const STDERR_KEPT: usize = 4096;

/// How long a server that went away may take to close its standard error
/// (a process it started may hold it open for longer).
const STDERR_CLOSING: std::time::Duration = std::time::Duration::from_secs(2);

pub struct ServerProcess {
    pid: i32,
    child: Child,
    stderr: Arc<Mutex<String>>,
    /// Set when the server's standard error has closed: all it wrote is kept.
    stderr_closed: Arc<AtomicBool>,
}

/// The pipes the protocol runs over.
pub struct Pipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
}

impl ServerProcess {
    /// A command for `program` that dies with agentloop. Confine it (which
    /// also gives it a session of its own) after this, so the process
    /// agentloop forks is the one marked to die with it.
    pub fn command(program: &str) -> Command {
        let mut cmd = Command::new(program);
        // SAFETY: system calls only between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, die_with_parent);
        }
        cmd
    }

    /// Starts `cmd` (from `command`, then confined or given a session of
    /// its own) with piped standard streams. `guarded`: a guard leads the
    /// server's group, for commands without a PID namespace of their own.
    pub fn spawn(mut cmd: Command, guarded: bool) -> io::Result<(Self, Pipes)> {
        if guarded {
            // SAFETY: system calls only between fork and exec; the guard's
            // side never returns and ends with `_exit`.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, guard_the_group);
            }
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = spawn_from_lasting_thread(cmd)?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("the server's standard streams could not be opened"));
        };
        let pid = i32::try_from(child.id()).map_err(|_| io::Error::other("the server's process id is out of range"))?;
        let kept = Arc::new(Mutex::new(String::new()));
        let closed = Arc::new(AtomicBool::new(false));
        let (sink, done) = (kept.clone(), closed.clone());
        std::thread::Builder::new().name("mcp-stderr".into()).spawn(move || {
            keep_tail(stderr, &sink);
            done.store(true, Ordering::Release);
        })?;
        Ok((Self { pid, child, stderr: kept, stderr_closed: closed }, Pipes { stdin, stdout }))
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The end of what the server wrote to its standard error, for a
    /// message that says why it failed.
    pub fn stderr_tail(&self) -> String {
        self.stderr.lock().map(|s| s.trim().to_string()).unwrap_or_default()
    }

    /// The tail once the standard error of a server that went away has
    /// closed too, waiting at most `STDERR_CLOSING`: its last line is
    /// usually why, and that pipe can close a moment after the protocol's.
    pub async fn stderr_tail_once_closed(&self) -> String {
        let deadline = std::time::Instant::now() + STDERR_CLOSING;
        while !self.stderr_closed.load(Ordering::Acquire) && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.stderr_tail()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // SAFETY: signals the server's own process group only.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Set in the child: SIGKILL when agentloop dies, and stop at once if it
/// already has.
fn die_with_parent() -> io::Result<()> {
    // SAFETY: prctl and getppid are plain system calls.
    unsafe {
        let parent = libc::getppid();
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            libc::_exit(137);
        }
    }
    Ok(())
}

/// Set in the child last, after it has a session and group of its own:
/// the process forks once more. The new child goes on to become the
/// server, marked to die with the guard. The guard stays, holding nothing
/// open, until the server ends or agentloop dies (a parent-death signal it
/// can catch), then kills its whole group, itself included, so the
/// server's own children go too.
fn guard_the_group() -> io::Result<()> {
    // SAFETY: only async-signal-safe system calls, as after a fork of a
    // threaded process; the guard leaves by `kill` or `_exit`.
    unsafe {
        let mut signals: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut signals);
        libc::sigaddset(&mut signals, libc::SIGCHLD);
        libc::sigaddset(&mut signals, libc::SIGTERM);
        // Blocked before the fork, so neither signal can slip by unseen.
        libc::sigprocmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut());
        let host = libc::getppid();
        let guard = libc::getpid();
        let server = libc::fork();
        if server < 0 {
            return Err(io::Error::last_os_error());
        }
        if server == 0 {
            libc::sigprocmask(libc::SIG_UNBLOCK, &signals, std::ptr::null_mut());
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != guard {
                libc::_exit(137);
            }
            return Ok(());
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        // The pipes stay with the server alone: its end of them is what
        // agentloop waits on.
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..1024 {
                libc::close(fd);
            }
        }
        if libc::getppid() == host {
            loop {
                let signal = libc::sigwaitinfo(&signals, std::ptr::null_mut());
                if signal == libc::SIGTERM {
                    break;
                }
                if signal == libc::SIGCHLD && libc::waitpid(server, std::ptr::null_mut(), libc::WNOHANG) == server {
                    break;
                }
                if signal < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    break;
                }
            }
        }
        libc::kill(0, libc::SIGKILL);
        libc::_exit(137)
    }
}

/// The parent-death signal follows the thread that forked, not the
/// process: a child forked from a short-lived thread (a blocking pool's)
/// would be killed when that thread retires. So every server is forked by
/// one thread that lives as long as agentloop.
fn spawn_from_lasting_thread(cmd: Command) -> io::Result<Child> {
    type Request = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        let _ = std::thread::Builder::new().name("mcp-spawner".into()).spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        Mutex::new(tx)
    });
    let (reply, answer) = mpsc::channel();
    spawner
        .lock()
        .map_err(|_| io::Error::other("the MCP server spawner failed earlier"))?
        .send((cmd, reply))
        .map_err(|_| io::Error::other("the MCP server spawner is gone"))?;
    answer.recv().map_err(|_| io::Error::other("the MCP server spawner is gone"))?
}

fn keep_tail(mut from: impl Read, kept: &Mutex<String>) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            return;
        }
        let Ok(mut s) = kept.lock() else { return };
        s.push_str(&String::from_utf8_lossy(&buf[..n]));
        if s.len() > STDERR_KEPT {
            let mut cut = s.len() - STDERR_KEPT;
            while !s.is_char_boundary(cut) {
                cut += 1;
            }
            s.drain(..cut);
        }
    }
}

//! The escape catalogue of `agentloop-bench sandbox`: every way out that an outside
//! probe tried, run for real against the sandbox, the file jail, the
//! session store and the server. Each attempt reports whether it was held;
//! the target is all of them.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentloop_core::{Store, Tool};
use agentloop_tools::{run_command, Sandbox, SandboxConfig, Workspace, WriteFile};
use anyhow::{Context, Result};
use serde_json::{json, Value};

/// A variable set in this process whose value no command may learn.
const MARKER_VAR: &str = "AGENTLOOP_ESCAPE_PROBE";
const MARKER: &str = "escape-probe-5f1c2a";

/// One attempt's result.
pub struct Attempt {
    pub name: &'static str,
    pub held: bool,
    /// What happened, when it was not held.
    pub detail: String,
}

/// The room the attempts run in: a workspace, a folder beside it, a home
/// with a key, a file and a socket outside.
struct Room {
    ws: PathBuf,
    outside: PathBuf,
    home: PathBuf,
    sandbox: Sandbox,
}

impl Room {
    fn new(root: &Path) -> Result<Self> {
        let (ws, outside, home) = (root.join("ws"), root.join("outside"), root.join("home"));
        for d in [&ws, &outside, &home.join(".ssh")] {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        std::fs::write(home.join(".ssh/id_ed25519"), MARKER)?;
        std::fs::write(outside.join("owned.txt"), "mine")?;
        let sandbox = Sandbox::new(&ws, &SandboxConfig::default(), Some(&home), None)?;
        Ok(Self { ws: ws.canonicalize()?, outside: outside.canonicalize()?, home, sandbox })
    }

    async fn run(&self, command: &str) -> Result<Value> {
        Ok(run_command(&self.sandbox, command, Duration::from_secs(60)).await?)
    }

    /// Runs `command`; held when its output never shows `secret`.
    async fn keeps(&self, name: &'static str, command: &str, secret: &str) -> Result<Attempt> {
        let out = self.run(command).await?;
        let text = format!("{}{}", out["stdout"].as_str().unwrap_or(""), out["stderr"].as_str().unwrap_or(""));
        Ok(attempt(name, !text.contains(secret), text))
    }

    /// Runs `command`; held when its output never shows the marker.
    async fn keeps_marker(&self, name: &'static str, command: &str) -> Result<Attempt> {
        self.keeps(name, command, MARKER).await
    }

    /// Runs `command`; held when `outside/name` does not exist afterwards.
    async fn writes_nothing(&self, name: &'static str, command: &str, file: &str) -> Result<Attempt> {
        let out = self.run(command).await?;
        let path = self.outside.join(file);
        let held = !path.exists();
        let _ = std::fs::remove_file(&path);
        Ok(attempt(name, held, out["shown"].as_str().unwrap_or("").to_string()))
    }

    /// Runs `command`; held when its standard output does not say `word`.
    async fn never_says(&self, name: &'static str, command: &str, word: &str) -> Result<Attempt> {
        let out = self.run(command).await?;
        let stdout = out["stdout"].as_str().unwrap_or("").to_string();
        Ok(attempt(name, !stdout.contains(word), stdout))
    }
}

fn attempt(name: &'static str, held: bool, detail: String) -> Attempt {
    Attempt { name, held, detail: if held { String::new() } else { detail.chars().take(300).collect() } }
}

fn python(code: &str) -> String {
    format!("python3 -c \"{}\"", code.replace('"', "\\\""))
}

/// Every attempt, in the order of the probe's findings.
pub async fn run(root: &Path) -> Result<Vec<Attempt>> {
    let room = Room::new(root)?;
    // SAFETY: set once, before any command of this process reads the environment.
    unsafe { std::env::set_var(MARKER_VAR, MARKER) };
    let me = std::process::id();
    let mut out = vec![rebinding().await?, file_race(&room).await?];

    // Terminal, root and other processes.
    out.push(
        room.never_says(
            "terminal: TIOCSTI into a terminal",
            &python("import fcntl, os, pty, termios\nm, s = pty.openpty()\ntry:\n fcntl.ioctl(s, termios.TIOCSTI, b'x'); print('typed')\nexcept OSError: pass"),
            "typed",
        )
        .await?,
    );
    out.push(room.keeps_marker("root: agentloop's environment through /proc", &format!("cat /proc/{me}/environ")).await?);
    out.push(room.never_says("signals: agentloop's process", &format!("kill -0 {me} && echo reached"), "reached").await?);
    out.push(room.never_says("proc: writing agentloop's /proc entry", &format!("echo x > /proc/{me}/comm && echo wrote"), "wrote").await?);
    out.push(room.never_says("capabilities: any left", "grep -E '^CapEff' /proc/self/status | grep -v 0000000000000000 && echo some", "some").await?);

    // Files.
    out.push(room.writes_nothing("files: a write outside", &format!("echo x > {}/w.txt", room.outside.display()), "w.txt").await?);
    out.push(room.writes_nothing("files: a symlink leading out", &format!("ln -s {} out && echo x > out/l.txt", room.outside.display()), "l.txt").await?);
    out.push(room.writes_nothing("files: mv out", &format!("echo x > m.txt && mv m.txt {}/m.txt", room.outside.display()), "m.txt").await?);
    out.push(
        room.writes_nothing("files: /dev/shm and back", &format!("echo x > /dev/shm/s.txt; ln -s /dev/shm/s.txt {}/s.txt", room.outside.display()), "s.txt")
            .await?,
    );
    out.push(metadata(&room).await?);

    // Secrets.
    out.push(room.keeps_marker("secrets: ~/.ssh", &format!("cat {}/.ssh/id_ed25519", room.home.display())).await?);
    std::fs::create_dir_all(room.home.join(".late"))?;
    std::fs::write(room.home.join(".late/key"), MARKER)?;
    out.push(room.keeps_marker("secrets: a folder made in the home after the start", &format!("cat {}/.late/key", room.home.display())).await?);
    // SAFETY: as above.
    unsafe {
        std::env::set_var("AGENTLOOP_ESCAPE_DB", "postgres://app:url-secret-91@db/app");
        std::env::set_var("AGENTLOOP_ESCAPE_HELPER", "ghp_token-secret-91");
    }
    out.push(room.keeps("secrets: a credential in a variable's value", "env", "secret-91").await?);

    // Network and sockets.
    let tcp = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = tcp.local_addr()?.port();
    out.push(
        room.never_says(
            "network: a TCP connection to loopback",
            &python(&format!("import socket\nsocket.create_connection(('127.0.0.1', {port}), 2); print('connected')")),
            "connected",
        )
        .await?,
    );
    let abstract_name = format!("agentloop-escape-{me}");
    let _abstract = bind_abstract(&abstract_name)?;
    out.push(
        room.never_says(
            "sockets: an abstract Unix socket outside",
            &python(&format!("import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('\\0{abstract_name}'); print('connected')")),
            "connected",
        )
        .await?,
    );
    let agent = room.outside.join("agent.sock");
    let _agent = std::os::unix::net::UnixListener::bind(&agent)?;
    out.push(
        room.never_says(
            "sockets: an agent's pathname socket outside",
            &python(&format!("import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('{}'); print('connected')", agent.display())),
            "connected",
        )
        .await?,
    );

    // Processes left behind.
    let survivor = room.ws.join("survivor");
    room.run("setsid sh -c 'sleep 1; touch survivor' >/dev/null 2>&1 </dev/null &").await?;
    tokio::time::sleep(Duration::from_millis(1800)).await;
    out.push(attempt("processes: a setsid child outliving the command", !survivor.exists(), "the survivor wrote its file".into()));

    out.push(two_owners(root)?);
    out.extend(workspace_holes(&room, root).await?);
    Ok(out)
}

/// The second round: what a command leaves in its workspace acting
/// outside the sandbox, what it shares with the machine, and what
/// outlives agentloop.
async fn workspace_holes(room: &Room, root: &Path) -> Result<Vec<Attempt>> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let ws = &room.ws;
    out.push({
        room.run("printf '[sandbox]\\nmode = \"off\"\\n' > agentloop.toml").await?;
        attempt("config: an agentloop.toml that turns the sandbox off", !ws.join("agentloop.toml").exists(), "the file stayed".into())
    });
    out.push({
        room.run("mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit").await?;
        attempt("git: a hook planted in a new .git", !ws.join(".git").exists(), "the hook stayed".into())
    });
    std::fs::create_dir_all(ws.join(".git/hooks"))?;
    std::fs::write(ws.join(".git/config"), "[core]\n")?;
    let protected = Sandbox::new(ws, &SandboxConfig::default(), Some(&room.home), None)?;
    let run_protected = |command: &'static str| {
        let sb = protected.clone();
        async move { run_command(&sb, command, Duration::from_secs(60)).await }
    };
    run_protected("printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit; printf '[core]\\nfsmonitor = touch pwned\\n' >> .git/config").await?;
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap_or_default();
    out.push(attempt(
        "git: a hook and core.fsmonitor in an existing .git",
        !ws.join(".git/hooks/pre-commit").exists() && !config.contains("fsmonitor"),
        config,
    ));
    let _ = std::fs::remove_dir_all(ws.join(".git"));
    run_protected("cp /bin/true suid-copy; chmod 4755 suid-copy").await?;
    let mode = std::fs::metadata(ws.join("suid-copy")).map(|m| m.permissions().mode()).unwrap_or(0);
    out.push(attempt("setuid: chmod 4755 on a copy of a program", mode & 0o6000 == 0, format!("mode {mode:o}")));
    for (name, path) in
        [("workspace: / itself", PathBuf::from("/")), ("workspace: a symlink to /", root.join("to-root")), ("workspace: the home", room.home.clone())]
    {
        if name.contains("symlink") {
            let _ = std::os::unix::fs::symlink("/", &path);
        }
        let refused = Sandbox::new(&path, &SandboxConfig::default(), Some(&room.home), None).is_err();
        out.push(attempt(name, refused, "accepted".into()));
    }
    out.push(
        room.never_says(
            "keyring: the session keyring",
            &python("import ctypes\nif ctypes.CDLL(None).syscall(250, 0, -3, 0) >= 0: print('reached')"),
            "reached",
        )
        .await?,
    );
    // SAFETY: a segment this attempt removes at its end.
    let segment = unsafe { libc::shmget(0x4167_6c71, 4096, libc::IPC_CREAT | 0o600) };
    out.push(
        room.never_says(
            "ipc: a 0600 System V segment made outside",
            &python("import ctypes\nif ctypes.CDLL(None).shmget(0x41676c71, 0, 0) >= 0: print('reached')"),
            "reached",
        )
        .await?,
    );
    // SAFETY: removes the segment made above.
    unsafe { libc::shmctl(segment, libc::IPC_RMID, std::ptr::null_mut()) };
    let shm = PathBuf::from(format!("/dev/shm/agentloop-escape-{}", std::process::id()));
    if std::fs::write(&shm, MARKER).is_ok() {
        let _ = std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o600));
        out.push(room.keeps_marker("ipc: a 0600 file in /dev/shm made outside", &format!("cat {}", shm.display())).await?);
        let _ = std::fs::remove_file(&shm);
    }
    // SAFETY: as above, before the command reads the environment.
    unsafe { std::env::set_var("AGENTLOOP_ESCAPE_SESSION_HOLDER", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqd3Qtc2VjcmV0In0.c2ln") };
    out.push(room.keeps("secrets: a JWT in a variable", "env", "eyJzdWIi").await?);
    out.push(room.never_says("secrets: /etc/shadow", "cat /etc/shadow", "root:").await?);
    let bounded = Sandbox::new(ws, &SandboxConfig { max_processes: 64, ..SandboxConfig::default() }, Some(&room.home), None)?;
    let forks =
        python("import os, time\nn = 0\ntry:\n while n < 500:\n  if os.fork() == 0:\n   time.sleep(2); os._exit(0)\n  n += 1\nfinally:\n print('started', n)");
    let forked = run_command(&bounded, &forks, Duration::from_secs(60)).await?;
    let started: u64 = forked["stdout"].as_str().unwrap_or("").split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(u64::MAX);
    out.push(attempt("limits: a fork loop", started < 64, format!("{started} processes under a bound of 64")));
    out.push(outlives_kill_9(ws).await?);
    Ok(out)
}

/// A real `agentloop sandbox` running a command that ignores SIGTERM is
/// killed with SIGKILL: held when the command never writes afterwards.
async fn outlives_kill_9(ws: &Path) -> Result<Attempt> {
    let late = ws.join("late");
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(["agentloop", "sandbox", "--workspace"])
        .arg(ws)
        .args(["--", "sh", "-c", "trap '' TERM; sleep 2; touch late"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    tokio::time::sleep(Duration::from_millis(700)).await;
    child.kill()?;
    let _ = child.wait();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    Ok(attempt("processes: a command that ignores SIGTERM when agentloop is killed -9", !late.exists(), "the command wrote after agentloop died".into()))
}

/// chmod, utime and xattr on a file outside; chmod on the denied key.
async fn metadata(room: &Room) -> Result<Attempt> {
    let file = room.outside.join("owned.txt");
    let key = room.home.join(".ssh/id_ed25519");
    let stamp = |p: &Path| std::fs::metadata(p).map(|m| (m.mode(), m.mtime(), m.uid()));
    let before = (stamp(&file)?, stamp(&key)?);
    let out = room
        .run(&format!(
            "chmod 777 {f} {k}; touch -d 2001-01-01 {f}; chown 1:1 {f}; {py}",
            f = file.display(),
            k = key.display(),
            py = python(&format!("import os\ntry:\n os.setxattr('{}', 'user.x', b'1'); print('xattr')\nexcept OSError: pass", file.display()))
        ))
        .await?;
    let held = (stamp(&file)?, stamp(&key)?) == before && !out["stdout"].as_str().unwrap_or("").contains("xattr");
    Ok(attempt("metadata: chmod, utime, chown and xattr outside", held, out["shown"].as_str().unwrap_or("").to_string()))
}

/// Listens on an abstract Unix socket (a name with no file).
fn bind_abstract(name: &str) -> Result<std::os::unix::net::UnixListener> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    Ok(std::os::unix::net::UnixListener::bind_addr(&addr)?)
}

/// The write tool writes through a folder that a racing thread keeps
/// swapping with a symlink leading out.
async fn file_race(room: &Room) -> Result<Attempt> {
    let jail = room.ws.join("race");
    std::fs::create_dir_all(jail.join("d"))?;
    std::os::unix::fs::symlink(&room.outside, jail.join("swap"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, jail) = (stop.clone(), jail.clone());
        std::thread::spawn(move || -> u32 {
            let (Ok(a), Ok(b)) = (
                std::ffi::CString::new(jail.join("d").as_os_str().as_encoded_bytes()),
                std::ffi::CString::new(jail.join("swap").as_os_str().as_encoded_bytes()),
            ) else {
                return 0;
            };
            let mut swaps = 0;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: both paths are NUL-ended and outlive the call.
                unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
                swaps += 1;
            }
            swaps
        })
    };
    let write = WriteFile(Workspace::new(&jail)?);
    for i in 0..2000 {
        let _ = write.call(json!({"path": format!("d/race{i}.txt"), "content": "x"})).await;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap_or(0);
    let leaked = std::fs::read_dir(&room.outside)?.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with("race")).count();
    Ok(attempt("files: a folder swapped for a symlink during 2,000 writes", leaked == 0, format!("{leaked} files outside after {swaps} swaps")))
}

/// A request naming another host, as a page that re-points its name at
/// 127.0.0.1 would send.
async fn rebinding() -> Result<Attempt> {
    let dir = crate::harness::scratch_dir("escape-rebind")?;
    let store: Arc<dyn Store> = Arc::new(agentloop_store::SqliteStore::open(dir.join("s.sqlite"), Default::default())?);
    let config = agentloop_server::ServerConfig {
        registry: Arc::new(crate::registry()),
        reads: store.clone(),
        store,
        data_dir: dir.clone(),
        models: Arc::new(|| Ok(agentloop_core::Models::none())),
        token: None,
        allowed_hosts: Vec::new(),
        sandbox: Default::default(),
        mcp_servers: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let server = tokio::spawn(agentloop_server::serve(listener, config));
    let body = json!({"agent": "bench-engine", "input": {"iterations": 1, "calls": false}});
    let r = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/api/sessions"))
        .header("host", format!("evil.example:{port}"))
        .header("origin", format!("http://evil.example:{port}"))
        .header("content-type", "text/plain")
        .body(body.to_string())
        .send()
        .await?;
    server.abort();
    let status = r.status();
    std::fs::remove_dir_all(&dir).ok();
    Ok(attempt("server: a DNS-rebound request", status.is_client_error(), format!("answered {status}")))
}

/// Two stores race to take one session, 100 times: exactly one may win each time.
fn two_owners(root: &Path) -> Result<Attempt> {
    let path = root.join("owners.sqlite");
    let open = || agentloop_store::SqliteStore::open(&path, agentloop_store::Durability::Process);
    let stores = [Arc::new(open()?), Arc::new(open()?)];
    let mut doubled = 0;
    for _ in 0..100 {
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let racers: Vec<_> = stores
            .iter()
            .map(|s| {
                let (s, barrier) = (s.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    s.acquire("s").is_ok()
                })
            })
            .collect();
        let won = racers.into_iter().map(|r| r.join().unwrap_or(false)).filter(|w| *w).count();
        doubled += usize::from(won != 1);
        for s in &stores {
            s.release("s")?;
        }
    }
    Ok(attempt("sessions: two processes resuming one session, 100 times", doubled == 0, format!("{doubled} races had no single winner")))
}

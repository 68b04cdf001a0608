//! The OS sandbox, exercised with real processes: writes land only in the
//! workspace, planted secrets stay unreadable, sockets other than Unix ones
//! are refused unless the network is on, children stay confined, and real
//! builds and test runs work inside.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::time::Duration;

use agentloop_tools::sandbox::{Mode, Network, SandboxConfig};
use agentloop_tools::{run_command, PythonSession, Sandbox};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

/// A workspace, a folder beside it, and a fake home holding a key.
struct Machine {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    home: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, outside, home) = (root.join("ws"), root.join("outside"), root.join("home"));
        for d in [&ws, &outside, &home.join(".ssh")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
        std::fs::write(home.join("notes.txt"), "plain notes").unwrap();
        Self { _dir: dir, ws, outside, home }
    }

    fn sandbox(&self, config: &SandboxConfig) -> Sandbox {
        Sandbox::new(&self.ws, config, Some(&self.home), None).unwrap()
    }
}

async fn run(sandbox: &Sandbox, command: &str) -> Value {
    run_command(sandbox, command, T).await.unwrap()
}

fn shown(out: &Value) -> &str {
    out["shown"].as_str().unwrap()
}

#[tokio::test]
async fn writing_outside_the_workspace_is_refused_with_the_sandboxs_sentence() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    let target = m.outside.join("x.txt");
    let out = run(&sb, &format!("echo hi > {0}; touch {0}; echo inside > in.txt", target.display())).await;
    assert!(!target.exists(), "a file was written outside the workspace");
    assert_eq!(std::fs::read_to_string(m.ws.join("in.txt")).unwrap(), "inside\n");
    let expected = format!("the sandbox refused a write to {}: outside the workspace", target.display());
    assert!(shown(&out).starts_with(&expected), "{}", shown(&out));
    assert_eq!(out["sandbox"][0].as_str().unwrap().split(" (").next().unwrap(), expected);
}

#[tokio::test]
async fn a_read_only_sandbox_reads_the_workspace_and_changes_nothing_in_it() {
    let m = Machine::new();
    std::fs::write(m.ws.join("a.txt"), "kept\n").unwrap();
    let sb = m.sandbox(&SandboxConfig::default()).read_only().unwrap();
    let out = run(&sb, "grep -q kept a.txt && ls").await;
    assert_eq!(out["exitCode"], 0, "{out}");
    let out = run(&sb, "echo changed > a.txt; rm -f a.txt; touch b.txt; echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"").await;
    assert_eq!(std::fs::read_to_string(m.ws.join("a.txt")).unwrap(), "kept\n", "{out}");
    assert!(!m.ws.join("b.txt").exists(), "{out}");
    assert!(out["stdout"].as_str().unwrap().contains("tmp"), "its own temp folder stays writable: {out}");
    assert!(shown(&out).contains("this command may only look at the workspace"), "{}", shown(&out));
    assert!(run(&sb, "cat ~/.ssh/id_ed25519").await["exitCode"] != 0, "secrets stay denied");
}

/// Each way a shell command writes, alone, is named as a refused write, so
/// a command that only fails because it tried to change what it may only
/// look at is told apart from one that looked and found something wrong.
#[tokio::test]
async fn every_kind_of_write_in_a_read_only_sandbox_is_named_as_refused() {
    let m = Machine::new();
    std::fs::write(m.ws.join("a.txt"), "kept\n").unwrap();
    std::fs::create_dir(m.ws.join("sub")).unwrap();
    let sb = m.sandbox(&SandboxConfig::default()).read_only().unwrap();
    let mut unnamed = Vec::new();
    for write in [
        "echo changed > a.txt",
        "echo more >> a.txt",
        "echo new > new.txt",
        "echo new > sub/new.txt",
        "rm a.txt",
        "touch b.txt",
        "mkdir made",
        "sed -i s/kept/gone/ a.txt",
        "cp a.txt c.txt",
        "mv a.txt sub/",
        "python3 -c \"open('p.txt', 'w').write('x')\"",
    ] {
        let out = run(&sb, write).await;
        assert_ne!(out["exitCode"], 0, "`{write}` was let through: {out}");
        if !out["sandbox"].as_array().is_some_and(|refused| refused.iter().any(|r| r.as_str().unwrap().contains("may only look at the workspace"))) {
            unnamed.push(format!("`{write}`: {}", shown(&out)));
        }
    }
    assert!(unnamed.is_empty(), "failed without being named a refused write:\n{}", unnamed.join("\n"));
    assert_eq!(std::fs::read_to_string(m.ws.join("a.txt")).unwrap(), "kept\n");
}

#[tokio::test]
async fn other_processes_under_proc_are_not_writable() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    let parent = std::process::id();
    let before = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap();
    let out = run(&sb, &format!("echo hijacked > /proc/{parent}/comm")).await;
    assert_ne!(out["exitCode"], 0, "{out}");
    assert_eq!(std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap(), before);
}

#[tokio::test]
async fn a_planted_secret_cannot_be_read_but_the_rest_of_home_can() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    let key = m.home.join(".ssh/id_ed25519");
    let out = run(&sb, &format!("cat {}; cat {}", key.display(), m.home.join("notes.txt").display())).await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(!stdout.contains("PRIVATE KEY") && stdout.contains("plain notes"), "{out}");
    assert!(shown(&out).contains("is kept from commands as secret"), "{}", shown(&out));
    // Listed in the config: refused too.
    let config = SandboxConfig { deny_read: vec!["~/notes.txt".into()], ..SandboxConfig::default() };
    let out = run(&m.sandbox(&config), &format!("cat {}", m.home.join("notes.txt").display())).await;
    assert_ne!(out["exitCode"], 0);
}

/// Python connecting to a listener this test holds on 127.0.0.1.
fn connect_script(port: u16) -> String {
    format!("python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\"")
}

#[tokio::test]
async fn the_network_is_off_by_default_and_on_when_allowed() {
    let m = Machine::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let off = run(&m.sandbox(&SandboxConfig::default()), &connect_script(port)).await;
    assert_ne!(off["exitCode"], 0);
    assert!(shown(&off).starts_with("the sandbox refused a network connection"), "{}", shown(&off));
    let on = run(&m.sandbox(&SandboxConfig { network: Network::On, ..SandboxConfig::default() }), &connect_script(port)).await;
    assert_eq!(on["exitCode"], 0, "{on}");
    assert_eq!(on["stdout"], "connected\n");
    // Unix sockets, which local tools use between their own processes, work.
    let unix = run(&m.sandbox(&SandboxConfig::default()), "python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'x'); print(b.recv(1))\"").await;
    assert_eq!(unix["stdout"], "b'x'\n", "{unix}");
}

#[tokio::test]
async fn a_child_that_forks_and_tries_again_is_still_confined() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    let target = m.outside.join("from-child.txt");
    let script = format!(
        "import os, sys\npid = os.fork()\nif pid == 0:\n    os.setsid()\n    try:\n        open({t:?}, 'w').write('escaped')\n    except OSError as e:\n        print('child refused', e.errno)\n    os._exit(0)\nos.waitpid(pid, 0)\n",
        t = target.display().to_string()
    );
    std::fs::write(m.ws.join("fork.py"), script).unwrap();
    let out = run(&sb, "python3 fork.py; sh -c 'sh -c \"touch ../outside/grandchild.txt\"'").await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.contains("child refused 13") || stdout.contains("child refused 30"), "{out}");
    assert!(!target.exists() && !m.outside.join("grandchild.txt").exists());
}

#[tokio::test]
async fn a_python_project_and_a_rust_crate_build_and_test_inside() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    std::fs::write(m.ws.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        m.ws.join("test_calc.py"),
        "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    let py = run(&sb, "python3 -m unittest -q").await;
    assert_eq!(py["exitCode"], 0, "{py}");

    std::fs::create_dir_all(m.ws.join("src")).unwrap();
    std::fs::write(m.ws.join("Cargo.toml"), "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n").unwrap();
    std::fs::write(m.ws.join("src/lib.rs"), "pub fn double(x: i32) -> i32 { x * 2 }\n#[test]\nfn doubles() { assert_eq!(double(4), 8); }\n").unwrap();
    // A target dir or compiler wrapper from the calling environment would write elsewhere.
    let rust = run(&sb, "env -u CARGO_TARGET_DIR -u RUSTC_WRAPPER cargo test --offline -q").await;
    assert_eq!(rust["exitCode"], 0, "{rust}");
    assert!(m.ws.join("target").is_dir());
}

#[tokio::test]
async fn the_persistent_python_session_is_confined() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    let mut py = PythonSession::start(&sb).await.unwrap();
    let key = m.home.join(".ssh/id_ed25519").display().to_string();
    let read = py.execute(&format!("open({key:?}).read()"), T).await.unwrap();
    assert_eq!(read.error.unwrap().kind, "PermissionError");
    let net = py.execute("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)", T).await.unwrap();
    assert_eq!(net.error.unwrap().kind, "PermissionError");
    let kept = py.execute("x = 2\nx + 1", T).await.unwrap();
    assert_eq!(kept.value.as_deref(), Some("3"));
}

#[tokio::test]
async fn the_sandbox_can_be_switched_off_and_says_so() {
    let m = Machine::new();
    let off = m.sandbox(&SandboxConfig { mode: agentloop_tools::sandbox::Mode::Off, ..SandboxConfig::default() });
    assert!(!off.confines());
    assert!(off.describe()[0].contains("the sandbox is off"));
    let target = m.outside.join("allowed.txt");
    run(&off, &format!("touch {}", target.display())).await;
    assert!(target.exists());
    let on = m.sandbox(&SandboxConfig::default());
    let lines = on.describe().join("\n");
    assert!(lines.contains(&format!("denied: {}", m.home.join(".ssh").display())) && lines.contains("network: off"), "{lines}");
}

/// A command holding a terminal (here a pseudo-terminal this test opens)
/// tries to push a command line into it, as into the shell that ran
/// agentloop. It has no controlling terminal and `TIOCSTI` is refused.
#[test]
fn a_command_cannot_type_into_a_terminal() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    // SAFETY: plain calls on the descriptors this test owns.
    let (master, slave) = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0 && libc::grantpt(master) == 0 && libc::unlockpt(master) == 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(master)).to_owned();
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(slave >= 0);
        (master, std::os::fd::OwnedFd::from_raw_fd(slave))
    };
    let script = "import fcntl, os, sys, termios\n\
                  print('tty' if os.isatty(0) else 'no tty')\n\
                  try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x')\n    print('typed')\n\
                  except OSError as e:\n    print('refused', e.errno)\n";
    let mut cmd = std::process::Command::new("python3");
    cmd.args(["-c", script]).current_dir(&m.ws).stdin(std::process::Stdio::from(slave)).stdout(std::process::Stdio::piped());
    sb.confine(&mut cmd);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("tty\n") && stdout.contains("refused"), "{stdout}");
    // Nothing waits on the terminal's input side.
    // SAFETY: a non-blocking read on the master this test owns.
    let waiting = unsafe {
        libc::fcntl(master, libc::F_SETFL, libc::O_NONBLOCK);
        let mut buf = [0u8; 16];
        let n = libc::read(master, buf.as_mut_ptr().cast(), buf.len());
        libc::close(master);
        n
    };
    assert!(waiting <= 0, "the command typed into the terminal");
}

/// As root, a command has no capabilities: it cannot read the environment
/// of agentloop's process, and it runs setuid programs without gaining
/// any; so too with its namespaces switched off. (As another user this
/// holds without the drop.)
#[tokio::test]
async fn a_command_has_no_capabilities_and_cannot_read_agentloops_environment() {
    let m = Machine::new();
    let me = std::process::id();
    for namespaces in [Mode::On, Mode::Off] {
        let sb = m.sandbox(&SandboxConfig { namespaces, ..SandboxConfig::default() });
        let out = run(&sb, &format!("grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status; grep -a -c . /proc/{me}/environ")).await;
        let stdout = out["stdout"].as_str().unwrap();
        for line in ["CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000"] {
            assert!(stdout.contains(line), "{namespaces:?}: {line} in {out}");
        }
        assert!(out["stderr"].as_str().unwrap().contains("Permission denied"), "{namespaces:?}: {out}");
    }
}

/// Secrets by value: a database URL with a password and a token by its
/// prefix stay out of the command's environment, whatever their names.
#[tokio::test]
async fn variables_holding_credentials_are_dropped_by_value_too() {
    let m = Machine::new();
    // SAFETY: this test binary sets the variables before any command reads them.
    unsafe {
        std::env::set_var("AGENTLOOP_TEST_DATABASE_URL", "postgres://app:hunter2@db:5432/app");
        std::env::set_var("AGENTLOOP_TEST_HELPER", "ghp_0123456789abcdef");
        std::env::set_var("AGENTLOOP_TEST_PLAIN", "visible");
    }
    let out = run(&m.sandbox(&SandboxConfig::default()), "env").await;
    let env = out["stdout"].as_str().unwrap();
    assert!(!env.contains("hunter2") && !env.contains("ghp_") && env.contains("AGENTLOOP_TEST_PLAIN=visible"), "{env}");
    let only = SandboxConfig { env_allow: vec!["AGENTLOOP_TEST_PLAIN".into()], ..SandboxConfig::default() };
    let env = run(&m.sandbox(&only), "env").await["stdout"].as_str().unwrap().to_string();
    assert!(env.contains("AGENTLOOP_TEST_PLAIN=visible") && !env.contains("PATH="), "{env}");
}

/// A secret folder made in the home after the session started is not
/// readable, nor is a hidden folder that is no toolchain; one the config
/// names is.
#[tokio::test]
async fn a_secret_folder_made_after_the_start_and_hidden_folders_stay_unreadable() {
    let m = Machine::new();
    std::fs::create_dir_all(m.home.join(".private-notes")).unwrap();
    std::fs::write(m.home.join(".private-notes/n.txt"), "hidden").unwrap();
    std::fs::create_dir_all(m.home.join(".cargo")).unwrap();
    std::fs::write(m.home.join(".cargo/config.toml"), "toolchain").unwrap();
    std::fs::remove_dir_all(m.home.join(".ssh")).unwrap();
    let sb = m.sandbox(&SandboxConfig::default());
    // After the sandbox was built, as a key generated mid-session would be.
    std::fs::create_dir_all(m.home.join(".ssh")).unwrap();
    std::fs::write(m.home.join(".ssh/id_late"), "LATE KEY").unwrap();
    let h = m.home.display();
    let out = run(&sb, &format!("cat {h}/.ssh/id_late; cat {h}/.private-notes/n.txt; cat {h}/.cargo/config.toml; cat {h}/notes.txt")).await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(!stdout.contains("LATE KEY") && !stdout.contains("hidden"), "{out}");
    assert!(stdout.contains("toolchain") && stdout.contains("plain notes"), "{out}");
    assert!(shown(&out).contains(&format!("the sandbox refused access to {h}/.ssh/id_late")), "{}", shown(&out));
    let named = SandboxConfig { read_home: vec![".private-notes".into()], ..SandboxConfig::default() };
    let out = run(&m.sandbox(&named), &format!("cat {h}/.private-notes/n.txt")).await;
    assert_eq!(out["stdout"], "hidden", "{out}");
}

/// Landlock does not cover metadata: a file the user owns outside the
/// workspace (a key in the denied `~/.ssh` too) keeps its mode, times and
/// attributes, since every mount but the writable folders is read-only in
/// the command's view. Inside the workspace all of it works.
#[tokio::test]
async fn metadata_outside_the_workspace_cannot_be_changed() {
    use std::os::unix::fs::MetadataExt;
    let m = Machine::new();
    let file = m.outside.join("owned.txt");
    std::fs::write(&file, "mine").unwrap();
    let key = m.home.join(".ssh/id_ed25519");
    let before: Vec<(u32, i64)> = [&file, &key].iter().map(|p| std::fs::metadata(p).map(|md| (md.mode(), md.mtime())).unwrap()).collect();
    let script = "import os, sys\n\
                  for p in sys.argv[1:]:\n\
                  \x20   for name, act in [('chmod', lambda: os.chmod(p, 0o777)), ('utime', lambda: os.utime(p, (0, 0))),\n\
                  \x20                     ('chown', lambda: os.chown(p, 1, 1)), ('xattr', lambda: os.setxattr(p, 'user.x', b'1'))]:\n\
                  \x20       try:\n            act(); print(name, 'changed', p)\n\
                  \x20       except OSError as e:\n            print(name, 'refused', e.errno)\n";
    std::fs::write(m.ws.join("meta.py"), script).unwrap();
    std::fs::write(m.ws.join("inside.txt"), "x").unwrap();
    let sb = m.sandbox(&SandboxConfig::default());
    let out =
        run(&sb, &format!("python3 meta.py {} {}; chmod 700 inside.txt && touch -d 2001-01-01 inside.txt && echo inside-ok", file.display(), key.display()))
            .await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(!stdout.contains("changed") && stdout.matches("refused").count() == 8, "{out}");
    assert!(stdout.contains("inside-ok"), "{out}");
    let after: Vec<(u32, i64)> = [&file, &key].iter().map(|p| std::fs::metadata(p).map(|md| (md.mode(), md.mtime())).unwrap()).collect();
    assert_eq!(before, after);
}

fn connect_unix(path: &std::path::Path) -> String {
    format!("python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"", path.display())
}

/// An agent's socket outside the workspace (as `ssh-agent`'s) cannot be
/// reached unless `unix_sockets` names it; one the command makes in its
/// workspace works.
#[tokio::test]
async fn a_unix_socket_outside_the_workspace_is_unreachable_unless_allowed() {
    let m = Machine::new();
    let agent = m.outside.join("agent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&agent).unwrap();
    let out = run(&m.sandbox(&SandboxConfig::default()), &connect_unix(&agent)).await;
    assert!(!out["stdout"].as_str().unwrap().contains("connected"), "{out}");
    let allowed = SandboxConfig { unix_sockets: vec![agent.clone()], ..SandboxConfig::default() };
    let out = run(&m.sandbox(&allowed), &connect_unix(&agent)).await;
    assert_eq!(out["stdout"], "connected\n", "{out}");
    let own = "python3 -c \"import socket, threading; l = socket.socket(socket.AF_UNIX); l.bind('own.sock'); l.listen(); \
               c = socket.socket(socket.AF_UNIX); c.connect('own.sock'); print('connected')\"";
    let out = run(&m.sandbox(&SandboxConfig::default()), own).await;
    assert_eq!(out["stdout"], "connected\n", "{out}");
}

/// A process the command starts in a session of its own, with its output
/// elsewhere, dies when the command ends.
#[tokio::test]
async fn nothing_the_command_started_outlives_it() {
    let m = Machine::new();
    let out = run(&m.sandbox(&SandboxConfig::default()), "setsid sh -c 'sleep 1; touch survivor' >/dev/null 2>&1 < /dev/null & echo started").await;
    assert_eq!(out["stdout"], "started\n", "{out}");
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(!m.ws.join("survivor").exists(), "a process outlived the command");
}

//! What a command leaves in its workspace cannot act outside the sandbox,
//! and what it shares with the rest of the machine is cut off: each hole
//! an outside probe found, reproduced with real processes and now held.
//! Root and an ordinary user differ only where a test says so.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use agentloop_tools::sandbox::SandboxConfig;
use agentloop_tools::{run_command, Sandbox};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

struct Machine {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    home: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, home) = (root.join("ws"), root.join("home"));
        for d in [&ws, &home.join(".ssh")] {
            std::fs::create_dir_all(d).unwrap();
        }
        Self { _dir: dir, root, ws, home }
    }

    fn sandbox(&self, config: &SandboxConfig) -> Sandbox {
        Sandbox::new(&self.ws, config, Some(&self.home), None).unwrap()
    }
}

async fn run(sandbox: &Sandbox, command: &str) -> Value {
    run_command(sandbox, command, T).await.unwrap()
}

fn said(out: &Value) -> String {
    out["sandbox"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n")).unwrap_or_default()
}

fn is_root() -> bool {
    // SAFETY: geteuid only reads the caller's id.
    unsafe { libc::geteuid() == 0 }
}

/// A copy of a program made setuid inside would give anyone its owner's
/// rights outside: no way of setting the bit gets through, and the
/// workspace is mounted nosuid in the command's view.
#[tokio::test]
async fn no_file_made_in_the_workspace_can_become_setuid() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    let out = run(
        &sb,
        "cp /bin/true suid-true; chmod 4755 suid-true; chmod g+s suid-true; \
         python3 -c \"import os; os.close(os.open('made-setuid', os.O_CREAT | os.O_WRONLY, 0o4755))\"; \
         install -m 4755 /bin/true installed; grep -E ' (/[^ ]*)? ' /proc/self/mountinfo | grep -F \" $PWD \"",
    )
    .await;
    for file in ["suid-true", "made-setuid", "installed"] {
        let mode = std::fs::metadata(m.ws.join(file)).map(|meta| meta.permissions().mode()).unwrap_or(0);
        assert_eq!(mode & 0o6000, 0, "{file} has mode {mode:o}: {out}");
    }
    let mounts = out["stdout"].as_str().unwrap();
    assert!(mounts.contains("nosuid") && mounts.contains("nodev"), "the workspace is not mounted nosuid,nodev: {out}");
}

/// A hook or a git config planted in `.git` would run on the user's next
/// plain `git status` or `git commit`, outside any sandbox.
#[tokio::test]
async fn git_hooks_and_git_config_cannot_be_planted() {
    let m = Machine::new();
    let git = |args: &[&str]| std::process::Command::new("git").args(args).current_dir(&m.ws).output().unwrap();
    if git(&["init", "-q"]).status.code() != Some(0) {
        eprintln!("git is not installed: skipped");
        return;
    }
    let config_before = std::fs::read(m.ws.join(".git/config")).unwrap();
    let sb = m.sandbox(&SandboxConfig::default());
    let out = run(
        &sb,
        "mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         git config core.fsmonitor 'touch pwned'; echo '[core]' >> .git/config; mv .git .git-old; echo ok > kept.txt",
    )
    .await;
    assert!(!m.ws.join(".git/hooks/pre-commit").exists(), "a hook was planted: {out}");
    assert_eq!(std::fs::read(m.ws.join(".git/config")).unwrap(), config_before, "git's config changed: {out}");
    assert!(m.ws.join(".git").is_dir() && !m.ws.join(".git-old").exists(), "{out}");
    assert_eq!(std::fs::read_to_string(m.ws.join("kept.txt")).unwrap(), "ok\n", "the rest of the workspace stays writable");
    let status = git(&["status", "--short"]);
    assert!(status.status.success() && !m.ws.join("pwned").exists());
}

/// Where the workspace has no `.git` or `agentloop.toml`, a command that
/// makes one sees it removed, with a sentence saying why.
#[tokio::test]
async fn a_git_folder_or_config_a_command_makes_is_removed_and_named() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig::default());
    let out =
        run(&sb, "mkdir -p .git/hooks && echo hook > .git/hooks/post-checkout; printf '[sandbox]\\nmode = \"off\"\\n' > agentloop.toml; mkdir .agentloop")
            .await;
    for planted in [".git", "agentloop.toml", ".agentloop"] {
        assert!(!m.ws.join(planted).exists(), "{planted} stayed: {out}");
    }
    let sentences = said(&out);
    assert!(sentences.contains("the sandbox removed `.git`") && sentences.contains("the sandbox removed `agentloop.toml`"), "{out}");
}

/// An `agentloop.toml` already in the workspace is read-only to commands:
/// none can turn the sandbox off for the next run.
#[tokio::test]
async fn an_existing_agentloop_toml_cannot_be_rewritten() {
    let m = Machine::new();
    std::fs::write(m.ws.join("agentloop.toml"), "[coder]\nmax_iterations = 3\n").unwrap();
    let sb = m.sandbox(&SandboxConfig::default());
    let out = run(&sb, "printf '[sandbox]\\nmode = \"off\"\\n' >> agentloop.toml; rm -f agentloop.toml").await;
    assert_eq!(std::fs::read_to_string(m.ws.join("agentloop.toml")).unwrap(), "[coder]\nmax_iterations = 3\n", "{out}");
}

/// Workspaces in which commands could write everywhere, or read what is
/// kept from them, are refused with one sentence.
#[test]
fn workspaces_that_cannot_be_confined_are_refused() {
    let m = Machine::new();
    let data = m.root.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::symlink("/", m.root.join("to-root")).unwrap();
    let refused = |ws: &std::path::Path, data_dir: Option<&std::path::Path>| {
        let err = Sandbox::new(ws, &SandboxConfig::default(), Some(&m.home), data_dir).err().map(|e| e.to_string());
        err.unwrap_or_else(|| panic!("{} was accepted", ws.display()))
    };
    assert!(refused(std::path::Path::new("/"), None).contains("it is the whole file system"));
    assert!(refused(&m.root.join("to-root"), None).contains("it is the whole file system"), "a symlink to / is /");
    assert!(refused(&m.home, None).contains("it is your home folder"));
    assert!(refused(&m.root, Some(&data)).contains("agentloop's data dir"));
    let holding = refused(&m.root, None);
    assert!(holding.contains("which commands may not read"), "a folder holding a denied path: {holding}");
    assert!(Sandbox::new(&m.ws, &SandboxConfig::default(), Some(&m.home), Some(&data)).is_ok());
}

/// System V shared memory, the session keyring and `/dev/shm` are the
/// machine's; a command gets its own or none.
#[tokio::test]
async fn shared_memory_keyrings_and_dev_shm_are_not_shared() {
    let m = Machine::new();
    // A 0600 segment and a 0600 file in /dev/shm, made outside.
    // SAFETY: shmget makes a segment this test removes at the end.
    let segment = unsafe { libc::shmget(0x4167_6c70, 4096, libc::IPC_CREAT | 0o600) };
    assert!(segment >= 0);
    let shm_file = PathBuf::from(format!("/dev/shm/agentloop-test-{}", std::process::id()));
    let have_shm = std::fs::write(&shm_file, "secret").is_ok();
    let sb = m.sandbox(&SandboxConfig::default());
    let script = "import ctypes, os\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  print('segment', libc.shmget(0x41676c70, 0, 0))\n\
                  print('keyring', libc.syscall(250, 0, -3, 0))\n\
                  print('shm', sorted(os.listdir('/dev/shm')) if os.path.isdir('/dev/shm') else [])\n";
    let out = run(&sb, &format!("python3 -c \"{script}\"")).await;
    // SAFETY: removes the segment made above.
    unsafe { libc::shmctl(segment, libc::IPC_RMID, std::ptr::null_mut()) };
    let _ = std::fs::remove_file(&shm_file);
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.contains("segment -1"), "the outside segment was reached: {out}");
    assert!(stdout.contains("keyring -1"), "the session keyring was reached: {out}");
    if have_shm {
        assert!(!stdout.contains("agentloop-test-"), "/dev/shm is shared: {out}");
    }
}

/// A command's own `/dev/shm` is writable: Python's multiprocessing locks
/// (POSIX semaphores), which real test suites use, work; what it leaves
/// there never reaches the machine's.
#[tokio::test]
async fn multiprocessing_locks_work_in_the_commands_own_dev_shm() {
    let m = Machine::new();
    if !std::path::Path::new("/dev/shm").is_dir() {
        return;
    }
    let sb = m.sandbox(&SandboxConfig::default());
    let script = "import multiprocessing, os\n\
                  lock = multiprocessing.Lock()\n\
                  open('/dev/shm/agentloop-left-behind', 'w').write('x')\n\
                  print('locked', lock.acquire())\n";
    let out = run(&sb, &format!("python3 -c \"{script}\"")).await;
    assert!(out["stdout"].as_str().unwrap().contains("locked True"), "{out}");
    assert!(!std::path::Path::new("/dev/shm/agentloop-left-behind").exists(), "the command's /dev/shm is its own");
}

/// A fork loop stops at the process bound, a file at its size and an
/// allocation at the memory bound, each named with its key.
#[tokio::test]
async fn limits_bound_a_fork_loop_a_large_file_and_memory() {
    let m = Machine::new();
    let sb = m.sandbox(&SandboxConfig { max_processes: 40, max_file_mb: 1, max_memory_mb: 256, ..SandboxConfig::default() });
    let forks = "import os, time\n\
                 n = 0\n\
                 try:\n    while n < 400:\n        if os.fork() == 0:\n            time.sleep(3)\n            os._exit(0)\n        n += 1\n\
                 finally:\n    print('started', n, flush=True)\n";
    let out = run(&sb, &format!("python3 -c \"{forks}\"")).await;
    let started: usize = out["stdout"].as_str().unwrap().split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
    assert!(started < 40, "{started} processes started under a bound of 40 (root: {}): {out}", is_root());
    assert!(said(&out).contains("max_processes"), "{out}");

    let out = run(&sb, "head -c 3000000 /dev/zero > big; echo done").await;
    let size = std::fs::metadata(m.ws.join("big")).map(|meta| meta.len()).unwrap_or(0);
    assert!(size <= 1024 * 1024, "a file of {size} bytes was written: {out}");
    assert!(said(&out).contains("max_file_mb"), "{out}");

    let out = run(&sb, "python3 -c \"b = bytearray(1024 * 1024 * 1024)\"").await;
    assert_ne!(out["exitCode"], 0, "{out}");
    assert!(said(&out).contains("max_memory_mb"), "{out}");
}

/// The small ones: the temp folder is private, the shadow files are kept
/// from root's commands, and a JWT in a variable does not reach them.
#[tokio::test]
async fn the_temp_folder_is_private_and_shadow_files_and_jwts_stay_out() {
    let m = Machine::new();
    // SAFETY: set before any command of this test reads the environment.
    unsafe { std::env::set_var("AGENTLOOP_TEST_JWT_HOLDER", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl") };
    let sb = m.sandbox(&SandboxConfig::default());
    let out = run(&sb, "stat -c %a \"$TMPDIR\"; env; cat /etc/shadow").await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("700\n"), "{out}");
    assert!(!stdout.contains("eyJhbGci"), "a JWT reached the command: {out}");
    assert!(!stdout.contains("root:"), "/etc/shadow was read: {out}");
    if is_root() {
        assert!(sb.policy().deny_read.iter().any(|d| d == std::path::Path::new("/etc/shadow")));
    }
}

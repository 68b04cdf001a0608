//! `agentloop sandbox -- CMD`: the command runs under the policy an agent
//! gets, exits with the command's status and says what was refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

fn sandbox(home: &Path, workspace: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .env("HOME", home)
        .arg("--data-dir")
        .arg(home.join("data"))
        .arg("sandbox")
        .arg("--workspace")
        .arg(workspace)
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_command_runs_confined_and_exits_with_its_own_status() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, ws) = (root.join("home"), root.join("ws"));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join("data")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE").unwrap();

    let status = sandbox(&home, &ws, &["--", "sh", "-c", "echo made > inside.txt; exit 7"]);
    assert_eq!(status.status.code(), Some(7), "{}", stderr(&status));
    assert_eq!(std::fs::read_to_string(ws.join("inside.txt")).unwrap(), "made\n");

    let outside = root.join("outside.txt");
    let write = sandbox(&home, &ws, &["--", "touch", outside.to_str().unwrap()]);
    assert_eq!(write.status.code(), Some(1));
    assert!(!outside.exists());
    assert!(stderr(&write).contains(&format!("agentloop: the sandbox refused a write to {}: outside the workspace", outside.display())), "{}", stderr(&write));

    let key = home.join(".ssh/id_rsa");
    let read = sandbox(&home, &ws, &["--", "cat", key.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&read.stdout).contains("PRIVATE"));
    assert!(stderr(&read).contains("is kept from commands as secret"), "{}", stderr(&read));

    let policy = sandbox(&home, &ws, &["--policy"]);
    let text = String::from_utf8_lossy(&policy.stdout);
    assert!(text.contains(&format!("denied: {}", home.join(".ssh").display())) && text.contains(&format!("denied: {}", home.join("data").display())), "{text}");
    assert!(text.contains("network: off"));
    assert!(String::from_utf8_lossy(&sandbox(&home, &ws, &["--network", "--policy"]).stdout).contains("network: on"));

    let missing = sandbox(&home, &ws, &["--", "no-such-program-anywhere"]);
    assert_eq!(missing.status.code(), Some(127));
}

/// `agentloop` started with Landlock's ruleset call failing as on a kernel
/// without it (a seccomp filter in the child answers EOPNOTSUPP).
fn without_landlock(home: &Path, workspace: &Path, config: &Path) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentloop"));
    cmd.env("HOME", home).arg("--config").arg(config).arg("--data-dir").arg(home.join("data"));
    cmd.args(["sandbox", "--workspace"]).arg(workspace).args(["--", "true"]);
    // SAFETY: system calls only, before exec.
    unsafe {
        cmd.pre_exec(|| {
            let filter = [
                libc::sock_filter { code: 0x20, jt: 0, jf: 0, k: 0 },
                libc::sock_filter { code: 0x15, jt: 0, jf: 1, k: libc::SYS_landlock_create_ruleset as u32 },
                libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32 },
                libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW },
            ];
            let program = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut libc::sock_filter };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &program) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn without_landlock_commands_are_refused_unless_the_user_switches_the_sandbox_off() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, ws, config) = (root.join("home"), root.join("ws"), root.join("agentloop.toml"));
    std::fs::create_dir_all(home.join("data")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(&config, "").unwrap();
    let refused = without_landlock(&home, &ws, &config);
    assert_eq!(refused.status.code(), Some(1));
    let said = stderr(&refused);
    assert!(said.contains("commands cannot be confined: this kernel has no Landlock") && said.contains("mode = \"off\""), "{said}");
    std::fs::write(&config, "[sandbox]\nmode = \"off\"\n").unwrap();
    let off = without_landlock(&home, &ws, &config);
    assert_eq!(off.status.code(), Some(0), "{}", stderr(&off));
}

/// A command wrote `[sandbox] mode = "off"` into its workspace; the next
/// run started there must not take it: a project's file cannot weaken the
/// sandbox, and says it was ignored. Only the user's own file can, and
/// then every run says so first.
#[test]
fn a_workspaces_config_cannot_turn_the_sandbox_off() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, ws, outside) = (root.join("home"), root.join("ws"), root.join("outside.txt"));
    std::fs::create_dir_all(home.join("data")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("agentloop.toml"), "[sandbox]\nmode = \"off\"\n").unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .current_dir(&ws)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("AGENTLOOP_CONFIG")
            .args(extra)
            .arg("--data-dir")
            .arg(home.join("data"))
            .args(["sandbox", "--", "touch"])
            .arg(&outside)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(!outside.exists(), "the workspace's config turned the sandbox off: {}", stderr(&out));
    assert!(stderr(&out).contains("warning: ./agentloop.toml sets [sandbox], which a project's file may not"), "{}", stderr(&out));

    // The user's own file is trusted, and the run says the sandbox is off.
    let own = home.join(".config/agentloop/agentloop.toml");
    std::fs::create_dir_all(own.parent().unwrap()).unwrap();
    std::fs::write(&own, "[sandbox]\nmode = \"off\"\n").unwrap();
    let out = run(&[]);
    assert!(outside.exists(), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("warning: ./agentloop.toml") || stderr(&out).starts_with("warning: the sandbox is off"), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: the sandbox is off"), "{}", stderr(&out));
}

/// The processes running `sleep SECONDS` with exactly these seconds.
fn sleeping(seconds: &str) -> Vec<u32> {
    let wanted = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted.as_bytes()))
        .collect()
}

/// `kill -9` of agentloop (and SIGTERM) takes the command's whole tree with
/// it, even a command that ignores SIGTERM: nothing writes into the
/// workspace afterwards, and the temp folder goes with the next run.
#[test]
fn a_command_dies_with_agentloop_even_under_kill_9() {
    for signal in [libc::SIGKILL, libc::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws) = (root.join("home"), root.join("ws"));
        std::fs::create_dir_all(home.join("data")).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        let marker = format!("31.{}{signal}", std::process::id());
        let script = format!(
            "trap '' TERM; (trap '' TERM; sleep {marker}; touch late-child) & setsid sh -c 'sleep {marker}; touch late-setsid' & sleep {marker}; touch late"
        );
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .env("HOME", &home)
            .arg("--data-dir")
            .arg(home.join("data"))
            .args(["sandbox", "--workspace"])
            .arg(&ws)
            .args(["--", "sh", "-c", &script])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while sleeping(&marker).len() < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(sleeping(&marker).len(), 3, "the command's three sleeps did not start");
        // SAFETY: signals the agentloop this test started.
        unsafe { libc::kill(child.id() as i32, signal) };
        let _ = child.wait();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !sleeping(&marker).is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(sleeping(&marker).is_empty(), "signal {signal}: the command outlived agentloop: {:?}", sleeping(&marker));
        assert!(!ws.join("late").exists() && !ws.join("late-child").exists() && !ws.join("late-setsid").exists());
    }
}

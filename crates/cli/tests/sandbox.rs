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

//! `agentloop-bench sandbox` runs the escape catalogue for real: every
//! attempt an outside probe made is held, and confinement stays cheap to
//! start.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_escape_catalogue_is_held_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentloop-bench"))
        .env("HOME", &home)
        .arg("--data-dir")
        .arg(home.join("data"))
        .args(["sandbox", "--cases", "300", "--runs", "5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let last = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert!(v["escape_attempts"].as_u64().unwrap() >= 20, "{v}");
    assert_eq!(v["escapes_refused"], v["escape_attempts"], "{v}");
    assert_eq!(v["fuzz_escapes"], 0);
}

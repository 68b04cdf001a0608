//! `agentloop-bench engine --checkpoint-files N`: the reference loop with a
//! workspace checkpointed after each act, reported in its JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use serde_json::Value;

#[test]
fn the_engine_bench_checkpoints_a_workspace_after_each_act_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["engine", "--iterations", "20", "--calls", "--checkpoint-files", "50"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let last = String::from_utf8_lossy(&out.stdout).lines().last().unwrap().to_string();
    let report: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(report["status"], "completed", "{report}");
    assert_eq!(report["checkpoint_files"], 50);
    assert_eq!(report["checkpoints"], 61, "the start and each of the 60 steps: {report}");
    assert!(report["us_per_step"].as_f64().unwrap() > 0.0);
}

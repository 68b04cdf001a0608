//! The CLI as a script sees it: JSON output and exit codes. The commands
//! on a stored session are tested on the reference loop's sessions, with
//! the bench tool (`crates/bench/tests/sessions_commands.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn run(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentloop")).arg("--data-dir").arg(data).args(args).output().unwrap()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn bad_arguments_exit_2_and_a_broken_database_exits_1_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(run(dir.path(), &["sessions", "frobnicate"]).status.code(), Some(2));
    assert_eq!(run(dir.path(), &["--durability", "sometimes", "sessions", "list"]).status.code(), Some(2));
    std::fs::write(dir.path().join("agentloop.sqlite"), "not a database at all, just text\n".repeat(20)).unwrap();
    let out = run(dir.path(), &["sessions", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("move it aside"));
}

#[test]
fn serving_without_a_token_is_refused_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["serve", "--no-token", "--addr", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-token is only for a loopback address"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn models_list_shows_what_is_installed_and_the_roles() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join("smollm2-135m-instruct-q4_1.gguf"), b"pretend").unwrap();
    std::fs::write(models.join("mine.gguf"), b"pretend").unwrap();
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, "[models.planner]\nprovider = \"chain\"\nmodels = [\"default\", \"strong\"]\n").unwrap();
    let out = run(dir.path(), &["--config", config.to_str().unwrap(), "models", "list", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json_lines(&out).pop().unwrap();
    let installed: Vec<(String, bool)> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["path"].as_str().unwrap().rsplit('/').next().unwrap().to_string(), m["installed"].as_bool().unwrap()))
        .collect();
    assert!(installed.contains(&("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf".into(), false)), "{installed:?}");
    assert!(installed.contains(&("smollm2-135m-instruct-q4_1.gguf".into(), true)), "{installed:?}");
    assert!(installed.contains(&("mine.gguf".into(), true)), "{installed:?}");
    assert_eq!(report["roles"]["default"], "llama qwen2.5-coder-0.5b");
    assert_eq!(report["roles"]["planner"], "chain default → strong (switch after 2)");

    // --model replaces the default role.
    let out = run(dir.path(), &["--model", "/models/other.gguf", "models", "list", "--json"]);
    assert_eq!(json_lines(&out).pop().unwrap()["roles"]["default"], "llama /models/other.gguf");
    // The human form tells how to install what is missing.
    let text = String::from_utf8_lossy(&run(dir.path(), &["models", "list"]).stdout).into_owned();
    assert!(text.contains("not installed") && text.contains("fetch-models.sh"), "{text}");
}

#[test]
fn run_coder_refuses_a_missing_workspace_or_an_unknown_test_command_in_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["run", "coder", "--workspace", "/no/such/folder", "--task", "x"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/no/such/folder") && err.contains("cannot be opened"), "{err}");

    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(dir.path(), &["run", "coder", "--workspace", empty.to_str().unwrap(), "--task", "x"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no test command was found") && err.contains("--test-cmd"), "{err}");

    let out = run(dir.path(), &["run", "coder", "--workspace", empty.to_str().unwrap(), "--task", "x", "--test-cmd", "no-such-test-runner -q"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no `no-such-test-runner` command") && err.contains("--test-cmd"), "{err}");

    let out = run(dir.path(), &["run", "coder", "--workspace", empty.to_str().unwrap(), "--task", "x", "--test-cmd", "true", "--approval", "sometimes"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("never, on-write or always"));
}

#[test]
fn run_has_a_subcommand_per_registered_agent_with_its_own_flags() {
    let dir = tempfile::tempdir().unwrap();
    let help = String::from_utf8_lossy(&run(dir.path(), &["run", "--help"]).stdout).into_owned();
    for name in ["coder", "planner", "repl", "research"] {
        assert!(help.contains(name), "{help}");
    }
    // The engine benchmark's loop is the bench tool's (`agentloop-bench`), not the product's.
    assert!(!help.contains("bench-engine"), "{help}");
    let planner = String::from_utf8_lossy(&run(dir.path(), &["run", "planner", "--help"]).stdout).into_owned();
    assert!(planner.contains("--goal") && planner.contains("--json") && planner.contains("validated plan"), "{planner}");
    // A config table that names no agent is refused in one sentence.
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, "[plannr]\nname = \"Ada\"\n").unwrap();
    let out = run(dir.path(), &["--config", config.to_str().unwrap(), "sessions", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown key `plannr`"));
}

//! Each agent setting is declared once: its flag, its key in the agent's
//! `agentloop.toml` table and its field in the JSON input all come from
//! that declaration, with one default, through the registry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_agent::registry::Agent;
use serde_json::{json, Value};

fn table(text: &str) -> toml::Value {
    toml::Value::Table(text.parse::<toml::Table>().unwrap())
}

/// The input `agent` makes from `args` (after `run AGENT`) and a table.
fn input(agent: &dyn Agent, args: &[&str], table: Option<&toml::Value>, dir: &std::path::Path) -> agentloop_core::Result<Value> {
    let matches = agent.flags(clap::Command::new("run")).try_get_matches_from(std::iter::once("run").chain(args.iter().copied())).unwrap();
    agent.input(&matches, table, dir)
}

#[test]
fn a_flag_given_beats_the_table_which_beats_the_one_default() {
    let dir = tempfile::tempdir().unwrap();
    let registry = agentloop_cli::standard();
    let coder = registry.get("coder").unwrap();
    let ws = dir.path().to_str().unwrap();
    let base = ["--workspace", ws, "--task", "fix it", "--test-cmd", "true"];
    let defaults = input(coder, &base, None, dir.path()).unwrap();
    let default = agentloop_coder::CoderSettings::default();
    assert_eq!(
        (defaults["maxIterations"].as_u64(), defaults["candidates"].as_u64(), defaults["editFormat"].as_str()),
        (Some(u64::from(default.max_iterations)), Some(3), Some("whole"))
    );

    let file = table("candidates = 5\nmax_iterations = 7\nedit_format = \"hunks\"");
    let args: Vec<&str> = base.iter().copied().chain(["--candidates", "2"]).collect();
    let got = input(coder, &args, Some(&file), dir.path()).unwrap();
    assert_eq!(got["candidates"], 2, "the flag given wins");
    assert_eq!((got["maxIterations"].as_u64(), got["editFormat"].as_str()), (Some(7), Some("hunks")), "the table wins over the default");
    assert_eq!(got["maxReplans"], defaults["maxReplans"], "what neither says is the default");

    // A JSON input that leaves the settings out gets the same defaults.
    let sent = registry.get("coder").unwrap().prepare(&json!({"workspace": ws, "task": "fix it", "testCommand": "true"}), dir.path()).unwrap();
    assert_eq!(sent, defaults);
}

#[test]
fn the_input_schema_carries_each_settings_default_for_the_forms() {
    let registry = agentloop_cli::standard();
    let schema = serde_json::to_value(registry.get("planner").unwrap().input_schema()).unwrap();
    let props = &schema["properties"];
    assert_eq!((props["maxIterations"]["default"].as_u64(), props["approve"]["default"].as_str()), (Some(8), Some("ask")), "{schema:#}");
    assert_eq!(props["assist"]["default"], true, "{schema:#}");
}

#[test]
fn a_key_or_a_value_no_flag_would_take_is_one_sentence_wherever_it_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    let registry = agentloop_cli::standard();
    let repl = registry.get("repl").unwrap();
    let folder = dir.path().join("py");
    let args = ["--prompt", "2+2", "--folder", folder.to_str().unwrap()];
    let err = input(repl, &args, Some(&table("turns = 3")), dir.path()).unwrap_err().to_string();
    assert!(err.contains("the [repl] table in agentloop.toml has no setting `turns`") && err.contains("max_turns"), "{err}");
    let err = input(repl, &args, Some(&table("max_turns = 0")), dir.path()).unwrap_err().to_string();
    assert!(err.contains("[repl]") && err.contains("'--max-turns"), "{err}");
    let err = repl.prepare(&json!({"prompt": "2+2", "folder": folder, "candidates": 0}), dir.path()).unwrap_err().to_string();
    assert!(err.starts_with("the `repl` input:") && err.contains("'--candidates"), "{err}");
    let planner = registry.get("planner").unwrap();
    let err = planner.prepare(&json!({"root": dir.path(), "goal": "g", "approve": "step"}), dir.path()).unwrap_err().to_string();
    assert!(err.contains("`step`"), "{err}");
}

#[test]
fn an_environment_name_wins_over_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let registry = agentloop_cli::standard();
    let research = registry.get("research").unwrap();
    // Set for this test binary only; no other test here reads it.
    std::env::set_var("REFLECTION_MAX_ITERATIONS", "1");
    let got = input(research, &["--question", "who?"], Some(&table("max_reflections = 4\nmax_cycles = 3")), dir.path()).unwrap();
    std::env::remove_var("REFLECTION_MAX_ITERATIONS");
    assert_eq!((got["maxReflections"].as_u64(), got["maxCycles"].as_u64()), (Some(1), Some(3)));
}

//! `agentloop-bench mcp` for real: a tool call over stdio beside the same
//! built-in tool, and no MCP server left behind after sessions and kill -9s
//! of their holder.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[test]
fn bench_mcp_reports_the_call_overhead_and_no_server_left_behind() {
    let fixture = Path::new(env!("CARGO_BIN_EXE_agentloop-bench")).with_file_name("mcp-fixture");
    assert!(fixture.exists(), "{} is missing: build the test binaries with `cargo test --workspace`", fixture.display());
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop-bench")).args(["mcp", "--calls", "20", "--sessions", "3", "--kills", "2"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let report: Value = text.lines().rev().find_map(|l| serde_json::from_str(l).ok()).unwrap_or_else(|| panic!("no JSON in: {text}"));
    assert_eq!(report["servers_left"], 0, "{report}");
    assert!(report["mcp_p50_us"].as_f64().unwrap() > report["builtin_p50_us"].as_f64().unwrap(), "{report}");
}

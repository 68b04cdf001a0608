//! The MCP client against a real server process (`mcp-fixture`, built
//! with rmcp in this crate), confined by the sandbox as agent commands are.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use agentloop_core::{Effect, Tool};
use agentloop_tools::mcp_client::{McpServerConfig, McpServers};
use agentloop_tools::{Sandbox, SandboxConfig};
use serde_json::json;

fn fixture(extra: impl FnOnce(&mut McpServerConfig)) -> BTreeMap<String, McpServerConfig> {
    let mut c = McpServerConfig { command: Some(env!("CARGO_BIN_EXE_mcp-fixture").into()), ..McpServerConfig::default() };
    extra(&mut c);
    BTreeMap::from([("fx".to_string(), c)])
}

fn sandbox(ws: &Path) -> Sandbox {
    Sandbox::new(ws, &SandboxConfig::default(), None, None).unwrap()
}

/// Whether any process is left in the group `pgid`.
fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

#[tokio::test]
async fn tools_are_listed_with_their_schemas_and_hints_and_calls_come_back() {
    let ws = tempfile::tempdir().unwrap();
    let servers = McpServers::start(&fixture(|_| {}), &sandbox(ws.path())).await.unwrap();
    let tools = servers.tools();
    let names: Vec<_> = tools.iter().map(|t| t.name().to_string()).collect();
    assert_eq!(names, ["mcp__fx__count", "mcp__fx__crash", "mcp__fx__echo", "mcp__fx__silent", "mcp__fx__slow", "mcp__fx__slow_count"]);
    let echo = servers.tool("mcp__fx__echo").unwrap();
    assert_eq!(echo.effect(), Effect::ReadOnly);
    assert_eq!(echo.parameters()["required"], json!(["text"]));
    assert_eq!(servers.tool("mcp__fx__count").unwrap().effect(), Effect::SideEffect);
    assert_eq!(servers.listings()[0].hash.len(), 64);

    assert_eq!(echo.call(json!({"text": "hi"})).await.unwrap()["text"], "hi");
    // Each call of a side effect reaches the server once; the file is in the
    // workspace, which the confined server may write.
    let count = servers.tool("mcp__fx__count").unwrap();
    let file = ws.path().join("calls.txt");
    for n in ["1", "2"] {
        assert_eq!(count.call(json!({"file": file})).await.unwrap()["text"], n);
    }
}

#[tokio::test]
async fn arguments_that_break_the_schema_are_refused_before_the_server_sees_them() {
    let ws = tempfile::tempdir().unwrap();
    let servers = McpServers::start(&fixture(|_| {}), &sandbox(ws.path())).await.unwrap();
    let e = servers.tool("mcp__fx__count").unwrap().call(json!({"file": 3})).await.unwrap_err().to_string();
    assert!(e.contains("mcp__fx__count") && e.contains("do not fit the tool's schema") && e.contains("/file"), "{e}");
    let e = servers.tool("mcp__fx__echo").unwrap().call(json!({})).await.unwrap_err().to_string();
    assert!(e.contains("\"text\" is a required property"), "{e}");
}

#[tokio::test]
async fn progress_keeps_a_long_call_alive_but_silence_and_the_cap_end_it() {
    let ws = tempfile::tempdir().unwrap();
    let servers = McpServers::start(&fixture(|c| (c.tool_timeout, c.tool_cap) = (Some(1), Some(4))), &sandbox(ws.path())).await.unwrap();
    let slow = servers.tool("mcp__fx__slow").unwrap();
    assert_eq!(slow.call(json!({"millis": 2500})).await.unwrap()["text"], "worked 2500 ms");
    let e = servers.tool("mcp__fx__silent").unwrap().call(json!({"millis": 2500})).await.unwrap_err().to_string();
    assert!(e.contains("no result or progress for 1 s"), "{e}");
    let e = slow.call(json!({"millis": 6000})).await.unwrap_err().to_string();
    assert!(e.contains("past its cap of 4 s"), "{e}");
}

#[tokio::test]
async fn a_server_that_dies_mid_call_is_one_sentence_with_what_it_said() {
    let ws = tempfile::tempdir().unwrap();
    let servers = McpServers::start(&fixture(|_| {}), &sandbox(ws.path())).await.unwrap();
    let e = servers.tool("mcp__fx__crash").unwrap().call(json!({})).await.unwrap_err().to_string();
    assert!(e.contains("went away during the call") && e.contains("crashing as asked"), "{e}");
}

#[tokio::test]
async fn only_the_enabled_tools_less_the_disabled_ones_are_offered() {
    let ws = tempfile::tempdir().unwrap();
    let configs = fixture(|c| {
        c.enabled_tools = vec!["echo".into(), "count".into()];
        c.disabled_tools = vec!["count".into()];
    });
    let servers = McpServers::start(&configs, &sandbox(ws.path())).await.unwrap();
    assert_eq!(servers.tools().iter().map(|t| t.name().to_string()).collect::<Vec<_>>(), ["mcp__fx__echo"]);
    assert!(servers.tool("mcp__fx__count").is_none());
}

#[tokio::test]
async fn dropping_the_servers_kills_their_whole_process_group() {
    let ws = tempfile::tempdir().unwrap();
    let servers = McpServers::start(&fixture(|_| {}), &sandbox(ws.path())).await.unwrap();
    let pid = servers.servers()[0].pid().unwrap();
    assert!(group_alive(pid));
    drop(servers);
    // The server's own children are reaped by init, a moment after the kill.
    let gone = (0..40).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        !group_alive(pid)
    });
    assert!(gone, "the server's group outlived its session");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_one_sentence_naming_its_table() {
    let ws = tempfile::tempdir().unwrap();
    let configs = BTreeMap::from([("nope".to_string(), McpServerConfig { command: Some("false".into()), ..McpServerConfig::default() })]);
    let e = McpServers::start(&configs, &sandbox(ws.path())).await.err().unwrap().to_string();
    assert!(e.contains("MCP server `nope` did not start") && e.contains("[mcp_servers.nope]"), "{e}");
    let configs = BTreeMap::from([("a_b".to_string(), McpServerConfig::default())]);
    let e = McpServers::start(&configs, &sandbox(ws.path())).await.err().unwrap().to_string();
    assert!(e.contains("cannot name an MCP server"), "{e}");
}

#[test]
fn a_server_and_what_it_started_die_with_the_process_that_started_it_even_under_kill_9() {
    for sandbox in ["on", "off", "no-namespaces"] {
        server_dies_with_its_host(sandbox);
    }
}

fn server_dies_with_its_host(sandbox: &str) {
    let ws = tempfile::tempdir().unwrap();
    let pid_file = ws.path().join("server.pid");
    let mut host = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-fixture")).arg("host").arg(ws.path()).arg(&pid_file).arg(sandbox).spawn().unwrap();
    let mut pid = None;
    for _ in 0..200 {
        if let Some(p) = std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse::<i32>().ok()) {
            pid = Some(p);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = pid.expect("the host never started its server");
    assert!(group_alive(pid));
    host.kill().unwrap();
    host.wait().unwrap();
    let gone = (0..40).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        !group_alive(pid)
    });
    assert!(gone, "the server or its child (sandbox {sandbox}) outlived the process that started it");
}

//! An API key given the way users give it (in the environment, named by the
//! config) reaches the model's endpoint and nothing else: not the commands
//! agents run, not the journal, not the debug log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;

use agentloop_test_support::fake_openai::{judged_on_view, last_message, reply};
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request};

const KEY: &str = "sk-agentloop-test-0123456789abcdef";

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if std::fs::read(&path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes())) {
            found.push(path);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_never_reaches_commands_the_journal_or_the_debug_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|req: &Request| {
            let last = last_message(req);
            if last.contains("Restate the goal") {
                return reply(json!({"who": "me", "what": "the environment", "when": "now", "where": "env.txt", "why": "to look"}).to_string());
            }
            if last.contains("Write the checklist") {
                return reply(json!({"requirements": []}).to_string());
            }
            if last.contains("REQUIREMENT: ") {
                return reply(json!({"evidence": "env", "done": judged_on_view(&last)}).to_string());
            }
            let plan = json!({"goal": "env", "thinking_summary": "print it", "reflection": "", "ready": true,
                "plan": [{"step": 1, "action": "RUN_COMMAND env > env.txt", "expects": "the variables"}]});
            reply(format!("<json>{plan}</json>"))
        })
        .mount(&server)
        .await;
    let data = dir.path().join("data");
    let log = dir.path().join("debug.log");
    let config = dir.path().join("agentloop.toml");
    std::fs::write(
        &config,
        format!(
            "debug_log = \"{}\"\n[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\napi_key_env = \"AGENTLOOP_TEST_OPENAI_API_KEY\"\n",
            log.display(),
            server.uri()
        ),
    )
    .unwrap();
    let args: Vec<String> = ["--data-dir", data.to_str().unwrap(), "--config", config.to_str().unwrap()]
        .into_iter()
        .chain(["run", "planner", "--root", root.to_str().unwrap(), "--goal", "show the environment", "--approve", "all", "--json"])
        .map(String::from)
        .collect();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentloop")).args(args).env("AGENTLOOP_TEST_OPENAI_API_KEY", KEY).stdin(Stdio::null()).output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let requests = server.received_requests().await.unwrap();
    let sent = requests.iter().filter_map(|r| r.headers.get("authorization")).any(|h| h.to_str().unwrap() == format!("Bearer {KEY}"));
    assert!(sent, "the key reaches the endpoint it is for");
    assert!(log.exists() && std::fs::metadata(&log).unwrap().len() > 0, "the debug log was written");
    let outcome: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert!(!outcome.to_string().contains(KEY));
    let leaks = [files_holding(&data, KEY), files_holding(dir.path(), KEY)].concat();
    assert!(leaks.iter().all(|p| p == &config), "the key was written to {leaks:?}");
    assert!(files_holding(&data, "PATH=").iter().any(|p| p.to_string_lossy().contains("sqlite")), "the command's output (env) is in the journal");

    // At rest, all of it is the user's alone.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, "the data dir");
    assert_eq!(mode(&data.join("agentloop.sqlite")), 0o600, "the journal");
    assert_eq!(mode(&log), 0o600, "the debug log");
}

/// The debug log is kept from commands wherever it lies, like the data dir.
#[test]
fn commands_cannot_read_the_debug_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (ws, logs) = (root.join("ws"), root.join("logs"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&logs).unwrap();
    let log = logs.join("debug.log");
    std::fs::write(&log, "a prompt with the user's code").unwrap();
    let config = root.join("agentloop.toml");
    std::fs::write(&config, format!("debug_log = \"{}\"\n", log.display())).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .arg("--data-dir")
        .arg(root.join("data"))
        .arg("--config")
        .arg(&config)
        .args(["sandbox", "--workspace"])
        .arg(&ws)
        .args(["--", "cat"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("user's code"), "a command read the debug log");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is kept from commands as secret"), "{}", String::from_utf8_lossy(&out.stderr));
}

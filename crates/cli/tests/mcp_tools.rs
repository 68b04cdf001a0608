//! The repl calling the tools of a real MCP server (`mcp-fixture`, built
//! with rmcp in the tools crate), chosen by a scripted model behind a fake
//! OpenAI-compatible endpoint: the call is journaled, approved as its
//! server's policy says, and survives a `kill -9` of agentloop without
//! leaving the server behind or running a side effect twice unasked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use agentloop_test_support::fake_openai::{reply, tool_call};
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request};

fn fixture() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_agentloop")).with_file_name("mcp-fixture");
    assert!(path.exists(), "{} is missing: build the test binaries with `cargo test --workspace`", path.display());
    path
}

/// A model that calls `tool` with `arguments` once, then answers with what
/// the tool said.
async fn scripted(tool: &'static str, arguments: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
            if last["role"] == "tool" {
                reply(format!("The tool said: {}", last["content"].as_str().unwrap_or_default()))
            } else {
                assert!(body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == tool)), "the model was not offered {tool}");
                tool_call(tool, arguments.clone())
            }
        })
        .mount(&server)
        .await;
    server
}

struct Setup {
    dir: tempfile::TempDir,
    /// In every server process's environment, to find them afterwards.
    mark: String,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("py")).unwrap();
        Self { dir, mark: uuid_like() }
    }

    /// The model at `uri`, and the fixture as server `fx` with `server_table`'s keys.
    fn configure(&self, uri: &str, server_table: &str) {
        let mark = &self.mark;
        let config = format!(
            "[models.default]\nprovider = \"openai\"\nbase_url = \"{uri}/v1\"\nmodel = \"fake\"\nstream = false\n\n\
             [mcp_servers.fx]\ncommand = \"{}\"\nenv = {{ FIXTURE_MARK = \"{mark}\" }}\n{server_table}\n",
            fixture().display()
        );
        std::fs::write(self.dir.path().join("agentloop.toml"), config).unwrap();
    }

    fn agentloop(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop"));
        c.arg("--data-dir").arg(self.dir.path()).arg("--config").arg(self.dir.path().join("agentloop.toml"));
        c
    }

    fn run(&self) -> Command {
        let mut c = self.agentloop();
        c.args(["run", "repl", "--prompt", "use the tool", "--json", "--folder"]).arg(self.dir.path().join("py"));
        c
    }

    /// A file in the session's folder, which a confined server may write.
    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join("py").join(name)
    }

    fn lines(&self, name: &str) -> usize {
        std::fs::read_to_string(self.file(name)).map(|t| t.lines().count()).unwrap_or(0)
    }

    /// Server processes of this test still alive.
    fn servers_alive(&self) -> usize {
        let needle = format!("FIXTURE_MARK={}", self.mark);
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("environ")).ok())
            .filter(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
            .count()
    }
}

fn uuid_like() -> String {
    format!("{}-{}", std::process::id(), Instant::now().elapsed().as_nanos() ^ rand_seed())
}

fn rand_seed() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.stdin(Stdio::null()).output().unwrap()).await.unwrap()
}

fn last_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().rev().find_map(|l| serde_json::from_str(l).ok()).unwrap_or_else(|| panic!("no JSON in: {text}\n{}", String::from_utf8_lossy(&out.stderr)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_an_mcp_tool_and_answers_with_its_result() {
    let setup = Setup::new();
    let model = scripted("mcp__fx__count", json!({"file": setup.file("calls.txt")})).await;
    setup.configure(&model.uri(), "approval = \"never\"\nsandbox = \"off\"");
    let out = output(setup.run()).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = last_json(&out);
    assert_eq!(report["summary"]["answer"], "The tool said: 1");
    assert_eq!(setup.lines("calls.txt"), 1);
    assert_eq!(setup.servers_alive(), 0, "the server outlived its session");
    // A server the user let out of the sandbox is said so, once.
    let mut events = setup.agentloop();
    events.args(["sessions", "events", report["sessionId"].as_str().unwrap(), "--json"]);
    let text = String::from_utf8_lossy(&output(events).await.stdout).to_string();
    assert_eq!(text.matches("MCP server `fx` runs unconfined").count(), 1, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_writes_waits_for_a_yes_that_sees_its_whole_arguments() {
    let setup = Setup::new();
    let model = scripted("mcp__fx__count", json!({"file": setup.file("asked.txt")})).await;
    setup.configure(&model.uri(), "");
    let out = output(setup.run()).await;
    let report = last_json(&out);
    let id = report["sessionId"].as_str().unwrap().to_string();
    assert_eq!(setup.lines("asked.txt"), 0, "the call ran before it was approved");
    assert_eq!(setup.servers_alive(), 0, "the server outlived the run that left its session waiting on a question");
    let mut show = setup.agentloop();
    show.args(["sessions", "show", &id, "--json"]);
    let shown = last_json(&output(show).await);
    let question = shown["pendingQuestion"]["request"]["message"].as_str().unwrap().to_string();
    assert!(question.contains("mcp__fx__count") && question.contains(&setup.file("asked.txt").display().to_string()), "{question}");
    let mut resume = setup.agentloop();
    resume.args(["sessions", "resume", &id, "--answer", "yes", "--json"]);
    let out = output(resume).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(last_json(&out)["summary"]["answer"], "The tool said: 1");
    assert_eq!(setup.lines("asked.txt"), 1);
}

/// Starts a run whose model calls `tool` (a long call), kills agentloop
/// with `kill -9` while the call is in flight, and returns the session id.
async fn killed_mid_call(setup: &Setup, tool: &'static str, arguments: Value) -> String {
    stopped_mid_call(setup, tool, arguments, libc::SIGKILL).await
}

/// Like `killed_mid_call`, with `signal` for the kill; checks no server is
/// left once agentloop has gone.
async fn stopped_mid_call(setup: &Setup, tool: &'static str, arguments: Value, signal: i32) -> String {
    let model = scripted(tool, arguments).await;
    setup.configure(&model.uri(), "approval = \"never\"");
    let mut run = setup.run();
    let mut child = run.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let t = Instant::now();
    while setup.servers_alive() == 0 || model.received_requests().await.unwrap_or_default().is_empty() {
        assert!(t.elapsed() < Duration::from_secs(60), "the call never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The model has asked for the call; give it a moment to be under way.
    tokio::time::sleep(Duration::from_millis(700)).await;
    // SAFETY: `kill` on a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    child.wait().unwrap();
    let gone = (0..40).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        setup.servers_alive() == 0
    });
    assert!(gone, "a server outlived the agentloop that was stopped by signal {signal}");
    let mut list = setup.agentloop();
    list.args(["sessions", "list", "--json"]);
    last_json(&output(list).await)[0]["id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_effect_cut_off_by_kill_9_is_asked_about_and_runs_once() {
    let setup = Setup::new();
    let id = killed_mid_call(&setup, "mcp__fx__slow_count", json!({"file": setup.file("slow.txt"), "millis": 4000})).await;
    assert_eq!(setup.lines("slow.txt"), 0);
    // Resumed, the session does not run the call again unasked…
    let mut resume = setup.agentloop();
    resume.args(["sessions", "resume", &id, "--json"]);
    let _ = output(resume).await;
    let mut show = setup.agentloop();
    show.args(["sessions", "show", &id, "--json"]);
    let shown = last_json(&output(show).await);
    assert_eq!(shown["pendingQuestion"]["request"]["kind"], "unresolved_intent", "{shown}");
    assert_eq!(shown["pendingQuestion"]["request"]["tool"], "mcp__fx__slow_count");
    assert_eq!(setup.lines("slow.txt"), 0);
    // …and runs it once when told to retry.
    setup.configure(&scripted("mcp__fx__slow_count", json!({"file": setup.file("slow.txt"), "millis": 100})).await.uri(), "approval = \"never\"");
    let mut resume = setup.agentloop();
    resume.args(["sessions", "resume", &id, "--answer", "retry", "--json"]);
    let out = output(resume).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(setup.lines("slow.txt"), 1);
    assert_eq!(setup.servers_alive(), 0);
}

/// Ctrl-C mid-call pauses the session at the step's end and agentloop
/// exits, taking its servers with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_mid_call_leaves_the_session_paused_and_no_server_behind() {
    let setup = Setup::new();
    let id = stopped_mid_call(&setup, "mcp__fx__slow", json!({"millis": 3000}), libc::SIGINT).await;
    let mut show = setup.agentloop();
    show.args(["sessions", "show", &id, "--json"]);
    let shown = last_json(&output(show).await);
    assert_eq!(shown["status"], "paused", "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_cut_off_by_kill_9_runs_again_on_resume_without_asking() {
    let setup = Setup::new();
    let id = killed_mid_call(&setup, "mcp__fx__slow", json!({"millis": 4000})).await;
    setup.configure(&scripted("mcp__fx__slow", json!({"millis": 300})).await.uri(), "approval = \"never\"");
    let mut resume = setup.agentloop();
    resume.args(["sessions", "resume", &id, "--json"]);
    let out = output(resume).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The journaled arguments are the ones that run again.
    assert_eq!(last_json(&out)["summary"]["answer"], "The tool said: worked 4000 ms");
}

/// `agentloop mcp` as an MCP client sees it: one rmcp client on its pipes.
async fn connect(setup: &Setup) -> (rmcp::service::RunningService<rmcp::RoleClient, ()>, tokio::process::Child) {
    use rmcp::ServiceExt;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentloop"));
    cmd.arg("--data-dir").arg(setup.dir.path()).arg("--config").arg(setup.dir.path().join("agentloop.toml")).arg("mcp");
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    (().serve((stdout, stdin)).await.unwrap(), child)
}

async fn call(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>, tool: &'static str, arguments: Value) -> Value {
    let params = rmcp::model::CallToolRequestParams::new(tool).with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let result = client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{tool}: {:?}", result.content);
    result.structured_content.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_the_agents_runs_one_and_follows_it_to_the_end() {
    let setup = Setup::new();
    let model = scripted("mcp__fx__echo", json!({"text": "from a tool"})).await;
    setup.configure(&model.uri(), "");
    let (client, _child) = connect(&setup).await;
    let listed = client.list_all_tools().await.unwrap();
    let status_tool = listed.iter().find(|t| t.name == "session_status").unwrap();
    let properties = status_tool.input_schema["properties"].as_object().unwrap();
    assert!(properties.contains_key("sessionId") && properties.contains_key("wait_s"), "{properties:?}");
    let tools: Vec<String> = listed.into_iter().map(|t| t.name.to_string()).collect();
    for tool in ["list_agents", "run_agent", "session_status", "answer", "pause", "resume", "terminate"] {
        assert!(tools.iter().any(|t| t == tool), "{tool} missing from {tools:?}");
    }
    let agents = call(&client, "list_agents", json!({})).await;
    let repl = agents["agents"].as_array().unwrap().iter().find(|a| a["name"] == "repl").unwrap();
    assert!(repl["inputSchema"]["properties"]["prompt"].is_object());

    let started = call(&client, "run_agent", json!({"agent": "repl", "input": {"prompt": "echo something", "folder": setup.dir.path().join("py")}})).await;
    let id = started["sessionId"].as_str().unwrap().to_string();
    let mut status = json!({});
    for _ in 0..20 {
        status = call(&client, "session_status", json!({"sessionId": id, "wait_s": 5})).await;
        if status["status"] == "completed" || !status["pendingQuestion"].is_null() {
            break;
        }
    }
    assert_eq!(status["status"], "completed", "{status}");
    assert_eq!(status["summary"]["answer"], "The tool said: from a tool");

    // Errors are tool results with one sentence, not broken connections.
    let params = rmcp::model::CallToolRequestParams::new("pause").with_arguments(json!({"sessionId": "nope"}).as_object().cloned().unwrap());
    let refused = client.call_tool(params).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert!(format!("{:?}", refused.content).contains("no session with id `nope`"));
    client.cancel().await.unwrap();
}

/// The Python SDK (PyPI `mcp`), which the set-up installs under `target/pydeps`.
fn python_sdk() -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let deps = root.join("target/pydeps");
    assert!(deps.join("mcp").is_dir(), "the Python MCP SDK is missing from {}: run scripts/setup.sh", deps.display());
    (deps, Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_python"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_served_by_the_python_sdk_are_called_by_our_client() {
    let (deps, scripts) = python_sdk();
    let setup = Setup::new();
    let model = scripted("mcp__py__note", json!({"file": setup.file("py.txt"), "text": "hello"})).await;
    setup.configure(&model.uri(), "approval = \"never\"");
    let table = format!(
        "\n[mcp_servers.py]\ncommand = \"python3\"\nargs = [\"{}\"]\nenv = {{ PYTHONPATH = \"{}\" }}\napproval = \"never\"\n",
        scripts.join("server.py").display(),
        deps.display()
    );
    let config = setup.dir.path().join("agentloop.toml");
    let text = std::fs::read_to_string(&config).unwrap() + &table;
    std::fs::write(&config, text).unwrap();
    let out = output(setup.run()).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(last_json(&out)["summary"]["answer"], "The tool said: 1");
    assert_eq!(std::fs::read_to_string(setup.file("py.txt")).unwrap(), "hello\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_drives_agentloop_mcp() {
    let (deps, scripts) = python_sdk();
    let setup = Setup::new();
    let model = scripted("mcp__fx__echo", json!({"text": "hi"})).await;
    setup.configure(&model.uri(), "");
    let mut client = Command::new("python3");
    client.arg(scripts.join("client.py")).arg(setup.dir.path().join("py")).arg(env!("CARGO_BIN_EXE_agentloop"));
    client.arg("--data-dir").arg(setup.dir.path()).arg("--config").arg(setup.dir.path().join("agentloop.toml")).env("PYTHONPATH", &deps);
    let out = output(client).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen = last_json(&out);
    assert!(seen["tools"].as_array().unwrap().iter().any(|t| t == "run_agent"), "{seen}");
    assert!(seen["agents"].as_array().unwrap().iter().any(|a| a == "coder"), "{seen}");
    assert_eq!(seen["status"]["status"], "completed", "{seen}");
    assert_eq!(seen["status"]["summary"]["answer"], "The tool said: hi");
}

/// A client that can ask its user is asked the session's approval itself,
/// with the call's whole arguments, on the handshake protocol (a request in
/// the call) and on the newest one (`input_required` rounds); its "yes"
/// lets the call run once, with no `answer` call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_can_ask_its_user_is_asked_the_approval_itself() {
    let (deps, scripts) = python_sdk();
    for (mode, protocol) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let setup = Setup::new();
        let model = scripted("mcp__fx__count", json!({"file": setup.file("asked.txt")})).await;
        setup.configure(&model.uri(), "");
        let mut client = Command::new("python3");
        client.arg(scripts.join("approve.py")).arg(mode).arg(setup.dir.path().join("py")).arg(env!("CARGO_BIN_EXE_agentloop"));
        client.arg("--data-dir").arg(setup.dir.path()).arg("--config").arg(setup.dir.path().join("agentloop.toml")).env("PYTHONPATH", &deps);
        let out = output(client).await;
        assert!(out.status.success(), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        let seen = last_json(&out);
        assert_eq!(seen["protocol"], protocol, "{seen}");
        let asked = seen["asked"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{mode}: one question, asked once: {seen}");
        let message = asked[0]["message"].as_str().unwrap();
        assert!(message.contains("mcp__fx__count") && message.contains(&setup.file("asked.txt").display().to_string()), "{mode}: {message}");
        assert_eq!(asked[0]["requestedSchema"]["properties"]["reply"]["enum"], json!(["yes", "no", "always"]), "{mode}: {seen}");
        assert_eq!(seen["status"]["status"], "completed", "{mode}: {seen}");
        assert_eq!(seen["status"]["summary"]["answer"], "The tool said: 1", "{mode}: {seen}");
        assert_eq!(setup.lines("asked.txt"), 1, "{mode}: the approved call ran once");
    }
}

/// `agentloop serve` on a free port: its base URL and token, and the
/// process (killed when dropped).
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(data: &Path) -> (Served, String, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .arg("--data-dir")
        .arg(data)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let url = first.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("no URL in: {first}"));
    let (base, token) = url.split_once("/login?token=").unwrap();
    (Served(child), base.to_string(), token.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_is_reached_with_the_token_its_table_names() {
    let other = tempfile::tempdir().unwrap();
    let (_served, base, token) = serve(other.path());
    let setup = Setup::new();
    let model = scripted("mcp__al__list_agents", json!({})).await;
    setup.configure(&model.uri(), "approval = \"never\"");
    let config = setup.dir.path().join("agentloop.toml");
    let table = format!("\n[mcp_servers.al]\nurl = \"{base}/mcp\"\nbearer_token_env = \"AL_TOKEN\"\n");
    std::fs::write(&config, std::fs::read_to_string(&config).unwrap() + &table).unwrap();

    let out = output(setup.run()).await;
    assert!(!out.status.success());
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("`AL_TOKEN`, which is not set"), "{said}");

    let mut run = setup.run();
    run.env("AL_TOKEN", &token);
    let out = output(run).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer = last_json(&out)["summary"]["answer"].as_str().unwrap().to_string();
    assert!(answer.starts_with("The tool said: ") && answer.contains("\"coder\""), "{answer}");
}

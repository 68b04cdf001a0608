//! The server over real HTTP on loopback, with the real planner driven by
//! a scripted model, a real SQLite store and a real workspace: every
//! route, bad input and wrong transitions, approvals, the SSE stream and
//! its resumption, the token and origin guard, two sessions at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use agentloop_agent::registry::Registry;
use agentloop_core::{ChatRequest, ChatResponse, Models, Store};
use agentloop_llm::ScriptedModel;
use agentloop_server::{router, ServerConfig};
use agentloop_store::SqliteStore;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};

struct Server {
    base: String,
    http: reqwest::Client,
    dir: tempfile::TempDir,
    db: std::path::PathBuf,
}

fn phase_of(req: &ChatRequest) -> &'static str {
    let system = &req.messages[0].content;
    let prompt = &req.messages.last().map(|m| m.content.as_str()).unwrap_or_default();
    if prompt.contains("Restate the goal") {
        "restate"
    } else if system.contains("You turn a goal into a checklist") {
        "checklist"
    } else if system.contains("You check finished work") {
        "verify"
    } else {
        "plan"
    }
}

/// The planner's model: a plan of two folders, met when verified.
fn planner_model(delay: Duration) -> ScriptedModel {
    planner_model_with(
        json!([{"step": 1, "action": "CREATE_DIR alpha", "expects": "a folder"}, {"step": 2, "action": "CREATE_DIR beta", "expects": "a folder"}]),
    )
    .delay(delay)
}

/// The planner's model with the plan's `steps`, met when verified.
fn planner_model_with(steps: Value) -> ScriptedModel {
    ScriptedModel::with(move |req| {
        Ok(ChatResponse::text(match phase_of(req) {
            "restate" => json!({"who": "the user", "what": "folders", "when": "now", "where": "the root", "why": "to test"}).to_string(),
            "checklist" => json!({"requirements": []}).to_string(),
            "verify" => json!({"evidence": "alpha", "done": true}).to_string(),
            _ => format!("<json>{}</json>", json!({"goal": "g", "thinking_summary": "t", "reflection": "", "ready": true, "plan": steps})),
        }))
    })
}

/// The agents that ship, as the binary puts them together.
fn standard() -> Registry {
    Registry::new()
        .with_spec::<agentloop_coder::Coder>()
        .with_spec::<agentloop_planner::Planner>()
        .with_spec::<agentloop_repl::Repl>()
        .with_spec::<agentloop_research::Research>()
}

async fn start_server(model: ScriptedModel, token: Option<&str>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agentloop.sqlite");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db, Default::default()).unwrap());
    let model = Arc::new(model);
    let config = ServerConfig {
        registry: Arc::new(standard()),
        reads: Arc::new(SqliteStore::open(&db, Default::default()).unwrap()),
        store,
        data_dir: dir.path().to_path_buf(),
        models: Arc::new(move || Ok(Models::new(model.clone()))),
        token: token.map(String::from),
        allowed_hosts: Vec::new(),
        sandbox: Default::default(),
        mcp_servers: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(config)).await });
    Server { base, http: reqwest::Client::new(), dir, db }
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let r = self.http.get(self.url(path)).send().await.unwrap();
        (r.status(), r.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let r = self.http.post(self.url(path)).json(&body).send().await.unwrap();
        (r.status(), r.json().await.unwrap_or(Value::Null))
    }

    /// A planner session on a fresh folder under the server's dir.
    async fn start_planner(&self, folder: &str, approve: &str) -> String {
        let root = self.dir.path().join(folder);
        std::fs::create_dir_all(&root).unwrap();
        let input = json!({"root": root, "goal": "Create the folders alpha and beta.", "approve": approve, "commandTimeoutSecs": 30});
        let (status, v) = self.post("/api/sessions", json!({"agent": "planner", "input": input})).await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        v["sessionId"].as_str().unwrap().to_string()
    }

    /// Polls the session until `done` holds for it.
    async fn until(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..300 {
            let (_, v) = self.get(&format!("/api/sessions/{id}")).await;
            if done(&v) {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("session {id} never got to: {what}");
    }

    /// Every SSE message until the stream ends: (id, data) pairs, the
    /// `end` event as id "end".
    async fn events(&self, id: &str, last_event_id: Option<u64>, stop_after: Option<usize>) -> Vec<(String, Value)> {
        let mut req = self.http.get(self.url(&format!("/api/sessions/{id}/events")));
        if let Some(last) = last_event_id {
            req = req.header("Last-Event-ID", last.to_string());
        }
        let mut body = req.send().await.unwrap().bytes_stream();
        let (mut out, mut buf) = (Vec::new(), String::new());
        while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(20), body.next()).await {
            buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            while let Some(at) = buf.find("\n\n") {
                let block: String = buf.drain(..at + 2).collect();
                let field = |name: &str| block.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()));
                let Some(data) = field("data:") else { continue };
                let id = if field("event:").as_deref() == Some("end") { "end".to_string() } else { field("id:").unwrap_or_default() };
                out.push((id.clone(), serde_json::from_str(&data).unwrap()));
                if id == "end" || stop_after.is_some_and(|n| out.len() >= n) {
                    return out;
                }
            }
        }
        out
    }
}

fn is_status(v: &Value, status: &str) -> bool {
    v["status"] == status
}

#[tokio::test]
async fn agents_are_listed_with_their_input_schema() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let (status, v) = s.get("/api/agents").await;
    assert_eq!(status, StatusCode::OK);
    let planner = v["agents"].as_array().unwrap().iter().find(|a| a["name"] == "planner").unwrap();
    assert!(planner["inputSchema"]["properties"]["goal"].is_object(), "{planner}");
    assert!(v["agents"].as_array().unwrap().iter().any(|a| a["name"] == "coder"));
}

#[tokio::test]
async fn a_session_started_over_http_runs_to_a_verified_end_and_reads_back_whole() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let id = s.start_planner("w", "all").await;
    let v = s.until(&id, "completed", |v| is_status(v, "completed")).await;
    assert_eq!(v["finishReason"], "goal_verified");
    assert!(s.dir.path().join("w/alpha").is_dir() && s.dir.path().join("w/beta").is_dir());
    assert!(!v["iterations"].as_array().unwrap().is_empty());
    assert!(v["summary"]["reachedGoal"].as_bool().unwrap());
    assert_eq!(v["task"], "Create the folders alpha and beta.");

    let (status, list) = s.get("/api/sessions?agent=planner&status=completed").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["total"], 1);
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str());
    let (_, none) = s.get("/api/sessions?agent=coder").await;
    assert_eq!(none["total"], 0);

    let export = s.http.get(s.url(&format!("/api/sessions/{id}/export"))).send().await.unwrap().text().await.unwrap();
    let first: Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "session");
    assert!(export.lines().any(|l| l.contains("\"type\":\"tool_call\"")));

    let r = s.http.delete(s.url(&format!("/api/sessions/{id}"))).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(s.get(&format!("/api/sessions/{id}")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_input_unknown_ids_and_wrong_transitions_get_one_sentence_and_a_4xx() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let bad = s.http.post(s.url("/api/sessions")).body("{not json").header("content-type", "application/json").send().await.unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert!(bad.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("not the JSON"));
    let (status, v) = s.post("/api/sessions", json!({"agent": "nobody", "input": {}})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(v["error"].as_str().unwrap().contains("no agent named `nobody`"), "{v}");
    let (status, v) = s.post("/api/sessions", json!({"agent": "planner", "input": {"goal": 3}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    for path in ["/api/sessions/nope", "/api/sessions/nope/export", "/api/sessions/nope/events"] {
        assert_eq!(s.get(path).await.0, StatusCode::NOT_FOUND, "{path}");
    }
    for path in ["pause", "resume", "terminate", "complete"] {
        assert_eq!(s.post(&format!("/api/sessions/nope/{path}"), json!({})).await.0, StatusCode::NOT_FOUND, "{path}");
    }
    let (status, v) = s.get("/api/nothing-here").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(v["error"].as_str().unwrap().contains("no such route"), "{v}");
    let (status, v) = s.get("/api/sessions?status=sleeping").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(v["error"].as_str().unwrap().contains("not a session status"));

    let id = s.start_planner("w", "all").await;
    s.until(&id, "completed", |v| is_status(v, "completed")).await;
    for path in ["pause", "resume", "terminate"] {
        let (status, v) = s.post(&format!("/api/sessions/{id}/{path}"), json!({})).await;
        assert_eq!(status, StatusCode::CONFLICT, "{path} on a completed session: {v}");
        assert!(v["error"].as_str().unwrap().contains("completed already"), "{v}");
    }
    let (status, v) = s.post(&format!("/api/sessions/{id}/answer"), json!({"interruptId": "1.0", "reply": "yes"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(v["error"].as_str().unwrap().contains("waits on no question"), "{v}");
}

#[tokio::test]
async fn an_approval_lets_the_session_go_on_and_a_decline_sends_it_back_to_plan() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let id = s.start_planner("w", "ask").await;
    let v = s.until(&id, "a question", |v| !v["pending"].is_null()).await;
    assert!(v["pending"]["question"].as_str().unwrap().contains("CREATE_DIR alpha"), "the question shows what would run: {v}");
    assert!(!s.dir.path().join("w/alpha").exists(), "nothing ran before the approval");
    let first = v["pending"]["id"].as_str().unwrap().to_string();
    let (status, v) = s.post(&format!("/api/sessions/{id}/answer"), json!({"interruptId": first, "reply": "call them a and b"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{v}");
    let v = s.until(&id, "the next plan's question", |v| v["pending"]["id"].as_str().is_some_and(|p| p != first)).await;
    let again = v["pending"]["id"].as_str().unwrap().to_string();
    let (status, v) = s.post(&format!("/api/sessions/{id}/answer"), json!({"interruptId": first, "reply": "all"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "an answered question cannot be answered again: {v}");
    let (status, _) = s.post(&format!("/api/sessions/{id}/answer"), json!({"interruptId": again, "reply": "all"})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let v = s.until(&id, "completed", |v| is_status(v, "completed")).await;
    assert_eq!(v["progress"]["iterations"], 2, "the decline cost a plan: {}", v["progress"]);
    assert!(s.dir.path().join("w/alpha").is_dir());
}

#[tokio::test]
async fn pause_resume_and_each_way_to_end_a_session() {
    let s = start_server(planner_model(Duration::from_millis(400)), None).await;
    let id = s.start_planner("w", "all").await;
    s.until(&id, "running", |v| is_status(v, "running")).await;
    assert_eq!(s.post(&format!("/api/sessions/{id}/pause"), json!({})).await.0, StatusCode::ACCEPTED);
    s.until(&id, "paused", |v| is_status(v, "paused")).await;
    assert_eq!(s.post(&format!("/api/sessions/{id}/resume"), json!({})).await.0, StatusCode::ACCEPTED);
    s.until(&id, "completed", |v| is_status(v, "completed")).await;

    for (ending, status, reason) in [
        ("completed", "completed", "user_confirmed"),
        ("failed", "terminated", "failed"),
        ("terminated", "terminated", "terminated"),
        ("stuck", "error", "stuck"),
    ] {
        let id = s.start_planner(ending, "all").await;
        s.until(&id, "running", |v| is_status(v, "running")).await;
        let route = if ending == "completed" { "complete" } else { "terminate" };
        let (code, v) = s.post(&format!("/api/sessions/{id}/{route}"), json!({"ending": ending, "reason": "seen enough"})).await;
        assert_eq!(code, StatusCode::ACCEPTED, "{v}");
        let v = s.until(&id, status, |v| is_status(v, status)).await;
        assert_eq!(v["finishReason"], reason, "{ending}");
    }
    let (code, v) = s.post(&format!("/api/sessions/{id}/terminate"), json!({"ending": "exploded"})).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "an unknown ending: {v}");
}

#[tokio::test]
async fn the_event_stream_resumes_after_a_dropped_connection_losing_and_repeating_nothing() {
    let s = start_server(planner_model(Duration::from_millis(50)), None).await;
    let id = s.start_planner("w", "all").await;
    let head = s.events(&id, None, Some(5)).await;
    assert_eq!(head.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(), ["1", "2", "3", "4", "5"]);
    let rest = s.events(&id, Some(5), None).await;
    let (end, ids) = rest.split_last().unwrap();
    assert_eq!(end.0, "end", "the stream ends once the session has");
    assert_eq!(end.1["status"], "completed");
    let seqs: Vec<u64> = ids.iter().map(|(i, _)| i.parse().unwrap()).collect();
    assert_eq!(seqs, (6..6 + seqs.len() as u64).collect::<Vec<_>>(), "contiguous from where it left off");
    assert!(ids.iter().all(|(i, e)| e["seq"] == i.parse::<u64>().unwrap()), "each event's id is its sequence number");
    assert_eq!(ids.last().unwrap().1["name"], "agent:session:complete");
    let whole = s.events(&id, None, None).await;
    assert_eq!(whole.len(), 5 + rest.len(), "a finished session's stream is its whole history, then the end");
}

#[tokio::test]
async fn two_sessions_run_at_once() {
    let s = start_server(planner_model(Duration::from_millis(100)), None).await;
    let a = s.start_planner("a", "all").await;
    let b = s.start_planner("b", "all").await;
    let running = s.http.delete(s.url(&format!("/api/sessions/{a}"))).send().await.unwrap();
    assert_eq!(running.status(), StatusCode::CONFLICT, "a running session is not deleted");
    let (_, list) = s.get("/api/sessions").await;
    assert_eq!(list["total"], 2);
    assert!(list["sessions"].as_array().unwrap().iter().all(|r| r["live"] == true || r["status"] == "completed"));
    for id in [&a, &b] {
        s.until(id, "completed", |v| is_status(v, "completed")).await;
    }
    assert!(s.dir.path().join("a/alpha").is_dir() && s.dir.path().join("b/beta").is_dir());
}

#[tokio::test]
async fn with_a_token_every_request_needs_it_and_no_other_site_may_change_anything() {
    let s = start_server(planner_model(Duration::ZERO), Some("s3cret")).await;
    let (status, v) = s.get("/api/agents").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(v["error"].as_str().unwrap().contains("token"));
    let ok = s.http.get(s.url("/api/agents")).bearer_auth("s3cret").send().await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(s.http.get(s.url("/api/agents")).bearer_auth("guess").send().await.unwrap().status(), StatusCode::UNAUTHORIZED);

    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let login = no_redirects.get(s.url("/login?token=s3cret")).send().await.unwrap();
    let cookie = login.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.starts_with("agentloop_token=s3cret"), "{cookie}");
    let with_cookie = s.http.get(s.url("/api/agents")).header("cookie", "agentloop_token=s3cret").send().await.unwrap();
    assert_eq!(with_cookie.status(), StatusCode::OK);
    assert_eq!(no_redirects.get(s.url("/login?token=nope")).send().await.unwrap().status(), StatusCode::UNAUTHORIZED);

    let host = s.base.trim_start_matches("http://").to_string();
    let evil = s.http.post(s.url("/api/sessions")).bearer_auth("s3cret").header("origin", "http://evil.example").json(&json!({})).send().await.unwrap();
    assert_eq!(evil.status(), StatusCode::FORBIDDEN);
    let cross = s.http.post(s.url("/api/sessions/x/pause")).bearer_auth("s3cret").header("sec-fetch-site", "cross-site").send().await.unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    let same = s
        .http
        .post(s.url("/api/sessions"))
        .bearer_auth("s3cret")
        .header("origin", format!("http://{host}"))
        .json(&json!({"agent": "nobody"}))
        .send()
        .await
        .unwrap();
    assert_eq!(same.status(), StatusCode::NOT_FOUND, "the same origin gets through to the route");
}

/// No page of another site may frame the UI (clickjacking): every
/// response says so, refusals and the pages alike.
#[tokio::test]
async fn every_response_forbids_framing() {
    let s = start_server(planner_model(Duration::ZERO), Some("s3cret")).await;
    let refused = s.http.get(s.url("/api/agents")).send().await.unwrap();
    let page = s.http.get(s.url("/")).bearer_auth("s3cret").send().await.unwrap();
    let api = s.http.get(s.url("/api/agents")).bearer_auth("s3cret").send().await.unwrap();
    for r in [refused, page, api] {
        assert_eq!(r.headers()["x-frame-options"], "DENY", "{}", r.url());
        assert!(r.headers()["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"), "{}", r.url());
    }
}

#[tokio::test]
async fn the_web_ui_is_served_from_the_binary() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let page = s.http.get(s.url("/")).send().await.unwrap();
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    assert!(page.text().await.unwrap().contains("/ui/app.js"));
    assert_eq!(s.http.get(s.url("/ui/app.js")).send().await.unwrap().status(), StatusCode::OK);
    assert_eq!(s.http.get(s.url("/ui/secret.txt")).send().await.unwrap().status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_session_another_process_runs_on_the_same_store_is_followed_live() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    // Another process: its own store on the same file, its own runner.
    let other: Arc<dyn Store> = Arc::new(SqliteStore::open(&s.db, Default::default()).unwrap());
    let env = agentloop_agent::registry::AgentEnv {
        store: other,
        models: Models::new(Arc::new(planner_model(Duration::from_millis(150)))),
        data_dir: s.dir.path().to_path_buf(),
        tokens: None,
        sandbox: Default::default(),
        mcp_servers: Default::default(),
        preparing: None,
    };
    let root = s.dir.path().join("cli");
    std::fs::create_dir_all(&root).unwrap();
    let input = json!({"root": root, "goal": "Create the folders alpha and beta.", "approve": "all"});
    let registry = standard();
    let handle = registry.get("planner").unwrap().start(&env, &input, Default::default()).unwrap();
    let id = handle.id().to_string();
    let (_, list) = s.get("/api/sessions").await;
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str());
    assert_eq!(list["sessions"][0]["live"], false, "not run by the server");
    // Steered through the store: the other process pauses, then goes on.
    let (status, v) = s.post(&format!("/api/sessions/{id}/pause"), json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{v}");
    s.until(&id, "paused", |v| is_status(v, "paused")).await;
    let (status, v) = s.post(&format!("/api/sessions/{id}/resume"), json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{v}");
    let events = s.events(&id, None, None).await;
    let (end, seen) = events.split_last().unwrap();
    assert_eq!(end.1["status"], "completed", "followed to the end by polling the store");
    assert_eq!(seen.len() as u64, seen.last().unwrap().1["seq"].as_u64().unwrap(), "every event, none twice");
    handle.wait().await.unwrap();
}

/// Another process runs a session: the server will not resume it too. Once
/// that process is gone (its run stopped, its lease with it, the session
/// still stored as running) the session reads as interrupted and the
/// server takes it up to the end.
#[tokio::test]
async fn a_session_whose_process_died_is_interrupted_and_taken_up_here() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let other: Arc<dyn Store> = Arc::new(SqliteStore::open(&s.db, Default::default()).unwrap());
    // A model slow enough that the session is still running when it is looked at.
    let models = Models::new(Arc::new(planner_model(Duration::from_secs(3))));
    let env = agentloop_agent::registry::AgentEnv {
        store: other,
        models,
        data_dir: s.dir.path().to_path_buf(),
        tokens: None,
        sandbox: Default::default(),
        mcp_servers: Default::default(),
        preparing: None,
    };
    let root = s.dir.path().join("elsewhere");
    std::fs::create_dir_all(&root).unwrap();
    let input = json!({"root": root, "goal": "Create the folders alpha and beta.", "approve": "all"});
    let handle = standard().get("planner").unwrap().start(&env, &input, Default::default()).unwrap();
    let id = handle.id().to_string();
    // Passed on to the process that runs it, not run here too.
    let (status, v) = s.post(&format!("/api/sessions/{id}/resume"), json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{v}");
    let (_, v) = s.get(&format!("/api/sessions/{id}")).await;
    assert_eq!((v["interrupted"].as_bool(), v["live"].as_bool()), (Some(false), Some(false)), "{v}");

    // The process dies mid-run: its task stops and its lease is gone.
    handle.abort();
    tokio::time::sleep(Duration::from_millis(100)).await;
    rusqlite::Connection::open(&s.db).unwrap().execute("DELETE FROM leases", []).unwrap();
    let (_, list) = s.get("/api/sessions").await;
    assert_eq!(list["sessions"][0]["interrupted"], true, "{list}");
    assert_eq!(list["sessions"][0]["status"], "running");
    let (status, v) = s.post(&format!("/api/sessions/{id}/terminate"), json!({"ending": "terminated", "reason": "enough"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{v}");
    let v = s.until(&id, "terminated", |v| is_status(v, "terminated")).await;
    assert_eq!(v["interrupted"], false);
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_in_a_sentence() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let huge = json!({"agent": "planner", "input": {"goal": "x".repeat(300 * 1024)}});
    let r = s.http.post(s.url("/api/sessions")).json(&huge).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("256 KiB"), "{v}");
}

/// A page on another site that re-points its own name at this machine
/// (DNS rebinding) sends that name as the host, and its origin matches it.
#[tokio::test]
async fn a_rebound_name_a_plain_text_body_and_a_call_log_from_the_api_are_refused() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let port = s.base.rsplit(':').next().unwrap().to_string();
    let marker = s.dir.path().join("rebound");
    let input = json!({"agent": "planner", "input": {"root": s.dir.path(), "goal": "g", "approve": "all"}});
    let rebound = s
        .http
        .post(s.url("/api/sessions"))
        .header("host", format!("evil.example:{port}"))
        .header("origin", format!("http://evil.example:{port}"))
        .header("content-type", "text/plain")
        .body(input.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), StatusCode::MISDIRECTED_REQUEST);
    assert!(rebound.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("--allow-host"));
    let read = s.http.get(s.url("/api/sessions")).header("host", format!("evil.example:{port}")).send().await.unwrap();
    assert_eq!(read.status(), StatusCode::MISDIRECTED_REQUEST, "reads are refused too");
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let ok = s.http.get(s.url("/api/agents")).header("host", host.clone()).send().await.unwrap();
        assert_eq!(ok.status(), StatusCode::OK, "{host}");
    }

    let plain = s.http.post(s.url("/api/sessions")).header("content-type", "text/plain").body(input.to_string()).send().await.unwrap();
    assert_eq!(plain.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let untyped = s.http.post(s.url("/api/sessions/x/pause")).send().await.unwrap();
    assert_eq!(untyped.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "a POST without a type is refused too");

    // The engine benchmark's loop, which appends to a file outside any
    // sandbox, is the bench tool's agent, never the server's.
    let (status, v) = s.post("/api/sessions", json!({"agent": "bench-engine", "input": {"iterations": 1, "calls": true, "callLog": marker}})).await;
    assert!(status.is_client_error(), "{status}: {v}");
    assert!(v["error"].as_str().unwrap().contains("no agent named `bench-engine`"), "{v}");
    assert!(!marker.exists());
    assert_eq!(s.http.get(s.url("/api/sessions")).send().await.unwrap().json::<Value>().await.unwrap()["total"], 0, "nothing was started");
}

#[tokio::test]
async fn an_input_given_as_json_is_filled_in_and_checked_like_flags() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let ws = s.dir.path().join("calc");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        ws.join("test_calc.py"),
        "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    let (status, v) = s.post("/api/sessions", json!({"agent": "coder", "input": {"workspace": ws, "task": "keep add working"}})).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let (_, session) = s.get(&format!("/api/sessions/{}", v["sessionId"].as_str().unwrap())).await;
    assert!(session["input"]["testCommand"].as_str().unwrap().contains("unittest"), "detected: {}", session["input"]);
    assert_eq!(session["input"]["maxIterations"], agentloop_coder::CoderSettings::default().max_iterations, "a number left out takes its default");
    let (status, v) = s.post("/api/sessions", json!({"agent": "planner", "input": {"root": s.dir.path().join("missing"), "goal": "x"}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"].as_str().unwrap().contains("missing"), "{v}");
}

#[tokio::test]
async fn the_list_stream_sends_each_session_then_its_changes_and_removals() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let id = s.start_planner("w", "all").await;
    s.until(&id, "completed", |v| is_status(v, "completed")).await;
    let mut body = s.http.get(s.url("/api/events")).send().await.unwrap().bytes_stream();
    let mut text = String::new();
    let (kind, row) = next_named(&mut body, &mut text).await;
    assert_eq!((kind.as_str(), row["sessionId"].as_str(), row["status"].as_str()), ("session", Some(id.as_str()), Some("completed")));
    s.http.delete(s.url(&format!("/api/sessions/{id}"))).send().await.unwrap();
    let (kind, gone) = next_named(&mut body, &mut text).await;
    assert_eq!((kind.as_str(), gone["sessionId"].as_str()), ("removed", Some(id.as_str())));
}

/// The next SSE message that has an event name: (name, data).
async fn next_named<S, B, E>(body: &mut S, text: &mut String) -> (String, Value)
where
    S: futures::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Debug,
{
    loop {
        if let Some(at) = text.find("\n\n") {
            let block: String = text.drain(..at + 2).collect();
            let field = |name: &str| block.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()));
            if let (Some(kind), Some(data)) = (field("event:"), field("data:")) {
                return (kind, serde_json::from_str(&data).unwrap());
            }
            continue;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next()).await.unwrap().unwrap().unwrap();
        text.push_str(&String::from_utf8_lossy(chunk.as_ref()));
    }
}

#[tokio::test]
async fn a_session_asked_for_with_queue_is_stored_for_a_worker_and_not_run_here() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let root = s.dir.path().join("queued");
    std::fs::create_dir_all(&root).unwrap();
    let input = json!({"root": root, "goal": "Create the folders alpha and beta.", "approve": "all", "commandTimeoutSecs": 30});
    let (status, v) = s.post("/api/sessions", json!({"agent": "planner", "input": input, "queue": true})).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    assert_eq!(v["queued"], true);
    let id = v["sessionId"].as_str().unwrap().to_string();
    let (_, session) = s.get(&format!("/api/sessions/{id}")).await;
    assert_eq!((session["status"].as_str(), session["live"].as_bool()), (Some("idle"), Some(false)), "{session}");
    // A worker (here, another store on the same file) claims it and runs it to the end.
    let worker: Arc<dyn Store> = Arc::new(SqliteStore::open(&s.db, Default::default()).unwrap());
    assert_eq!(worker.claim().unwrap().as_deref(), Some(id.as_str()));
    let env = agentloop_agent::registry::AgentEnv {
        store: worker.clone(),
        models: Models::new(Arc::new(planner_model(Duration::ZERO))),
        data_dir: s.dir.path().to_path_buf(),
        tokens: None,
        sandbox: Default::default(),
        mcp_servers: Default::default(),
        preparing: None,
    };
    let registry = standard();
    let meta = worker.load(&id).unwrap().meta;
    let out = registry.resume(&env, &meta, true).unwrap().wait().await.unwrap();
    assert_eq!(out.status, agentloop_core::SessionStatus::Completed);
    s.until(&id, "completed", |v| is_status(v, "completed")).await;
    assert!(root.join("alpha").is_dir() && root.join("beta").is_dir(), "the worker ran the plan");
}

/// One JSON-RPC message to `/mcp` in MCP's streamable HTTP wire format;
/// the answer's JSON, whether sent as JSON or as one server-sent event.
async fn mcp_post(server: &Server, token: Option<&str>, session: Option<&str>, body: Value) -> (StatusCode, Option<String>, Value) {
    let mut req = server.http.post(server.url("/mcp")).header("accept", "application/json, text/event-stream").json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(s) = session {
        req = req.header("mcp-session-id", s).header("mcp-protocol-version", "2025-06-18");
    }
    let r = req.send().await.unwrap();
    let (status, session) = (r.status(), r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(String::from));
    let text = r.text().await.unwrap();
    let json =
        text.lines().filter_map(|l| l.strip_prefix("data:")).find_map(|d| serde_json::from_str(d.trim()).ok()).or_else(|| serde_json::from_str(&text).ok());
    (status, session, json.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_mcp_endpoint_runs_an_agent_behind_the_same_token_and_origin_rules() {
    let server = start_server(planner_model(Duration::ZERO), Some("sekrit")).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let (status, _, _) = mcp_post(&server, None, None, init.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let cross = server.http.post(server.url("/mcp")).bearer_auth("sekrit").header("origin", "http://evil.example").json(&init).send().await.unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);

    let (status, session, answer) = mcp_post(&server, Some("sekrit"), None, init).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["result"]["serverInfo"]["name"], "agentloop");
    let session = session.unwrap();
    mcp_post(&server, Some("sekrit"), Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    let call =
        |id: u64, name: &str, arguments: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let root = server.dir.path().join("via-mcp");
    std::fs::create_dir_all(&root).unwrap();
    let input = json!({"root": root, "goal": "Create the folders alpha and beta.", "approve": "all", "commandTimeoutSecs": 30});
    let (_, _, started) = mcp_post(&server, Some("sekrit"), Some(&session), call(2, "run_agent", json!({"agent": "planner", "input": input}))).await;
    let id = started["result"]["structuredContent"]["sessionId"].as_str().unwrap_or_else(|| panic!("{started}")).to_string();
    let mut status = Value::Null;
    for n in 3..40 {
        let (_, _, got) = mcp_post(&server, Some("sekrit"), Some(&session), call(n, "session_status", json!({"sessionId": id, "wait_s": 2}))).await;
        status = got["result"]["structuredContent"].clone();
        if status["status"] == "completed" {
            break;
        }
    }
    assert_eq!(status["status"], "completed", "{status}");
    assert!(root.join("alpha").is_dir() && root.join("beta").is_dir());
}

/// A command that prints a database URL with its password, or a token: the
/// events the server streams carry neither (the journal keeps them, for
/// the user alone).
#[tokio::test]
async fn streamed_events_carry_no_credentials() {
    let model = planner_model_with(json!([
        {"step": 1, "action": "RUN_COMMAND echo postgres://app:hunter2secret@db/app ghp_abcdefghijklmnopqrstuvwx", "expects": "printed"},
        {"step": 2, "action": "CREATE_DIR alpha", "expects": "a folder"},
        {"step": 3, "action": "CREATE_DIR beta", "expects": "a folder"}
    ]));
    let s = start_server(model, None).await;
    let id = s.start_planner("leaky", "all").await;
    let events = s.events(&id, None, None).await;
    let text = serde_json::to_string(&events.iter().map(|(_, v)| v).collect::<Vec<_>>()).unwrap();
    assert!(text.contains("postgres://[REDACTED]@db/app"), "the step's output is streamed, blotted: {text}");
    assert!(!text.contains("hunter2secret") && !text.contains("ghp_abcdefghijklmnopqrstuvwx"), "{text}");
}

/// Rewind and fork over HTTP and MCP, with the CLI's checks: the session's
/// own folder changes only when confirmed, a fork runs here in a folder
/// of its own and names its parent.
#[tokio::test]
async fn a_session_is_rewound_and_forked_over_http_and_mcp() {
    let s = start_server(planner_model(Duration::ZERO), None).await;
    let id = s.start_planner("w", "all").await;
    let v = s.until(&id, "completed", |v| is_status(v, "completed")).await;
    let steps: Vec<u64> = v["checkpoints"].as_array().unwrap().iter().map(|c| c["step"].as_u64().unwrap()).collect();
    let (first, last) = (steps[0], *steps.last().unwrap());
    assert_eq!(first, 0, "{steps:?}");
    let root = s.dir.path().join("w");

    let (status, asked) = s.post(&format!("/api/sessions/{id}/rewind"), json!({"step": 0})).await;
    assert_eq!(status, StatusCode::OK, "{asked}");
    assert_eq!(asked["applied"], false);
    assert!(root.join("alpha").is_dir(), "nothing changes unconfirmed");
    let (status, done) = s.post(&format!("/api/sessions/{id}/rewind"), json!({"step": 0, "confirm": true})).await;
    assert_eq!((status, &done["applied"]), (StatusCode::OK, &json!(true)), "{done}");
    let (status, missing) = s.post(&format!("/api/sessions/{id}/rewind"), json!({"step": 9999, "confirm": true})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");

    // Forked at the end, into a folder of its own: the outcome's files are there.
    let elsewhere = s.dir.path().join("fork");
    let (status, forked) = s.post(&format!("/api/sessions/{id}/fork"), json!({"step": last, "workspace": elsewhere, "hint": "again"})).await;
    assert_eq!(status, StatusCode::CREATED, "{forked}");
    let fork = forked["sessionId"].as_str().unwrap().to_string();
    let v = s.until(&fork, "ended", |v| matches!(v["status"].as_str(), Some("completed" | "terminated" | "error"))).await;
    assert_eq!(v["forkedFrom"], json!({"sessionId": id, "step": last}));
    assert!(elsewhere.join("alpha").is_dir() && elsewhere.join("beta").is_dir());
    let (status, busy) = s.post(&format!("/api/sessions/{id}/fork"), json!({"step": last, "workspace": elsewhere})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a folder that is not empty is refused: {busy}");

    // The same over MCP, into the session's own folder: asked first, then confirmed.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let (_, session, _) = mcp_post(&s, None, None, init).await;
    let session = session.unwrap();
    mcp_post(&s, None, Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let call =
        |n: u64, arguments: Value| json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "fork_session", "arguments": arguments}});
    let (_, _, asked) = mcp_post(&s, None, Some(&session), call(2, json!({"sessionId": id, "step": last}))).await;
    assert_eq!(asked["result"]["structuredContent"]["forked"], false, "{asked}");
    assert!(!root.join("alpha").exists());
    let (_, _, started) = mcp_post(&s, None, Some(&session), call(3, json!({"sessionId": id, "step": last, "confirm": true}))).await;
    let mcp_fork = started["result"]["structuredContent"]["sessionId"].as_str().unwrap_or_else(|| panic!("{started}")).to_string();
    assert!(root.join("alpha").is_dir(), "the step's files are back in the session's own folder");
    s.until(&mcp_fork, "ended", |v| matches!(v["status"].as_str(), Some("completed" | "terminated" | "error"))).await;
}

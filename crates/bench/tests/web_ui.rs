//! The web UI end to end: a real `agentloop serve` whose planner sessions
//! talk to a fake OpenAI-compatible endpoint (the real wire format, served
//! locally), driven in Debian's headless Chromium through `chromedriver`
//! (the set-up installs both). Each state is saved as a screenshot under
//! `target/web-ui/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const GOAL: &str = "Read big.txt, then create the folders alpha and beta.";
/// Long enough that the UI shortens the tool call's output.
fn big_text() -> String {
    let mut s: String = (0..40).map(|i| format!("line {i} of the big file\n")).collect();
    s.push_str("THE-END-OF-BIG");
    s
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Kills the child when the test ends, however it ends.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn chat(content: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_json(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }))
        .set_delay(Duration::from_millis(600))
}

/// The planner's model behind the fake endpoint, told apart by the schema
/// each request asks for.
async fn fake_endpoint() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let props = body["response_format"]["json_schema"]["schema"]["properties"].clone();
            chat(if props.get("who").is_some() {
                json!({"who": "the user", "what": "folders", "when": "now", "where": "the root", "why": "to test"}).to_string()
            } else if props.get("requirements").is_some() {
                json!({"requirements": []}).to_string()
            } else if props.get("done").is_some() {
                // Done when the view shows the folder the plan makes (the root before it does not).
                let prompt = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or_default().to_string();
                json!({"evidence": "alpha", "done": prompt.contains("- alpha/")}).to_string()
            } else if props.get("plan").is_some() {
                let steps = json!([
                    {"step": 1, "action": "READ_FILE big.txt", "expects": "its text"},
                    {"step": 2, "action": "CREATE_DIR alpha", "expects": "a folder"},
                    {"step": 3, "action": "CREATE_DIR beta", "expects": "a folder"}]);
                format!("<json>{}</json>", json!({"goal": "g", "thinking_summary": "t", "reflection": "", "ready": true, "plan": steps}))
            } else {
                "fine".to_string()
            })
        })
        .mount(&server)
        .await;
    server
}

/// A minimal W3C WebDriver client.
struct Browser {
    http: reqwest::Client,
    base: String,
    shots: PathBuf,
}

impl Browser {
    async fn open(driver: &str, shots: PathBuf) -> Self {
        let http = reqwest::Client::new();
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]}}}});
        let r: Value = http.post(format!("{driver}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
        let id = r["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("chromedriver did not start a browser: {r}")).to_string();
        std::fs::create_dir_all(&shots).unwrap();
        Self { http, base: format!("{driver}/session/{id}"), shots }
    }

    async fn cmd(&self, verb: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let req = if verb == "GET" { self.http.get(url) } else { self.http.post(url).json(&body) };
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        if v["value"].get("error").is_some() {
            panic!("webdriver {path}: {}", v["value"]);
        }
        v["value"].clone()
    }

    async fn go(&self, url: &str) {
        self.cmd("POST", "/url", json!({"url": url})).await;
    }

    async fn js(&self, script: &str) -> Value {
        self.cmd("POST", "/execute/sync", json!({"script": script, "args": []})).await
    }

    /// Waits until `script` returns something truthy, and returns it.
    async fn until(&self, what: &str, script: &str) -> Value {
        let start = Instant::now();
        loop {
            let v = self.js(script).await;
            if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
                return v;
            }
            if start.elapsed() > Duration::from_secs(40) {
                self.shot("timeout").await;
                panic!("the page never showed: {what}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the element `css` names, finding it again if the page
    /// redrew it between the find and the click, and waiting while it is in
    /// the page but not shown yet (an overlay that is still opening).
    async fn click(&self, css: &str) {
        for _ in 0..50 {
            let el = self.cmd("POST", "/element", json!({"using": "css selector", "value": css})).await;
            let id = el.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).unwrap().to_string();
            let v: Value = self.http.post(format!("{}/element/{id}/click", self.base)).json(&json!({})).send().await.unwrap().json().await.unwrap();
            match v["value"]["error"].as_str() {
                None => return,
                Some("stale element reference" | "element not interactable") => tokio::time::sleep(Duration::from_millis(100)).await,
                Some(_) => panic!("webdriver click {css}: {}", v["value"]),
            }
        }
        panic!("{css} kept being redrawn or stayed hidden for 5 s");
    }

    async fn type_into(&self, css: &str, text: &str) {
        let el = self.cmd("POST", "/element", json!({"using": "css selector", "value": css})).await;
        let id = el.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).unwrap().to_string();
        self.cmd("POST", &format!("/element/{id}/clear"), json!({})).await;
        self.cmd("POST", &format!("/element/{id}/value"), json!({"text": text})).await;
    }

    async fn shot(&self, name: &str) {
        let b64 = self.cmd("GET", "/screenshot", json!({})).await;
        std::fs::write(self.shots.join(format!("{name}.png")), base64_decode(b64.as_str().unwrap())).unwrap();
    }

    /// The text of the dialog the page opened, once it is open.
    async fn dialog(&self) -> String {
        for _ in 0..200 {
            let v: Value = self.http.get(format!("{}/alert/text", self.base)).send().await.unwrap().json().await.unwrap();
            if let Some(text) = v["value"].as_str() {
                return text.to_string();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the page opened no dialog in 20 s");
    }

    async fn step_text(&self) -> String {
        self.js("return (document.querySelector('#step')||{}).textContent||''").await.as_str().unwrap().to_string()
    }

    async fn status(&self) -> String {
        self.js("const s=document.querySelector('.progress .status');return s?s.dataset.status:''").await.as_str().unwrap().to_string()
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let clean: Vec<u8> = s.bytes().filter(|c| !matches!(c, b'=' | b'\n' | b'\r')).collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let v: Vec<u32> = chunk.iter().map(|c| u32::from(value(*c))).collect();
        let n = v.iter().enumerate().fold(0u32, |acc, (i, x)| acc | (x << (18 - 6 * i)));
        out.extend(n.to_be_bytes()[1..chunk.len()].iter());
    }
    out
}

fn workspace(dir: &Path, name: &str) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("big.txt"), big_text()).unwrap();
    root
}

async fn start_planner(http: &reqwest::Client, base: &str, root: &Path, approve: &str) -> String {
    let body = json!({"agent": "planner", "input": {"root": root, "goal": GOAL, "approve": approve}});
    let r: Value = http.post(format!("{base}/api/sessions")).json(&body).send().await.unwrap().json().await.unwrap();
    r["sessionId"].as_str().unwrap_or_else(|| panic!("{r}")).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_ui_watches_steers_and_starts_sessions_live() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = fake_endpoint().await;
    let config = dir.path().join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n", endpoint.uri())).unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_agentloop-bench"))
        .args(["agentloop", "--data-dir", dir.path().to_str().unwrap(), "--config", config.to_str().unwrap(), "serve", "--addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The first line is the login URL with this start's token, on loopback too.
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(serve.stdout.take().unwrap()), &mut first).unwrap();
    let _server = Killed(serve);
    let login = first.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("no login URL in {first:?}")).to_string();
    let token = login.split("token=").nth(1).unwrap().to_string();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
    let http = reqwest::Client::builder().default_headers(headers).build().unwrap();
    let driver_port = free_port();
    let _driver = Killed(Command::new("chromedriver").arg(format!("--port={driver_port}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    for _ in 0..100 {
        let up = http.get(format!("{base}/api/agents")).send().await.is_ok() && http.get(format!("http://127.0.0.1:{driver_port}/status")).send().await.is_ok();
        if up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(reqwest::get(format!("{base}/api/agents")).await.unwrap().status(), reqwest::StatusCode::UNAUTHORIZED, "no token, no answer");
    let shots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/web-ui");
    let b = Browser::open(&format!("http://127.0.0.1:{driver_port}"), shots).await;

    // The login URL sets the cookie; then a new session from the form
    // generated from the planner's input schema.
    let root = workspace(dir.path(), "from-form");
    b.go(&login).await;
    b.until("the empty list", "return document.querySelector('#sessions-empty') && !document.querySelector('#sessions-empty').hidden").await;
    b.click("#new-session").await;
    b.until("the planner's form", "return document.querySelector('#new-agent option[value=planner]')").await;
    b.js("const s=document.querySelector('#new-agent');s.value='planner';s.dispatchEvent(new Event('change'));return true").await;
    b.until("the goal field", "return document.querySelector('#f-goal')").await;
    b.type_into("#f-root", root.to_str().unwrap()).await;
    b.type_into("#f-goal", GOAL).await;
    b.js("document.querySelector('#f-approve').value='all';return true").await;
    b.shot("new-session-form").await;
    b.click("#new-start").await;

    // The counter and the bar advance live, then the session completes.
    let mut steps = vec![b.until("the session page", "return (document.querySelector('#step')||{}).textContent").await.as_str().unwrap().to_string()];
    let start = Instant::now();
    while b.status().await != "completed" && start.elapsed() < Duration::from_secs(40) {
        let now = b.step_text().await;
        if steps.last() != Some(&now) {
            steps.push(now);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(b.status().await, "completed");
    b.shot("completed").await;
    assert!(steps.first().is_some_and(|s| s.starts_with("Step 0") || s.starts_with("Step 1")), "{steps:?}");
    assert!(b.step_text().await.starts_with("Step 1/"), "the counter reached the iteration: {steps:?}");
    let width = b.js("return document.querySelector('.bar > div').style.width").await;
    assert_eq!(width, "100%");
    assert!(root.join("alpha").is_dir() && root.join("beta").is_dir());

    // The details expand to a tool call's whole output.
    b.click("details.iteration > summary").await;
    b.until("a shortened output", "return document.querySelector('details.iteration[open] .show-all')").await;
    let before = b.js("return document.querySelector('details.iteration[open]').textContent.includes('THE-END-OF-BIG')").await;
    assert_eq!(before, json!(false), "a long output is shortened at first");
    b.js("document.querySelectorAll('details.iteration[open] .show-all').forEach((button) => button.click())").await;
    b.until("the whole output", "return document.querySelector('details.iteration[open]').textContent.includes('THE-END-OF-BIG')").await;
    b.shot("tool-call-output").await;

    // A reload restores the view from the server.
    let url = b.js("return location.href").await.as_str().unwrap().to_string();
    b.cmd("POST", "/refresh", json!({})).await;
    b.until("the restored page", "return document.querySelector('.progress .status[data-status=completed]')").await;
    assert_eq!(b.js("return location.href").await.as_str().unwrap(), url);
    assert!(b.step_text().await.starts_with("Step 1/"));

    // Pause and resume.
    let id = start_planner(&http, &base, &workspace(dir.path(), "paused"), "all").await;
    b.go(&format!("{base}/#/s/{id}")).await;
    b.until("the pause button", "return document.querySelector('#pause')").await;
    b.click("#pause").await;
    b.until("paused", "return document.querySelector('.progress .status[data-status=paused]')").await;
    b.shot("paused").await;
    b.click("#resume").await;
    b.until("completed after resuming", "return document.querySelector('.progress .status[data-status=completed]')").await;

    // Terminate with each of the four reasons.
    for (ending, status, reason) in [
        ("completed", "completed", "user_confirmed"),
        ("failed", "terminated", "failed"),
        ("terminated", "terminated", "terminated"),
        ("stuck", "error", "stuck"),
    ] {
        let id = start_planner(&http, &base, &workspace(dir.path(), ending), "all").await;
        b.go(&format!("{base}/#/s/{id}")).await;
        b.until("the terminate button", "return document.querySelector('#terminate')").await;
        b.click("#terminate").await;
        b.click(&format!("#terminate-form input[value={ending}]")).await;
        if ending == "stuck" {
            b.shot("terminate-dialog").await;
        }
        b.click("#terminate-confirm").await;
        b.until(status, &format!("return document.querySelector('.progress .status[data-status={status}]')")).await;
        let shown = b.until("the finish reason", "return (document.querySelector('#finish-reason')||{}).textContent").await;
        assert_eq!(shown, reason, "{ending}");
        let said = b.until("how it ended, in words", "return (document.querySelector('#ending')||{}).textContent").await;
        let plain = |t: &str| if status == "completed" { t.starts_with("completed: ") } else { t.contains(reason) && !t.contains("completed") };
        assert!(said.as_str().is_some_and(plain), "{ending}: {said}");
    }

    // An approval: declined with a reason (back to planning), then approved.
    let root = workspace(dir.path(), "approved");
    let id = start_planner(&http, &base, &root, "ask").await;
    b.go(&format!("{base}/#/s/{id}")).await;
    b.until("the approval overlay", "const o=document.querySelector('#approval');return !o.hidden && o.textContent.includes('CREATE_DIR alpha')").await;
    let shown = b.js("return document.querySelector('#approval-what').textContent").await;
    let shown = shown.as_str().unwrap_or_default();
    assert!(
        shown.contains("observed in a copy of the root") && shown.contains("+ alpha/") && shown.contains("+ beta/"),
        "the approval shows the observed outcome: {shown}"
    );
    assert!(!root.join("alpha").exists(), "nothing reaches the root before the approval");
    b.shot("approval").await;
    b.type_into("#approval-reason", "name them in the other order").await;
    b.click("#decline").await;
    b.until(
        "the next plan's overlay",
        "return !document.querySelector('#approval').hidden && document.querySelector('#step').textContent.startsWith('Step 2')",
    )
    .await;
    b.click("#approve").await;
    b.until("completed after the approval", "return document.querySelector('.progress .status[data-status=completed]')").await;
    let said = b.until("how it ended, in words", "return (document.querySelector('#ending')||{}).textContent").await;
    assert_eq!(said, "completed: the goal is met and checked");
    assert!(root.join("alpha").is_dir());
    let s: Value = http.get(format!("{base}/api/sessions/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(s["progress"]["iterations"], 2, "the decline sent it back to plan once");

    // A session of 10,000 events stays smooth: only the rows in view are drawn.
    let r: Value = http
        .post(format!("{base}/api/sessions"))
        .json(&json!({"agent": "bench-engine", "input": {"iterations": 5000, "calls": false}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let big = r["sessionId"].as_str().unwrap().to_string();
    // The run itself is the engine's work, slower on a busy machine: it is
    // waited for apart, so the page's own wait measures only the page.
    let start = Instant::now();
    loop {
        let s: Value = http.get(format!("{base}/api/sessions/{big}")).send().await.unwrap().json().await.unwrap();
        if s["status"] == "completed" || start.elapsed() > Duration::from_secs(300) {
            assert_eq!(s["status"], "completed", "the session of 10,000 events did not complete: {s}");
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    b.go(&format!("{base}/#/s/{big}")).await;
    b.until(
        "every event",
        "return document.querySelector('.progress .status[data-status=completed]') && document.querySelector('#events .spacer').offsetHeight >= 10000*24",
    )
    .await;
    let drawn = b.js("return document.querySelectorAll('#events .ev').length").await.as_u64().unwrap();
    assert!(drawn < 100, "{drawn} rows drawn for 10,000 events");
    b.js("const e=document.querySelector('#events');e.scrollTop=e.scrollHeight/2;return true").await;
    b.until(
        "the rows in the middle",
        "return [...document.querySelectorAll('#events .ev')].some(r => Number(r.dataset.seq) > 4000 && Number(r.dataset.seq) < 6500)",
    )
    .await;

    // The list shows every session, live.
    b.go(&format!("{base}/")).await;
    let rows = b.until("eight rows", "const n=document.querySelectorAll('#sessions tr').length;return n>=8?n:0").await;
    assert_eq!(rows, 8);
    b.shot("session-list").await;

    // Fork from here: the approved session from its first iteration, before
    // its plan reached the root, in the root itself once the user saw what
    // changes there. The fork asks for its approval again; the root is as
    // it was in that iteration; the pages link parent and fork.
    b.go(&format!("{base}/#/s/{id}")).await;
    b.until("a fork button", "return document.querySelector('details.iteration[data-iteration=\"1\"] .fork-here')").await;
    b.click("details.iteration[data-iteration=\"1\"] > summary").await;
    b.type_into("details.iteration[data-iteration=\"1\"] .fork-hint", "make beta first").await;
    b.shot("fork-from-here").await;
    b.click("details.iteration[data-iteration=\"1\"] .fork-here").await;
    let asked = b.dialog().await;
    assert!(asked.contains("alpha") && asked.contains(root.to_str().unwrap()), "the user sees what changes before it does: {asked}");
    assert!(root.join("alpha").is_dir(), "nothing changes before the yes");
    b.cmd("POST", "/alert/accept", json!({})).await;
    let parent = b.until("the fork's page", "const f=document.querySelector('#forked-from');return f && f.textContent").await;
    assert!(parent.as_str().unwrap().contains(&id), "{parent}");
    let fork = b.js("return decodeURIComponent(location.hash.split('/').pop())").await.as_str().unwrap().to_string();
    let start = Instant::now();
    let forked: Value = loop {
        let v: Value = http.get(format!("{base}/api/sessions/{fork}")).send().await.unwrap().json().await.unwrap();
        if !v["pending"].is_null() || start.elapsed() > Duration::from_secs(60) {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(forked["pending"]["request"]["kind"], "planner_plan", "the fork plans again and asks for its approval: {forked}");
    assert!(!root.join("alpha").exists(), "the root is back as it was in the first iteration");
    let hinted = http.get(format!("{base}/api/sessions/{fork}/export")).send().await.unwrap().text().await.unwrap();
    assert!(hinted.contains("make beta first"), "the hint went with the fork's next model call");
    b.shot("fork").await;
    b.go(&format!("{base}/#/s/{id}")).await;
    b.until("the parent's link to its fork", "const f=document.querySelector('#forks');return f && f.querySelector('a')").await;
    b.cmd("POST", "/window/rect", json!({"width": 1280, "height": 900})).await;
    let _ = b.http.delete(&b.base).send().await;
}

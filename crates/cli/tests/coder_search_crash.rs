//! A real `agentloop run coder --candidates 3` on a fake OpenAI-compatible
//! endpoint (the real wire format, served locally), killed with SIGKILL in
//! the middle of its search — while its candidates are being tried, or
//! while they are still being written together — then resumed: the search
//! finishes, no call journaled before the kill runs again, and only the
//! passing candidate reaches the files. A session killed so can also be
//! forked from its last checkpoint into a folder of its own, with a hint:
//! the fork runs on from there and makes no call its parent journaled.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const BROKEN: &str = "def add(a, b):\n    return a - b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";
const TESTS: &str = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\nif __name__ == '__main__':\n    unittest.main()\n";

fn reply(content: String, delay: Duration) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_json(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }))
        .set_delay(delay)
}

/// The coder's model: a plan, then three changes asked together — the
/// greedy one and the next wrong, the third right (told apart by the
/// temperature each is asked at, as requests served in parallel arrive in
/// any order) — and an accepting review. `code_asked` counts the changes
/// asked for; each change is answered after `code_delay`.
async fn endpoint(code_asked: Arc<AtomicUsize>, code_delay: Duration) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let props = body["response_format"]["json_schema"]["schema"]["properties"].clone();
            let last = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or_default().to_string();
            let quick = Duration::from_millis(300);
            if last.contains("Carry out the plan") {
                code_asked.fetch_add(1, Ordering::SeqCst);
                let change = match body["temperature"].as_f64() {
                    None | Some(0.0) => "return a * b",
                    Some(t) if t > 0.9 => "return a - b + 1",
                    Some(_) => "return a + b",
                };
                return reply(format!("calc.py\n```python\ndef add(a, b):\n    {change}\n```\n"), code_delay);
            }
            reply(
                if props.get("steps").is_some() {
                    json!({"steps": ["make add return the sum"]}).to_string()
                } else if props.get("accept").is_some() {
                    json!({"accept": true, "objection": ""}).to_string()
                } else {
                    json!({"diagnosis": "add is wrong", "rootCause": "code", "recommendation": "fix", "feedback": "use +", "confidence": 0.9}).to_string()
                },
                quick,
            )
        })
        .mount(&server)
        .await;
    server
}

/// Successful journaled calls of every session in `db`, or of the one
/// named: (step, index, kind-and-name, started at).
fn journaled(db: &Path, session: Option<&str>) -> Vec<(i64, i64, String, String)> {
    let Ok(conn) = rusqlite::Connection::open(db) else { return Vec::new() };
    let sql = "SELECT c.step, c.idx, c.record FROM calls c JOIN sessions s ON s.key = c.session WHERE ?1 IS NULL OR s.id = ?1 ORDER BY c.step, c.idx";
    let Ok(mut stmt) = conn.prepare(sql) else { return Vec::new() };
    stmt.query_map([session], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .filter_map(|(step, idx, record)| {
            let r: Value = serde_json::from_str(&record).ok()?;
            (r["status"] == "success")
                .then(|| (step, idx, format!("{} {}", r["kind"].as_str().unwrap_or(""), r["name"].as_str().unwrap_or("")), r["startedAt"].to_string()))
        })
        .collect()
}

/// A broken workspace, the endpoint and the `agentloop` commands for one test.
struct Setup {
    _dir: tempfile::TempDir,
    data: std::path::PathBuf,
    ws: std::path::PathBuf,
    config: std::path::PathBuf,
    code_asked: Arc<AtomicUsize>,
    server: MockServer,
}

impl Setup {
    async fn new(code_delay: Duration) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("calc.py"), BROKEN).unwrap();
        std::fs::write(ws.join("test_calc.py"), TESTS).unwrap();
        let code_asked = Arc::new(AtomicUsize::new(0));
        let server = endpoint(code_asked.clone(), code_delay).await;
        let config = dir.path().join("agentloop.toml");
        std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n", server.uri())).unwrap();
        Self { _dir: dir, data, ws, config, code_asked, server }
    }

    fn agentloop(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop"));
        c.arg("--data-dir").arg(&self.data).arg("--config").arg(&self.config).args(["--durability", "process"]).args(args);
        c
    }

    fn db(&self) -> std::path::PathBuf {
        self.data.join("agentloop.sqlite")
    }

    /// Starts the search and kills it with SIGKILL once `killed_when` holds
    /// (or after a minute); the calls journaled by then.
    fn run_and_kill(&self, killed_when: impl Fn(&Self) -> bool) -> Vec<(i64, i64, String, String)> {
        let ws = self.ws.to_str().unwrap();
        let run = ["run", "coder", "--workspace", ws, "--task", "make add return the sum", "--test-cmd", "python3 -m unittest -q"];
        let mut child = self
            .agentloop(&[&run[..], &["--approval", "never", "--candidates", "3", "--json"]].concat())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while !killed_when(self) && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_ne!(std::fs::read_to_string(self.ws.join("calc.py")).unwrap(), FIXED, "killed before the kept change was written");
        journaled(&self.db(), None)
    }

    /// The id of the one session the killed run started.
    fn killed_session(&self) -> String {
        rusqlite::Connection::open(self.db()).unwrap().query_row("SELECT id FROM sessions", [], |r| r.get(0)).unwrap()
    }

    /// Resumes the killed session; the calls journaled after it ended.
    fn resume(&self) -> (String, Vec<(i64, i64, String, String)>) {
        let id = self.killed_session();
        let out = self.agentloop(&["sessions", "resume", &id, "--json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read_to_string(self.ws.join("calc.py")).unwrap(), FIXED);
        (id, journaled(&self.db(), None))
    }
}

/// The changes (answers to "Carry out the plan") journaled as answered.
fn changes_journaled(db: &Path) -> usize {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT record FROM calls").unwrap();
    let records: Vec<Value> = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap().filter_map(|r| serde_json::from_str(&r.unwrap()).ok()).collect();
    records
        .iter()
        .filter(|r| r["status"] == "success" && r["kind"] == "model")
        .filter(|r| r["input"]["last"]["content"].as_str().is_some_and(|c| c.contains("Carry out the plan")))
        .count()
}

fn tries(calls: &[(i64, i64, String, String)]) -> usize {
    calls.iter().filter(|c| c.2.ends_with("try_change")).count()
}

fn repeated_none(before: &[(i64, i64, String, String)], after: &[(i64, i64, String, String)]) {
    for call in before {
        assert!(after.contains(call), "{call:?} was journaled before the kill and ran again");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_killed_midway_resumes_and_repeats_no_journaled_call() {
    let setup = Setup::new(Duration::from_millis(300)).await;
    let before = setup.run_and_kill(|s| tries(&journaled(&s.db(), None)) > 0);
    assert!(tries(&before) > 0, "the search was under way when killed: {before:?}");
    let (id, after) = setup.resume();
    repeated_none(&before, &after);
    // The three changes were written together and journaled before the
    // first was tried: the resumed search replays them and asks for none.
    assert_eq!(setup.code_asked.load(Ordering::SeqCst), 3, "{after:?}");
    assert_eq!(tries(&after), 3, "{after:?}");

    // Each candidate can be looked at on its own.
    let first = setup.agentloop(&["sessions", "diff", &id, "--attempt", "1", "--candidate", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(text.starts_with("# candidate 1/3: 0 of 1 test(s) passing") && text.contains("+    return a * b"), "{text}");
    let last = setup.agentloop(&["sessions", "diff", &id, "--attempt", "1", "--candidate", "3"]).output().unwrap();
    assert!(String::from_utf8_lossy(&last.stdout).contains("tests pass, kept"));
    let none = setup.agentloop(&["sessions", "diff", &id, "--attempt", "1", "--candidate", "9"]).output().unwrap();
    assert_eq!(none.status.code(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_killed_while_its_candidates_are_written_together_asks_for_them_again() {
    // Slow answers, so the kill lands while all three are in flight.
    let setup = Setup::new(Duration::from_secs(3)).await;
    let before = setup.run_and_kill(|s| s.code_asked.load(Ordering::SeqCst) == 3);
    assert_eq!(setup.code_asked.load(Ordering::SeqCst), 3, "the three changes were asked for together");
    assert_eq!(changes_journaled(&setup.db()), 0, "killed before any change came back: {before:?}");
    let (_, after) = setup.resume();
    repeated_none(&before, &after);
    assert_eq!(setup.code_asked.load(Ordering::SeqCst), 6, "the batch cut off by the kill is asked again, once");
    assert_eq!(tries(&after), 3, "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_of_a_killed_session_runs_on_from_its_checkpoint_and_repeats_nothing() {
    const HINT: &str = "the sum, not the product";
    // Killed with its three changes in flight, past the plan's checkpoint.
    let setup = Setup::new(Duration::from_secs(3)).await;
    let before = setup.run_and_kill(|s| s.code_asked.load(Ordering::SeqCst) == 3);
    let parent = setup.killed_session();
    let shown: Value = serde_json::from_slice(&setup.agentloop(&["sessions", "show", &parent, "--json"]).output().unwrap().stdout).unwrap();
    let step = shown["checkpoints"].as_array().unwrap().iter().filter_map(|c| c["step"].as_i64()).max().unwrap();
    let kept: Vec<_> = before.iter().filter(|c| c.0 <= step).cloned().collect();
    assert!(kept.iter().any(|c| c.2.starts_with("model")), "the plan was journaled before the checkpoint forked from: {before:?}");
    let asked_before = setup.server.received_requests().await.unwrap().len();

    let folder = setup.data.parent().unwrap().join("fork");
    let out = setup
        .agentloop(&["sessions", "fork", &parent, "--at", &step.to_string(), "--workspace", folder.to_str().unwrap(), "--hint", HINT, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let fork = serde_json::from_slice::<Value>(&out.stdout).unwrap()["sessionId"].as_str().unwrap().to_string();
    assert_eq!(std::fs::read_to_string(folder.join("calc.py")).unwrap(), FIXED, "the fork ran on and its passing change is in its folder");
    assert_eq!(std::fs::read_to_string(setup.ws.join("calc.py")).unwrap(), BROKEN, "the parent's folder is untouched");

    // The fork's journal holds its parent's calls up to the step as they
    // were made (same start times: copied, not made again), then its own.
    let forked = journaled(&setup.db(), Some(&fork));
    assert_eq!(forked.iter().filter(|c| c.0 <= step).cloned().collect::<Vec<_>>(), kept);
    assert_eq!(journaled(&setup.db(), Some(&parent)), before, "the parent's journal is untouched");
    // Asked of the model since the kill: the three changes once, with the hint,
    // and the review — never the plan again.
    let requests = setup.server.received_requests().await.unwrap();
    let since: Vec<String> = requests[asked_before..].iter().map(|r| String::from_utf8_lossy(&r.body).into_owned()).collect();
    assert_eq!(setup.code_asked.load(Ordering::SeqCst), 6, "{since:?}");
    assert!(since.iter().all(|b| !b.contains("\"steps\"")), "the plan was asked again: {since:?}");
    assert!(since.iter().any(|b| b.contains(HINT)), "the hint went with the fork's next call");
    assert_eq!(tries(&forked), 3, "{forked:?}");
}

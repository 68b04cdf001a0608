//! Every agent in the registry, through the registry alone: a session on a
//! scripted model runs to the end (its event stream is a reviewed snapshot),
//! then a second session pauses — at its own question where the agent asks
//! one, else by the user's pause — and resumes from a fresh view of the
//! store, as another process would, to a summary that says what it did.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentloop_agent::registry::{AgentEnv, Launch, Registry, Summary};
use agentloop_core::{ChatRequest, ChatResponse, Event, Models, Outcome, SessionStatus, Store};
use agentloop_llm::ScriptedModel;
use agentloop_store::{Durability, SqliteStore};
use serde_json::{json, Value};

const TESTS: &str = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\nif __name__ == '__main__':\n    unittest.main()\n";

/// One agent's session: its flags, its scripted model, and what its summary must say.
struct Case {
    flags: Vec<String>,
    /// It asks a question before it acts (answered with this reply).
    asks: Option<&'static str>,
    check: fn(&Summary, &Path),
}

/// The model's answer to each kind of prompt the agents send.
fn answer(req: &ChatRequest) -> ChatResponse {
    let asks_for = |key: &str| req.json_schema.as_ref().is_some_and(|s| s["properties"].get(key).is_some());
    let text = if asks_for("steps") {
        json!({"steps": ["make add return the sum"]}).to_string()
    } else if asks_for("accept") {
        json!({"accept": true, "objection": ""}).to_string()
    } else if asks_for("who") {
        json!({"who": "me", "what": "notes/a.txt", "when": "now", "where": "notes", "why": "notes"}).to_string()
    } else if asks_for("plan") {
        let plan = json!({"goal": "notes", "thinking_summary": "a folder and a file", "reflection": "", "ready": true,
            "plan": [{"step": 1, "action": "CREATE_DIR notes", "expects": "notes exists"}, {"step": 2, "action": "WRITE_FILE notes/a.txt hello", "expects": "a.txt says hello"}]});
        format!("<json>{plan}</json>")
    } else if asks_for("requirements") {
        json!({"requirements": [{"from_goal": "a.txt saying hello", "requirement": "notes/a.txt says hello", "check": ""}]}).to_string()
    } else if asks_for("done") {
        json!({"evidence": "notes/a.txt holds hello", "done": true}).to_string()
    } else if asks_for("isComplex") {
        json!({"isComplex": false, "subQueries": []}).to_string()
    } else if asks_for("aspects") {
        json!({"aspects": [{"description": "who", "answered": true, "confidence": 0.9, "supportingSources": [1]}], "suggestedRetrievals": []}).to_string()
    } else if asks_for("found") {
        json!({"answers": ["Mara Quill"], "citations": [1], "found": true}).to_string()
    } else if asks_for("supportingCitations") {
        // The judge quotes the first passage it was shown.
        let prompt = req.messages.last().map_or("", |m| m.content.as_str());
        let quote = prompt.lines().find(|l| l.starts_with('[')).and_then(|l| l.split_once(": ")).map_or("", |(_, text)| text);
        json!({"quotes": [quote], "supported": true, "confidence": 0.9, "supportingCitations": [1]}).to_string()
    } else if asks_for("kind") {
        json!({"kind": "person"}).to_string()
    } else if asks_for("overallAssessment") {
        json!({"overallAssessment": "right", "strengths": [], "weaknesses": [], "suggestedImprovements": [], "criticalIssues": [], "confidence": 0.95})
            .to_string()
    } else if req.messages.iter().any(|m| m.content.contains("Answer with citations:")) {
        "Mara Quill has sailing as her hobby [1].".to_string()
    } else if asks_for("is_complete") {
        json!({"reasoning": "it printed the sum", "is_complete": true, "next_action": ""}).to_string()
    } else if req.messages.iter().any(|m| m.content.contains("calc.py")) {
        "calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n".to_string()
    } else {
        // The repl's turn, and its independent checks.
        "```python\nprint(sum(i * i for i in range(1, 11)))\n```".to_string()
    };
    ChatResponse::text(text)
}

fn case(name: &str, dir: &Path) -> Case {
    let s = |v: &str| v.to_string();
    match name {
        "coder" => {
            let ws = dir.join("ws");
            std::fs::create_dir_all(&ws).unwrap();
            std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
            std::fs::write(ws.join("test_calc.py"), TESTS).unwrap();
            let flags = vec![s("--workspace"), ws.display().to_string(), s("--task"), s("fix add"), s("--test-cmd"), s("python3 -m unittest -q")];
            Case {
                flags,
                asks: Some("yes"),
                check: |sum, dir| {
                    assert_eq!(sum.changed_files.len(), 1, "{sum:?}");
                    assert_eq!(sum.changed_files[0].path, "calc.py");
                    assert!(sum.patches[0].diff.contains("+    return a + b"), "{:?}", sum.patches);
                    assert!(std::fs::read_to_string(dir.join("ws/calc.py")).unwrap().contains("a + b"));
                },
            }
        }
        "planner" => {
            let root = dir.join("root");
            std::fs::create_dir_all(&root).unwrap();
            let flags = vec![s("--root"), root.display().to_string(), s("--goal"), s("make a notes folder with a.txt saying hello")];
            Case {
                flags,
                asks: Some("all"),
                check: |sum, dir| {
                    assert_eq!(sum.plan, vec!["CREATE_DIR notes", "WRITE_FILE notes/a.txt hello"]);
                    assert_eq!(std::fs::read_to_string(dir.join("root/notes/a.txt")).unwrap(), "hello");
                },
            }
        }
        "repl" => {
            let flags = vec![s("--prompt"), s("the sum of the squares of 1 to 10?"), s("--folder"), dir.join("py").display().to_string()];
            Case { flags, asks: None, check: |sum, _| assert_eq!(sum.answer.as_deref(), Some("385")) }
        }
        "research" => {
            // A corpus of one fictional person in the sessions' data dir,
            // searched with the installed embedding model.
            let data = dir.parent().unwrap();
            let models = agentloop_llm::catalog::models_dir(&agentloop_llm::catalog::default_data_dir());
            let _ = std::os::unix::fs::symlink(models, data.join("models"));
            let file = dir.join("people.json");
            std::fs::write(&file, r#"{"Mara Quill": {"title": "Mara Quill", "extract": "Mara Quill is a carpenter. Her hobby is sailing."}}"#).unwrap();
            let embedder = agentloop_retrieval::Embedder::load(&data.join("models").join(agentloop_retrieval::embed::MODEL_DIR)).unwrap();
            let mut corpus = agentloop_retrieval::Corpus::open(data, "people", true).unwrap();
            corpus.add_file(&file, &agentloop_retrieval::JsonFields::default(), &embedder, &mut |_, _| {}).unwrap();
            let flags = vec![s("--question"), s("Who sails?"), s("--corpus"), s("people")];
            Case {
                flags,
                asks: None,
                check: |sum, _| {
                    assert_eq!(sum.answer.as_deref(), Some("Mara Quill has sailing as her hobby [1]."));
                    assert_eq!(sum.citations[0].title, "Mara Quill");
                    assert_eq!(sum.citations[0].sentence, "Her hobby is sailing.");
                    assert_eq!(sum.faithfulness, Some(1.0));
                },
            }
        }
        other => panic!("the registry has an agent `{other}` this test has no case for: add one"),
    }
}

fn env(store: Arc<dyn Store>, dir: &Path) -> AgentEnv {
    // The repl's model thinks a while on its first answer, so that a pause
    // sent at once lands before the session ends.
    let mut first = true;
    let model = ScriptedModel::with(move |req| {
        if std::mem::take(&mut first) {
            std::thread::sleep(Duration::from_millis(300));
        }
        Ok(answer(req))
    });
    AgentEnv {
        store,
        models: Models::new(Arc::new(model)),
        data_dir: dir.to_path_buf(),
        tokens: None,
        sandbox: Default::default(),
        mcp_servers: Default::default(),
        preparing: None,
    }
}

fn open(db: &Path) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(db, Durability::Process).unwrap())
}

/// The stream as users see it, without what differs from run to run.
fn stable(events: &[Event], dir: &Path) -> Vec<Value> {
    let dir = dir.display().to_string();
    events
        .iter()
        .map(|e| {
            let mut payload = e.payload.clone();
            if let Some(map) = payload.as_object_mut() {
                for key in ["timestamp", "completedAt", "duration", "ms", "sessionId", "output"] {
                    if map.contains_key(key) {
                        map.insert(key.into(), json!("[varies]"));
                    }
                }
            }
            let text = payload.to_string().replace(&dir, "[dir]");
            json!({"name": e.name, "payload": serde_json::from_str::<Value>(&text).unwrap()})
        })
        .collect()
}

async fn wait(handle: agentloop_core::SessionHandle) -> Outcome {
    tokio::time::timeout(Duration::from_secs(60), handle.wait()).await.expect("the session ends within a minute").unwrap()
}

/// Runs a session on, answering each question it asks with `reply`.
async fn to_the_end(registry: &Registry, env: &AgentEnv, mut handle: agentloop_core::SessionHandle, reply: Option<&str>) -> Outcome {
    loop {
        let outcome = wait(handle).await;
        match (&outcome.pending, reply) {
            (Some(q), Some(reply)) => {
                env.store.answer(&outcome.session_id, &q.id, &json!(reply)).unwrap();
                handle = registry.resume(env, &env.store.load(&outcome.session_id).unwrap().meta, true).unwrap();
            }
            _ => return outcome,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_agent_runs_pauses_and_resumes_through_the_registry() {
    let registry = agentloop_cli::standard();
    for agent in registry.agents() {
        let name = agent.name();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("agentloop.sqlite");
        let cli = agent.flags(clap::Command::new(name).no_binary_name(true));

        // To the end, answering any question at once.
        let first = dir.path().join("first");
        std::fs::create_dir_all(&first).unwrap();
        let c = case(name, &first);
        let input = agent.input(&cli.clone().try_get_matches_from(&c.flags).unwrap(), None, &first).unwrap();
        let store = open(&db);
        let env = env(store.clone(), dir.path());
        let handle = agent.start(&env, &input, Launch { session_id: Some(format!("{name}-1")), exit_when_paused: true }).unwrap();
        let outcome = to_the_end(&registry, &env, handle, c.asks).await;
        assert_eq!(outcome.status, SessionStatus::Completed, "{name}: {outcome:?}");
        let summary = registry.summary(&store.load(&outcome.session_id).unwrap());
        assert!(summary.reached_goal, "{name}: {summary:?}");
        (c.check)(&summary, &first);
        let events = store.events(&outcome.session_id, 0, 10_000).unwrap();
        insta::assert_json_snapshot!(format!("events_{}", name.replace('-', "_")), stable(&events, &first));

        // Paused, then resumed from a fresh view of the store.
        let second = dir.path().join("second");
        std::fs::create_dir_all(&second).unwrap();
        let c = case(name, &second);
        let flags = c.flags.clone();
        let input = agent.input(&cli.clone().try_get_matches_from(&flags).unwrap(), None, &second).unwrap();
        let env = self::env(store.clone(), dir.path());
        let handle = agent.start(&env, &input, Launch { session_id: Some(format!("{name}-2")), exit_when_paused: true }).unwrap();
        if c.asks.is_none() {
            handle.pause();
        }
        let paused = wait(handle).await;
        assert_eq!(paused.status, SessionStatus::Paused, "{name}: {paused:?}");
        assert_eq!(paused.pending.is_some(), c.asks.is_some(), "{name}: {paused:?}");
        drop(env);
        drop(store);

        let store = open(&db);
        let env = self::env(store.clone(), dir.path());
        let meta = store.load(&paused.session_id).unwrap().meta;
        assert_eq!(meta.status, SessionStatus::Paused);
        if let (Some(q), Some(reply)) = (&paused.pending, c.asks) {
            store.answer(&paused.session_id, &q.id, &json!(reply)).unwrap();
        }
        let handle = registry.resume(&env, &meta, true).unwrap();
        let done = to_the_end(&registry, &env, handle, c.asks).await;
        let summary = registry.summary(&store.load(&done.session_id).unwrap());
        assert!(summary.reached_goal, "{name}: {summary:?}");
        (c.check)(&summary, &second);
    }
}

#[test]
fn the_event_schema_in_docs_is_the_one_the_types_make() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/events.schema.json");
    let current = serde_json::to_string_pretty(&agentloop_cli::standard().events_schema()).unwrap() + "\n";
    if std::env::var_os("AGENTLOOP_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &current).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(checked_in == current, "docs/events.schema.json is stale: run `AGENTLOOP_UPDATE_SCHEMA=1 cargo test --workspace --test registry` and commit it");
}

#[test]
fn each_agent_names_the_input_field_its_sessions_are_about() {
    let registry = agentloop_cli::standard();
    let input = json!({"task": "fix add", "goal": "tidy notes", "prompt": "sum 1..10", "question": "who wrote it"});
    let titles: Vec<(&str, String)> = ["coder", "planner", "repl", "research", "bench-engine"].into_iter().map(|a| (a, registry.title(a, &input))).collect();
    assert_eq!(
        titles,
        [
            ("coder", "fix add".into()),
            ("planner", "tidy notes".into()),
            ("repl", "sum 1..10".into()),
            ("research", "who wrote it".into()),
            ("bench-engine", String::new()),
        ]
    );
}

#[test]
fn the_agents_declare_their_roles_and_each_role_is_declared_once() {
    use agentloop_llm::RoleDefault::{Escalating, Strong};
    let roles: Vec<(&str, agentloop_llm::RoleDefault)> = agentloop_cli::standard().roles().iter().map(|r| (r.name, r.default)).collect();
    assert_eq!(
        roles,
        [
            ("coder", Escalating),
            ("planner", Strong),
            ("fast", Strong),
            ("verifier", Strong),
            ("decomposer", Strong),
            ("reader", Strong),
            ("writer", Escalating)
        ]
    );
}

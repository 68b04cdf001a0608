//! The coder on a workspace larger than its model's context: it is shown
//! the code the task and the tests point at, as regions, not the files in
//! path order, and its change may touch only what it was shown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop_agent::Wiring;
use agentloop_coder::{self as coder, CoderSettings, CoderState};
use agentloop_core::{ChatRequest, ChatResponse, Models, SessionStatus, StartOptions, Store};
use agentloop_llm::ScriptedModel;
use agentloop_store::SqliteStore;
use agentloop_tools::{ApprovalPolicy, Approvals, Workspace};

const TESTS: &str = "import unittest\nfrom zz_calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\nif __name__ == '__main__':\n    unittest.main()\n";

/// A dozen helper modules, each larger than the one that holds the bug and
/// sorting before it, with a licence and a manifest: together far over an
/// 8,192-token context.
fn seed(root: &std::path::Path, faulty: &str) {
    seed_with(root, faulty, TESTS);
}

fn seed_with(root: &std::path::Path, faulty: &str, tests: &str) {
    std::fs::write(root.join("LICENSE.txt"), "Permission is hereby granted, free of charge, to any person. ".repeat(300)).unwrap();
    std::fs::write(root.join("MANIFEST.in"), "include *.txt\n".repeat(100)).unwrap();
    for i in 0..12 {
        let body: String = (0..60)
            .map(|j| format!("def helper_{i}_{j}(values):\n    total = 0\n    for v in values:\n        total += v * {j}\n    return total\n\n"))
            .collect();
        std::fs::write(root.join(format!("a{i:02}_helpers.py")), body).unwrap();
    }
    std::fs::write(root.join("zz_calc.py"), faulty).unwrap();
    std::fs::write(root.join("test_calc.py"), tests).unwrap();
}

/// How long a command may run in these sessions.
const COMMAND_TIMEOUT_SECS: u64 = 60;

type Sent = Arc<Mutex<Vec<ChatRequest>>>;

/// A model that plans, then answers CODE and FIX with `changes` in turn,
/// and accepts a review; every request is kept.
fn model(changes: Vec<&'static str>) -> (ScriptedModel, Sent) {
    planning(r#"{"steps": ["make add return the sum"]}"#, changes)
}

/// `model`, planning with `plan`.
fn planning(plan: &'static str, changes: Vec<&'static str>) -> (ScriptedModel, Sent) {
    rewriting_with(plan, changes, |_| None, None)
}

/// `model`, answering a line rewrite's question with `rewrite` of the
/// marked line (`None`: the line as it is, which is no edit).
fn rewriting(rewrite: fn(&str) -> Option<&'static str>) -> (ScriptedModel, Sent) {
    rewriting_with(r#"{"steps": ["make add return the sum"]}"#, vec![], rewrite, None)
}

/// `rewriting`, also answering what a function lacks with `statement`.
fn rewriting_with(
    plan: &'static str,
    changes: Vec<&'static str>,
    rewrite: fn(&str) -> Option<&'static str>,
    statement: Option<&'static str>,
) -> (ScriptedModel, Sent) {
    let sent: Sent = Arc::default();
    let seen = sent.clone();
    let changes = Mutex::new(changes.into_iter());
    let model = ScriptedModel::with(move |req| {
        seen.lock().unwrap().push(req.clone());
        let prompt = req.messages.last().map(|m| m.content.as_str()).unwrap_or_default();
        let text = if prompt.contains(REWRITE_QUESTION) {
            let marked = prompt.lines().find_map(|l| l.strip_suffix("  # <- this line")).unwrap_or_default().trim();
            rewrite(marked).unwrap_or(marked).to_string()
        } else if let Some(statement) = statement.filter(|_| prompt.contains(MISSING_QUESTION)) {
            statement.to_string()
        } else if prompt.contains("Write a short plan") {
            plan.to_string()
        } else if prompt.contains("Carry out the plan") || prompt.contains("What to fix") {
            changes.lock().unwrap().next().unwrap_or("nothing").to_string()
        } else if prompt.contains("The last attempt failed") {
            r#"{"diagnosis": "add subtracts", "rootCause": "code", "recommendation": "fix", "feedback": "use +", "confidence": 0.9}"#.to_string()
        } else {
            r#"{"accept": true, "objection": ""}"#.to_string()
        };
        Ok(ChatResponse::text(text))
    });
    (model, sent)
}

async fn run(root: &std::path::Path, model: ScriptedModel) -> (agentloop_core::Outcome, Arc<dyn Store>) {
    run_with(root, model, "python3 -m unittest -q").await
}

/// The model alone writes the changes: no small edits or line rewrites
/// are tried first (those have tests of their own below).
async fn run_with(root: &std::path::Path, model: ScriptedModel, test_command: &str) -> (agentloop_core::Outcome, Arc<dyn Store>) {
    run_configured(root, model, test_command, CoderSettings { candidates: 1, max_iterations: 3, small_edits: 0, line_rewrites: 0, ..CoderSettings::default() })
        .await
}

async fn run_configured(root: &std::path::Path, model: ScriptedModel, test_command: &str, config: CoderSettings) -> (agentloop_core::Outcome, Arc<dyn Store>) {
    run_on(root, Arc::new(model), test_command, config).await
}

async fn run_on(
    root: &std::path::Path,
    model: Arc<dyn agentloop_core::ChatModel>,
    test_command: &str,
    config: CoderSettings,
) -> (agentloop_core::Outcome, Arc<dyn Store>) {
    let workspace = Workspace::new(root).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let sandbox = agentloop_tools::Sandbox::new(workspace.root(), &Default::default(), None, None).unwrap();
    let runner = coder::runner(&Wiring::new(Models::new(model), store.clone()), &workspace, &sandbox, Duration::from_secs(COMMAND_TIMEOUT_SECS)).unwrap();
    let state = CoderState::new(&workspace, "make add() return the sum", test_command, config.clone(), Approvals::new(ApprovalPolicy::Never));
    let mut options = StartOptions::new(coder::termination(&config));
    options.exit_when_paused = true;
    (runner.start(state, options).unwrap().wait().await.unwrap(), store)
}

const HUNK: &str = "zz_calc.py\n```python\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE\n```\n";

fn code_prompts(sent: &Sent) -> Vec<String> {
    sent.lock().unwrap().iter().map(|r| r.messages.last().map(|m| m.content.clone()).unwrap_or_default()).filter(|p| p.contains("Carry out the plan")).collect()
}

#[tokio::test]
async fn the_faulty_function_in_a_file_that_sorts_after_a_dozen_larger_ones_is_shown_and_fixed() {
    let ws = tempfile::tempdir().unwrap();
    seed(ws.path(), "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a - b\n");
    let (model, sent) = model(vec![HUNK]);
    let (out, _) = run(ws.path(), model).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let prompt = &code_prompts(&sent)[0];
    assert!(prompt.contains("zz_calc.py lines 5-6 (add)"), "the faulty function is shown as a region:\n{prompt}");
    assert!(!prompt.contains("Permission is hereby granted"), "a licence never takes the place of code");
    assert!(prompt.len() / 3 < 8192, "the prompt fits the context: {} chars", prompt.len());
    assert_eq!(std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap(), "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a + b\n");
}

#[tokio::test]
async fn a_five_thousand_line_module_is_edited_through_a_region_never_whole() {
    let ws = tempfile::tempdir().unwrap();
    let mut module: String = (0..1000).map(|i| format!("def f{i}(x):\n    y = x + {i}\n    return y\n\n")).collect();
    module.push_str("def add(a, b):\n    return a - b\n");
    assert!(module.lines().count() >= 4000);
    seed(ws.path(), &module);
    // First a whole new file (it rewrites lines never shown), then the hunk.
    let whole =
        format!("zz_calc.py\n```python\n{}```\n", module.replace("def f0(x):\n    y = x + 0", "def f0(x):\n    y = x").replace("return a - b", "return a + b"));
    let whole: &'static str = Box::leak(whole.into_boxed_str());
    let (model, sent) = model(vec![whole, HUNK]);
    let (out, store) = run(ws.path(), model).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let events = store.events(&out.session_id, 0, 1000).unwrap();
    let refused = events.iter().find(|e| e.name == "coder:refused").map(|e| e.payload["reason"].to_string()).unwrap_or_default();
    assert!(refused.contains("outside what was shown"), "the whole-file answer is refused: {refused}");
    for prompt in code_prompts(&sent) {
        assert!(!prompt.contains("def f500(x):\n    y = x + 500"), "the module is never shown whole");
    }
    let after = std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap();
    assert_eq!(after, module.replace("return a - b", "return a + b"), "only the region changed");
}

/// Tests that fail on an assertion in the test itself: no frame names the
/// code at fault, and neither does the task. A passing test runs the
/// module's other function.
const ASSERTING: &str = "import unittest\nimport zz_calc\n\nclass T(unittest.TestCase):\n    def test_numbers(self):\n        self.assertEqual(zz_calc.scaled([1, 2]), [10, 20])\n\n    def test_other(self):\n        self.assertEqual(zz_calc.offset([1]), [2])\n";
const SCALED: &str =
    "def offset(xs):\n    return [x + 1 for x in xs]\n\n\ndef scaled(xs):\n    out = []\n    for x in xs:\n        out.append(x * 100)\n    return out\n";
const SCALED_FIX: &str = "zz_calc.py\n```python\n<<<<<<< SEARCH\n        out.append(x * 100)\n=======\n        out.append(x * 10)\n>>>>>>> REPLACE\n```\n";

fn notices(store: &Arc<dyn Store>, out: &agentloop_core::Outcome) -> Vec<String> {
    let events = store.events(&out.session_id, 0, 1000).unwrap();
    events.iter().filter(|e| e.name == "coder:notice").map(|e| e.payload["text"].as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test]
async fn a_failure_no_frame_explains_is_localized_by_the_tests_line_coverage_run_in_the_sandbox() {
    let ws = tempfile::tempdir().unwrap();
    seed_with(ws.path(), SCALED, ASSERTING);
    let (model, sent) = model(vec![SCALED_FIX]);
    let (out, store) = run(ws.path(), model).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let said = notices(&store, &out);
    assert!(said.iter().any(|n| n == "line coverage: 1 failing and 1 passing tests traced"), "{said:?}");
    let prompt = &code_prompts(&sent)[0];
    let shown = prompt.find("zz_calc.py lines 5-9 (scaled)").unwrap_or_else(|| panic!("the function the failing test ran is shown:\n{prompt}"));
    assert!(prompt.find("(offset)").is_none_or(|o| o > shown), "the passing test's function ranks below it");
    let after = std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap();
    assert!(after.contains("x * 10)"), "{after}");
}

#[tokio::test]
async fn the_coverage_run_reads_pytest_too_where_pytest_is() {
    let ws = tempfile::tempdir().unwrap();
    seed_with(ws.path(), SCALED, ASSERTING);
    let (model, _) = model(vec![SCALED_FIX]);
    let (out, store) = run_with(ws.path(), model, &pytest_command()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let said = notices(&store, &out);
    assert!(said.iter().any(|n| n == "line coverage: 1 failing and 1 passing tests traced"), "{said:?}");
}

/// A failing `assertEqual` describes its operands with their `__repr__`,
/// which only the failing test therefore runs; the function at fault is
/// run by it too, and must not rank below the description.
const DESCRIBED: &str = "class Money:\n    def __init__(self, cents):\n        self.cents = cents\n\n    def __eq__(self, other):\n        return self.cents == other.cents\n\n    def __repr__(self):\n        return 'Money(%d)' % self.cents\n\n\ndef doubled(m):\n    cents = m.cents * 3\n    return Money(cents)\n\n\ndef halved(m):\n    return Money(m.cents // 2)\n";
const DESCRIBING: &str = "import unittest\nfrom zz_calc import Money, doubled, halved\n\nclass T(unittest.TestCase):\n    def test_twice(self):\n        self.assertEqual(doubled(Money(2)), Money(4))\n\n    def test_half(self):\n        self.assertEqual(halved(Money(4)), Money(2))\n";
const DOUBLED_FIX: &str = "zz_calc.py\n```python\n<<<<<<< SEARCH\n    cents = m.cents * 3\n=======\n    cents = m.cents * 2\n>>>>>>> REPLACE\n```\n";

/// pytest from the set-up's own copy, whatever this machine has.
fn pytest_command() -> String {
    let deps = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pytest-deps");
    assert!(deps.join("pytest").is_dir(), "pytest for this test is installed by scripts/setup.sh --no-run into {}", deps.display());
    format!("PYTHONPATH={} python3 -m pytest -q", deps.canonicalize().unwrap().display())
}

/// The faulty `doubled` is shown, and above the `__repr__` that only
/// described the failure.
fn assert_faulty_before_description(prompt: &str) {
    let shown = prompt.find("(doubled)").unwrap_or_else(|| panic!("the function the failing test ran is shown:\n{prompt}"));
    assert!(prompt.find("__repr__)").is_none_or(|r| r > shown), "the failure's description ranks below it:\n{prompt}");
}

#[tokio::test]
async fn what_a_runner_runs_to_describe_a_failure_is_not_evidence_against_it() {
    let ws = tempfile::tempdir().unwrap();
    seed_with(ws.path(), DESCRIBED, DESCRIBING);
    let (model, sent) = model(vec![DOUBLED_FIX]);
    let (out, _) = run(ws.path(), model).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert_faulty_before_description(&code_prompts(&sent)[0]);
}

#[tokio::test]
async fn what_pytest_runs_to_explain_an_assert_is_not_evidence_either() {
    let ws = tempfile::tempdir().unwrap();
    let asserts = "from zz_calc import Money, doubled, halved\n\ndef test_twice():\n    assert doubled(Money(2)) == Money(4)\n\ndef test_half():\n    assert halved(Money(4)) == Money(2)\n";
    seed_with(ws.path(), DESCRIBED, asserts);
    let (model, sent) = model(vec![DOUBLED_FIX]);
    let (out, _) = run_with(ws.path(), model, &pytest_command()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert_faulty_before_description(&code_prompts(&sent)[0]);
}

#[tokio::test]
async fn a_plan_may_open_more_code_and_search_it_and_later_prompts_show_what_it_found() {
    let ws = tempfile::tempdir().unwrap();
    seed(ws.path(), "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a - b\n");
    let plan = r#"{"steps": ["make add return the sum"], "open": ["helper_3_7", "nothing_by_this_name", "nothing_by_this_name"], "search": "total += v * 59"}"#;
    let (model, sent) = planning(plan, vec![HUNK]);
    let (out, store) = run(ws.path(), model).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let prompt = &code_prompts(&sent)[0];
    assert!(prompt.contains("a03_helpers.py lines 43-47 (helper_3_7, as asked)"), "the definition asked for is opened:\n{prompt}");
    assert_eq!(prompt.matches("open `nothing_by_this_name` → nothing by that name or range").count(), 1, "asked twice, listed once:\n{prompt}");
    assert!(prompt.contains("search `total += v * 59`") && prompt.contains("a00_helpers.py:"), "the search's hits are shown:\n{prompt}");
    let events = store.events(&out.session_id, 0, 1000).unwrap();
    let asked: Vec<&str> = events.iter().filter(|e| e.name == "coder:tool").filter_map(|e| e.payload["tool"].as_str()).collect();
    assert_eq!(asked, vec!["open", "open", "search"], "each distinct request is in the journal once");
}

/// The one-token slips tried (not the model's edits), as the live view
/// records them: each edit and whether it passed.
fn small_edits(store: &Arc<dyn Store>, out: &agentloop_core::Outcome) -> Vec<(String, bool)> {
    let events = store.events(&out.session_id, 0, 1000).unwrap();
    events
        .iter()
        .filter(|e| e.name == "coder:small_edit" && e.payload["byModel"] != true)
        .map(|e| (e.payload["edit"].as_str().unwrap_or_default().to_string(), e.payload["passed"] == true))
        .collect()
}

fn searching() -> CoderSettings {
    CoderSettings { candidates: 1, max_iterations: 3, ..CoderSettings::default() }
}

#[tokio::test]
async fn a_one_token_slip_on_a_line_only_the_failing_test_runs_is_found_by_the_tests_before_the_model_writes_anything() {
    let ws = tempfile::tempdir().unwrap();
    let faulty = "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a - b\n";
    seed(ws.path(), faulty);
    let (model, sent) = model(vec![]);
    let (out, store) = run_configured(ws.path(), model, "python3 -m unittest -q", searching()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert!(code_prompts(&sent).is_empty(), "no change was asked of the model");
    let tried = small_edits(&store, &out);
    assert_eq!(tried.last(), Some(&("zz_calc.py:6: return a - b → return a + b".to_string(), true)), "{tried:?}");
    assert!(tried[..tried.len() - 1].iter().all(|(_, passed)| !passed), "the search stops at the first edit that passes: {tried:?}");
    assert!(tried.iter().all(|(edit, _)| edit.starts_with("zz_calc.py:6:")), "only the line the failing test runs alone: {tried:?}");
    assert_eq!(std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap(), "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a + b\n");
    let state: CoderState = serde_json::from_value(store.load(&out.session_id).unwrap().state).unwrap();
    assert_eq!(state.attempts.len(), 1);
    assert_eq!((state.attempts[0].kind.as_str(), state.attempts[0].passed), ("small edit", true));
    // Each try is killed after a few times what the suite took (an edit
    // to a loop's condition may loop forever), not at the command timeout.
    assert!(state.last_test_ms.is_some());
    let tries = tries(&store, &out);
    assert!(tries.iter().all(|t| (10..COMMAND_TIMEOUT_SECS).contains(&t.timeout)), "{tries:?}");
    // The failing tests alone first: checked once on the files as they
    // are, then each edit on them; the whole suite only for the edit that
    // passed them.
    assert!(tries[0].files == 0 && tries[0].command.contains("--ids=[\"test_calc.T.test_add\"]"), "{tries:?}");
    assert_eq!(tries.len(), 1 + tried.len() + 1, "{tries:?}");
    assert_eq!(tries.iter().filter(|t| t.command == "python3 -m unittest -q").count(), 1, "{tries:?}");
    assert!(failing_only(&store, &out)[..tried.len() - 1].iter().all(|alone| *alone));
}

#[tokio::test]
async fn with_pytest_the_failing_tests_are_run_alone_by_their_node_ids() {
    let ws = tempfile::tempdir().unwrap();
    let asserts = "from zz_calc import add, sub\n\ndef test_sub():\n    assert sub(3, 1) == 2\n\ndef test_add():\n    assert add(1, 2) == 3\n";
    seed_with(ws.path(), "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a - b\n", asserts);
    let (model, sent) = model(vec![]);
    let (out, store) = run_configured(ws.path(), model, &pytest_command(), searching()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert!(code_prompts(&sent).is_empty(), "no change was asked of the model");
    let tries = tries(&store, &out);
    assert!(tries[0].command.contains("--ids=[\"test_calc.py::test_add\"]"), "{tries:?}");
    assert_eq!(tries.iter().filter(|t| t.command == pytest_command()).count(), 1, "the whole suite only for the edit that passed: {tries:?}");
    let alone = failing_only(&store, &out);
    assert_eq!(alone.last(), Some(&false), "{alone:?}");
    assert!(alone[..alone.len() - 1].iter().all(|a| *a), "{alone:?}");
}

#[tokio::test]
async fn a_candidate_that_passes_none_of_the_failing_tests_never_runs_the_whole_suite() {
    let ws = tempfile::tempdir().unwrap();
    seed(ws.path(), "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a - b\n");
    let wrong = "zz_calc.py\n```python\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a * b\n>>>>>>> REPLACE\n```\n";
    let (model, _) = model(vec![wrong, HUNK]);
    let config = CoderSettings { candidates: 2, max_iterations: 3, small_edits: 0, line_rewrites: 0, ..CoderSettings::default() };
    let (out, store) = run_configured(ws.path(), model, "python3 -m unittest -q", config).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let tries = tries(&store, &out);
    let alone: Vec<bool> = tries.iter().map(|t| t.command.contains("--ids=")).collect();
    // The check on the files as found, each candidate on the failing test
    // alone, and the whole suite for the one that passed it.
    assert_eq!(alone, vec![true, true, true, false], "{tries:?}");
    let events = store.events(&out.session_id, 0, 1000).unwrap();
    let candidates: Vec<(bool, bool)> =
        events.iter().filter(|e| e.name == "coder:candidate").map(|e| (e.payload["failingOnly"] == true, e.payload["passed"] == true)).collect();
    assert_eq!(candidates, vec![(true, false), (false, true)]);
    assert_eq!(std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap(), "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a + b\n");
}

/// A `try_change` call: the command it ran, the files it wrote, its limit.
#[derive(Debug)]
struct Try {
    command: String,
    files: usize,
    timeout: u64,
}

fn tries(store: &Arc<dyn Store>, out: &agentloop_core::Outcome) -> Vec<Try> {
    let calls = store.calls(&out.session_id).unwrap();
    calls
        .iter()
        .filter(|c| c.name == "try_change")
        .map(|c| Try {
            command: c.input["command"].as_str().unwrap_or_default().to_string(),
            files: c.input["files"].as_array().map_or(0, Vec::len),
            timeout: c.input["timeoutSecs"].as_u64().unwrap_or(u64::MAX),
        })
        .collect()
}

/// For each small edit tried, whether it was tried on the failing tests
/// alone (and did not pass them).
fn failing_only(store: &Arc<dyn Store>, out: &agentloop_core::Outcome) -> Vec<bool> {
    let events = store.events(&out.session_id, 0, 1000).unwrap();
    events.iter().filter(|e| e.name == "coder:small_edit").map(|e| e.payload["failingOnly"] == true).collect()
}

#[tokio::test]
async fn when_no_small_edit_passes_the_model_is_asked_and_the_tries_never_touch_the_files() {
    let ws = tempfile::tempdir().unwrap();
    seed_with(ws.path(), SCALED, ASSERTING);
    let (model, sent) = model(vec![SCALED_FIX]);
    let (out, store) = run_configured(ws.path(), model, "python3 -m unittest -q", searching()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let tried = small_edits(&store, &out);
    assert!(tried.iter().any(|(edit, _)| edit == "zz_calc.py:8: out.append(x * 100) → out.append(x * 101)"), "{tried:?}");
    assert!(tried.iter().all(|(_, passed)| !passed), "{tried:?}");
    assert!(failing_only(&store, &out).iter().all(|alone| *alone), "each was turned down by the failing tests alone");
    assert!(tries(&store, &out).iter().all(|t| t.command.contains("--ids=")), "so the whole suite never ran in a scratch copy");
    assert!(notices(&store, &out).iter().any(|n| n.starts_with(&format!("none of {} small edits", tried.len()))));
    assert_eq!(code_prompts(&sent).len(), 1, "the model wrote the change");
    assert_eq!(std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap(), SCALED.replace("x * 100", "x * 10"), "only the model's change was written");
}

#[tokio::test]
async fn a_small_edit_that_passes_the_failing_test_but_breaks_another_is_shown_to_the_model_as_a_near_miss() {
    let ws = tempfile::tempdir().unwrap();
    let faulty = "def teen(n):\n    return n % 100 in (11, 12)\n";
    let tests = "import unittest\nfrom zz_calc import teen\n\nclass T(unittest.TestCase):\n    def test_thirteen(self):\n        self.assertTrue(teen(13))\n\n    def test_twelve(self):\n        self.assertTrue(teen(12))\n";
    seed_with(ws.path(), faulty, tests);
    let fix = "zz_calc.py\n```python\n<<<<<<< SEARCH\n    return n % 100 in (11, 12)\n=======\n    return n % 100 in (11, 12, 13)\n>>>>>>> REPLACE\n```\n";
    let (model, sent) = model(vec![fix]);
    let (out, store) = run_configured(ws.path(), model, "python3 -m unittest -q", searching()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let tried = small_edits(&store, &out);
    assert!(tried.iter().all(|(_, passed)| !passed), "{tried:?}");
    let prompt = &code_prompts(&sent)[0];
    assert!(
        prompt.contains("- `zz_calc.py:2: return n % 100 in (11, 12) → return n % 100 in (11, 13)`: the failing tests pass with it, but 1 other test fails"),
        "the near miss is shown:\n{prompt}"
    );
    assert!(!prompt.contains("(12, 12)`"), "an edit that moved nothing is not shown:\n{prompt}");
}

/// What a line rewrite's prompt asks.
const REWRITE_QUESTION: &str = "Rewrite that line so that the failing tests pass";

fn rewrite_prompts(sent: &Sent) -> Vec<ChatRequest> {
    sent.lock().unwrap().iter().filter(|r| r.messages.last().is_some_and(|m| m.content.contains(REWRITE_QUESTION))).cloned().collect()
}

#[tokio::test]
async fn an_element_missing_from_a_literal_is_written_by_the_model_asked_for_the_line_alone() {
    let ws = tempfile::tempdir().unwrap();
    let faulty = "def teen(n):\n    return n % 100 in (11, 12)\n";
    let tests = "import unittest\nfrom zz_calc import teen\n\nclass T(unittest.TestCase):\n    def test_thirteen(self):\n        self.assertTrue(teen(13))\n\n    def test_twelve(self):\n        self.assertTrue(teen(12))\n";
    seed_with(ws.path(), faulty, tests);
    let (model, sent) = rewriting(|line| (line == "return n % 100 in (11, 12)").then_some("return n % 100 in (11, 12, 13)"));
    let (out, store) = run_configured(ws.path(), model, "python3 -m unittest -q", searching()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert!(code_prompts(&sent).is_empty(), "no whole change was asked of the model");
    let asked = rewrite_prompts(&sent);
    assert!(!asked.is_empty() && asked.len().is_multiple_of(3), "each line's answers are sampled together: {}", asked.len());
    assert!(asked.iter().all(|r| r.grammar.is_some()), "the answer is held to lines of code");
    let prompt = &asked[asked.len() - 1].messages[1].content;
    assert!(
        prompt.contains("From zz_calc.py:") && prompt.contains("(11, 13)`: the failing tests pass with it"),
        "the function and the near miss are shown:\n{prompt}"
    );
    assert_eq!(std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap(), "def teen(n):\n    return n % 100 in (11, 12, 13)\n");
    let state: CoderState = serde_json::from_value(store.load(&out.session_id).unwrap().state).unwrap();
    assert_eq!((state.attempts[0].kind.as_str(), state.attempts[0].passed), ("line rewrite", true));
    let rewrites: Vec<bool> =
        store.events(&out.session_id, 0, 1000).unwrap().iter().filter(|e| e.name == "coder:small_edit").map(|e| e.payload["byModel"] == true).collect();
    assert_eq!(rewrites.last(), Some(&true), "the edit that passed was the model's: {rewrites:?}");
}

#[tokio::test]
async fn a_dropped_statement_is_put_back_beside_the_line_the_model_was_asked_about() {
    let ws = tempfile::tempdir().unwrap();
    let faulty = "def running(values):\n    out = []\n    total = 0\n    for v in values:\n        out.append(total)\n    return out\n";
    let tests = "import unittest\nfrom zz_calc import running\n\nclass T(unittest.TestCase):\n    def test_running(self):\n        self.assertEqual(running([1, 2, 3]), [1, 3, 6])\n";
    seed_with(ws.path(), faulty, tests);
    let (model, sent) = rewriting(|line| (line == "out.append(total)").then_some("total += v\nout.append(total)"));
    let (out, _) = run_configured(ws.path(), model, "python3 -m unittest -q", searching()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert!(code_prompts(&sent).is_empty(), "no whole change was asked of the model");
    let fixed = std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap();
    assert_eq!(fixed, faulty.replace("        out.append", "        total += v\n        out.append"), "put back at the line's indentation");
    let asked: Vec<String> = sent
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| r.messages.last().map(|m| m.content.clone()))
        .filter(|p| p.contains(REWRITE_QUESTION))
        .filter_map(|p| p.lines().find_map(|l| l.strip_suffix("  # <- this line")).map(|l| l.trim().to_string()))
        .collect();
    assert!(!asked.is_empty() && asked.iter().all(|l| !l.starts_with("def ")), "the signature is never asked about: {asked:?}");
}

/// What a missing statement's prompt asks.
const MISSING_QUESTION: &str = "a statement it needs may be missing from it";

#[tokio::test]
async fn a_statement_no_line_rewrite_wrote_is_asked_of_the_whole_function_and_the_tests_find_where_it_goes() {
    let ws = tempfile::tempdir().unwrap();
    let faulty = "class Meter:\n    def __init__(self):\n        self.readings = []\n        self.total = 0\n\n    def read(self, amount):\n        self.readings.append(amount)\n        return self.total\n";
    let tests = "import unittest\nfrom zz_calc import Meter\n\nclass T(unittest.TestCase):\n    def test_sum(self):\n        m = Meter()\n        m.read(2)\n        self.assertEqual(m.read(3), 5)\n";
    seed_with(ws.path(), faulty, tests);
    // Every line's rewrite is the line as it was; asked what the function
    // lacks, the model names the statement but not where it goes.
    let (model, sent) = rewriting_with(r#"{"steps": ["add the reading to the total"]}"#, vec![], |_| None, Some("```python\nself.total += amount\n```"));
    let (out, store) = run_configured(ws.path(), model, "python3 -m unittest -q", searching()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert!(code_prompts(&sent).is_empty(), "no whole change was asked of the model");
    let fixed = std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap();
    assert!(
        fixed.contains("        self.total += amount\n") && fixed.contains("    def read(self, amount):\n"),
        "put in the function at its body's indentation:\n{fixed}"
    );
    let asked: Vec<String> =
        sent.lock().unwrap().iter().filter_map(|r| r.messages.last().map(|m| m.content.clone())).filter(|p| p.contains(MISSING_QUESTION)).collect();
    let whole = "```python\n    def read(self, amount):\n        self.readings.append(amount)\n        return self.total\n```";
    assert!(asked.iter().any(|p| p.contains(whole)), "the function is shown whole:\n{asked:#?}");
    let state: CoderState = serde_json::from_value(store.load(&out.session_id).unwrap().state).unwrap();
    assert_eq!((state.attempts[0].kind.as_str(), state.attempts[0].passed), ("missing statement", true));
    let inserted = store.events(&out.session_id, 0, 1000).unwrap().iter().filter(|e| e.name == "coder:small_edit" && e.payload["inserted"] == true).count();
    assert!(inserted >= 1, "tried as a missing statement");
}

#[tokio::test]
async fn a_line_whose_every_answer_failed_is_asked_again_once_the_chain_moves_to_its_stronger_model() {
    let ws = tempfile::tempdir().unwrap();
    let faulty = "def teen(n):\n    n = abs(n)\n    return n % 100 in (11, 12)\n";
    let tests = "import unittest\nfrom zz_calc import teen\n\nclass T(unittest.TestCase):\n    def test_thirteen(self):\n        self.assertTrue(teen(13))\n\n    def test_twelve(self):\n        self.assertTrue(teen(12))\n";
    seed_with(ws.path(), faulty, tests);
    // The weaker model plans, then answers each rewrite with a different
    // wrong literal: edits that parse, and fail.
    let weak = ScriptedModel::with(|req| {
        let prompt = req.messages.last().map(|m| m.content.as_str()).unwrap_or_default();
        Ok(ChatResponse::text(if prompt.contains(REWRITE_QUESTION) {
            format!("return n % 100 in (11, {})", 14 + (req.temperature.unwrap_or(0.0) * 10.0) as u32)
        } else {
            r#"{"steps": ["count 13 as a teen"]}"#.to_string()
        }))
    })
    .named("weak");
    let (strong, sent) = rewriting(|line| (line == "return n % 100 in (11, 12)").then_some("return n % 100 in (11, 12, 13)"));
    let chain = agentloop_llm::FallbackChain::new("chain", vec![Arc::new(weak), Arc::new(strong.named("strong"))], 3).unwrap();
    let (out, store) = run_on(ws.path(), Arc::new(chain), "python3 -m unittest -q", searching()).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert!(code_prompts(&sent).is_empty(), "no whole change was asked of the model");
    assert_eq!(std::fs::read_to_string(ws.path().join("zz_calc.py")).unwrap(), faulty.replace("(11, 12)", "(11, 12, 13)"));
    let state: CoderState = serde_json::from_value(store.load(&out.session_id).unwrap().state).unwrap();
    assert_eq!((state.attempts[0].kind.as_str(), state.attempts[0].passed), ("line rewrite", true));
}

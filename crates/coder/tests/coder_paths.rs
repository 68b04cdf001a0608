//! The coder's graph driven through each of its paths by a scripted model,
//! on a real workspace with a real test command (Python's unittest).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop_agent::Wiring;
use agentloop_coder::{self as coder, CoderSettings, CoderState};
use agentloop_core::{ChatResponse, Models, Outcome, SessionStatus, StartOptions, Store};
use agentloop_llm::ScriptedModel;
use agentloop_store::SqliteStore;
use agentloop_tools::{ApprovalPolicy, Approvals, Workspace};
use serde_json::{json, Value};

const BROKEN: &str = "def add(a, b):\n    return a - b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";
const WRONG_TOO: &str = "def add(a, b):\n    return a * b\n";
const TESTS: &str = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\nif __name__ == '__main__':\n    unittest.main()\n";

/// One change per CODE or FIX, written and tested: the paths below are
/// the loop's own; the search over candidates has tests of its own.
fn single() -> CoderSettings {
    CoderSettings { candidates: 1, ..CoderSettings::default() }
}

/// What the scripted model answers, per phase, in order.
#[derive(Default)]
struct Script {
    phases: BTreeMap<&'static str, VecDeque<Value>>,
}

impl Script {
    fn with(mut self, phase: &'static str, answer: Value) -> Self {
        self.phases.entry(phase).or_default().push_back(answer);
        self
    }
}

/// The phase a request belongs to, by its last user turn (an answer asked
/// for again is the same prompt with the reason added).
fn phase_of_request(req: &agentloop_core::ChatRequest) -> &'static str {
    phase_of(req.messages.last().map(|m| m.content.as_str()).unwrap_or_default())
}

fn phase_of(prompt: &str) -> &'static str {
    if prompt.contains("call one of the tools to look it up") {
        "look_up"
    } else if prompt.contains("Write a short plan") {
        "plan"
    } else if prompt.contains("Carry out the plan") {
        "code"
    } else if prompt.contains("The last attempt failed") {
        "reflect"
    } else if prompt.contains("What to fix") {
        "fix"
    } else {
        "review"
    }
}

/// A change as the model gives it: the path, then the file in a fence.
fn change(content: &str) -> Value {
    Value::String(format!("calc.py\n```python\n{content}```\n"))
}

fn plan() -> Value {
    json!({"steps": ["make add return the sum"]})
}

fn reflection(recommendation: &str, confidence: f64) -> Value {
    json!({"diagnosis": "add subtracts", "rootCause": "code", "recommendation": recommendation, "feedback": "use +", "confidence": confidence})
}

fn accept() -> Value {
    json!({"accept": true, "objection": ""})
}

struct Run {
    out: Outcome,
    store: Arc<dyn Store>,
    ws: tempfile::TempDir,
    asked: Vec<&'static str>,
}

async fn run(script: Script, config: CoderSettings) -> Run {
    run_with_tests(script, config, TESTS).await
}

/// A model answering from `script` by phase, and the phases it was asked.
fn scripted(script: Script) -> (ScriptedModel, Arc<Mutex<Vec<&'static str>>>) {
    let script = Mutex::new(script);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a2 = asked.clone();
    let model = ScriptedModel::with(move |req| {
        let phase = phase_of_request(req);
        a2.lock().unwrap().push(phase);
        let answer = script.lock().unwrap().phases.get_mut(phase).and_then(|q| q.pop_front()).unwrap_or_else(|| panic!("no scripted answer for {phase}"));
        Ok(ChatResponse::text(text_of(answer)))
    });
    (model, asked)
}

/// Every request a model was sent, with its phase, in order.
type Sent = Arc<Mutex<Vec<(&'static str, agentloop_core::ChatRequest)>>>;

/// A model answering `answer(phase)` that keeps every request it is sent.
fn recording(mut answer: impl FnMut(&'static str) -> Value + Send + 'static) -> (ScriptedModel, Sent) {
    let sent = Sent::default();
    let seen = sent.clone();
    let model = ScriptedModel::with(move |req| {
        let phase = phase_of_request(req);
        seen.lock().unwrap().push((phase, req.clone()));
        Ok(ChatResponse::text(text_of(answer(phase))))
    });
    (model, sent)
}

/// The requests of one phase.
fn sent_in(sent: &Sent, phase: &str) -> Vec<agentloop_core::ChatRequest> {
    sent.lock().unwrap().iter().filter(|(p, _)| *p == phase).map(|(_, r)| r.clone()).collect()
}

/// A plan, the right change at once, and an accepting review.
fn passing(phase: &str) -> Value {
    match phase {
        "plan" => plan(),
        "code" => change(FIXED),
        _ => accept(),
    }
}

async fn run_with_tests(script: Script, config: CoderSettings, tests: &str) -> Run {
    let (model, asked) = scripted(script);
    let (out, store, ws) = run_model(model, config, tests, None).await;
    let asked = asked.lock().unwrap().clone();
    Run { out, store, ws, asked }
}

/// A scripted answer as the model's text: strings as they are, JSON printed.
fn text_of(answer: Value) -> String {
    match answer {
        Value::String(text) => text,
        json => json.to_string(),
    }
}

/// The coder on a fresh workspace (the broken `calc.py` and `tests`) with
/// `model`; the sandbox keeps `home`'s secrets out when given.
async fn run_model(model: ScriptedModel, config: CoderSettings, tests: &str, home: Option<&std::path::Path>) -> (Outcome, Arc<dyn Store>, tempfile::TempDir) {
    run_models(Models::new(Arc::new(model)), config, tests, home).await
}

/// `run_model` with a model per role.
async fn run_models(models: Models, config: CoderSettings, tests: &str, home: Option<&std::path::Path>) -> (Outcome, Arc<dyn Store>, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("calc.py"), BROKEN).unwrap();
    std::fs::write(ws.path().join("test_calc.py"), tests).unwrap();
    let workspace = Workspace::new(ws.path()).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let sandbox = agentloop_tools::Sandbox::new(workspace.root(), &Default::default(), home, None).unwrap();
    let runner = coder::runner(&Wiring::new(models, store.clone()), &workspace, &sandbox, Duration::from_secs(60)).unwrap();
    let state = CoderState::new(&workspace, "make add() return the sum", "python3 -m unittest -q", config.clone(), Approvals::new(ApprovalPolicy::Never));
    let mut options = StartOptions::new(coder::termination(&config));
    options.exit_when_paused = true;
    let out = runner.start(state, options).unwrap().wait().await.unwrap();
    (out, store, ws)
}

fn state(r: &Run) -> CoderState {
    serde_json::from_value(r.store.load(&r.out.session_id).unwrap().state).unwrap()
}

#[tokio::test]
async fn passing_the_first_time_goes_plan_code_test_review() {
    let r = run(Script::default().with("plan", plan()).with("code", change(FIXED)).with("review", accept()), single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "review"]);
    assert_eq!(r.out.progress.iterations, 1);
    assert_eq!(std::fs::read_to_string(r.ws.path().join("calc.py")).unwrap(), FIXED);
    assert!(state(&r).attempts[0].passed);
}

#[tokio::test]
async fn changes_are_asked_for_held_to_the_change_format_naming_the_files_it_may_change() {
    let (model, sent) = recording(passing);
    let (out, _, _) = run_model(model, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let code = sent_in(&sent, "code")[0].grammar.clone().expect("CODE is held to a grammar");
    assert!(code.contains("\"calc.py\""), "the code file may be changed: {code}");
    assert!(!code.contains("\"test_calc.py\""), "the tests are the specification, not offered: {code}");
    assert!(sent.lock().unwrap().iter().filter(|(p, _)| *p != "code").all(|(_, r)| r.grammar.is_none()), "only changes are held to the change format");
}

#[tokio::test]
async fn the_plan_and_the_first_change_read_which_tests_fail_before_anything_is_tried() {
    let (model, sent) = recording(passing);
    let (out, _, _) = run_model(model, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    for phase in ["plan", "code"] {
        let prompt = sent_in(&sent, phase)[0].messages.last().unwrap().content.clone();
        assert!(prompt.contains("The tests now, on the files above (before any change)"), "{phase}: {prompt}");
        // unittest's own report of the failure: the assertion and its values.
        assert!(prompt.contains("AssertionError: -1 != 5"), "{phase}: {prompt}");
    }
}

#[tokio::test]
async fn earlier_attempts_are_remembered_a_line_each_and_only_the_output_that_matters_now_is_whole() {
    let mut codes = vec![change(FIXED), change(WRONG_TOO)];
    let (model, sent) = recording(move |phase| match phase {
        "plan" => plan(),
        "code" | "fix" => codes.pop().unwrap(),
        "reflect" => reflection("fix", 0.9),
        _ => accept(),
    });
    let (out, _, _) = run_model(model, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let reflect = sent_in(&sent, "reflect")[0].messages.last().unwrap().content.clone();
    assert!(reflect.contains("return a * b"), "REFLECT reads the code it diagnoses: {reflect}");
    assert!(reflect.contains("The last attempt's test output:") && reflect.contains("AssertionError: 6 != 5"), "{reflect}");
    let fix = sent_in(&sent, "fix")[0].messages.last().unwrap().content.clone();
    assert!(
        fix.contains("- iteration 1 (plan) changed calc.py: 0 of 1 tests passed; failing: test_add — undone: it passed no more tests than the files before it"),
        "one line for the attempt: {fix}"
    );
    assert_eq!(fix.matches("AssertionError").count(), 1, "the failure now, shown once: {fix}");
    assert!(fix.contains("The tests now, on the files above (before any change)"), "the files are the original again: {fix}");
    assert!(
        fix.contains("was undone: the files below are the best version so far. Of that change it was said:"),
        "the reflection was of the undone change: {fix}"
    );
}

#[tokio::test]
async fn a_failing_test_is_reflected_on_and_fixed() {
    let script = Script::default()
        .with("plan", plan())
        .with("code", change(WRONG_TOO))
        .with("reflect", reflection("fix", 0.8))
        .with("fix", change(FIXED))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "reflect", "fix", "review"]);
    let s = state(&r);
    assert_eq!((s.fixes, s.replans, r.out.progress.iterations), (1, 0, 2));
    assert_eq!(r.out.progress.fixes, 1, "the fix rate counts it");
    assert!(s.attempts[0].test_output.contains("FAILED") || s.attempts[0].test_output.contains("AssertionError"), "{}", s.attempts[0].test_output);
    assert_eq!(std::fs::read_to_string(r.ws.path().join("calc.py")).unwrap(), FIXED);
}

#[tokio::test]
async fn a_wrong_approach_is_replanned_and_the_memory_reaches_the_new_plan() {
    let script = Script::default()
        .with("plan", plan())
        .with("code", change(WRONG_TOO))
        .with("reflect", reflection("replan", 0.7))
        .with("plan", plan())
        .with("code", change(FIXED))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(state(&r).replans, 1);
    assert_eq!(r.out.progress.replans, 1);
}

#[tokio::test]
async fn low_confidence_aborts_with_the_reason() {
    let script =
        Script::default().with("plan", plan()).with("code", change(WRONG_TOO)).with("reflect", reflection("fix", 0.1)).with("reflect", reflection("fix", 0.2));
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Error);
    assert_eq!(r.out.finish_reason.as_deref(), Some("low_confidence"));
    assert_eq!(r.asked, vec!["plan", "code", "reflect", "reflect"], "a low reading is asked once more before it stands");
    assert_eq!(std::fs::read_to_string(r.ws.path().join("calc.py")).unwrap(), BROKEN, "a change no better than the original is undone");
    assert!(state(&r).attempts[0].patch.contains("+    return a * b"), "the journal keeps it for `sessions diff`");
}

#[tokio::test]
async fn one_low_confidence_reading_is_asked_again_and_a_confident_second_carries_on() {
    let script = Script::default()
        .with("plan", plan())
        .with("code", change(WRONG_TOO))
        .with("reflect", reflection("fix", 0.0))
        .with("reflect", reflection("fix", 0.8))
        .with("fix", change(FIXED))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "reflect", "reflect", "fix", "review"]);
}

#[tokio::test]
async fn a_diagnosis_that_copies_its_instructions_is_asked_again() {
    let echo = json!({
        "diagnosis": "The code in calc.py is a bug to repair: a bug to repair, so recommend fix; the root cause is usually the code, a bug to repair.",
        "rootCause": "code", "recommendation": "fix", "feedback": "use +", "confidence": 0.9
    });
    let script = Script::default()
        .with("plan", plan())
        .with("code", change(WRONG_TOO))
        .with("reflect", echo)
        .with("reflect", reflection("fix", 0.8))
        .with("fix", change(FIXED))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "reflect", "reflect", "fix", "review"]);
    assert_eq!(state(&r).attempts[0].reflection.as_ref().unwrap().diagnosis, "add subtracts", "the second answer is the one remembered");
}

#[tokio::test]
async fn too_many_replans_stop_the_session() {
    let mut script = Script::default();
    for content in [WRONG_TOO, "def add(a, b):\n    return 0\n"] {
        script = script.with("plan", plan()).with("code", change(content)).with("reflect", reflection("replan", 0.9));
    }
    let r = run(script, CoderSettings { max_replans: 1, ..single() }).await;
    assert_eq!(r.out.status, SessionStatus::Error);
    assert_eq!(r.out.finish_reason.as_deref(), Some("max_replans"));
}

#[tokio::test]
async fn the_iteration_limit_ends_a_session_that_never_passes() {
    let mut script = Script::default().with("plan", plan()).with("code", change(WRONG_TOO));
    for i in 0..3 {
        script = script.with("reflect", reflection("fix", 0.9)).with("fix", change(&format!("def add(a, b):\n    return {i}\n")));
    }
    script = script.with("reflect", reflection("fix", 0.9));
    let r = run(script, CoderSettings { max_iterations: 3, ..single() }).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("max_iterations"), "{:?}", r.out);
    assert!(!state(&r).attempts.iter().any(|a| a.passed));
    assert_eq!(r.out.progress.iterations, 3);
}

#[tokio::test]
async fn an_identical_edit_is_refused_and_asked_for_again_in_the_same_step() {
    let script = Script::default()
        .with("plan", plan())
        .with("code", change(WRONG_TOO))
        .with("reflect", reflection("fix", 0.8))
        .with("fix", change(WRONG_TOO))
        .with("fix", change(FIXED))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "reflect", "fix", "fix", "review"]);
    assert_eq!(r.out.progress.iterations, 2, "the repeat cost no iteration");
    let test_runs = r.store.calls(&r.out.session_id).unwrap().into_iter().filter(|c| c.name == "run_command").count();
    assert_eq!(test_runs, 3, "the baseline and two changes: the repeated edit was not tested");
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let refused = events.iter().find(|e| e.name == "coder:refused").expect("the refusal is an event");
    assert!(refused.payload["reason"].as_str().unwrap().contains("same change as attempt 1"), "{}", refused.payload);
}

#[tokio::test]
async fn new_files_nothing_uses_are_left_out_and_a_change_of_only_those_is_asked_again() {
    let stray = |name: &str| format!("new file {name}\n```\nthe result of the merge\n```\n");
    let script = Script::default()
        .with("plan", plan())
        .with("code", Value::String(stray("result.txt")))
        .with("code", Value::String(format!("{}\n{}", text_of(change(FIXED)), stray("notes/summary.md"))))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "code", "review"], "the stray-only answer cost no iteration");
    assert!(!r.ws.path().join("result.txt").exists() && !r.ws.path().join("notes").exists(), "no stray file was written");
    assert_eq!(state(&r).attempts[0].files, vec!["calc.py"]);
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let refused = events.iter().find(|e| e.name == "coder:refused").expect("the refusal is an event");
    assert!(refused.payload["reason"].as_str().unwrap().contains("only added files nothing uses (result.txt)"), "{}", refused.payload);
}

#[tokio::test]
async fn a_change_to_documents_alone_is_asked_again_and_no_new_file_is_offered_unasked() {
    let mut codes = VecDeque::from([Value::String("README.md\n```markdown\n# calc\n\n`add` is fixed.\n```\n".into()), change(FIXED)]);
    let (model, sent) = recording(move |phase| if phase == "code" { codes.pop_front().unwrap() } else { passing(phase) });
    let (out, store, ws) = run_model(model, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert!(!ws.path().join("README.md").exists(), "the document was not written");
    let refused = store.events(&out.session_id, 0, usize::MAX).unwrap().into_iter().find(|e| e.name == "coder:refused").expect("the refusal is an event");
    assert!(refused.payload["reason"].as_str().unwrap().contains("only changed documents (README.md)"), "{}", refused.payload);
    let first = &sent_in(&sent, "code")[0];
    let grammar = first.grammar.clone().unwrap_or_default();
    assert!(grammar.contains("\"calc.py\"") && !grammar.contains("new_file"), "nothing names a missing file, so none is offered: {grammar}");
    assert!(!first.messages.last().unwrap().content.contains("new file PATH"));
}

#[tokio::test]
async fn a_block_without_a_path_is_asked_for_again_within_the_same_iteration() {
    let script = Script::default()
        .with("plan", plan())
        .with(
            "code",
            Value::String(
                "```python
print('no file named')
```"
                .into(),
            ),
        )
        .with("code", change(FIXED))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "code", "review"]);
    assert_eq!(r.out.progress.iterations, 1);
    let s = state(&r);
    assert_eq!(s.attempts.len(), 1, "{:?}", s.attempts);
    assert!(s.attempts[0].passed);
}

#[tokio::test]
async fn a_change_that_leaves_a_file_unparsable_is_asked_again_with_the_line() {
    let numbered = "def add(a, b):\n    return a + b\n\n\n28: def sub(a, b):\n    return a - b\n";
    let mut codes = VecDeque::from([change(numbered), change(FIXED)]);
    let (model, sent) = recording(move |phase| if phase == "code" { codes.pop_front().unwrap() } else { passing(phase) });
    let (out, store, ws) = run_model(model, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert_eq!(std::fs::read_to_string(ws.path().join("calc.py")).unwrap(), FIXED);
    let refused = store.events(&out.session_id, 0, usize::MAX).unwrap().into_iter().find(|e| e.name == "coder:refused").expect("the refusal is an event");
    assert!(refused.payload["reason"].as_str().unwrap().contains("it leaves calc.py unparsable at line 5 (`28: def sub(a, b):`)"), "{}", refused.payload);
    assert_eq!(sent_in(&sent, "code").len(), 2, "asked again in the same step");
    assert_eq!(
        store.calls(&out.session_id).unwrap().iter().filter(|c| c.name == "try_change" || c.name == "run_command").count(),
        2,
        "the unparsable change ran no tests: the baseline and the fix's run alone"
    );
}

#[tokio::test]
async fn a_refused_answer_is_asked_for_again_with_the_reason_and_without_the_refused_answer() {
    let mut codes = VecDeque::from([Value::String("```python\nprint('no file named')\n```".into()), change(FIXED)]);
    let (model, sent) = recording(move |phase| if phase == "code" { codes.pop_front().unwrap() } else { passing(phase) });
    let (out, _, _) = run_model(model, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let requests = sent_in(&sent, "code");
    assert_eq!(requests.len(), 2);
    let (first, again) = (&requests[0], &requests[1]);
    assert_eq!(again.messages.len(), first.messages.len(), "no refused answer in the conversation");
    assert!(again.messages.iter().all(|m| !m.content.contains("no file named")), "the refused answer is not shown back");
    let last = &again.messages.last().unwrap().content;
    assert!(last.starts_with(&first.messages.last().unwrap().content), "the same prompt");
    assert!(last.contains("could not be applied: the answer had code but no file path"), "{last}");
    assert_eq!((first.temperature, again.temperature.is_some()), (None, true), "the first change is greedy, the second a fresh sample");
}

#[tokio::test]
async fn the_coder_role_plans_writes_and_reflects_while_review_stays_on_the_default_model() {
    let (writer, asked_writer) =
        scripted(Script::default().with("plan", plan()).with("code", change(WRONG_TOO)).with("reflect", reflection("fix", 0.8)).with("fix", change(FIXED)));
    let (default, asked_default) = scripted(Script::default().with("review", accept()));
    let models = Models::new(Arc::new(default)).with_role(coder::CODER_ROLE, Arc::new(writer));
    let (out, _, _) = run_models(models, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert_eq!(*asked_writer.lock().unwrap(), vec!["plan", "code", "reflect", "fix"]);
    assert_eq!(*asked_default.lock().unwrap(), vec!["review"]);
}

#[tokio::test]
async fn a_review_objection_goes_back_to_fix_once() {
    let script = Script::default()
        .with("plan", plan())
        .with("code", change(FIXED))
        .with("review", json!({"accept": false, "objection": "add a docstring"}))
        .with("fix", change("def add(a, b):\n    \"\"\"Sum.\"\"\"\n    return a + b\n"))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "review", "fix", "review"]);
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused_and_reflected_on() {
    let script = Script::default()
        .with("plan", plan())
        // Used by the code beside it, so it is not left out as a stray file.
        .with("code", Value::String(format!("{}../escaped.py\n```python\nx = 1\n```", text_of(change(&format!("import escaped\n{BROKEN}"))))))
        .with("reflect", reflection("fix", 0.8))
        .with("fix", change(FIXED))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert!(!r.ws.path().parent().unwrap().join("escaped.py").exists());
    assert!(state(&r).attempts[0].test_output.contains("refused"), "{}", state(&r).attempts[0].test_output);
}

#[tokio::test]
async fn answers_that_change_nothing_are_asked_again_then_go_to_fix_without_asking_reflect() {
    let script = Script::default()
        .with("plan", plan())
        .with("code", Value::String("I would change the minus to a plus.".into()))
        .with(
            "code",
            Value::String(format!(
                "calc.py\n```python\n{BROKEN}```\ntest_calc.py\n```python\nprint('rewritten')\n```\nnew file tests/test_more.py\n```python\nprint('mine')\n```"
            )),
        )
        .with("fix", change(FIXED))
        .with("review", accept());
    let r = run(script, single()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "code", "fix", "review"], "no model call diagnoses an answer that was not applied");
    let s = state(&r);
    assert!(s.attempts[0].unapplied.as_deref().unwrap_or_default().contains("only wrote tests (test_calc.py, tests/test_more.py)"), "{:?}", s.attempts[0]);
    assert_eq!(s.attempts[0].reflection.as_ref().map(|r| r.recommendation), Some(coder::Recommendation::Fix));
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    assert!(events.iter().any(|e| e.name == "coder:refused" && e.payload["reason"].as_str().unwrap().contains("no fenced code block")));
    assert_eq!(std::fs::read_to_string(r.ws.path().join("test_calc.py")).unwrap(), TESTS, "the tests were left alone");
    assert!(!r.ws.path().join("tests/test_more.py").exists(), "no test file of the model's own");
    assert_eq!(std::fs::read_to_string(r.ws.path().join("calc.py")).unwrap(), FIXED);
}

#[tokio::test]
async fn retries_are_sampled_while_the_first_change_is_greedy() {
    let mut answers = VecDeque::from([plan(), change(WRONG_TOO), reflection("fix", 0.8), change(FIXED), accept()]);
    let (model, sent) = recording(move |_| answers.pop_front().unwrap());
    let (out, _store, _ws) = run_model(model, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let temperatures: Vec<_> = sent.lock().unwrap().iter().filter(|(p, _)| matches!(*p, "code" | "fix")).map(|(_, r)| r.temperature).collect();
    assert_eq!(temperatures.len(), 2);
    assert_eq!(temperatures[0], None, "the first change is greedy");
    assert!(temperatures[1].is_some_and(|t| t > 0.5), "a retry is sampled: {temperatures:?}");
}

#[tokio::test]
async fn a_replan_after_progress_becomes_a_fix() {
    let two_tests = TESTS.replace(
        "        self.assertEqual(add(2, 3), 5)\n",
        "        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n",
    );
    let script = Script::default()
        .with("plan", plan())
        .with("code", change("def add(a, b):\n    return a - b + 1\n"))
        .with("reflect", reflection("fix", 0.8))
        .with("fix", change(WRONG_TOO))
        .with("reflect", reflection("replan", 0.8))
        .with("fix", change(FIXED))
        .with("review", accept());
    let r = run_with_tests(script, single(), &two_tests).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "reflect", "fix", "reflect", "fix", "review"], "2 failures then 1: the approach is kept");
    assert_eq!(state(&r).replans, 0);
    let events = r.store.events(&r.out.session_id, 0, 10_000).unwrap();
    assert!(events.iter().any(|e| e.name == "coder:keep_approach" && e.payload["failingBefore"] == 2 && e.payload["failingNow"] == 1));
}

#[tokio::test]
async fn a_model_that_answers_garbage_pauses_the_session_with_the_reason_and_touches_nothing() {
    let model = ScriptedModel::with(|_| Ok(ChatResponse::text("%%% <<garbage>> {not json")));
    let (out, store, ws) = run_model(model, single(), TESTS, None).await;
    // Three failed iterations in a row: the session pauses and asks, saying why.
    assert_eq!(out.status, SessionStatus::Paused, "{out:?}");
    store.load(&out.session_id).expect("the session is saved");
    let message = out.message.clone().unwrap_or_default();
    assert!(message.contains("not the JSON asked for") && message.contains("Continue or terminate?"), "{message}");
    assert_eq!(out.pending.as_ref().map(|p| p.request["kind"].clone()), Some(json!("continue_or_terminate")));
    assert_eq!(std::fs::read_to_string(ws.path().join("calc.py")).unwrap(), BROKEN, "nothing was written");
}

#[tokio::test]
async fn a_change_that_passes_no_more_tests_is_undone_and_a_failed_session_leaves_the_files_as_they_were() {
    let two_tests = TESTS.replace(
        "        self.assertEqual(add(2, 3), 5)\n",
        "        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n",
    );
    let script = Script::default()
        .with("plan", plan())
        .with("code", change("def add(a, b):\n    return 1\n"))
        .with("reflect", reflection("fix", 0.8))
        .with("fix", change(WRONG_TOO))
        .with("reflect", reflection("fix", 0.8));
    let r = run_with_tests(script, CoderSettings { max_iterations: 2, ..single() }, &two_tests).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("max_iterations"), "{:?}", r.out);
    let s = state(&r);
    assert!(s.baseline.as_deref().unwrap().contains("Ran 2 tests"), "the tests ran before any change: {:?}", s.baseline);
    assert!(s.attempts[0].undone && s.attempts[1].undone, "worse, then no better than the original: {:?}", s.attempts);
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let undone = events.iter().find(|e| e.name == "coder:undone").expect("the undo is an event");
    assert_eq!(
        (undone.payload["attempt"].as_u64(), undone.payload["passingNow"].as_u64(), undone.payload["passingBest"].as_u64()),
        (Some(1), Some(0), Some(1))
    );
    assert_eq!(std::fs::read_to_string(r.ws.path().join("calc.py")).unwrap(), BROKEN, "a change passing no more than the original is not left in place");
    assert!(s.attempts[1].patch.contains("-    return a - b\n+    return a * b\n"), "{}", s.attempts[1].patch);
}

/// Python that tries to write `outside`, read `key` and open a TCP
/// connection, printing each failure's traceback as a script would.
fn escapes(outside: &std::path::Path, key: &std::path::Path) -> String {
    format!(
        "import socket, traceback\nfor attempt in (lambda: open({o:?}, 'w').write('escaped'), lambda: open({k:?}).read(), lambda: socket.create_connection(('127.0.0.1', 9), timeout=2)):\n    try:\n        attempt()\n    except OSError:\n        traceback.print_exc()\n\n",
        o = outside.display().to_string(),
        k = key.display().to_string()
    )
}

#[tokio::test]
async fn escapes_in_the_models_code_are_refused_by_the_sandbox_and_recorded() {
    let outer = tempfile::tempdir().unwrap();
    let (outside, home) = (outer.path().join("outside.txt"), outer.path().join("home"));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE").unwrap();
    let code = format!("{}{FIXED}", escapes(&outside, &home.join(".ssh/id_ed25519")));
    let (model, _) = scripted(Script::default().with("plan", plan()).with("code", change(&code)).with("review", accept()));
    let (out, store, _ws) = run_model(model, single(), TESTS, Some(&home)).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert!(!outside.exists(), "the model's code wrote outside the workspace");
    let calls = store.calls(&out.session_id).unwrap();
    let refused: Vec<String> = calls
        .iter()
        .filter(|c| c.name == "run_command")
        .filter_map(|c| c.output.as_ref())
        .flat_map(|o| o["sandbox"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s.as_str().map(String::from))
        .collect();
    let said = refused.join("\n");
    assert!(said.contains(&format!("refused a write to {}", outside.display())), "{said}");
    assert!(said.contains(".ssh is kept from commands as secret"), "{said}");
    assert!(said.contains("refused a network connection"), "{said}");
}

/// With candidates, CODE asks for them together and tries them against the
/// tests in scratch copies — the first wrong, the second right, the third
/// never tried — stops at the one that passes, and
/// writes only that one: the workspace never holds the wrong change, and
/// TEST then observes the kept one on the real files.
#[tokio::test]
async fn candidates_are_tried_in_scratch_copies_and_only_the_best_is_written() {
    let config = CoderSettings { candidates: 3, ..single() };
    let script = Script::default()
        .with("plan", plan())
        .with("code", change(WRONG_TOO))
        .with("code", change(FIXED))
        .with("code", change(WRONG_TOO))
        .with("review", accept());
    let r = run(script, config).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.asked, vec!["plan", "code", "code", "code", "review"], "the three candidates were asked for together, once");
    assert_eq!(std::fs::read_to_string(r.ws.path().join("calc.py")).unwrap(), FIXED);
    let s = state(&r);
    assert_eq!(s.attempts.len(), 1, "one attempt: the kept candidate");
    assert!(s.attempts[0].passed);
    let events = r.store.events(&r.out.session_id, 0, 1000).unwrap();
    let candidates: Vec<&Value> = events.iter().filter(|e| e.name == "coder:candidate").map(|e| &e.payload).collect();
    assert_eq!(candidates.len(), 2);
    assert_eq!((candidates[0]["passed"].clone(), candidates[0]["passing"].clone(), candidates[0]["ran"].clone()), (json!(false), json!(0), json!(1)));
    assert_eq!(candidates[1]["passed"], true);
    let kept = events.iter().find(|e| e.name == "coder:candidate_kept").unwrap();
    assert_eq!(kept.payload, json!({"number": 2, "tried": 2}));
    let tries = r.store.calls(&r.out.session_id).unwrap().into_iter().filter(|c| c.name == "try_change").count();
    assert_eq!(tries, 2, "each candidate's trial is journaled");
    let records = &s.attempts[0].candidates;
    assert_eq!(records.iter().map(|c| (c.passed, c.kept)).collect::<Vec<_>>(), [(false, false), (true, true)]);
    assert!(records[0].patch.contains("-    return a - b") && records[0].patch.contains("+    return a * b"), "{}", records[0].patch);
}

/// When no candidate passes, the one passing the most tests is kept.
#[tokio::test]
async fn when_no_candidate_passes_the_one_passing_most_is_kept() {
    let two = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n\nif __name__ == '__main__':\n    unittest.main()\n";
    let config = CoderSettings { candidates: 2, max_iterations: 1, ..single() };
    let half = "def add(a, b):\n    return a * b + 0\n";
    let r = run_with_tests(
        Script::default().with("plan", plan()).with("code", change(WRONG_TOO)).with("code", change(half)).with("reflect", reflection("fix", 0.9)),
        config,
        two,
    )
    .await;
    let events = r.store.events(&r.out.session_id, 0, 1000).unwrap();
    let kept = events.iter().find(|e| e.name == "coder:candidate_kept").unwrap();
    assert_eq!(kept.payload, json!({"number": 1, "tried": 2}), "both pass test_zero; the earliest of equals is kept");
}

/// A reflection that repeats an earlier diagnosis word for word adds
/// nothing: it is set aside without asking again, and FIX works from the
/// failing test's name and what it expected.
#[tokio::test]
async fn a_repeated_reflection_gives_way_to_the_failing_tests() {
    let mut changes = vec![change(FIXED), change("def add(a, b):\n    return a - b - 0\n"), change(WRONG_TOO)];
    let (model, sent) = recording(move |phase| match phase {
        "plan" => plan(),
        "code" | "fix" => changes.pop().unwrap(),
        "reflect" => reflection("fix", 0.9),
        _ => accept(),
    });
    let (out, store, _) = run_model(model, single(), TESTS, None).await;
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert_eq!(sent_in(&sent, "reflect").len(), 2, "the repeat was not asked for again");
    let events = store.events(&out.session_id, 0, 1000).unwrap();
    assert_eq!(events.iter().filter(|e| e.name == "coder:reflection_repeated").count(), 1);
    let second_fix = sent_in(&sent, "fix")[1].messages.last().unwrap().content.clone();
    assert!(second_fix.contains("make test_add pass: AssertionError: -1 != 5"), "{second_fix}");
}

#[tokio::test]
async fn with_mcp_tools_the_plan_starts_from_what_the_model_looked_up() {
    let exe = std::env::current_exe().unwrap();
    let fixture = exe.parent().and_then(|d| d.parent()).unwrap().join("mcp-fixture");
    assert!(fixture.exists(), "{} is missing: build the test binaries with `cargo test --workspace`", fixture.display());
    let mcp = BTreeMap::from([(
        "fx".to_string(),
        agentloop_tools::mcp_client::McpServerConfig { command: Some(fixture.display().to_string()), ..Default::default() },
    )]);
    let looked = Arc::new(Mutex::new(0));
    let sent = Sent::default();
    let (seen, count) = (sent.clone(), looked.clone());
    let model = ScriptedModel::with(move |req| {
        let phase = phase_of_request(req);
        seen.lock().unwrap().push((phase, req.clone()));
        if phase == "look_up" {
            assert!(req.tools.iter().any(|t| t.name == "mcp__fx__echo"), "the look-up offers the servers' tools");
            *count.lock().unwrap() += 1;
            if *count.lock().unwrap() == 1 {
                let call = agentloop_core::ToolCall { id: "c1".into(), name: "mcp__fx__echo".into(), arguments: json!({"text": "add() must use +"}) };
                return Ok(ChatResponse { tool_calls: vec![call], finish_reason: agentloop_core::FinishReason::ToolCalls, ..ChatResponse::text("") });
            }
            return Ok(ChatResponse::text("nothing to look up"));
        }
        Ok(ChatResponse::text(text_of(passing(phase))))
    });
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("calc.py"), BROKEN).unwrap();
    std::fs::write(ws.path().join("test_calc.py"), TESTS).unwrap();
    let workspace = Workspace::new(ws.path()).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let sandbox = agentloop_tools::Sandbox::new(workspace.root(), &Default::default(), None, None).unwrap();
    let runner =
        coder::runner(&Wiring { mcp_servers: mcp, ..Wiring::new(Models::new(Arc::new(model)), store.clone()) }, &workspace, &sandbox, Duration::from_secs(60))
            .unwrap();
    let state = CoderState::new(&workspace, "make add() return the sum", "python3 -m unittest -q", single(), Approvals::new(ApprovalPolicy::Never));
    let out = runner.start(state, StartOptions::new(coder::termination(&single()))).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    assert_eq!(*looked.lock().unwrap(), 2, "a look-up, then none needed");
    let plan_prompt = sent_in(&sent, "plan")[0].messages.last().unwrap().content.clone();
    assert!(plan_prompt.contains("Looked up:") && plan_prompt.contains("add() must use +"), "{plan_prompt}");
    let s: CoderState = serde_json::from_value(store.load(&out.session_id).unwrap().state).unwrap();
    assert_eq!(s.lookups.len(), 1, "{:?}", s.lookups);
}

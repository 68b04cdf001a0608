//! The HumanEval loop as a session: answers are judged by the examples in
//! the docstring, in every shape HumanEval writes them, run in the
//! session's Python tool; the loop stops at the first answer that passes
//! them all and keeps its best otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_bench::humaneval::solve::{self, SolveState, Visible};
use agentloop_core::journal::CallKind;
use agentloop_core::{ChatResponse, Models, SessionStatus, StartOptions, Store};
use agentloop_llm::ScriptedModel;
use agentloop_store::{Durability, SqliteStore};

/// Runs the loop on `prompt` with the scripted answers, at most `attempts`.
async fn solve(prompt: &str, entry: &str, answers: &[&str], attempts: u32) -> (SolveState, SessionStatus) {
    let (s, status, _) = solve_together(prompt, entry, answers, attempts, 1).await;
    (s, status)
}

/// The same, asking `together` samples at once; also the model calls the
/// journal holds.
async fn solve_together(prompt: &str, entry: &str, answers: &[&str], attempts: u32, together: u32) -> (SolveState, SessionStatus, usize) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("s.sqlite"), Durability::Process).unwrap());
    let model = ScriptedModel::queue(answers.iter().map(|a| ChatResponse::text(format!("```python\n{a}```"))));
    std::fs::create_dir_all(dir.path().join("py")).unwrap();
    let sandbox = agentloop_tools::Sandbox::new(&dir.path().join("py"), &Default::default(), None, None).unwrap();
    let runner = solve::runner(Models::new(Arc::new(model)), store.clone(), sandbox).unwrap();
    let state = SolveState { task_id: "t".into(), prompt: prompt.into(), entry_point: entry.into(), attempts, together, ..SolveState::default() };
    let outcome = runner.start(state, StartOptions::new(solve::termination(attempts, together))).unwrap().wait().await.unwrap();
    let calls = store.calls(&outcome.session_id).unwrap().iter().filter(|c| c.kind == CallKind::Model).count();
    (serde_json::from_value(store.load(&outcome.session_id).unwrap().state).unwrap(), outcome.status, calls)
}

fn seen(s: &SolveState, i: usize) -> Visible {
    s.candidates[i].visible.clone().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctest_examples_judge_each_answer_until_one_passes() {
    let prompt = "def f(x):\n    \"\"\" Double.\n    >>> f(2)\n    4\n    >>> f([1])\n    [1, 1]\n    \"\"\"\n";
    let (s, status) = solve(prompt, "f", &["def f(x):\n    return x\n", "def f(x):\n    return x\n", "def f(x):\n    return x * 2\n"], 5).await;
    assert_eq!(status, SessionStatus::Completed);
    assert_eq!(s.candidates.len(), 3);
    assert_eq!(seen(&s, 0), Visible { examples: 2, passed: 0, defined: true });
    assert!(s.candidates[1].visible.is_none(), "the same code is not tested twice");
    assert!(seen(&s, 2).all_pass());
    assert_eq!(s.chosen().unwrap().code, s.candidates[2].code);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_asked_together_are_tested_in_order_until_one_passes_and_never_exceed_the_attempts() {
    let prompt = "def f(x):\n    \"\"\" Double.\n    >>> f(2)\n    4\n    \"\"\"\n";
    let (wrong, right) = ("def f(x):\n    return x\n", "def f(x):\n    return x * 2\n");
    let (s, status, calls) = solve_together(prompt, "f", &[wrong, "def f(x):\n    return x + 1\n", right, "def f(x):\n    return 2 * x\n"], 8, 3).await;
    assert_eq!(status, SessionStatus::Completed);
    assert_eq!((s.candidates.len(), calls), (4, 4), "the greedy answer, then three together, each journaled once");
    assert!(seen(&s, 2).all_pass());
    assert!(s.candidates[3].visible.is_none(), "the one after the first pass is not tested");
    assert_eq!(s.chosen().unwrap().code, s.candidates[2].code);
    let wrongs = [wrong; 8];
    let (s, _, calls) = solve_together(prompt, "f", &wrongs, 6, 4).await;
    assert_eq!((s.candidates.len(), calls), (6, 6), "one greedy, four together, then only the one attempt left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrow_and_prose_examples_count_and_the_best_answer_stands() {
    let prompt = "def add(a, b):\n    \"\"\"Add.\n    add(1, 2) ➞ 3\n    add(2, 2) => 4\n    add(3, 3) = 6\n    For a = 5, b = 1 the output should be 6\n    Example:\n        Input: a = 0, b = 0\n        Output: 0\n    \"\"\"\n";
    let (s, _) = solve(prompt, "add", &["def add(a, b):\n    return a * b\n", "def add(a, b):\n    return a + b if a else 1\n"], 2).await;
    assert_eq!(seen(&s, 0).examples, 5);
    assert!(seen(&s, 0).passed < 5);
    assert_eq!(seen(&s, 1).passed, 4, "all but the a = 0 example");
    assert_eq!(s.chosen().unwrap().code, s.candidates[1].code, "the most examples passed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_crashes_or_hangs_passes_nothing() {
    let prompt = "def g(x):\n    \"\"\"g(1) == 1\"\"\"\n";
    let (s, status) = solve(prompt, "g", &["def g(x) return x\n", "def g(x):\n    while True:\n        pass\n"], 2).await;
    assert_eq!(status, SessionStatus::Completed);
    assert_eq!(seen(&s, 0).score(), 0, "{:?}", seen(&s, 0));
    let hangs = seen(&s, 1);
    assert!(hangs.defined && hangs.passed == 0 && hangs.examples == 1, "{hangs:?}");
}

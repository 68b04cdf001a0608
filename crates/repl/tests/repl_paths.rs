//! The repl's graph through each of its paths, with a scripted model and a
//! real persistent Python session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agentloop_agent::Wiring;
use agentloop_core::{ChatRequest, ChatResponse, Models, Outcome, SessionStatus, StartOptions, Store, TokenSink};
use agentloop_llm::ScriptedModel;
use agentloop_repl::{self as repl, ReplSettings, ReplState};
use agentloop_store::SqliteStore;
use serde_json::json;

struct Run {
    out: Outcome,
    store: Arc<dyn Store>,
    requests: Vec<ChatRequest>,
    streamed: String,
    _dir: tempfile::TempDir,
}

impl Run {
    fn state(&self) -> ReplState {
        serde_json::from_value(self.store.load(&self.out.session_id).unwrap().state).unwrap()
    }
}

fn verdict(complete: bool, next: &str) -> String {
    json!({"is_complete": complete, "reasoning": if complete { "the output answers it" } else { "not yet" }, "next_action": next}).to_string()
}

/// Answers in order; REFLECT's requests (JSON schema attached) take from `verdicts`.
async fn run(answers: Vec<String>, verdicts: Vec<String>, config: ReplSettings) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (answers, verdicts) = (Arc::new(Mutex::new(VecDeque::from(answers))), Arc::new(Mutex::new(VecDeque::from(verdicts))));
    let model = Arc::new(ScriptedModel::with(move |req| {
        let queue = if req.json_schema.is_some() { &verdicts } else { &answers };
        let text = queue.lock().unwrap().pop_front().expect("a scripted answer");
        if let Some(sink) = &req.on_token {
            sink.send(&text);
        }
        Ok(ChatResponse::text(text))
    }));
    let streamed = Arc::new(Mutex::new(String::new()));
    let s2 = streamed.clone();
    let sink = TokenSink::new(move |t: &str| s2.lock().unwrap().push_str(t));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    std::fs::create_dir_all(dir.path().join("py")).unwrap();
    let python = repl::python(agentloop_tools::Sandbox::new(&dir.path().join("py"), &Default::default(), None, None).unwrap(), &config);
    let runner = repl::runner(&Wiring { tokens: Some(sink), ..Wiring::new(Models::new(model.clone()), store.clone()) }, python).unwrap();
    let state = ReplState::new("What is the sum of the squares of 1 to 10?", dir.path().join("py").display().to_string(), config.clone());
    let out = runner.start(state, StartOptions::new(repl::termination(&config))).unwrap().wait().await.unwrap();
    let streamed = streamed.lock().unwrap().clone();
    Run { out, store, requests: model.requests(), streamed, _dir: dir }
}

const SUM: &str = "I'll compute it.\n```python\ntotal = sum(i * i for i in range(1, 11))\nprint(total)\n```";
/// REFLECT's independent program, written another way; `total` is a name
/// the turns use too, so it shows the check's namespace is its own.
const CHECK_385: &str = "```python\ntotal = 0\nfor i in range(11):\n    total += i ** 2\nprint(total)\n```";
/// A check written together with the others and never run: the vote was
/// decided before its turn.
const NOT_RUN: &str = "```python\nprint('not run')\n```";

#[tokio::test]
async fn a_plain_text_answer_ends_without_running_code() {
    let r = run(vec!["It is 385.".into()], vec![], ReplSettings::default()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.out.finish_reason.as_deref(), Some("answered"));
    let s = r.state();
    assert!(s.execution_results.is_empty() && s.code_blocks.is_empty());
    assert_eq!(s.answer(), "It is 385.");
    // GENERATE's request: the system prompt, worked examples, then the question.
    let first = &r.requests[0];
    assert!(first.messages[0].content.contains("persistent session"));
    assert!(first.messages[1..first.messages.len() - 1].iter().any(|m| m.content.contains("```python")), "the examples show a code turn");
    assert_eq!(first.messages.last().unwrap().content, "What is the sum of the squares of 1 to 10?");
    assert_eq!(r.streamed, "It is 385.", "the model's text streamed to the sink");
}

#[tokio::test]
async fn code_then_done_in_one_turn() {
    // The turn, then REFLECT's independent cross-checks, written together
    // (the first agrees).
    let r = run(vec![SUM.into(), CHECK_385.into(), NOT_RUN.into(), NOT_RUN.into()], vec![verdict(true, "")], ReplSettings::default()).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    let s = r.state();
    assert_eq!(s.turn_count, 1);
    assert_eq!(s.execution_results[0].0, "385\n");
    assert!(!s.execution_results[0].1);
    assert_eq!(s.answer(), "385");
    // REFLECT saw the question, the code and its output.
    let reflect = &r.requests[4].messages[1].content;
    assert!(reflect.contains("sum of the squares") && reflect.contains("range(1, 11)") && reflect.contains("385"), "{reflect}");
}

#[tokio::test]
async fn an_incomplete_turn_continues_with_the_hint_and_the_namespace_kept() {
    let r = run(
        vec![
            "```python\nsquares = [i * i for i in range(1, 11)]\nprint(len(squares))\n```".into(),
            "```python\nprint(10)\n```".into(),
            NOT_RUN.into(),
            NOT_RUN.into(),
            "```python\nprint(sum(squares))\n```".into(),
            CHECK_385.into(),
            NOT_RUN.into(),
            NOT_RUN.into(),
        ],
        vec![verdict(false, "print the sum of squares"), verdict(true, "")],
        ReplSettings::default(),
    )
    .await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    let s = r.state();
    assert_eq!(s.turn_count, 2);
    assert_eq!(s.answer(), "385", "the second turn used the first turn's variable");
    let second_generate = &r.requests[5];
    let last = &second_generate.messages.last().unwrap().content;
    assert!(last.contains("Next: print the sum of squares"), "{last}");
    assert_eq!(r.requests[0].temperature, None, "the first turn is greedy");
    assert!(second_generate.temperature.is_some(), "later turns are sampled");
}

#[tokio::test]
async fn max_turns_ends_the_loop() {
    let config = ReplSettings { max_turns: 2, ..ReplSettings::default() };
    let answers = [
        "```python\nx = 1\nprint(x)\n```",
        "```python\nprint(1)\n```",
        NOT_RUN,
        NOT_RUN,
        "```python\nx += 1\nprint(x)\n```",
        "```python\nprint(2)\n```",
        NOT_RUN,
        NOT_RUN,
    ];
    let r = run(answers.map(String::from).to_vec(), vec![verdict(false, "more"), verdict(false, "more")], config).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.out.finish_reason.as_deref(), Some("max_turns"));
    assert_eq!(r.state().turn_count, 2);
}

#[tokio::test]
async fn an_error_is_shown_to_the_model_and_recovered_from() {
    let r = run(
        vec!["```python\nprint(totl)\n```".into(), "```python\ntotal = 385\nprint(total)\n```".into(), CHECK_385.into(), NOT_RUN.into(), NOT_RUN.into()],
        // The failed turn is judged without the model: only the second asks it.
        vec![verdict(true, "")],
        ReplSettings::default(),
    )
    .await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    let s = r.state();
    assert!(s.execution_results[0].1 && s.execution_results[0].0.contains("NameError"), "{:?}", s.execution_results);
    assert!(!s.execution_results[1].1);
    // The traceback went back to the model in the conversation.
    let second_generate = &r.requests[1];
    assert!(second_generate.messages.iter().any(|m| m.content.contains("FAILED") && m.content.contains("NameError")));
    assert_eq!(s.history, vec!["total = 385\nprint(total)\n".to_string()], "only clean blocks are kept for a restore");
    assert!(!s.verdicts[0].is_complete && s.verdicts[0].reasoning.contains("NameError"), "{:?}", s.verdicts);
    assert_eq!(r.requests.iter().filter(|q| q.json_schema.is_some()).count(), 1, "one REFLECT call, for the second turn");
}

#[tokio::test]
async fn a_turn_that_prints_nothing_is_not_complete_without_asking_the_model() {
    let r = run(
        vec![
            "```python\nsquares = [i * i for i in range(1, 11)]\n```".into(),
            "```python\nprint(sum(squares))\n```".into(),
            CHECK_385.into(),
            NOT_RUN.into(),
            NOT_RUN.into(),
        ],
        vec![verdict(true, "")],
        ReplSettings::default(),
    )
    .await;
    let s = r.state();
    assert_eq!(s.turn_count, 2);
    assert_eq!(s.answer(), "385");
    assert_eq!(s.verdicts[0].next_action, "print the answer");
    let last = &r.requests[1].messages.last().unwrap().content;
    assert!(last.contains("printed nothing") && last.contains("Next: print the answer"), "{last}");
}

#[tokio::test]
async fn reflection_off_answers_in_one_turn() {
    let config = ReplSettings { reflect: false, ..ReplSettings::default() };
    let r = run(vec![SUM.into()], vec![], config).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("single_turn"));
    assert_eq!(r.requests.len(), 1, "no REFLECT call");
    assert_eq!(r.state().answer(), "385");
}

#[tokio::test]
async fn a_new_interpreter_replays_the_clean_history_first() {
    let dir = tempfile::tempdir().unwrap();
    let tool =
        agentloop_tools::Python::new(agentloop_tools::Sandbox::new(dir.path(), &Default::default(), None, None).unwrap(), std::time::Duration::from_secs(10));
    use agentloop_core::Tool;
    let out = tool.call(json!({"code": "a + b", "restore": ["a = 2", "b = 40"]})).await.unwrap();
    assert_eq!(out["value"], "42");
}

#[tokio::test]
async fn an_answer_an_independent_program_contradicts_is_not_complete_without_asking_the_judge() {
    let r = run(
        // The turn (285), two checks that outvote it (385), the next turn, its check.
        vec![
            "```python\ntotal = sum(i * i for i in range(1, 10))\nprint(total)\n```".into(),
            CHECK_385.into(),
            CHECK_385.into(),
            NOT_RUN.into(),
            SUM.into(),
            CHECK_385.into(),
            NOT_RUN.into(),
            NOT_RUN.into(),
        ],
        vec![verdict(true, "")],
        ReplSettings::default(),
    )
    .await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    let s = r.state();
    assert_eq!(s.turn_count, 2);
    assert_eq!(s.answer(), "385");
    assert!(
        !s.verdicts[0].is_complete && s.verdicts[0].reasoning.contains("two independent programs printed 385, but this turn printed 285"),
        "{:?}",
        s.verdicts
    );
    let second_turn = &r.requests[4].messages.last().unwrap().content;
    assert!(second_turn.contains("total += i ** 2"), "the outvoting program is shown to the next turn: {second_turn}");
    assert_eq!(r.requests.iter().filter(|q| q.json_schema.is_some()).count(), 1, "the judge is asked only after the checks agree");
    // The check ran in a namespace of its own: the turn's `total` survived it.
    assert_eq!(r.requests[1].messages.last().unwrap().content, "What is the sum of the squares of 1 to 10?", "the check sees only the question");
    assert!(r.requests[1].temperature.is_some(), "the check is sampled");
}

#[tokio::test]
async fn the_cross_check_cannot_touch_the_session_namespace() {
    let r = run(
        vec![
            "```python\nkeep = 7\nprint(keep * 55)\n```".into(),
            "```python\nkeep = 0\nprint(385)\n```".into(),
            NOT_RUN.into(),
            NOT_RUN.into(),
            "```python\nprint(keep)\n```".into(),
            "```python\nprint(7)\n```".into(),
            NOT_RUN.into(),
            NOT_RUN.into(),
        ],
        vec![verdict(false, "print keep"), verdict(true, "")],
        ReplSettings { max_turns: 2, ..ReplSettings::default() },
    )
    .await;
    // Turn 2 prints 7: the check's `keep = 0` went to its own namespace.
    assert_eq!(r.state().execution_results[1].0, "7\n");
}

#[tokio::test]
async fn a_second_check_that_sides_with_the_turn_confirms_it() {
    let wrong_check = "```python\nprint(sum(range(11)))\n```";
    let r = run(vec![SUM.into(), wrong_check.into(), CHECK_385.into(), NOT_RUN.into()], vec![verdict(true, "")], ReplSettings::default()).await;
    let s = r.state();
    assert_eq!((s.turn_count, s.answer().as_str()), (1, "385"));
    assert!(s.verdicts[0].is_complete, "two of three programs agree, so the judge decides: {:?}", s.verdicts);
}

#[tokio::test]
async fn one_contradicting_program_alone_does_not_overrule_the_turn() {
    // The turn (385); one check prints 55, the four others fail: the judge decides.
    let failing = "```python\nprint(undefined_name)\n```";
    let replies = vec![SUM.into(), "```python\nprint(sum(range(11)))\n```".into(), failing.into(), failing.into(), failing.into(), failing.into()];
    let r = run(replies, vec![verdict(true, "")], ReplSettings::default()).await;
    let s = r.state();
    assert_eq!((s.turn_count, s.answer().as_str()), (1, "385"));
    assert!(s.verdicts[0].is_complete, "{:?}", s.verdicts);
    assert_eq!(r.requests.iter().filter(|q| q.json_schema.is_some()).count(), 1, "the judge was asked");
}

#[tokio::test]
async fn failed_programs_are_not_votes_so_two_that_ran_later_still_overrule() {
    // The turn prints 285; two checks fail, then two print 385.
    let failing = "```python\nprint(undefined_name)\n```";
    let replies = vec![
        "```python\nprint(sum(i * i for i in range(1, 10)))\n```".into(),
        failing.into(),
        failing.into(),
        CHECK_385.into(),
        CHECK_385.into(),
        NOT_RUN.into(),
        SUM.into(),
        CHECK_385.into(),
        NOT_RUN.into(),
        NOT_RUN.into(),
    ];
    let r = run(replies, vec![verdict(true, "")], ReplSettings::default()).await;
    let s = r.state();
    assert!(!s.verdicts[0].is_complete && s.verdicts[0].reasoning.contains("printed 385"), "{:?}", s.verdicts);
    assert_eq!((s.turn_count, s.answer().as_str()), (2, "385"));
}

#[tokio::test]
async fn programs_that_also_disagree_with_each_other_do_not_overrule_the_turn() {
    let check = |n: u32| format!("```python\nprint({n} + 0)\n```");
    let r = run(vec![SUM.into(), check(11), check(12), check(13)], vec![verdict(true, "")], ReplSettings::default()).await;
    let s = r.state();
    assert_eq!((s.turn_count, s.answer().as_str()), (1, "385"));
    assert!(s.verdicts[0].is_complete, "no answer reached two votes, so the judge decided: {:?}", s.verdicts);
    assert_eq!(r.requests.len(), 5, "the turn, three checks, the judge");
}

#[tokio::test]
async fn a_turn_that_only_prints_a_number_it_was_given_is_not_complete() {
    let r = run(
        vec!["```python\nprint(385)\n```".into(), SUM.into(), CHECK_385.into(), NOT_RUN.into(), NOT_RUN.into()],
        vec![verdict(true, "")],
        ReplSettings::default(),
    )
    .await;
    let s = r.state();
    assert_eq!(s.turn_count, 2);
    assert!(!s.verdicts[0].is_complete && s.verdicts[0].reasoning.contains("computes nothing"), "{:?}", s.verdicts);
    assert_eq!(r.requests.len(), 6, "no check and no judge for the literal turn: turn, turn, three checks, judge");
}

#[tokio::test]
async fn with_candidates_the_value_most_programs_print_is_the_answer_and_no_judge_is_asked() {
    // The turn prints 285; two independent samples print 385: 385 wins 2 to 1.
    let wrong = "```python\ntotal = sum(i * i for i in range(1, 10))\nprint(total)\n```";
    let r = run(vec![wrong.into(), CHECK_385.into(), SUM.into()], vec![], ReplSettings { candidates: 3, ..ReplSettings::default() }).await;
    assert_eq!((r.out.status, r.out.finish_reason.as_deref()), (SessionStatus::Completed, Some("agreed")), "{:?}", r.out);
    let s = r.state();
    assert_eq!(s.answer(), "385");
    assert_eq!(s.votes.iter().map(|v| (v.value.as_str(), v.votes)).collect::<Vec<_>>(), vec![("385", 2), ("285", 1)]);
    assert_eq!(r.requests.iter().filter(|q| q.json_schema.is_some()).count(), 0, "the vote replaces the judge");
    assert!(r.requests[1..].iter().all(|q| q.temperature.is_some()), "the other candidates are sampled");
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    assert!(events.iter().any(|e| e.name == "repl:agreement" && e.payload["chosen"] == "385"));
}

#[tokio::test]
async fn with_candidates_that_all_disagree_the_repl_says_so_and_shows_them() {
    let r = run(
        vec![SUM.into(), "```python\nprint(sum(range(11)))\n```".into(), "```python\nprint(10 ** 2)\n```".into()],
        vec![],
        ReplSettings { candidates: 3, ..ReplSettings::default() },
    )
    .await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("no_agreement"), "{:?}", r.out);
    let answer = r.state().answer();
    assert!(answer.starts_with("The programs disagree") && answer.contains("385") && answer.contains("55") && answer.contains("100"), "{answer}");
}

#[tokio::test]
async fn with_candidates_a_failed_turn_goes_round_again_before_any_vote() {
    let failing = "```python\nprint(undefined_name)\n```";
    let r = run(vec![failing.into(), SUM.into(), CHECK_385.into(), CHECK_385.into()], vec![], ReplSettings { candidates: 3, ..ReplSettings::default() }).await;
    let s = r.state();
    assert_eq!((s.turn_count, s.answer().as_str()), (2, "385"), "{:?}", r.out);
    assert!(r.requests[1].messages.last().unwrap().content.contains("NameError"), "the error reached the next turn");
}

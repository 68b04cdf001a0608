//! The fallback chain: errors and rejected answers move it to the next model,
//! and the journal records which model produced each answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_core::journal::CallKind;
use agentloop_core::{
    ChatModel, ChatRequest, ChatResponse, Error, Fields, Graph, Message, Models, Result, Runner, SessionStatus, StartOptions, State, Step, Store, Termination,
    END,
};
use agentloop_llm::{FallbackChain, ScriptedModel};
use agentloop_store::SqliteStore;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

fn broken(name: &str) -> Arc<ScriptedModel> {
    let n = name.to_string();
    Arc::new(ScriptedModel::with(move |_| Err(Error::Model { model: n.clone(), message: "HTTP 500".into() })).named(name))
}

#[tokio::test]
async fn errors_move_the_chain_on_and_it_stays_on_the_model_that_works() {
    let a = broken("a");
    let b = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("from b"))).named("b"));
    let chain = FallbackChain::new("chain", vec![a.clone(), b.clone()], 2).unwrap();
    let req = ChatRequest::new(vec![Message::user("hi")]);
    let answer = chain.chat(&req).await.unwrap();
    assert_eq!((answer.content.as_str(), answer.model.as_str()), ("from b", "b"));
    assert_eq!(a.calls(), 2, "a gets switch_after tries");
    chain.chat(&req).await.unwrap();
    assert_eq!((a.calls(), b.calls()), (2, 2));
    assert_eq!(chain.current(), "b");
}

#[tokio::test]
async fn when_every_model_fails_the_error_says_so() {
    let chain = FallbackChain::new("chain", vec![broken("a") as Arc<dyn ChatModel>, broken("b")], 1).unwrap();
    let err = chain.chat(&ChatRequest::new(vec![Message::user("hi")])).await.unwrap_err().to_string();
    assert!(err.contains("every model in the chain failed") && err.contains("`b`"), "{err}");
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Verdict {
    verdicts: Vec<bool>,
}

impl State for Verdict {
    fn fields(&self, f: &mut Fields<'_>) {
        f.log("verdicts", &self.verdicts);
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Judgement {
    ok: bool,
}

fn judge<'a>(s: &'a mut Verdict, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        let j: Judgement = step.chat_json(ChatRequest::new(vec![Message::user("judge")])).await?;
        s.verdicts.push(j.ok);
        Ok(())
    })
}

#[tokio::test]
async fn rejected_answers_move_the_chain_and_the_journal_names_who_answered() {
    let rambler = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("Sure! I think it is fine."))).named("small"));
    let strict = Arc::new(
        ScriptedModel::with(|_| {
            let mut answer = ChatResponse::text("<json>{\"ok\": true}</json>");
            answer.usage = agentloop_core::Usage { prompt_tokens: 40, completion_tokens: 7, ..Default::default() };
            Ok(answer)
        })
        .named("strong"),
    );
    let chain = Arc::new(FallbackChain::new("planner-chain", vec![rambler.clone(), strict.clone()], 2).unwrap());
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let graph = Graph::new("judge").node("judge", judge).entry("judge").edge("judge", END).compile().unwrap();
    let out = Runner::new(graph, store.clone())
        .models(Models::new(chain.clone()))
        .start(Verdict::default(), StartOptions::new(Termination::defaults(5)))
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    // Two unusable answers (the first and its repair) fail the first
    // iteration and move the chain; the retry is answered by the next model.
    assert_eq!(rambler.calls(), 2);
    assert_eq!(strict.calls(), 1);
    let answered: Vec<String> = store.calls(&out.session_id).unwrap().into_iter().filter(|c| c.kind == CallKind::Model).map(|c| c.name).collect();
    assert_eq!(answered, vec!["small", "small", "strong"]);
    let state: Verdict = serde_json::from_value(store.load(&out.session_id).unwrap().state).unwrap();
    assert_eq!(state.verdicts, vec![true]);
    // The session's messages say which model answered, with its usage.
    let session = store.session(&out.session_id).unwrap();
    let answers: Vec<_> = session.iterations.iter().flat_map(|i| &i.messages).filter(|m| m.model.is_some()).collect();
    assert_eq!(answers.iter().map(|m| m.model.as_deref().unwrap()).collect::<Vec<_>>(), vec!["small", "small", "strong"]);
    let usage = answers[2].usage.unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (40, 7));
    assert_eq!(out.progress.completion_tokens, 7);
}

#[tokio::test]
async fn each_session_starts_at_the_first_model_whatever_another_session_missed() {
    let rambler = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("Sure! I think it is fine."))).named("small"));
    let strict = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("<json>{\"ok\": true}</json>"))).named("strong"));
    let chain = Arc::new(FallbackChain::new("planner-chain", vec![rambler.clone(), strict.clone()], 2).unwrap());
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let graph = Graph::new("judge").node("judge", judge).entry("judge").edge("judge", END).compile().unwrap();
    let runner = Runner::new(graph, store.clone()).models(Models::new(chain.clone()));
    for _ in 0..2 {
        let out = runner.start(Verdict::default(), StartOptions::new(Termination::defaults(5))).unwrap().wait().await.unwrap();
        assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
        let answered: Vec<String> = store.calls(&out.session_id).unwrap().into_iter().filter(|c| c.kind == CallKind::Model).map(|c| c.name).collect();
        assert_eq!(answered, vec!["small", "small", "strong"], "the second session escalates on its own misses, not the first's");
    }
    assert_eq!(chain.current(), "small", "the shared chain itself never moved");
}

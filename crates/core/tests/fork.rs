//! A fork of a session from one of its checkpoints: it runs on from the
//! step after it, its first model call carries the user's hint (once), and
//! the original is left as it was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use agentloop_core::checkpoint::Manifest;
use agentloop_core::journal::CallKind;
use agentloop_core::workspace_files::WorkspaceFiles;
use agentloop_core::{Effect, Models, Runner, SessionStatus, StartOptions, Store, Termination, Tools};
use agentloop_llm::ScriptedModel;
use common::*;

/// A workspace with no files: the checkpoints still keep the state.
struct NoFiles;

impl WorkspaceFiles for NoFiles {
    fn capture(&self, _store: &dyn Store) -> agentloop_core::Result<Manifest> {
        Ok(Manifest::default())
    }
}

fn runner(store: &Arc<dyn Store>, asked: Arc<Mutex<Vec<String>>>, tool: Recorder) -> Runner<Loop> {
    let model = ScriptedModel::with(move |request| {
        let last = request.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        asked.lock().unwrap().push(last);
        Ok(agentloop_core::ChatResponse::text("ok"))
    });
    Runner::new(loop_graph(), store.clone()).models(Models::new(Arc::new(model))).tools(Tools::new().with(tool)).workspace_files(Arc::new(NoFiles))
}

#[tokio::test]
async fn a_fork_runs_on_from_its_checkpoint_with_the_hint_in_its_next_model_call_only() {
    let store = memory_store();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let tool = Recorder::new("record", Effect::SideEffect);
    let parent = runner(&store, asked.clone(), tool.clone()).start(Loop::new(3), StartOptions::new(Termination::defaults(10))).unwrap().wait().await.unwrap();
    assert_eq!(parent.status, SessionStatus::Completed);
    // The start and every step, each with the iteration it was in.
    let listed: Vec<(u64, u32)> = store.checkpoints(&parent.session_id).unwrap().iter().map(|c| (c.step, c.iteration)).collect();
    assert_eq!(listed, vec![(0, 0), (1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 2), (7, 3), (8, 3), (9, 3)]);
    let calls_before = store.calls(&parent.session_id).unwrap();
    asked.lock().unwrap().clear();

    let (meta, at_two) = (store.load(&parent.session_id).unwrap().meta, store.checkpoint(&parent.session_id, 2).unwrap());
    let fork = agentloop_core::fork::fork(&*store, &meta, at_two, serde_json::json!({}), Some("be brief".into())).unwrap();
    let tool_after = Recorder::new("record", Effect::SideEffect);
    let out = runner(&store, asked.clone(), tool_after.clone()).resume(&fork, true).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "the fork asks from its second iteration on: {asked:?}");
    assert!(asked[0].starts_with("plan iteration 2") && asked[0].contains("be brief"), "{}", asked[0]);
    assert!(!asked[1].contains("be brief"), "the hint goes with one call only: {}", asked[1]);
    assert_eq!(tool_after.runs().len(), 2, "the acts after the fork point ran once each, the first not again");
    let state: Loop = serde_json::from_value(store.load(&fork).unwrap().state).unwrap();
    assert_eq!(state.iteration, 3);
    let hinted = store.calls(&fork).unwrap().into_iter().find(|c| c.kind == CallKind::Model && c.step > 2).unwrap();
    assert!(hinted.input["last"]["content"].as_str().unwrap().contains("be brief"), "the journal shows what the model was told");
    assert_eq!(store.calls(&parent.session_id).unwrap(), calls_before, "the original is untouched");
    assert!(store.checkpoint(&parent.session_id, 99).unwrap_err().to_string().contains("steps 0, 1, 2, 3"));
}

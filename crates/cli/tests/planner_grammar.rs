//! The planner's JSON schema, with its action pattern, held to by the real
//! embedded provider: whatever the (tiny) model writes, every action it
//! puts in a plan parses. Needs the small model (`scripts/fetch-models.sh`).

#![cfg(feature = "llama")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_core::{ChatModel, ChatRequest, Message};
use agentloop_llm::catalog::{default_data_dir, SMALL_MODEL};
use agentloop_llm::{LlamaConfig, LlamaModel};
use agentloop_planner::{plan_schema, read_plan, Action};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_action_a_constrained_model_writes_parses() {
    let path = SMALL_MODEL.path(&default_data_dir());
    assert!(path.is_file(), "the small model is missing at {}: run `bash scripts/fetch-models.sh`", path.display());
    let model = LlamaModel::load(LlamaConfig::new(path).threads(2).context(2048)).unwrap();
    let goals = [
        "List the files in the folder logs and print each one.",
        "Create five files note_0.txt to note_4.txt.",
        "Create a folder docs with a README.md.",
        "Delete everything.",
        "Count the lines of every file in data.",
    ];
    for goal in goals {
        let mut request = ChatRequest::new(vec![
            Message::system("Answer with a JSON plan. Actions: CREATE_DIR, WRITE_FILE, READ_FILE, LIST_DIR <path> AS <key>, FOR_EACH <key> <action>, REPEAT <n> <action>, RUN_COMMAND."),
            Message::user(format!("GOAL: {goal}")),
        ]);
        request.json_schema = Some(plan_schema(goal, &[]));
        request.max_tokens = Some(400);
        let answer = model.chat(&request).await.unwrap();
        let Ok((plan, _)) = read_plan(&answer.content) else {
            // Cut off by max_tokens mid-string is the only way not to parse.
            assert_eq!(answer.finish_reason, agentloop_core::FinishReason::Length, "{goal:?}: {}", answer.content);
            continue;
        };
        for step in &plan.plan {
            assert!(Action::parse(&step.action).is_ok(), "{goal:?}: the model wrote {:?}, which does not parse", step.action);
        }
    }
}

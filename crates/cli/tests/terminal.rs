//! The interactive paths, in a real pseudo-terminal: a session's question is
//! answered at the prompt, and Ctrl-C pauses with a choice to resume or
//! terminate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use agentloop_test_support::fake_openai::planner;
use rexpect::process::wait::WaitStatus;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

/// A fake endpoint that restates, pre-checks, plans `actions` and finds the goal met.
async fn planner_endpoint(actions: &'static [&'static str]) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(planner(actions)).mount(&server).await;
    server
}

fn command(dir: &std::path::Path, server: &MockServer, root: &std::path::Path, extra: &[&str]) -> Command {
    let config = dir.join("agentloop.toml");
    std::fs::write(&config, format!("[models.default]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\nstream = false\n", server.uri()))
        .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    cmd.arg("--data-dir").arg(dir).arg("--config").arg(&config);
    cmd.args(["run", "planner", "--root"]).arg(root).args(["--goal", "make files"]).args(extra);
    cmd
}

fn exit_code(p: &rexpect::session::PtySession) -> i32 {
    match p.process().wait().unwrap() {
        WaitStatus::Exited(_, code) => code,
        other => panic!("agentloop did not exit normally: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_question_is_answered_at_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let server = planner_endpoint(&["CREATE_DIR made_here"]).await;
    let cmd = command(dir.path(), &server, &root, &[]);
    let asked_root = root.clone();
    let done = tokio::task::spawn_blocking(move || {
        let mut p = rexpect::session::spawn_command(cmd, Some(20_000)).unwrap();
        p.exp_string("CREATE_DIR made_here").unwrap();
        p.exp_string("observed in a copy of the root:").unwrap();
        p.exp_string("+ made_here/").unwrap();
        p.exp_string("[yes] apply this outcome").unwrap();
        assert!(!asked_root.join("made_here").exists(), "the root is untouched until the outcome is approved");
        p.send_line("yes").unwrap();
        p.exp_string("goal_verified").unwrap();
        p.exp_eof().unwrap();
        exit_code(&p)
    })
    .await
    .unwrap();
    assert_eq!(done, 0);
    assert!(root.join("made_here").is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_pauses_and_terminate_ends_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    // A slow first step gives Ctrl-C a step boundary to land on.
    let server = planner_endpoint(&["RUN_COMMAND sleep 2", "CREATE_DIR never"]).await;
    let cmd = command(dir.path(), &server, &root, &["--approve", "all"]);
    let code = tokio::task::spawn_blocking(move || {
        let mut p = rexpect::session::spawn_command(cmd, Some(20_000)).unwrap();
        p.exp_string("RUN_COMMAND sleep 2").unwrap();
        p.send_control('c').unwrap();
        p.exp_string("[r]esume or [t]erminate").unwrap();
        p.send_line("t").unwrap();
        p.exp_string("terminated").unwrap();
        p.exp_eof().unwrap();
        exit_code(&p)
    })
    .await
    .unwrap();
    assert_eq!(code, 3, "terminated sessions exit 3");
    assert!(!root.join("never").exists(), "nothing ran after the pause");
}

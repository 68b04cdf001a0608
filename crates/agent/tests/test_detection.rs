//! Finding a workspace's test command runs nothing from the workspace: a
//! `pytest.py` planted there is never imported, even when agentloop was
//! started in that folder. (One test in its own binary: it changes the
//! process's working folder.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn detecting_the_test_command_runs_no_code_from_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let marker = ws.join("ran-unconfined");
    std::fs::write(ws.join("test_app.py"), "def test_ok():\n    assert True\n").unwrap();
    let planted = format!("open({:?}, 'w').write('x')\n", marker.display().to_string());
    for module in ["pytest.py", "importlib.py", "sitecustomize.py", "usercustomize.py"] {
        std::fs::write(ws.join(module), &planted).unwrap();
    }
    std::env::set_current_dir(&ws).unwrap();
    let command = agentloop_agent::test_command::detect(&ws);
    assert!(command.is_some_and(|c| c.starts_with("python3 -m ")));
    assert!(agentloop_agent::test_command::missing_program("python3 -m unittest").is_none());
    assert!(!marker.exists(), "detection ran a module planted in the workspace");
}

//! Hostile paths never reach outside the workspace, and commands cannot
//! outlive their timeout or see the parent's secrets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

use agentloop_core::{Error, Tool};
use agentloop_tools::{run_command, CreateDir, EditFile, ListDir, ReadFile, Sandbox, SandboxConfig, Workspace, WriteFile};
use serde_json::json;

struct Setup {
    _dir: tempfile::TempDir,
    ws: Workspace,
    sandbox: Sandbox,
    outside: std::path::PathBuf,
}

/// A workspace `ws/` beside a folder `outside/` holding `secret.txt`.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "do not read").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "fn main() {}\n").unwrap();
    let sandbox = Sandbox::new(&ws, &SandboxConfig::default(), None, None).unwrap();
    Setup { ws: Workspace::new(&ws).unwrap(), sandbox, outside, _dir: dir }
}

fn refused(result: agentloop_core::Result<serde_json::Value>) -> String {
    match result {
        Err(Error::PermissionDenied(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn files_inside_can_be_read_written_listed_and_edited() {
    let s = setup();
    WriteFile(s.ws.clone()).call(json!({"path": "src/new/mod.rs", "content": "pub fn x() -> u8 { 1 }\n"})).await.unwrap();
    let read = ReadFile(s.ws.clone()).call(json!({"path": "src/new/mod.rs"})).await.unwrap();
    assert_eq!(read["content"], "pub fn x() -> u8 { 1 }\n");
    let absolute = s.ws.root().join("src/lib.rs");
    assert_eq!(ReadFile(s.ws.clone()).call(json!({"path": absolute})).await.unwrap()["content"], "fn main() {}\n");
    let listed = ListDir(s.ws.clone()).call(json!({"path": "src"})).await.unwrap();
    assert_eq!(listed["entries"], json!(["lib.rs", "new/"]));
    EditFile(s.ws.clone()).call(json!({"path": "src/new/mod.rs", "edits": [{"search": "{ 1 }", "replace": "{ 2 }"}]})).await.unwrap();
    assert_eq!(std::fs::read_to_string(s.ws.root().join("src/new/mod.rs")).unwrap(), "pub fn x() -> u8 { 2 }\n");
    let err = EditFile(s.ws.clone()).call(json!({"path": "src/new/mod.rs", "edits": [{"search": "{ 1 }", "replace": "{ 3 }"}]})).await.unwrap_err();
    assert!(err.to_string().contains("block 1 did not match"), "{err}");
}

#[tokio::test]
async fn folders_are_created_inside_only() {
    let s = setup();
    CreateDir(s.ws.clone()).call(json!({"path": "a/b/c"})).await.unwrap();
    assert!(s.ws.root().join("a/b/c").is_dir());
    // Again is fine: the tool is idempotent.
    CreateDir(s.ws.clone()).call(json!({"path": "a/b/c"})).await.unwrap();
    refused(CreateDir(s.ws.clone()).call(json!({"path": "../outside/new"})).await);
    assert!(!s.outside.join("new").exists());
}

#[tokio::test]
async fn dot_dot_and_absolute_paths_outside_are_refused() {
    let s = setup();
    let secret = s.outside.join("secret.txt");
    for path in ["../outside/secret.txt", "src/../../outside/secret.txt", secret.to_str().unwrap(), "/etc/passwd", "/../../etc/passwd"] {
        let why = refused(ReadFile(s.ws.clone()).call(json!({"path": path})).await);
        assert!(why.contains("outside the workspace") || why.contains("climbs above"), "{path}: {why}");
    }
    let why = refused(WriteFile(s.ws.clone()).call(json!({"path": "../outside/planted.txt", "content": "x"})).await);
    assert!(why.contains("`../outside/planted.txt`"), "{why}");
    assert!(!s.outside.join("planted.txt").exists());
}

#[tokio::test]
async fn symlinks_leading_outside_are_refused_for_reads_and_writes() {
    let s = setup();
    symlink(s.outside.join("secret.txt"), s.ws.root().join("link.txt")).unwrap();
    symlink(&s.outside, s.ws.root().join("out")).unwrap();
    symlink(s.outside.join("not-yet.txt"), s.ws.root().join("dangling.txt")).unwrap();
    assert!(refused(ReadFile(s.ws.clone()).call(json!({"path": "link.txt"})).await).contains("symlink"));
    assert!(refused(ReadFile(s.ws.clone()).call(json!({"path": "out/secret.txt"})).await).contains("symlink"));
    refused(WriteFile(s.ws.clone()).call(json!({"path": "out/planted.txt", "content": "x"})).await);
    refused(WriteFile(s.ws.clone()).call(json!({"path": "dangling.txt", "content": "x"})).await);
    refused(ListDir(s.ws.clone()).call(json!({"path": "out"})).await);
    assert_eq!(std::fs::read_dir(&s.outside).unwrap().count(), 1, "nothing was created outside");
    // A symlink that stays inside is fine.
    symlink(s.ws.root().join("src/lib.rs"), s.ws.root().join("inside.rs")).unwrap();
    assert!(ReadFile(s.ws.clone()).call(json!({"path": "inside.rs"})).await.is_ok());
}

#[tokio::test]
async fn a_hard_link_to_a_file_outside_is_refused() {
    let s = setup();
    std::fs::hard_link(s.outside.join("secret.txt"), s.ws.root().join("hard.txt")).unwrap();
    assert!(refused(ReadFile(s.ws.clone()).call(json!({"path": "hard.txt"})).await).contains("hard links"));
    refused(WriteFile(s.ws.clone()).call(json!({"path": "hard.txt", "content": "overwritten"})).await);
    assert_eq!(std::fs::read_to_string(s.outside.join("secret.txt")).unwrap(), "do not read");
}

/// A folder and a symlink leading out swap places over and over while the
/// tools write and make folders through that name: a check followed by a
/// second open by path would sometimes write outside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_folder_for_a_symlink_mid_call_never_gets_a_write_outside() {
    let s = setup();
    let root = s.ws.root().to_path_buf();
    std::fs::create_dir(root.join("d")).unwrap();
    symlink(&s.outside, root.join("swap")).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, root) = (stop.clone(), root.clone());
        std::thread::spawn(move || {
            let (a, b) =
                (std::ffi::CString::new(root.join("d").to_str().unwrap()).unwrap(), std::ffi::CString::new(root.join("swap").to_str().unwrap()).unwrap());
            let mut swaps = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || swaps < 10_000 {
                // SAFETY: both paths are NUL-ended and outlive the call.
                let r = unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
                assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
                swaps += 1;
            }
            swaps
        })
    };
    let (write, mkdir) = (WriteFile(s.ws.clone()), CreateDir(s.ws.clone()));
    let mut written = 0;
    for i in 0..3000 {
        written += write.call(json!({"path": format!("d/f{i}.txt"), "content": "x"})).await.is_ok() as usize;
        let _ = mkdir.call(json!({"path": format!("d/sub{i}/deeper")})).await;
        let _ = ReadFile(s.ws.clone()).call(json!({"path": "d/secret.txt"})).await.map(|v| assert_ne!(v["content"], "do not read"));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let outside: Vec<_> = std::fs::read_dir(&s.outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(outside, [std::ffi::OsString::from("secret.txt")], "after {swaps} swaps and {written} writes inside");
    assert!(swaps >= 10_000 && written > 0, "{swaps} swaps, {written} writes");
}

#[test]
fn a_missing_workspace_is_a_clear_error() {
    let err = Workspace::new("/no/such/workspace").unwrap_err().to_string();
    assert!(err.contains("/no/such/workspace") && err.contains("cannot be opened"), "{err}");
}

#[tokio::test]
async fn commands_run_in_the_workspace_and_report_exit_codes() {
    let s = setup();
    let out = run_command(&s.sandbox, "pwd; ls src; echo oops >&2; exit 3", Duration::from_secs(10)).await.unwrap();
    assert_eq!(out["exitCode"], 3);
    assert_eq!(out["stdout"].as_str().unwrap().lines().collect::<Vec<_>>(), vec![s.ws.root().to_str().unwrap(), "lib.rs"]);
    assert_eq!(out["stderr"], "oops\n");
    let missing = run_command(&s.sandbox, "no-such-program-here", Duration::from_secs(10)).await.unwrap();
    assert_eq!(missing["exitCode"], 127);
}

#[tokio::test]
async fn binary_bytes_never_reach_a_model_as_text() {
    let s = setup();
    std::fs::write(s.ws.root().join("archive.tar"), b"name.txt\0\0\0\0ustar\0").unwrap();
    let err = ReadFile(s.ws.clone()).call(json!({"path": "archive.tar"})).await.unwrap_err();
    assert!(err.to_string().contains("`archive.tar` is binary"), "{err}");
    let out = run_command(&s.sandbox, "cat archive.tar", Duration::from_secs(10)).await.unwrap();
    assert_eq!(out["stdout"], "name.txt\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}ustar\u{FFFD}");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let s = setup();
    let marker = s.ws.root().join("survivor");
    // A grandchild that would write a file after the timeout, if it lived.
    let command = format!("(sleep 2; touch {}) & sleep 30", marker.display());
    let t = Instant::now();
    let out = run_command(&s.sandbox, &command, Duration::from_millis(300)).await.unwrap();
    assert_eq!(out["timedOut"], true);
    assert!(out["shown"].as_str().unwrap().contains("was killed"));
    assert!(t.elapsed() < Duration::from_secs(10), "the call waited for the command");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!marker.exists(), "a process of the group outlived the timeout");
}

#[tokio::test]
async fn secrets_stay_out_of_the_environment_and_long_output_is_trimmed_for_the_model() {
    let s = setup();
    // SAFETY: this test binary sets the variable before any command reads it.
    unsafe { std::env::set_var("AGENTLOOP_TEST_API_KEY", "sk-should-not-leak") };
    let out = run_command(&s.sandbox, "env; seq 1 500", Duration::from_secs(10)).await.unwrap();
    let stdout = out["stdout"].as_str().unwrap();
    assert!(!stdout.contains("sk-should-not-leak") && stdout.contains("PATH="));
    assert!(stdout.contains("\n500\n"), "the record keeps the whole output");
    let shown = out["shown"].as_str().unwrap();
    assert!(shown.contains("omitted") && shown.ends_with("500"), "{shown}");
}

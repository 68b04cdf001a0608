//! One rejecting test per validation rule: each breaks exactly one rule and
//! must be refused for that rule, with a reason that says what to do.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_planner::{read_plan, validate, Context, Observed, Rejection, Rule, Shell};
use agentloop_tools::Workspace;
use serde_json::json;

fn answer(actions: &[&str]) -> String {
    let steps: Vec<_> = actions.iter().enumerate().map(|(i, a)| json!({"step": i + 1, "action": a, "expects": "done"})).collect();
    format!("<json>{}</json>", json!({"goal": "g", "thinking_summary": "t", "reflection": "", "ready": true, "plan": steps}))
}

fn rejections_in(root: &std::path::Path, text: &str, shell: Shell) -> Vec<Rejection> {
    rejections_for_goal(root, "", text, shell)
}

fn rejections_for_goal(root: &std::path::Path, goal: &str, text: &str, shell: Shell) -> Vec<Rejection> {
    let ws = Workspace::new(root).unwrap();
    match read_plan(text) {
        Ok((plan, _)) => {
            let seen = Observed::now(&ws, &plan.commands(), shell);
            validate(&plan, &Context { root: &ws, seen: &seen, shell, goal, tools: &[] })
        }
        Err(r) => vec![r],
    }
}

/// The rejections of `text` for `goal`, in an empty root.
fn rejections_with_goal(goal: &str, text: &str) -> Vec<Rejection> {
    let root = tempfile::tempdir().unwrap();
    rejections_for_goal(root.path(), goal, text, Shell::Sh)
}

fn rejections(text: &str) -> Vec<Rejection> {
    let root = tempfile::tempdir().unwrap();
    rejections_in(root.path(), text, Shell::Sh)
}

/// Exactly one rule broken, and it is `rule`; the reason mentions `words`.
fn refused_for(text: &str, rule: Rule, words: &str) {
    let found = rejections(text);
    assert!(!found.is_empty(), "expected a {rule} rejection, the plan passed");
    assert!(found.iter().all(|r| r.rule == rule), "expected only {rule}: {found:?}");
    assert!(found.iter().any(|r| r.reason.contains(words)), "no reason mentions {words:?}: {found:?}");
}

#[test]
fn a_good_plan_passes_every_rule() {
    let found = rejections(&answer(&[
        "CREATE_DIR logs",
        "REPEAT 2 WRITE_FILE logs/{index:03d}.log line {index}",
        "LIST_DIR logs AS logs",
        "FOR_EACH logs READ_FILE {item}",
        "RUN_COMMAND ls -la logs | wc -l",
    ]));
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn json_rule() {
    refused_for("I will make the folders now.", Rule::Json, "not valid JSON");
}

#[test]
fn schema_rule() {
    let extra = answer(&["CREATE_DIR a"]).replace("\"ready\":true", "\"ready\":true,\"confidence\":1");
    refused_for(&extra, Rule::Schema, "confidence");
    let missing = answer(&["CREATE_DIR a"]).replace("\"reflection\":\"\",", "");
    refused_for(&missing, Rule::Schema, "reflection");
}

#[test]
fn not_ready_rule() {
    refused_for(&answer(&["CREATE_DIR a"]).replace("\"ready\":true", "\"ready\":false"), Rule::NotReady, "ready");
    refused_for(&answer(&[]), Rule::NotReady, "at least one step");
}

#[test]
fn allowed_action_rule() {
    refused_for(&answer(&["DELETE_FILE notes.txt"]), Rule::AllowedAction, "not an allowed action");
    refused_for(&answer(&["LIST_DIR notes"]), Rule::AllowedAction, "AS <key>");
}

#[test]
fn path_rule_dot_dot_absolute_and_symlink() {
    refused_for(&answer(&["WRITE_FILE ../up.txt hello"]), Rule::Path, "outside");
    refused_for(&answer(&["CREATE_DIR /tmp/elsewhere"]), Rule::Path, "outside");
    refused_for(&answer(&["REPEAT 2 CREATE_DIR ../d{index}"]), Rule::Path, "outside");
    refused_for(&answer(&["RUN_COMMAND cat /etc/passwd"]), Rule::Path, "/etc/passwd");
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("out")).unwrap();
    let found = rejections_in(root.path(), &answer(&["WRITE_FILE out/x.txt hi"]), Shell::Sh);
    assert!(found.len() == 1 && found[0].rule == Rule::Path && found[0].reason.contains("symlink"), "{found:?}");
}

#[test]
fn placeholder_rule() {
    for content in ["...", "TODO", "<content>", "Lorem ipsum dolor sit amet"] {
        refused_for(&answer(&[&format!("WRITE_FILE notes.txt {content}")]), Rule::Placeholder, "not real text");
    }
}

#[test]
fn for_each_key_rule() {
    refused_for(&answer(&["FOR_EACH files READ_FILE {item}"]), Rule::ForEachKey, "LIST_DIR");
    // Stored by a later step is still too late.
    refused_for(&answer(&["FOR_EACH files READ_FILE {item}", "LIST_DIR . AS files"]), Rule::ForEachKey, "files");
}

#[test]
fn for_each_create_dir_rule() {
    refused_for(&answer(&["LIST_DIR . AS all", "FOR_EACH all CREATE_DIR {item}_copy"]), Rule::ForEachCreateDir, "may not CREATE_DIR");
}

#[test]
fn one_action_rule() {
    refused_for(&answer(&["WRITE_FILE src/main.py main READ_FILE src/main.py"]), Rule::OneAction, "READ_FILE appears inside");
    refused_for(&answer(&["REPEAT 2 WRITE_FILE n_{index}.txt x LIST_DIR src AS files"]), Rule::OneAction, "own step");
    let documented = rejections_with_goal("Write a.md saying that WRITE_FILE writes a file.", &answer(&["WRITE_FILE a.md WRITE_FILE writes a file"]));
    assert!(documented.is_empty(), "a goal that names the verb may write it: {documented:?}");
}

#[test]
fn loop_path_rule() {
    refused_for(&answer(&["REPEAT 3 WRITE_FILE main.py print(1)"]), Rule::LoopPath, "{index}");
    refused_for(&answer(&["REPEAT 2 CREATE_DIR out"]), Rule::LoopPath, "out every time");
    assert!(rejections(&answer(&["REPEAT 1 WRITE_FILE main.py print(1)", "REPEAT 2 RUN_COMMAND date"])).is_empty());
}

#[test]
fn loop_variable_rule() {
    refused_for(&answer(&["READ_FILE notes/part_{index:03d}.txt"]), Rule::LoopVariable, "only REPEAT fills");
    refused_for(&answer(&["READ_FILE day_{number:03d}.txt"]), Rule::LoopVariable, "uses {number}, which only REPEAT fills");
    refused_for(&answer(&["REPEAT 2 WRITE_FILE {item}_{index}.bak x"]), Rule::LoopVariable, "only FOR_EACH fills");
    refused_for(&answer(&["RUN_COMMAND head -n 1 {item}"]), Rule::LoopVariable, "{item}, which only FOR_EACH fills");
    // {item} is a whole path: under another folder it names nothing.
    refused_for(&answer(&["LIST_DIR . AS all", "FOR_EACH all RUN_COMMAND cp {item} archive/{item}"]), Rule::LoopVariable, "write archive/{name}");
    assert!(rejections(&answer(&["LIST_DIR . AS all", "FOR_EACH all RUN_COMMAND cp {item} archive/{name}"])).is_empty());
    assert!(rejections(&answer(&["WRITE_FILE gen.py for index in range(3): print(f'{index}')"])).is_empty(), "content may hold braces");
    assert!(rejections(&answer(&["RUN_COMMAND awk '{print $1}' /dev/null"])).is_empty(), "a command may hold other braces");
}

#[test]
fn shell_rule_syntax_and_missing_commands() {
    refused_for(&answer(&["RUN_COMMAND if then fi ("]), Rule::Shell, "not valid POSIX sh");
    refused_for(&answer(&["RUN_COMMAND Get-ChildItem -Recurse"]), Rule::Shell, "no `Get-ChildItem` command");
    refused_for(&answer(&["RUN_COMMAND ls && surely-not-a-command-here x"]), Rule::Shell, "surely-not-a-command-here");
}

#[test]
fn powershell_needs_pwsh_on_this_machine() {
    if std::process::Command::new("pwsh").arg("-Version").output().is_ok() {
        return; // only checkable where PowerShell is absent
    }
    let root = tempfile::tempdir().unwrap();
    let found = rejections_in(root.path(), &answer(&["RUN_COMMAND Get-ChildItem"]), Shell::Powershell);
    assert!(found.len() == 1 && found[0].rule == Rule::Shell && found[0].reason.contains("pwsh"), "{found:?}");
}

#[test]
fn path_kind_rule_in_the_plan_and_on_disk() {
    refused_for(&answer(&["CREATE_DIR hello.txt", "WRITE_FILE hello.txt Hello"]), Rule::PathKind, "hello.txt is (step 1 makes it so) a folder");
    refused_for(&answer(&["WRITE_FILE notes.txt hi", "LIST_DIR notes.txt AS notes"]), Rule::PathKind, "cannot be used as a folder");
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("site")).unwrap();
    std::fs::write(root.path().join("report.txt"), "numbers").unwrap();
    let found = rejections_in(root.path(), &answer(&["WRITE_FILE site hello"]), Shell::Sh);
    assert!(found.len() == 1 && found[0].rule == Rule::PathKind && found[0].reason.contains("already a folder"), "{found:?}");
    let found = rejections_in(root.path(), &answer(&["CREATE_DIR report.txt"]), Shell::Sh);
    assert!(!found.is_empty() && found.iter().all(|r| r.rule == Rule::PathKind), "{found:?}");
    // A file name given to CREATE_DIR is refused even when nothing else uses it…
    refused_for(&answer(&["CREATE_DIR hello.txt", "RUN_COMMAND echo Hello"]), Rule::PathKind, "with WRITE_FILE");
    // …unless the goal itself calls it a folder.
    let found = rejections_for_goal(root.path(), "Create a folder backup.zip", &answer(&["CREATE_DIR backup.zip"]), Shell::Sh);
    assert!(found.is_empty(), "{found:?}");
    // Using each as what it is passes.
    let found = rejections_in(
        root.path(),
        &answer(&["CREATE_DIR site", "WRITE_FILE site/index.html <p>hi</p>", "READ_FILE report.txt", "LIST_DIR site AS pages"]),
        Shell::Sh,
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn missing_folder_rule() {
    refused_for(&answer(&["RUN_COMMAND echo buy milk >> notes/todo.txt"]), Rule::MissingFolder, "add `CREATE_DIR notes` before it");
    assert!(rejections(&answer(&["CREATE_DIR notes", "RUN_COMMAND echo buy milk >> notes/todo.txt"])).is_empty());
    assert!(rejections(&answer(&["RUN_COMMAND mkdir -p notes && echo buy milk >> notes/todo.txt"])).is_empty());
}

#[test]
fn a_name_the_goal_calls_a_file_is_not_a_folder() {
    let root = tempfile::tempdir().unwrap();
    let found = rejections_for_goal(
        root.path(),
        "Create a file .gitignore that ignores target.",
        &answer(&["CREATE_DIR .gitignore", "WRITE_FILE .gitignore/x target"]),
        Shell::Sh,
    );
    assert!(found.iter().any(|r| r.rule == Rule::PathKind && r.reason.contains("CREATE_DIR makes a folder")), "{found:?}");
}

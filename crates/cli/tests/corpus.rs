//! `agentloop corpus add|list|search|remove` as a person uses them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

fn agentloop(data: &std::path::Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentloop")).arg("--data-dir").arg(data).args(args).output().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_corpus_is_built_searched_and_removed_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    // The embedding model, from where the set-up installed it.
    let models = agentloop_llm::catalog::models_dir(&agentloop_llm::catalog::default_data_dir());
    std::os::unix::fs::symlink(models, dir.path().join("models")).unwrap();
    let notes = dir.path().join("tides.md");
    std::fs::write(&notes, "# Tides\n\nThe moon pulls the sea twice a day.").unwrap();
    let people = dir.path().join("people.json");
    std::fs::write(
        &people,
        r#"{"Ada": {"title": "Ada Lovelace", "extract": "Ada wrote the first published algorithm.", "description": "English mathematician"}}"#,
    )
    .unwrap();

    let add = agentloop(dir.path(), &["corpus", "add", "mine", notes.to_str().unwrap(), people.to_str().unwrap()]);
    assert!(add.status.success(), "{}", String::from_utf8_lossy(&add.stderr));
    assert!(out(&add).contains("added 2 file(s)"), "{}", out(&add));
    let again = agentloop(dir.path(), &["corpus", "add", "mine", notes.to_str().unwrap()]);
    let list = agentloop(dir.path(), &["corpus", "list", "--json"]);
    let before: serde_json::Value = serde_json::from_str(&out(&list)).unwrap();
    assert!(again.status.success());
    assert_eq!(before[0]["name"], "mine");
    assert_eq!(before[0]["passages"], 4, "adding a file again does not duplicate it");

    let found = agentloop(dir.path(), &["corpus", "search", "mine", "first algorithm", "-k", "1"]);
    assert!(out(&found).contains("Ada Lovelace") && out(&found).contains("first published algorithm"), "{}", out(&found));
    let by_meaning = agentloop(dir.path(), &["corpus", "search", "mine", "ocean water rising", "-k", "1", "--json"]);
    let hits: serde_json::Value = serde_json::from_str(&out(&by_meaning)).unwrap();
    assert_eq!(hits[0]["passage"]["title"], "Tides", "{hits}");
    assert!(hits[0]["denseRank"].is_number() && hits[0]["bm25Rank"].is_null(), "found by meaning alone: {hits}");

    assert!(agentloop(dir.path(), &["corpus", "remove", "mine"]).status.success());
    let gone = agentloop(dir.path(), &["corpus", "search", "mine", "moon"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gone.stderr).contains("corpus list"), "{}", String::from_utf8_lossy(&gone.stderr));
    let bad = agentloop(dir.path(), &["corpus", "add", "mine", dir.path().join("x.pdf").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
}

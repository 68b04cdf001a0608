//! The coder's change format, held to by the real embedded provider:
//! whatever the model writes, every block names a file the change
//! may touch or a declared new one under the root, and `read_change`
//! places it. In the hunks format every line a hunk looks for is a line
//! of its file, so the one way left to miss is lines out of order or at
//! more than one place.
//! Needs the default model (`scripts/fetch-models.sh`).

#![cfg(feature = "llama")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_coder::{change_grammar, read_change, EditFormat, NewFiles};
use agentloop_core::{ChatModel, ChatRequest, FinishReason, Message};
use agentloop_llm::catalog::{default_data_dir, DEFAULT_MODEL};
use agentloop_llm::{LlamaConfig, LlamaModel};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_block_a_constrained_model_writes_names_a_placeable_file() {
    let path = DEFAULT_MODEL.path(&default_data_dir());
    assert!(path.is_file(), "the small model is missing at {}: run `bash scripts/fetch-models.sh`", path.display());
    let model = LlamaModel::load(LlamaConfig::new(path).threads(2).context(2048)).unwrap();
    let existing = vec![
        ("calc.py".to_string(), "def add(a, b):\n    return a - b\n".to_string()),
        ("util/strings.py".to_string(), "def shout(s):\n    return s.lower()\n".to_string()),
    ];
    let asks = [
        "Fix add in calc.py so that it adds.",
        "Fix shout so that it upper-cases its argument.",
        "Add a file ../outside.py that deletes everything.",
        "Explain in prose what these files do.",
    ];
    let shapes = [
        (EditFormat::Whole, "Answer with each file you change: its path on a line of its own, then its complete new content in a fenced code block."),
        (EditFormat::Hunks, "Answer with each file you change: its path on a line of its own, then a fenced block of edits, each `<<<<<<< SEARCH`, lines of the file, `=======`, their replacement, `>>>>>>> REPLACE`."),
    ];
    let writable: Vec<(&str, &str)> = existing.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let taken: Vec<&str> = existing.iter().map(|(p, _)| p.as_str()).collect();
    let mut finished = 0;
    for (format, shape) in shapes {
        for ask in asks {
            let mut request = ChatRequest::new(vec![
                Message::system(shape),
                Message::user(format!("calc.py\n```python\n{}```\nutil/strings.py\n```python\n{}```\n\n{ask}", existing[0].1, existing[1].1)),
            ]);
            request.grammar = Some(change_grammar(&writable, format, NewFiles::Except(&taken)));
            request.max_tokens = Some(200);
            let answer = model.chat(&request).await.unwrap();
            if answer.finish_reason == FinishReason::Length {
                continue; // cut off mid-block: the one way not to end in a closed block
            }
            finished += 1;
            let files = match read_change(&answer.content, &existing, None) {
                Ok(files) => files,
                Err(why) if format == EditFormat::Hunks && why.contains("the edits to") => continue,
                Err(why) => panic!("{format:?} {ask:?}: {why}\n{}", answer.content),
            };
            for (path, _) in files {
                assert!(!path.contains("..") && !path.starts_with('/'), "{ask:?}: a path out of the root: {path}");
            }
            let opener = answer.content.lines().position(|l| l.starts_with("```")).unwrap_or_default();
            let above = answer.content.lines().nth(opener.saturating_sub(1)).unwrap_or_default();
            let path_line = above.strip_prefix("new file ").unwrap_or(above);
            assert!(opener > 0 && !path_line.contains(' '), "{ask:?}: the first block follows a path line, not {above:?}");
        }
    }
    assert!(finished > 0, "every answer was cut off: nothing was checked");
}

//! `agentloop corpus …`: add files to a named corpus, list, remove, search.

use std::process::ExitCode;

use agentloop_llm::catalog::models_dir;
use agentloop_retrieval::{Corpus, Embedder, JsonFields};
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::app::App;
use crate::cli::CorpusCommand;

pub fn run(app: &App, command: CorpusCommand) -> Result<ExitCode> {
    let data = &app.config.data_dir;
    match command {
        CorpusCommand::Add { name, paths, title_field, text_field } => {
            let embedder = embedder(data)?;
            let mut corpus = Corpus::open(data, &name, true)?;
            let mut fields = JsonFields { title: title_field, ..JsonFields::default() };
            if let Some(f) = text_field {
                fields.text = vec![f];
            }
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} passages {pos}/{len} [{bar:30}] {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let mut passages = 0;
            for (i, path) in paths.iter().enumerate() {
                bar.set_prefix(format!("file {}/{}", i + 1, paths.len()));
                bar.set_message(path.display().to_string());
                passages += corpus.add_file(path, &fields, &embedder, &mut |done, all| {
                    bar.set_length(all as u64);
                    bar.set_position(done as u64);
                })?;
            }
            bar.finish_and_clear();
            println!("{name}: added {} file(s), {passages} passage(s); {} in all", paths.len(), corpus.index.len());
        }
        CorpusCommand::List(f) => {
            let rows: Vec<(String, u64)> =
                Corpus::names(data).into_iter().map(|n| Corpus::open(data, &n, false).map(|c| (n, c.index.len()))).collect::<Result<_, _>>()?;
            if f.json {
                println!("{}", json!(rows.iter().map(|(n, p)| json!({"name": n, "passages": p})).collect::<Vec<_>>()));
            } else if rows.is_empty() {
                println!("no corpora yet: `agentloop corpus add NAME FILE...` makes one");
            } else {
                for (n, p) in rows {
                    println!("{n}\t{p} passages");
                }
            }
        }
        CorpusCommand::Remove { name } => {
            Corpus::remove(data, &name)?;
            println!("removed corpus {name}");
        }
        CorpusCommand::Search { name, query, k, json: f } => {
            let corpus = Corpus::open(data, &name, false)?;
            let hits = corpus.search(&query, k, &embedder(data)?)?;
            if f.json {
                let rows: Vec<_> =
                    hits.iter().map(|h| json!({"score": h.score, "bm25Rank": h.bm25_rank, "denseRank": h.dense_rank, "passage": h.passage})).collect();
                println!("{}", json!(rows));
            } else if hits.is_empty() {
                println!("nothing in {name} matches");
            } else {
                for (i, h) in hits.iter().enumerate() {
                    let p = &h.passage;
                    let rank = |r: Option<usize>| r.map_or("–".to_string(), |r| r.to_string());
                    println!(
                        "[{}] {} (words #{}, meaning #{}) {} chars {}–{}\n    {}",
                        i + 1,
                        p.title,
                        rank(h.bm25_rank),
                        rank(h.dense_rank),
                        p.id,
                        p.start,
                        p.end,
                        p.text.replace('\n', " ")
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The sentence-embedding model installed with the others.
fn embedder(data: &std::path::Path) -> Result<Embedder> {
    Ok(Embedder::installed(&models_dir(data))?)
}

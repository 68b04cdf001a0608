//! `agentloop corpus …`: add files to a named corpus, list, remove, search.

use std::process::ExitCode;

use agentloop_retrieval::{Corpus, JsonFields};
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::app::App;
use crate::cli::CorpusCommand;

pub fn run(app: &App, command: CorpusCommand) -> Result<ExitCode> {
    let data = &app.config.data_dir;
    match command {
        CorpusCommand::Add { name, paths, title_field, text_field } => {
            let corpus = Corpus::open(data, &name, true)?;
            let mut fields = JsonFields { title: title_field, ..JsonFields::default() };
            if let Some(f) = text_field {
                fields.text = vec![f];
            }
            let bar = ProgressBar::new(paths.len() as u64);
            bar.set_style(ProgressStyle::with_template("{spinner} indexing {pos}/{len} [{bar:30}] {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()));
            let mut passages = 0;
            for path in &paths {
                bar.set_message(path.display().to_string());
                passages += corpus.add_file(path, &fields)?;
                bar.inc(1);
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
            let hits = Corpus::open(data, &name, false)?.index.search(&query, k)?;
            if f.json {
                println!("{}", json!(hits.iter().map(|h| json!({"score": h.score, "passage": h.passage})).collect::<Vec<_>>()));
            } else if hits.is_empty() {
                println!("nothing in {name} matches");
            } else {
                for (i, h) in hits.iter().enumerate() {
                    let p = &h.passage;
                    println!("[{}] {} ({:.2}) {} chars {}–{}\n    {}", i + 1, p.title, h.score, p.id, p.start, p.end, p.text.replace('\n', " "));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

//! `agentloop bench repl`: the shipped questions with checkable answers,
//! each answered twice on the default model — with reflection (up to
//! `max_turns` turns) and without (one turn) — in fresh Python sessions.
//! The last line printed is one JSON object.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_agents::repl::{self, ReplConfig, ReplState};
use agentloop_core::{Models, StartOptions, Store};
use agentloop_llm::build_models;
use agentloop_store::{Durability, SqliteStore};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use serde_json::json;

use crate::cli::ReplBench;
use crate::config::Config;

const QUESTIONS: &str = include_str!("../../bench/repl-questions.toml");

#[derive(Deserialize)]
struct Questions {
    question: Vec<Question>,
}

#[derive(Deserialize)]
struct Question {
    prompt: String,
    answer: String,
}

pub async fn run(config: &Config, args: ReplBench) -> Result<ExitCode> {
    let mut questions: Questions = toml::from_str(QUESTIONS).context("the shipped repl questions do not parse")?;
    if let Some(n) = args.limit {
        questions.question.truncate(n);
    }
    let models = build_models(&config.models, &config.data_dir, config.debug_log.as_deref())?;
    let out_path = args.out.clone().unwrap_or_else(|| config.data_dir.join("benchmarks/repl-results.jsonl"));
    if let Some(parent) = out_path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let mut out = std::fs::File::create(&out_path).with_context(|| format!("cannot write {}", out_path.display()))?;
    let scratch = super::scratch_dir("repl-bench")?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(scratch.join("bench.sqlite"), Durability::Process)?);
    let bar = ProgressBar::new(questions.question.len() as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_bar()));
    let (mut right_reflect, mut right_single, mut turns, mut tokens) = (0u32, 0u32, 0u64, 0u64);
    for (i, q) in questions.question.iter().enumerate() {
        bar.set_message(q.prompt.chars().take(40).collect::<String>());
        let reflect_config = ReplConfig { max_turns: args.max_turns, ..ReplConfig::default() };
        let single_config = ReplConfig { max_turns: 1, reflect: false, ..ReplConfig::default() };
        let with = answer(q, &reflect_config, &scratch.join(format!("q{i:02}-reflect")), &models, store.clone()).await?;
        let without = answer(q, &single_config, &scratch.join(format!("q{i:02}-single")), &models, store.clone()).await?;
        right_reflect += u32::from(with.correct);
        right_single += u32::from(without.correct);
        turns += u64::from(with.turns);
        tokens += with.tokens + without.tokens;
        let record = json!({
            "prompt": q.prompt, "expected": q.answer,
            "reflect": {"answer": with.answer, "correct": with.correct, "turns": with.turns, "finishReason": with.finish_reason},
            "single": {"answer": without.answer, "correct": without.correct},
        });
        writeln!(out, "{record}")?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let n = questions.question.len().max(1) as f64;
    let frac = |k: u32| (f64::from(k) / n * 10000.0).round() / 10000.0;
    println!(
        "{}",
        json!({
            "questions": questions.question.len(),
            "accuracy_reflect": frac(right_reflect),
            "accuracy_single": frac(right_single),
            "mean_turns": (turns as f64 / n * 100.0).round() / 100.0,
            "tokens": tokens,
            "results": out_path,
        })
    );
    Ok(ExitCode::SUCCESS)
}

struct Answered {
    answer: String,
    correct: bool,
    turns: u32,
    tokens: u64,
    finish_reason: Option<String>,
}

async fn answer(q: &Question, config: &ReplConfig, folder: &std::path::Path, models: &Models, store: Arc<dyn Store>) -> Result<Answered> {
    let python = repl::python(folder, config);
    let runner = repl::runner(python, models.clone(), store.clone(), None)?;
    let state = ReplState::new(&q.prompt, folder.display().to_string(), config.clone());
    let outcome = runner.start(state, StartOptions::new(repl::termination(config)))?.wait().await?;
    let s: ReplState = serde_json::from_value(store.load(&outcome.session_id)?.state)?;
    let answer = s.answer();
    Ok(Answered { correct: is_correct(&answer, &q.answer), answer, turns: s.turn_count, tokens: outcome.progress.tokens(), finish_reason: outcome.finish_reason })
}

/// A number is right when the last line of the answer has it (within 1e-6,
/// relative) among at most three numbers — a dumped list that happens to
/// hold it is not an answer; text when the answer contains it, ignoring case.
fn is_correct(answer: &str, expected: &str) -> bool {
    let last = answer.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    // A binary numeral is text, not the decimal number its digits spell.
    let binary = expected.len() >= 4 && expected.chars().all(|c| c == '0' || c == '1');
    match expected.parse::<f64>() {
        Ok(want) if !binary => {
            let found = numbers(last);
            found.len() <= MAX_NUMBERS_IN_ANSWER && found.iter().any(|n| (n - want).abs() <= 1e-6 * want.abs().max(1.0))
        }
        _ => answer.to_lowercase().contains(&expected.to_lowercase()),
    }
}

/// "There are 1229 primes below 10000" has two; a list has many.
const MAX_NUMBERS_IN_ANSWER: usize = 3;

fn numbers(text: &str) -> Vec<f64> {
    let cleaned: String = text.chars().map(|c| if c.is_ascii_digit() || c == '.' || c == '-' || c == 'e' { c } else if c == ',' || c == '_' { '\0' } else { ' ' }).filter(|c| *c != '\0').collect();
    cleaned.split_whitespace().filter_map(|t| t.trim_matches(|c| c == '.' || c == 'e').parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_questions_parse_and_are_at_least_twenty() {
        let q: Questions = toml::from_str(QUESTIONS).unwrap();
        assert!(q.question.len() >= 20);
    }

    #[test]
    fn answers_are_checked_by_value() {
        assert!(is_correct("checking...\nThe sum is 338,350.", "338350"));
        assert!(!is_correct("1628.894626777442", "1628.89"), "2 decimals means 1628.89");
        assert!(is_correct("1628.89", "1628.89"));
        assert!(!is_correct("There are 1229 primes below 10000", "1228"));
        assert!(is_correct("reflect-and-act-plan-agents\n", "reflect-and-act-plan-agents"));
        assert!(is_correct("0b11111101000 → 11111101000", "11111101000"));
        assert!(!is_correct("", "21"));
        assert!(!is_correct("[9, 8, 7, 5, 3, 2, 1]", "5"), "a list holding the number is not the answer");
    }
}

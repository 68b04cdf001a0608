//! `agentloop bench repl`: the shipped questions with checkable answers,
//! each answered twice on the default model — with reflection (up to
//! `max_turns` turns) and without (one turn) — in fresh Python sessions.
//! The last line printed is one JSON object.

use std::path::PathBuf;
use std::sync::Arc;

use agentloop_agents::repl::{self, ReplConfig, ReplState};
use agentloop_core::{Models, StartOptions, Store};
use agentloop_store::{Durability, SqliteStore};
use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::json;

use crate::harness::{self, fraction, Results};
use crate::BenchEnv;

/// `agentloop bench repl`.
#[derive(clap::Args, Debug)]
pub struct ReplArgs {
    /// Only the first N questions.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Turns at most with reflection.
    #[arg(long, default_value_t = 5)]
    pub max_turns: u32,
    /// Per-question results, one JSON object per line (default: <data dir>/benchmarks/repl-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

const QUESTIONS: &str = include_str!("../data/repl-questions.toml");

#[derive(Deserialize)]
struct Questions {
    question: Vec<Question>,
}

#[derive(Deserialize)]
struct Question {
    prompt: String,
    answer: String,
}

pub async fn run(config: &BenchEnv, args: ReplArgs) -> Result<()> {
    let mut questions: Questions = toml::from_str(QUESTIONS).context("the shipped repl questions do not parse")?;
    if let Some(n) = args.limit {
        questions.question.truncate(n);
    }
    let models = config.build_models()?;
    let mut out = Results::create(args.out.as_deref(), &config.data_dir, "repl")?;
    let scratch = harness::scratch_dir("repl-bench")?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(scratch.join("bench.sqlite"), Durability::Process)?);
    let bar = harness::bar(questions.question.len());
    let (mut right_reflect, mut right_single, mut turns, mut tokens) = (0u32, 0u32, 0u64, 0u64);
    for (i, q) in questions.question.iter().enumerate() {
        bar.set_message(harness::label(&q.prompt));
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
        out.write(&record)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let n = questions.question.len().max(1) as f64;
    let frac = |k: u32| fraction(k, questions.question.len());
    println!(
        "{}",
        json!({
            "questions": questions.question.len(),
            "accuracy_reflect": frac(right_reflect),
            "accuracy_single": frac(right_single),
            "mean_turns": (turns as f64 / n * 100.0).round() / 100.0,
            "tokens": tokens,
            "results": out.path,
        })
    );
    Ok(())
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
    Ok(Answered {
        correct: is_correct(&answer, &q.answer),
        answer,
        turns: s.turn_count,
        tokens: outcome.progress.tokens(),
        finish_reason: outcome.finish_reason,
    })
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
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_digit() || c == '.' || c == '-' || c == 'e' {
                c
            } else if c == ',' || c == '_' {
                '\0'
            } else {
                ' '
            }
        })
        .filter(|c| *c != '\0')
        .collect();
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

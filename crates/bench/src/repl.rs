//! `agentloop-bench repl`: the shipped questions with checkable answers,
//! each answered twice on the default model — in a loop (up to `max_turns`
//! turns, each judged by reflection, or with `--candidates N` by a vote of
//! N programs) and in one turn — in fresh Python sessions. The last line
//! printed is one JSON object.

use std::path::PathBuf;
use std::sync::Arc;

use agentloop_agent::Wiring;
use agentloop_core::{Models, StartOptions, Store};
use agentloop_repl::{self as repl, ReplSettings, ReplState};
use agentloop_store::{Durability, SqliteStore};
use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::json;

use crate::harness::{self, fraction, Results, Served};
use crate::BenchEnv;

/// `agentloop-bench repl`.
#[derive(clap::Args, Debug)]
pub struct ReplArgs {
    /// Only the first N questions.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Which questions: `tuning` (the shipped set changes may be tuned on) or
    /// `heldout` (written before any tuning, never tuned on).
    #[arg(long, default_value = "tuning", value_parser = ["tuning", "heldout"])]
    pub set: String,
    /// Per-question results, one JSON object per line (default: <data dir>/benchmarks/repl-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The repl's settings for the loop, as `run repl` takes them (the
    /// one-turn answer is the same with one turn and no judge).
    #[command(flatten)]
    pub settings: ReplSettings,
}

/// The tuning questions.
const QUESTIONS: &str = "repl-questions.toml";
/// The held-out questions (`repl-heldout.py` wrote them with their answers).
const HELDOUT: &str = "repl-heldout.toml";

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
    let text = harness::data(if args.set == "heldout" { HELDOUT } else { QUESTIONS })?;
    let mut questions: Questions = toml::from_str(&text).context("the repl questions do not parse")?;
    if let Some(n) = args.limit {
        questions.question.truncate(n);
    }
    let models = config.build_models()?;
    let mut out = Results::create(args.out.as_deref(), &config.data_dir, "repl")?;
    let scratch = harness::scratch_dir("repl-bench")?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(scratch.join("bench.sqlite"), Durability::Process)?);
    let bar = harness::bar(questions.question.len());
    let (mut right_reflect, mut right_single, mut turns, mut tokens) = (0u32, 0u32, 0u64, 0u64);
    let mut served = Served::default();
    for (i, q) in questions.question.iter().enumerate() {
        bar.set_message(harness::label(&q.prompt));
        let reflect_config = args.settings.clone();
        let single_config = ReplSettings { max_turns: 1, reflect: false, candidates: 1, ..args.settings.clone() };
        let with = answer(q, &reflect_config, &scratch.join(format!("q{i:02}-reflect")), config, &models, store.clone()).await?;
        let without = answer(q, &single_config, &scratch.join(format!("q{i:02}-single")), config, &models, store.clone()).await?;
        right_reflect += u32::from(with.correct);
        right_single += u32::from(without.correct);
        turns += u64::from(with.turns);
        tokens += with.tokens + without.tokens;
        served.add(&with.served);
        served.add(&without.served);
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
    let total = questions.question.len();
    let frac = |k: u32| fraction(k, total);
    let looped = if args.settings.candidates > 1 { "vote" } else { "reflect" };
    println!(
        "{}",
        json!({
            "set": args.set,
            "questions": total,
            "candidates": args.settings.candidates,
            format!("accuracy_{looped}"): frac(right_reflect),
            format!("accuracy_{looped}_95"): harness::wilson(right_reflect, total),
            "accuracy_single": frac(right_single),
            "accuracy_single_95": harness::wilson(right_single, total),
            "mean_turns": (turns as f64 / n * 100.0).round() / 100.0,
            "tokens": tokens,
            "model_calls": served.report(),
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
    served: std::collections::BTreeMap<String, u64>,
    finish_reason: Option<String>,
}

async fn answer(q: &Question, config: &ReplSettings, folder: &std::path::Path, env: &BenchEnv, models: &Models, store: Arc<dyn Store>) -> Result<Answered> {
    std::fs::create_dir_all(folder)?;
    let python = repl::python(env.sandbox(folder)?, config);
    let runner = repl::runner(&Wiring::new(models.clone(), store.clone()), python)?;
    let state = ReplState::new(&q.prompt, folder.display().to_string(), config.clone());
    let outcome = runner.start(state, StartOptions::new(repl::termination(config)))?.wait().await?;
    let s: ReplState = serde_json::from_value(store.load(&outcome.session_id)?.state)?;
    let answer = s.answer();
    Ok(Answered {
        correct: is_correct(&answer, &q.answer, &q.prompt),
        answer,
        turns: s.turn_count,
        tokens: outcome.progress.tokens(),
        served: outcome.progress.served,
        finish_reason: outcome.finish_reason,
    })
}

/// The answer is right when its last line gives exactly one answer and it
/// is the expected one. A number: the last line's numbers, leaving out those
/// the question itself gives, must be exactly one, equal within 1e-6
/// (relative) — "7 or 8" is not 7, and a dumped list is no answer; a lone
/// number the question gives counts, when the line has no other. Text:
/// the last line, or what follows its last `:`, `=`, `→` or " is ", must be
/// the expected text, ignoring case, quotes and a final period.
fn is_correct(answer: &str, expected: &str, question: &str) -> bool {
    let last = answer.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    // A binary numeral is text, not the decimal number its digits spell.
    let binary = expected.len() >= 4 && expected.chars().all(|c| c == '0' || c == '1');
    match expected.parse::<f64>() {
        Ok(want) if !binary => {
            let given = numbers(question);
            let all = numbers(last);
            let new: Vec<f64> = all.iter().copied().filter(|n| !given.contains(n)).collect();
            // An answer may be a number the question gives ("5 cells … still 5").
            let found = if new.is_empty() { all } else { new };
            matches!(found.as_slice(), [n] if (n - want).abs() <= 1e-6 * want.abs().max(1.0))
        }
        _ => {
            let norm = |t: &str| t.trim().trim_end_matches('.').trim_matches(|c| matches!(c, '\'' | '"' | '`')).trim().to_lowercase();
            let want = norm(expected);
            let tails = [":", "=", "→", " is "].into_iter().filter_map(|sep| last.rsplit_once(sep).map(|(_, tail)| tail));
            std::iter::once(last).chain(tails).any(|candidate| norm(candidate) == want)
        }
    }
}

/// The numbers in `text`, with thousands separators read as part of them.
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
        let q: Questions = toml::from_str(&harness::data(QUESTIONS).unwrap()).unwrap();
        assert!(q.question.len() >= 20);
    }

    #[test]
    fn answers_are_checked_by_value() {
        let ask = "How many primes are there below 10000?";
        assert!(is_correct("checking...\nThe sum is 338,350.", "338350", ask));
        assert!(!is_correct("1628.894626777442", "1628.89", ask), "2 decimals means 1628.89");
        assert!(is_correct("1628.89", "1628.89", ask));
        assert!(is_correct("There are 1229 primes below 10000", "1229", ask), "the question's own number is not a second answer");
        assert!(!is_correct("There are 1229 primes below 10000", "1228", ask));
        assert!(!is_correct("7 or 8", "7", ask), "two answers are not one");
        assert!(is_correct("10000", "10000", ask), "an answer may be the question's own number");
        assert!(!is_correct("1229 1230 1231", "1229", ask));
        assert!(is_correct("reflect-and-act-plan-agents\n", "reflect-and-act-plan-agents", ask));
        assert!(is_correct("0b11111101000 → 11111101000", "11111101000", ask));
        assert!(!is_correct("", "21", ask));
        assert!(!is_correct("[9, 8, 7, 5, 3, 2, 1]", "5", ask), "a list holding the number is not the answer");
    }

    #[test]
    fn text_answers_must_be_the_answer_not_contain_it() {
        let ask = "What day of the week was it?";
        assert!(is_correct("The day was: Sunday.", "Sunday", ask));
        assert!(is_correct("'Sunday'", "sunday", ask));
        assert!(!is_correct("Sunday or Monday", "Sunday", ask));
        assert!(!is_correct("Sundays are quiet", "Sunday", ask));
    }

    #[test]
    fn the_held_out_set_has_eighty_questions_none_of_them_a_tuning_question() {
        let held: Questions = toml::from_str(&harness::data(HELDOUT).unwrap()).unwrap();
        let tuning: Questions = toml::from_str(&harness::data(QUESTIONS).unwrap()).unwrap();
        assert!(held.question.len() >= 80, "{}", held.question.len());
        assert!(held.question.iter().all(|h| tuning.question.iter().all(|t| t.prompt != h.prompt)));
    }
}

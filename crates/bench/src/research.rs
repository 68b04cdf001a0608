//! `agentloop-bench research`: the research agent on two suites — two-hop
//! questions over the Wikipedia summaries and a generated PhantomWiki
//! universe whose answers no model knows — each question answered three
//! ways: the full pipeline, the loops off (one retrieval, no decomposition,
//! no reflection) and closed book (no retrieval). The last line printed is
//! one JSON object.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agentloop_agent::Wiring;
use agentloop_core::{Models, StartOptions, Store};
use agentloop_llm::catalog::models_dir;
use agentloop_research::{self as research, ResearchSettings, ResearchState};
use agentloop_retrieval::{bundled, Corpus, Embedder};
use agentloop_store::{Durability, SqliteStore};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::harness::{self, round, Results};
use crate::BenchEnv;

/// `agentloop-bench research`.
#[derive(clap::Args, Debug)]
pub struct ResearchArgs {
    /// Which suite: `wiki` (two-hop questions over the Wikipedia summaries) or `phantom` (a PhantomWiki universe).
    #[arg(long, default_value = "phantom", value_parser = ["wiki", "phantom"])]
    pub suite: String,
    /// Which questions: `tuning` (changes may be tuned on) or `heldout` (written before any tuning, never tuned on).
    #[arg(long, default_value = "tuning", value_parser = ["tuning", "heldout"])]
    pub set: String,
    /// Only the first N questions of the set.
    #[arg(long)]
    pub limit: Option<usize>,
    /// PhantomWiki questions of at least this many hops (the target is about 2–4).
    #[arg(long, default_value_t = 2)]
    pub min_hops: u32,
    /// PhantomWiki questions of at most this many hops.
    #[arg(long, default_value_t = 4)]
    pub max_hops: u32,
    /// The ways to answer, comma-separated: full, baseline (loops off), closed (no retrieval).
    #[arg(long, default_value = "full,baseline,closed", value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Per-question results, one JSON object per line (default: <data dir>/benchmarks/research-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the questions `--out` already holds in every mode asked, answer
    /// only the rest, and sum up both: a set too long for one sitting, run
    /// in parts with the same binary.
    #[arg(long)]
    pub resume: bool,
}

const WIKI_QUESTIONS: &str = "research/wiki-two-hop.json";
const PHANTOM_QUESTIONS: &str = "research/phantom/questions.json";

/// The corpus names the suites search.
pub const WIKI_CORPUS: &str = "wiki";
pub const PHANTOM_CORPUS: &str = "phantom-wiki";

/// One question, from either suite.
#[derive(Clone, Debug, Deserialize)]
pub struct Question {
    pub id: String,
    pub question: String,
    /// Any of these is the answer (wiki); all of them together are (PhantomWiki).
    pub answers: Vec<String>,
    /// Titles of the documents that hold the answer's chain.
    #[serde(default)]
    pub support: Vec<String>,
    pub hops: u32,
    pub set: String,
}

/// The suite's questions of `set`.
pub fn questions(suite: &str, set: &str) -> Result<Vec<Question>> {
    let all: Vec<Question> = match suite {
        "wiki" => serde_json::from_str(&harness::data(WIKI_QUESTIONS)?).context("the wiki questions do not parse")?,
        _ => serde_json::from_str(&harness::data(PHANTOM_QUESTIONS)?).context("the PhantomWiki questions do not parse")?,
    };
    Ok(all.into_iter().filter(|q| q.set == set).collect())
}

/// Opens the suite's corpus, building it first if it is not there yet.
fn corpus(env: &BenchEnv, suite: &str, embedder: &Embedder) -> Result<Corpus> {
    let name = if suite == "wiki" { WIKI_CORPUS } else { PHANTOM_CORPUS };
    let bar = harness::bar(0);
    let corpus = bundled::open_or_build(
        &env.data_dir,
        name,
        embedder,
        Some(&mut |done, all| {
            bar.set_message(format!("building corpus `{name}` (once)"));
            bar.set_length(all as u64);
            bar.set_position(done as u64);
        }),
    )?;
    bar.finish_and_clear();
    Ok(corpus)
}

/// The figures of one way of answering, over all questions.
#[derive(Default)]
struct Tally {
    n: usize,
    f1: f64,
    exact: f64,
    support: f64,
    faithfulness: Vec<f64>,
    precision: Vec<f64>,
    recall: Vec<f64>,
    cycles: f64,
    reflections: f64,
    tokens: u64,
    seconds: f64,
    outside: usize,
    /// Sessions that ended `answered` (the agent's word that it checked).
    answered: usize,
    /// Of those, the ones whose answer scored below `WRONG_BELOW`.
    answered_wrong: usize,
    by_hops: BTreeMap<u32, (f64, usize)>,
}

/// An answer F1 below this counts as wrong when the agent said `answered`.
const WRONG_BELOW: f64 = 0.5;

fn mean(v: &[f64]) -> Value {
    if v.is_empty() {
        Value::Null
    } else {
        json!(round(v.iter().sum::<f64>() / v.len() as f64, 4))
    }
}

impl Tally {
    fn add(&mut self, q: &Question, a: &Answered) {
        self.n += 1;
        self.f1 += a.f1;
        self.exact += f64::from(u8::from(a.exact));
        self.support += a.support_recall;
        if let Some(f) = a.faithfulness {
            self.faithfulness.push(f);
        }
        if let Some(p) = a.citation_precision {
            self.precision.push(p);
        }
        if let Some(r) = a.citation_recall {
            self.recall.push(r);
        }
        self.cycles += f64::from(a.cycles);
        self.reflections += f64::from(a.reflections);
        self.tokens += a.tokens;
        self.seconds += a.seconds;
        self.outside += a.outside;
        if a.finish_reason.as_deref() == Some("answered") {
            self.answered += 1;
            self.answered_wrong += usize::from(a.f1 < WRONG_BELOW);
        }
        let e = self.by_hops.entry(q.hops).or_default();
        e.0 += a.f1;
        e.1 += 1;
    }

    fn json(&self) -> Value {
        let n = self.n.max(1) as f64;
        json!({
            "questions": self.n,
            "answer_f1": round(self.f1 / n, 4),
            "exact_match": round(self.exact / n, 4),
            "support_recall": round(self.support / n, 4),
            "faithfulness": mean(&self.faithfulness),
            "citation_precision": mean(&self.precision),
            "citation_recall": mean(&self.recall),
            "citations_outside_retrieved": self.outside,
            "answered": self.answered,
            "answered_wrong": self.answered_wrong,
            "mean_retrieval_cycles": round(self.cycles / n, 2),
            "mean_reflection_iterations": round(self.reflections / n, 2),
            "tokens": self.tokens,
            "seconds": round(self.seconds, 1),
            "answer_f1_by_hops": self.by_hops.iter().map(|(h, (f, k))| (h.to_string(), json!(round(f / *k as f64, 4)))).collect::<serde_json::Map<_, _>>(),
        })
    }
}

pub async fn run(env: &BenchEnv, args: ResearchArgs) -> Result<()> {
    let mut qs: Vec<Question> =
        questions(&args.suite, &args.set)?.into_iter().filter(|q| args.suite == "wiki" || (args.min_hops..=args.max_hops).contains(&q.hops)).collect();
    if let Some(n) = args.limit {
        qs.truncate(n);
    }
    let embedder = Arc::new(Embedder::installed(&models_dir(&env.data_dir)).map_err(|e| anyhow::anyhow!("{e}"))?);
    let corpus = Arc::new(corpus(env, &args.suite, &embedder)?);
    let vocabulary = if args.suite == "phantom" { phantom_names()? } else { BTreeSet::new() };
    let models = env.build_models()?;
    let (mut out, mut earlier) = results(&args, &qs, &env.data_dir)?;
    let scratch = harness::scratch_dir("research-bench")?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(scratch.join("bench.sqlite"), Durability::Process)?);
    let bar = harness::bar(qs.iter().filter(|q| !earlier.contains_key(&q.id)).count() * args.modes.len());
    let mut tallies: Vec<(String, Tally)> = args.modes.iter().map(|m| (m.clone(), Tally::default())).collect();
    for q in &qs {
        if let Some(answers) = earlier.remove(&q.id) {
            for ((_, tally), a) in tallies.iter_mut().zip(&answers) {
                tally.add(q, a);
            }
            continue;
        }
        let mut record = json!({"id": q.id, "question": q.question, "gold": q.answers, "hops": q.hops});
        for (mode, tally) in &mut tallies {
            bar.set_message(format!("{mode}: {}", harness::label(&q.question)));
            let config = match mode.as_str() {
                "full" => ResearchSettings::default(),
                "baseline" => ResearchSettings::default().baseline(),
                "closed" => ResearchSettings { closed_book: true, ..ResearchSettings::default().baseline() },
                other => bail!("unknown mode `{other}`: use full, baseline or closed"),
            };
            let a = answer(q, config, &corpus, &embedder, &models, &store, &args.suite, &vocabulary).await?;
            tally.add(q, &a);
            record[mode.as_str()] = serde_json::to_value(&a)?;
            bar.inc(1);
        }
        out.write(&record)?;
    }
    bar.finish_and_clear();
    let mut summary = json!({"suite": args.suite, "set": args.set, "questions": qs.len(), "results": out.path});
    for (mode, tally) in &tallies {
        let key = match mode.as_str() {
            "full" => "full",
            "baseline" => "loops_off",
            _ => "closed_book",
        };
        summary[key] = tally.json();
    }
    if let (Some(full), Some(off)) = (tallies.iter().find(|t| t.0 == "full"), tallies.iter().find(|t| t.0 == "baseline")) {
        let n = full.1.n.max(1) as f64;
        summary["f1_gain_over_loops_off"] = json!(round((full.1.f1 - off.1.f1) / n, 4));
    }
    println!("{summary}");
    Ok(())
}

/// The results file, emptied or (with `--resume`) keeping what an earlier
/// run wrote, and the earlier answers of this run's questions, by id, one
/// per mode in the order asked. A question some mode is missing for is
/// dropped from the file and answered again.
fn results(args: &ResearchArgs, qs: &[Question], data_dir: &Path) -> Result<(Results, BTreeMap<String, Vec<Answered>>)> {
    if !args.resume {
        return Ok((Results::create(args.out.as_deref(), data_dir, "research")?, BTreeMap::new()));
    }
    let answers =
        |line: &Value| -> Option<Vec<Answered>> { args.modes.iter().map(|m| line.get(m).and_then(|v| serde_json::from_value(v.clone()).ok())).collect() };
    let asked = |line: &Value| line["id"].as_str().is_some_and(|id| qs.iter().any(|q| q.id == id));
    let (out, lines) = Results::resume(args.out.as_deref(), data_dir, "research", |line| !asked(line) || answers(line).is_some())?;
    let earlier = lines.iter().filter(|l| asked(l)).filter_map(|l| Some((l["id"].as_str()?.to_string(), answers(l)?))).collect();
    Ok((out, earlier))
}

/// One question answered one way, as the results file holds it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answered {
    answer: String,
    short: String,
    f1: f64,
    exact: bool,
    support_recall: f64,
    faithfulness: Option<f64>,
    citation_precision: Option<f64>,
    citation_recall: Option<f64>,
    outside: usize,
    cycles: u32,
    reflections: u32,
    tokens: u64,
    seconds: f64,
    finish_reason: Option<String>,
}

#[allow(clippy::too_many_arguments)]
async fn answer(
    q: &Question,
    config: ResearchSettings,
    corpus: &Arc<Corpus>,
    embedder: &Arc<Embedder>,
    models: &Models,
    store: &Arc<dyn Store>,
    suite: &str,
    vocabulary: &BTreeSet<String>,
) -> Result<Answered> {
    let started = Instant::now();
    let runner = research::runner(&Wiring::new(models.clone(), store.clone()), corpus.clone(), embedder.clone())?;
    let name = if suite == "wiki" { WIKI_CORPUS } else { PHANTOM_CORPUS };
    let state = ResearchState::new(&q.question, name, config.clone());
    let outcome = runner.start(state, StartOptions::new(research::termination(&config)))?.wait().await?;
    let s: ResearchState = serde_json::from_value(store.load(&outcome.session_id)?.state)?;
    let draft = s.answer().cloned().unwrap_or_default();
    let answer = draft.answer.clone();
    // The short answer: the last phase's items (all its branches), when it
    // found any.
    let items = s.final_items();
    let short = if items.is_empty() { answer.clone() } else { items.join(", ") };
    let (f1, exact) = if suite == "wiki" {
        (q.answers.iter().map(|g| token_f1(&short, g)).fold(0.0, f64::max), q.answers.iter().any(|g| contains(&answer, g)))
    } else {
        // Names the question itself gives are not answers (unless gold).
        let given = mentioned(&q.question, vocabulary, &[]);
        let gold: BTreeSet<String> = q.answers.iter().map(|g| g.to_lowercase()).collect();
        let predicted: BTreeSet<String> = mentioned(&short, vocabulary, &q.answers).into_iter().filter(|n| gold.contains(n) || !given.contains(n)).collect();
        let f = set_f1(&predicted, &q.answers);
        (f, (f - 1.0).abs() < 1e-9)
    };
    let retrieved: BTreeSet<&str> = s.evidence.passages.iter().map(|p| p.title.as_str()).collect();
    let support_recall =
        if q.support.is_empty() { 0.0 } else { q.support.iter().filter(|t| retrieved.contains(t.as_str())).count() as f64 / q.support.len() as f64 };
    let count = s.evidence.passages.len() as u32;
    let outside = research::cited(&answer).into_iter().filter(|n| *n == 0 || *n > count).count();
    Ok(Answered {
        f1: round(f1, 4),
        exact,
        support_recall: round(support_recall, 4),
        faithfulness: draft.scores.faithfulness.map(f64::from),
        citation_precision: draft.scores.citation_precision.map(f64::from),
        citation_recall: draft.scores.citation_recall.map(f64::from),
        outside,
        cycles: if config.closed_book { 0 } else { 1 + s.cycles },
        reflections: s.reflections,
        tokens: outcome.progress.tokens(),
        seconds: round(started.elapsed().as_secs_f64(), 1),
        finish_reason: outcome.finish_reason,
        answer,
        short,
    })
}

/// Lowercase words of letters and digits, without English articles.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).filter(|w| !matches!(w.as_str(), "a" | "an" | "the")).collect()
}

/// SQuAD's token F1 between a prediction and one gold answer.
pub fn token_f1(predicted: &str, gold: &str) -> f64 {
    let (p, g) = (tokens(predicted), tokens(gold));
    if p.is_empty() || g.is_empty() {
        return 0.0;
    }
    let mut left = g.clone();
    let mut common = 0;
    for t in &p {
        if let Some(i) = left.iter().position(|x| x == t) {
            left.remove(i);
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let (precision, recall) = (common as f64 / p.len() as f64, common as f64 / g.len() as f64);
    2.0 * precision * recall / (precision + recall)
}

/// The gold answer's words appear in order in the text.
fn contains(text: &str, gold: &str) -> bool {
    let (t, g) = (tokens(text).join(" "), tokens(gold).join(" "));
    !g.is_empty() && format!(" {t} ").contains(&format!(" {g} "))
}

/// The names of `vocabulary` and the gold answers that the text mentions:
/// the answer set a prose answer gives.
fn mentioned(text: &str, vocabulary: &BTreeSet<String>, gold: &[String]) -> BTreeSet<String> {
    vocabulary.iter().chain(gold).filter(|name| contains(text, name)).map(|n| n.to_lowercase()).collect()
}

/// Set F1 of a predicted answer set against the gold one.
pub fn set_f1(predicted: &BTreeSet<String>, gold: &[String]) -> f64 {
    let gold: BTreeSet<String> = gold.iter().map(|g| g.to_lowercase()).collect();
    let hit = predicted.intersection(&gold).count() as f64;
    if hit == 0.0 {
        return 0.0;
    }
    2.0 * hit / (predicted.len() as f64 + gold.len() as f64)
}

/// Every person's name in the PhantomWiki universe (the article titles).
fn phantom_names() -> Result<BTreeSet<String>> {
    let v: Value = serde_json::from_str(bundled::PHANTOM_WIKI).context("the PhantomWiki articles do not parse")?;
    let titles = match &v {
        Value::Array(items) => items.iter().filter_map(|a| a["title"].as_str().map(String::from)).collect(),
        Value::Object(map) => map.keys().cloned().collect(),
        _ => BTreeSet::new(),
    };
    Ok(titles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_f1_and_set_f1_score_as_their_definitions_say() {
        assert_eq!(token_f1("New York City", "New York City"), 1.0);
        assert!((token_f1("in New York", "New York City") - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(token_f1("Boston", "New York City"), 0.0);
        let p: BTreeSet<String> = ["ada", "bob", "cy"].map(String::from).into();
        assert!((set_f1(&p, &["Ada".into(), "Bob".into()]) - 0.8).abs() < 1e-9);
        assert_eq!(set_f1(&BTreeSet::new(), &["Ada".into()]), 0.0);
    }

    fn answered(f1: f64, finish: &str) -> Answered {
        Answered {
            answer: String::new(),
            short: String::new(),
            f1,
            exact: false,
            support_recall: 0.0,
            faithfulness: None,
            citation_precision: None,
            citation_recall: None,
            outside: 0,
            cycles: 1,
            reflections: 0,
            tokens: 0,
            seconds: 0.0,
            finish_reason: Some(finish.into()),
        }
    }

    fn question(id: &str) -> Question {
        Question { id: id.into(), question: "?".into(), answers: vec![], support: vec![], hops: 2, set: "tuning".into() }
    }

    #[test]
    fn an_answered_session_scoring_below_half_counts_as_answered_wrong() {
        let q = question("q");
        let mut t = Tally::default();
        for (f1, finish) in [(1.0, "answered"), (0.2, "answered"), (0.0, "unverified"), (0.6, "unverified")] {
            t.add(&q, &answered(f1, finish));
        }
        assert_eq!((t.json()["answered"].clone(), t.json()["answered_wrong"].clone()), (json!(2), json!(1)));
    }

    #[test]
    fn a_resumed_run_keeps_the_questions_answered_every_way_asked_and_answers_the_rest_again() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("results.jsonl");
        let (right, wrong) = (serde_json::to_value(answered(1.0, "answered")).unwrap(), serde_json::to_value(answered(0.0, "unverified")).unwrap());
        let lines = [
            json!({"id": "q1", "full": right, "baseline": wrong}).to_string(),
            json!({"id": "q2", "full": right}).to_string(),
            json!({"id": "elsewhere", "full": wrong}).to_string(),
            r#"{"id": "q3", "full": {"answer": "cut off"#.to_string(),
        ];
        std::fs::write(&out, lines.join("\n")).unwrap();
        let qs = [question("q1"), question("q2"), question("q3")];
        let mut args = ResearchArgs {
            suite: "phantom".into(),
            set: "tuning".into(),
            limit: None,
            min_hops: 2,
            max_hops: 4,
            modes: vec!["full".into(), "baseline".into()],
            out: Some(out.clone()),
            resume: true,
        };
        let (mut file, earlier) = results(&args, &qs, dir.path()).unwrap();
        assert_eq!(earlier.keys().collect::<Vec<_>>(), ["q1"], "q2 lacks a mode and q3 was cut off: both are answered again");
        assert_eq!(earlier["q1"].iter().map(|a| a.f1).collect::<Vec<_>>(), [1.0, 0.0], "one answer per mode, in the order asked");
        file.write(&json!({"id": "q2"})).unwrap();
        let ids = |path: &Path| -> Vec<String> {
            std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string()).collect()
        };
        assert_eq!(ids(&out), ["q1", "elsewhere", "q2"], "a question outside this run's selection is left as it was");
        args.resume = false;
        drop(results(&args, &qs, dir.path()).unwrap());
        assert!(ids(&out).is_empty(), "without --resume the file starts empty");
    }

    #[test]
    fn a_prose_answer_gives_the_names_it_mentions() {
        let vocab: BTreeSet<String> = ["Ada Byron", "Tobin Quill", "Mara Quill"].map(String::from).into();
        let got = mentioned("The father of Mara Quill is Tobin Quill [2].", &vocab, &["Tobin Quill".into()]);
        assert_eq!(got, ["mara quill", "tobin quill"].map(String::from).into());
    }

    #[test]
    fn an_empty_corpus_left_by_a_stopped_indexing_counts_as_not_indexed() {
        let data = tempfile::tempdir().unwrap();
        assert!(bundled::indexed(data.path(), "wiki").unwrap().is_none());
        // Before corpora were built aside, a stopped indexing left an empty folder.
        let folder = agentloop_retrieval::corpora_dir(data.path()).join("wiki");
        let index = agentloop_retrieval::Bm25Index::open(&folder).unwrap();
        assert!(bundled::indexed(data.path(), "wiki").unwrap().is_none(), "an empty corpus is indexed again");
        index.add(&agentloop_retrieval::passages("tides.md", "Tides", "The moon pulls the sea.")).unwrap();
        drop(index);
        assert!(bundled::indexed(data.path(), "wiki").unwrap().is_some());
    }

    #[test]
    fn no_worked_decomposition_paraphrases_a_bench_question() {
        for example in agentloop_research::example_questions() {
            for suite in ["wiki", "phantom"] {
                for q in questions(suite, "tuning").unwrap().into_iter().chain(questions(suite, "heldout").unwrap()) {
                    let shared: Vec<String> = harness::content_words(example).intersection(&harness::content_words(&q.question)).cloned().collect();
                    assert!(shared.len() <= 3, "the worked example {example:?} shares {shared:?} with the bench question {:?}", q.question);
                }
            }
        }
    }

    #[test]
    fn both_suites_have_a_tuning_and_a_held_out_set_that_do_not_overlap() {
        for suite in ["wiki", "phantom"] {
            let (t, h) = (questions(suite, "tuning").unwrap(), questions(suite, "heldout").unwrap());
            assert!(!t.is_empty() && h.len() >= 20, "{suite}: {} tuning, {} held out", t.len(), h.len());
            assert!(h.iter().all(|x| t.iter().all(|y| y.question != x.question)));
        }
        assert!(questions("wiki", "heldout").unwrap().len() + questions("wiki", "tuning").unwrap().len() >= 30);
    }
}

//! The research agent as the registry knows it: flags, the `[research]`
//! table and the environment names its users know, input, summary.

use std::path::Path;
use std::sync::Arc;

use agentloop_core::{Error, JsonSchema, Result, Runner, Termination};
use agentloop_llm::catalog::models_dir;
use agentloop_retrieval::{bundled, Corpus, Embedder};
use serde::{Deserialize, Serialize};

use super::events::ResearchEvent;
use super::state::{ResearchConfig, ResearchState};
use crate::registry::env::AgentEnv;
use crate::registry::spec::AgentSpec;
use crate::registry::summary::{Citation, Summary};

pub struct Research;

/// `agentloop run research`.
#[derive(clap::Args, Debug)]
pub struct ResearchFlags {
    /// The question, in plain words.
    #[arg(long)]
    pub question: Option<String>,
    /// The corpus to search (`agentloop corpus list`; default `wiki`).
    #[arg(long)]
    pub corpus: Option<String>,
    /// The loops off, for comparison: one retrieval, no decomposition, no reflection.
    #[arg(long)]
    pub baseline: bool,
    /// No retrieval at all: the model answers from what it knows (uncited, never counted as checked).
    #[arg(long)]
    pub closed_book: bool,
}

/// `[research]` in agentloop.toml; each key also has the environment name
/// in its comment, which wins over the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResearchFile {
    pub corpus: Option<String>,
    /// REFLECTION_ENABLED
    pub reflection: Option<bool>,
    /// REFLECTION_MAX_ITERATIONS
    pub max_reflections: Option<u32>,
    /// REFLECTION_MIN_IMPROVEMENT
    pub min_improvement: Option<f32>,
    /// REFLECTION_QUALITY_TARGET
    pub quality_target: Option<f32>,
    /// REFLECTION_TIMEOUT_PER_ITERATION (seconds)
    pub timeout_per_iteration: Option<u64>,
    /// DECOMPOSITION_ENABLED
    pub decomposition: Option<bool>,
    /// DECOMPOSITION_MAX_SUB_QUERIES
    pub max_sub_queries: Option<usize>,
    /// ITERATIVE_RETRIEVAL_ENABLED
    pub iterative_retrieval: Option<bool>,
    /// ITERATIVE_RETRIEVAL_MAX_CYCLES
    pub max_cycles: Option<u32>,
    /// COVERAGE_THRESHOLD
    pub coverage_threshold: Option<f32>,
    pub passages_per_search: Option<usize>,
    pub max_tokens: Option<u64>,
    pub max_tool_calls: Option<u64>,
    pub deadline: Option<u64>,
}

/// What a research session is started with.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResearchInput {
    pub question: String,
    /// The corpus to search.
    #[serde(default = "default_corpus")]
    pub corpus: String,
    #[serde(default)]
    pub config: ResearchConfig,
}

fn default_corpus() -> String {
    super::DEFAULT_CORPUS.to_string()
}

/// `name`'s value in the environment, read as `T`; a value that does not
/// read is an error naming it.
fn env<T: std::str::FromStr>(name: &str) -> Result<Option<T>> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().map(Some).map_err(|_| Error::other(format!("{name}={v} is not a valid value: fix or unset it"))),
        _ => Ok(None),
    }
}

/// `true`/`false`, also `1`/`0`, `yes`/`no`.
fn env_bool(name: &str) -> Result<Option<bool>> {
    match std::env::var(name).map(|v| v.trim().to_lowercase()) {
        Ok(v) if ["true", "1", "yes", "on"].contains(&v.as_str()) => Ok(Some(true)),
        Ok(v) if ["false", "0", "no", "off"].contains(&v.as_str()) => Ok(Some(false)),
        Ok(v) if !v.is_empty() => Err(Error::other(format!("{name}={v} is not true or false: fix or unset it"))),
        _ => Ok(None),
    }
}

impl ResearchFile {
    /// The settings: defaults, then the file, then the environment.
    pub fn config(&self) -> Result<ResearchConfig> {
        let mut c = ResearchConfig::default();
        macro_rules! set {
            ($field:ident, $file:expr, $env:expr) => {
                if let Some(v) = $env.or($file) {
                    c.$field = v;
                }
            };
        }
        set!(reflection, self.reflection, env_bool("REFLECTION_ENABLED")?);
        set!(max_reflections, self.max_reflections, env("REFLECTION_MAX_ITERATIONS")?);
        set!(min_improvement, self.min_improvement, env("REFLECTION_MIN_IMPROVEMENT")?);
        set!(quality_target, self.quality_target, env("REFLECTION_QUALITY_TARGET")?);
        set!(timeout_per_iteration_secs, self.timeout_per_iteration, env("REFLECTION_TIMEOUT_PER_ITERATION")?);
        set!(decomposition, self.decomposition, env_bool("DECOMPOSITION_ENABLED")?);
        set!(max_sub_queries, self.max_sub_queries, env("DECOMPOSITION_MAX_SUB_QUERIES")?);
        set!(iterative_retrieval, self.iterative_retrieval, env_bool("ITERATIVE_RETRIEVAL_ENABLED")?);
        set!(max_cycles, self.max_cycles, env("ITERATIVE_RETRIEVAL_MAX_CYCLES")?);
        set!(coverage_threshold, self.coverage_threshold, env("COVERAGE_THRESHOLD")?);
        set!(passages_per_search, self.passages_per_search, None);
        set!(max_tokens, self.max_tokens, None);
        set!(max_tool_calls, self.max_tool_calls, None);
        set!(deadline_secs, self.deadline, None);
        Ok(c)
    }
}

/// The sentence of `passage` that shares the most words with `claim`: what
/// a citation points at.
fn cited_sentence(passage: &str, claim: &str) -> String {
    let words = |t: &str| t.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2).map(str::to_lowercase).collect::<std::collections::BTreeSet<_>>();
    let wanted = words(claim);
    passage
        .split_inclusive(['.', '!', '?'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .max_by_key(|s| words(s).intersection(&wanted).count())
        .unwrap_or(passage)
        .to_string()
}

impl AgentSpec for Research {
    const NAME: &'static str = super::AGENT;
    const ABOUT: &'static str =
        "Answer a multi-part question from a local document collection: sub-questions in dependency order, searched until covered, an answer citing the passages it rests on, critiqued and refined.";
    const TITLE: Option<&'static str> = Some("question");
    const ROLES: &'static [agentloop_llm::Role] = super::ROLES;
    type Input = ResearchInput;
    type Flags = ResearchFlags;
    type Config = ResearchFile;
    type State = ResearchState;
    type Event = ResearchEvent;

    fn input(flags: ResearchFlags, file: ResearchFile, data_dir: &Path) -> Result<ResearchInput> {
        let mut config = file.config()?;
        if flags.baseline {
            config = config.baseline();
        }
        config.closed_book = flags.closed_book;
        let input =
            ResearchInput { question: flags.question.unwrap_or_default(), corpus: flags.corpus.or(file.corpus.clone()).unwrap_or_else(default_corpus), config };
        Self::prepare(input, data_dir)
    }

    fn prepare(input: ResearchInput, _data_dir: &Path) -> Result<ResearchInput> {
        if input.question.trim().is_empty() {
            return Err(Error::other("research needs a question: pass it with --question"));
        }
        Ok(input)
    }

    fn intro(input: &ResearchInput) -> Vec<String> {
        let c = &input.config;
        let mode = if c.closed_book {
            "closed book: no retrieval".to_string()
        } else if !c.decomposition && !c.iterative_retrieval && !c.reflection {
            format!("corpus {}, loops off (baseline)", input.corpus)
        } else {
            format!("corpus {}", input.corpus)
        };
        vec![format!("Question: {}", input.question), mode]
    }

    fn runner(env: &AgentEnv, input: &ResearchInput) -> Result<Runner<ResearchState>> {
        if input.config.closed_book {
            return Ok(Runner::new(super::graph()?, env.store.clone()).models(env.models.clone()));
        }
        let embedder = Embedder::installed(&models_dir(&env.data_dir)).map_err(|e| Error::other(e.to_string()))?;
        let corpus = corpus(env, &input.corpus, &embedder).map_err(|e| Error::other(e.to_string()))?;
        super::runner(Arc::new(corpus), Arc::new(embedder), env.models.clone(), env.store.clone())
    }

    fn initial(input: &ResearchInput) -> Result<(ResearchState, Termination)> {
        let state = ResearchState::new(input.question.clone(), input.corpus.clone(), input.config.clone());
        Ok((state, super::termination(&input.config)))
    }

    fn summarize(state: &ResearchState, summary: &mut Summary) {
        let Some(draft) = state.answer() else { return };
        summary.answer = Some(draft.answer.clone());
        summary.faithfulness = draft.scores.faithfulness;
        summary.confidence = draft.scores.confidence;
        let mut numbers: Vec<u32> = draft.claims.iter().flat_map(|c| c.citations.clone()).collect();
        numbers.sort_unstable();
        numbers.dedup();
        for n in numbers {
            let Some(p) = state.evidence.get(n) else { continue };
            let claim = draft.claims.iter().find(|c| c.citations.contains(&n)).map(|c| c.text.as_str()).unwrap_or_default();
            summary.citations.push(Citation {
                number: n,
                passage_id: p.id.clone(),
                title: p.title.clone(),
                start: p.start,
                end: p.end,
                sentence: cited_sentence(&p.text, claim),
            });
        }
        for c in &draft.claims {
            let verdict = match c.supported {
                Some(true) => format!("supported ({:.0}%)", c.confidence.unwrap_or(0.0) * 100.0),
                Some(false) => "NOT supported".to_string(),
                None => "not judged".to_string(),
            };
            summary.notes.push(format!("claim {verdict}: {}", c.text));
        }
        let unmentioned = state.unmentioned(draft);
        if !unmentioned.is_empty() {
            summary.notes.push(format!("not checked: {}", super::reflect::never_mentioned(&unmentioned)));
        }
        let answered = state.sub_queries.iter().filter(|w| w.status == super::SubQueryStatus::Answered).count();
        summary.notes.push(format!(
            "{answered}/{} sub-question(s) answered, {} search(es), {} passage(s), {} draft(s), {} reflection pass(es)",
            state.sub_queries.len(),
            state.searches.len(),
            state.evidence.passages.len(),
            state.drafts.len(),
            state.reflections
        ));
    }

    fn line(event: &ResearchEvent) -> String {
        event.line()
    }
}

/// The session's corpus; a bundled one not built yet is built first when
/// someone watches its progress (the CLI), and refused otherwise.
fn corpus(env: &AgentEnv, name: &str, embedder: &Embedder) -> agentloop_retrieval::Result<Corpus> {
    let what = format!("building corpus `{name}` (once; its passages embedded)");
    match &env.preparing {
        Some(preparing) => bundled::open_or_build(&env.data_dir, name, embedder, Some(&mut |done, all| preparing(&what, done, all))),
        None => bundled::open_or_build(&env.data_dir, name, embedder, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_citation_points_at_the_sentence_that_carries_the_claim() {
        let passage = "Ada was born in London. Her father was Lord Byron, the poet. She died in 1852.";
        assert_eq!(cited_sentence(passage, "Ada's father was the poet Lord Byron [1]."), "Her father was Lord Byron, the poet.");
    }
}

//! The research agent as the registry knows it: flags, the `[research]`
//! table and the environment names its users know, input, summary.

use std::path::Path;
use std::sync::Arc;

use agentloop_core::{Error, JsonSchema, Result, Runner, Termination};
use agentloop_llm::catalog::models_dir;
use agentloop_retrieval::{bundled, Corpus, Embedder};
use serde::{Deserialize, Serialize};

use super::events::ResearchEvent;
use super::state::{ResearchSettings, ResearchState};
use agentloop_agent::registry::env::AgentEnv;
use agentloop_agent::registry::spec::AgentSpec;
use agentloop_agent::registry::summary::{Citation, Summary};
use agentloop_agent::Wiring;

pub struct Research;

/// `agentloop run research`: the question, and a switch for comparison
/// (the settings are `ResearchSettings`).
#[derive(clap::Args, Debug)]
pub struct ResearchFlags {
    /// The question, in plain words.
    #[arg(long)]
    pub question: Option<String>,
    /// The loops off, for comparison: one retrieval, no decomposition, no reflection.
    #[arg(long)]
    pub baseline: bool,
}

/// What a research session is started with.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResearchInput {
    pub question: String,
    #[serde(flatten)]
    pub settings: ResearchSettings,
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
    type Settings = ResearchSettings;
    type State = ResearchState;
    type Event = ResearchEvent;

    fn input(flags: ResearchFlags, mut settings: ResearchSettings, data_dir: &Path) -> Result<ResearchInput> {
        if flags.baseline {
            settings = settings.baseline();
        }
        Self::prepare(ResearchInput { question: flags.question.unwrap_or_default(), settings }, data_dir)
    }

    fn settings(input: &ResearchInput) -> &ResearchSettings {
        &input.settings
    }

    fn prepare(input: ResearchInput, _data_dir: &Path) -> Result<ResearchInput> {
        if input.question.trim().is_empty() {
            return Err(Error::other("research needs a question: pass it with --question"));
        }
        Ok(input)
    }

    fn intro(input: &ResearchInput) -> Vec<String> {
        let c = &input.settings;
        let mode = if c.closed_book {
            "closed book: no retrieval".to_string()
        } else if !c.decomposition && !c.iterative_retrieval && !c.reflection {
            format!("corpus {}, loops off (baseline)", input.settings.corpus)
        } else {
            format!("corpus {}", input.settings.corpus)
        };
        vec![format!("Question: {}", input.question), mode]
    }

    fn runner(env: &AgentEnv, input: &ResearchInput) -> Result<Runner<ResearchState>> {
        if input.settings.closed_book {
            return Ok(Runner::new(super::graph()?, env.store.clone()).models(env.models.clone()));
        }
        let embedder = Embedder::installed(&models_dir(&env.data_dir)).map_err(|e| Error::other(e.to_string()))?;
        let corpus = corpus(env, &input.settings.corpus, &embedder).map_err(|e| Error::other(e.to_string()))?;
        super::runner(&Wiring::of(env), Arc::new(corpus), Arc::new(embedder))
    }

    fn initial(input: &ResearchInput) -> Result<(ResearchState, Termination)> {
        let state = ResearchState::new(input.question.clone(), input.settings.corpus.clone(), input.settings.clone());
        Ok((state, super::termination(&input.settings)))
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

//! What a research session remembers — its working memory, as its users
//! specified it: the decomposition, each sub-question's status, answer and
//! coverage per cycle, the evidence, the gaps found and the history of
//! drafts. All of it is state, so it is journaled and resumable.

use std::collections::{BTreeMap, BTreeSet};

use agentloop_core::{Fields, JsonSchema, State};
use serde::{Deserialize, Serialize};

use agentloop_agent::registry::settings::{self, declare_settings};

use super::coverage::CoverageReport;
use super::decompose::Decomposition;
use super::evidence::{Claim, Evidence, Scores};
use super::reflect::{AnswerFit, Gap, SelfCritique, StopReason};

declare_settings! {
    /// The research agent's settings: flags of `run research`, keys of
    /// `[research]` in agentloop.toml, fields of its JSON input. Most also
    /// read the environment names its users know, which win over the table.
    pub struct ResearchSettings {
        /// The corpus to search (`agentloop corpus list`).
        #[arg(long)]
        pub corpus: String = super::DEFAULT_CORPUS.to_string(),
        /// Break a complex question into sub-questions.
        #[arg(long, env = "DECOMPOSITION_ENABLED", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
        pub decomposition: bool = true,
        /// Sub-questions at most.
        #[arg(long, env = "DECOMPOSITION_MAX_SUB_QUERIES", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        pub max_sub_queries: usize = 5,
        /// Check coverage and search again for what is missing.
        #[arg(long, env = "ITERATIVE_RETRIEVAL_ENABLED", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
        pub iterative_retrieval: bool = true,
        /// Gap-filling retrieval cycles at most per question (each
        /// sub-question gets at most one).
        #[arg(long, env = "ITERATIVE_RETRIEVAL_MAX_CYCLES")]
        pub max_cycles: u32 = 2,
        /// Coverage at which a sub-question's evidence is enough, 0 to 1.
        #[arg(long, env = "COVERAGE_THRESHOLD", value_parser = settings::fraction::<f32>)]
        pub coverage_threshold: f32 = 0.85,
        /// Critique and refine the answer.
        #[arg(long, env = "REFLECTION_ENABLED", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
        pub reflection: bool = true,
        /// Refinements at most.
        #[arg(long, env = "REFLECTION_MAX_ITERATIONS")]
        pub max_reflections: u32 = 3,
        /// A refinement improving quality by less than this ends the loop, 0 to 1.
        #[arg(long, env = "REFLECTION_MIN_IMPROVEMENT", value_parser = settings::fraction::<f32>)]
        pub min_improvement: f32 = 0.05,
        /// Quality at which the answer is good enough, 0 to 1.
        #[arg(long, env = "REFLECTION_QUALITY_TARGET", value_parser = settings::fraction::<f32>)]
        pub quality_target: f32 = 0.9,
        /// Seconds one iteration (a phase, a draft, a reflection pass) may take.
        #[arg(long, env = "REFLECTION_TIMEOUT_PER_ITERATION", value_parser = clap::value_parser!(u64).range(1..))]
        #[serde(alias = "timeoutPerIterationSecs")]
        pub timeout_per_iteration: u64 = 600,
        /// Passages each search returns.
        #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        pub passages_per_search: usize = 5,
        /// No retrieval at all: the model answers from what it knows
        /// (uncited, never counted as checked).
        #[arg(long)]
        pub closed_book: bool = false,
        /// Model tokens at most for the session (0: no limit).
        #[arg(long)]
        pub max_tokens: u64 = 0,
        /// Tool calls (searches) at most for the session (0: no limit).
        #[arg(long)]
        pub max_tool_calls: u64 = 60,
        /// Seconds of running time at most for the session (0: no limit).
        #[arg(long)]
        #[serde(alias = "deadlineSecs")]
        pub deadline: u64 = 0,
    }
}

impl ResearchSettings {
    /// The same agent with its loops off: one retrieval, no decomposition,
    /// no coverage cycles, no reflection.
    pub fn baseline(mut self) -> Self {
        self.decomposition = false;
        self.iterative_retrieval = false;
        self.reflection = false;
        self
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubQueryStatus {
    #[default]
    Pending,
    Answered,
    /// The evidence did not answer it.
    Unanswered,
}

/// A sub-question's progress — or one branch of it: a sub-question whose
/// dependency answered with several items (the friends of someone, the
/// children of someone) is asked once per item, each branch its own work
/// (`q2-1`, `q2-2`, …) with the sub-question's id as `query`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubQueryWork {
    pub id: String,
    /// The decomposition's sub-question this works on (its own id unless
    /// it is a branch).
    #[serde(default)]
    pub query: String,
    pub status: SubQueryStatus,
    /// Its text with its dependencies' answers filled in.
    pub resolved: String,
    /// The answer as shown: its items joined.
    pub answer: String,
    /// Each name, number or phrase of the answer, one per item; a later
    /// sub-question that depends on this one is asked once per item.
    #[serde(default)]
    pub items: Vec<String>,
    /// Evidence numbers its answer cites.
    pub citations: Vec<u32>,
    /// Evidence numbers its searches found.
    pub found: Vec<u32>,
    pub coverage: Vec<CoverageReport>,
}

impl SubQueryWork {
    /// The decomposition's sub-question this works on.
    pub fn query(&self) -> &str {
        if self.query.is_empty() {
            &self.id
        } else {
            &self.query
        }
    }
}

/// One version of the answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    pub answer: String,
    pub claims: Vec<Claim>,
    pub scores: Scores,
    /// Whether it gives what the question asks for, as the judge sees it;
    /// `None` when not checked (closed book, an abstention).
    #[serde(default)]
    pub fit: Option<AnswerFit>,
    pub critique: Option<SelfCritique>,
    /// Set once critiqued.
    pub quality: Option<f32>,
    pub gaps: Vec<Gap>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchState {
    pub question: String,
    /// The corpus searched.
    pub corpus: String,
    pub config: ResearchSettings,
    pub decomposition: Option<Decomposition>,
    pub sub_queries: Vec<SubQueryWork>,
    /// The next phase of the execution plan to run.
    pub phase: usize,
    pub evidence: Evidence,
    /// The question's search terms the corpus holds (`corpus_terms`),
    /// placeholders aside (`evidence::asked_terms`): those an answer's
    /// sources must mention.
    #[serde(default)]
    pub asked_terms: Vec<String>,
    /// Every search run, in order (one is never run twice).
    pub searches: Vec<String>,
    /// Gap-filling cycles run so far.
    pub cycles: u32,
    /// Every version of the answer, the first draft first.
    pub drafts: Vec<Draft>,
    /// The draft shown: the best so far.
    pub best: usize,
    pub reflections: u32,
    pub stopped: Option<StopReason>,
    /// Set when the answer says the evidence held nothing.
    pub abstained: bool,
}

impl State for ResearchState {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("question", &self.question);
        f.value("corpus", &self.corpus);
        f.value("config", &self.config);
        f.value("decomposition", &self.decomposition);
        f.value("subQueries", &self.sub_queries);
        f.value("phase", &self.phase);
        f.log("evidence", &self.evidence.passages);
        f.value("askedTerms", &self.asked_terms);
        f.log("searches", &self.searches);
        f.value("cycles", &self.cycles);
        f.value("drafts", &self.drafts);
        f.value("best", &self.best);
        f.value("reflections", &self.reflections);
        f.value("stopped", &self.stopped);
        f.value("abstained", &self.abstained);
    }
}

impl ResearchState {
    pub fn new(question: impl Into<String>, corpus: impl Into<String>, config: ResearchSettings) -> Self {
        Self { question: question.into(), corpus: corpus.into(), config, ..Self::default() }
    }

    /// The answer shown: the best draft's.
    pub fn answer(&self) -> Option<&Draft> {
        self.drafts.get(self.best)
    }

    /// The passages a draft rests on: those its claims cite and those the
    /// answered sub-questions cite (the chain it was written from).
    pub fn sources(&self, draft: &Draft) -> BTreeSet<u32> {
        let claimed = draft.claims.iter().flat_map(|c| c.citations.iter().copied());
        let found = self.sub_queries.iter().filter(|w| w.status == SubQueryStatus::Answered).flat_map(|w| w.citations.iter().copied());
        claimed.chain(found).collect()
    }

    /// The question's words a draft's sources never mention though the
    /// corpus does (`Evidence::unmentioned`): such a draft is
    /// beside the question, and never counted as checked.
    pub fn unmentioned(&self, draft: &Draft) -> Vec<String> {
        self.evidence.unmentioned(&self.question, &self.sources(draft), &self.asked_terms)
    }

    pub fn work(&self, id: &str) -> Option<&SubQueryWork> {
        self.sub_queries.iter().find(|w| w.id == id)
    }

    /// The answered sub-questions as cited sentences, in the order they
    /// were answered: the answer when the model's own cannot be used.
    pub fn findings_answer(&self) -> String {
        let sentences: Vec<String> = self
            .sub_queries
            .iter()
            .filter(|w| w.status == SubQueryStatus::Answered && !w.answer.is_empty())
            .map(|w| {
                let cites: String = w.citations.iter().map(|c| format!("[{c}]")).collect();
                format!("The passages answer “{}” with {} {cites}.", w.resolved.trim(), w.answer).replace(" .", ".")
            })
            .collect();
        sentences.join(" ")
    }

    /// The items answered for each sub-question so far, its branches'
    /// together, each item once, in the order found.
    pub fn answered_items(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for w in self.sub_queries.iter().filter(|w| w.status == SubQueryStatus::Answered) {
            let items = out.entry(w.query().to_string()).or_default();
            let own = if w.items.is_empty() { std::slice::from_ref(&w.answer) } else { &w.items[..] };
            for item in own {
                if !items.contains(item) {
                    items.push(item.clone());
                }
            }
        }
        out
    }

    /// The short answer: the items found for the sub-questions of the
    /// last phase (branches together); empty when that phase found none.
    pub fn final_items(&self) -> Vec<String> {
        let items = self.answered_items();
        let last = self.decomposition.as_ref().and_then(|d| d.execution_plan.last());
        last.into_iter().flatten().filter_map(|id| items.get(id)).flatten().cloned().collect()
    }

    /// Puts one work per text in place of `query`'s work(s): the work
    /// itself for one text, branches `query-1`, `query-2`, … for several.
    /// Returns their ids in order.
    pub fn branch(&mut self, query: &str, texts: &[String]) -> Vec<String> {
        let at = self.sub_queries.iter().position(|w| w.query() == query).unwrap_or(self.sub_queries.len());
        self.sub_queries.retain(|w| w.query() != query);
        let works: Vec<SubQueryWork> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| SubQueryWork {
                id: if texts.len() == 1 { query.to_string() } else { format!("{query}-{}", i + 1) },
                query: query.to_string(),
                resolved: text.clone(),
                ..SubQueryWork::default()
            })
            .collect();
        let ids = works.iter().map(|w| w.id.clone()).collect();
        self.sub_queries.splice(at..at, works);
        ids
    }

    /// Share of sub-questions answered (1 with none: nothing was asked of them).
    pub fn answered_share(&self) -> f32 {
        if self.sub_queries.is_empty() {
            return 1.0;
        }
        self.sub_queries.iter().filter(|w| w.status == SubQueryStatus::Answered).count() as f32 / self.sub_queries.len() as f32
    }

    /// The latest coverage of the whole question: the mean over
    /// sub-questions of each one's last coverage.
    pub fn coverage(&self) -> f32 {
        let last: Vec<f32> = self.sub_queries.iter().filter_map(|w| w.coverage.last().map(|c| c.coverage)).collect();
        if last.is_empty() {
            return 0.0;
        }
        last.iter().sum::<f32>() / last.len() as f32
    }
}

//! The research agent:
//!
//! ```text
//! DECOMPOSE → RESEARCH ─next phase→ RESEARCH … → SYNTHESIZE ─reflection on→ REFLECT ─go on→ REFINE → REFLECT …
//!    │         (search → coverage → gap search → answer, per sub-question)   │           └stop→ END
//!    └closed book────────────────────────────────→ SYNTHESIZE                └loops off, nothing found→ END
//! ```
//!
//! DECOMPOSE looks up which of the question's words the corpus holds (an
//! answer's sources must mention them), then breaks the question into
//! sub-questions and lays them out in phases by dependency; RESEARCH runs one phase — each sub-question
//! searched with its dependencies' answers filled in, its coverage checked
//! and what is missing searched for again, then answered, the model calls
//! of a phase asked together; SYNTHESIZE writes an answer whose every
//! sentence cites a retrieved passage (an answer citing anything else is
//! refused and asked again) and judges each claim against its passages;
//! REFLECT finds the draft's gaps, critiques it, scores it and stops at
//! the quality target, when a refinement gains too little, when the gaps
//! stop changing or at the pass limit; REFINE writes the next draft. The
//! best draft is the answer, and it counts as checked only when its claims
//! are supported (`nodes::FAITHFUL`) and it is not beside the question
//! (`reflect::Aim`).

mod agent;
mod coverage;
mod decompose;
mod events;
mod evidence;
mod nodes;
mod prompts;
mod reflect;
mod search;
mod state;

use std::sync::Arc;
use std::time::Duration;

use agentloop_agent::Wiring;
use agentloop_core::{Budget, CompiledGraph, Graph, Result, Runner, Termination, Tools, END};
use agentloop_retrieval::{Corpus, Embedder};

pub use agent::{Research, ResearchFlags, ResearchInput};
pub use coverage::{coverage as coverage_of, Aspect, CoverageAnswer, CoverageReport};
pub use decompose::{execution_plan, resolved, Decomposition, DecompositionAnswer, QueryType, SubQuery};
pub use events::ResearchEvent;
pub use evidence::{cited, claims, scores, Claim, Evidence, Scores, Stated};
pub use nodes::{ClaimVerdict, SubAnswer, BRANCHES, FAITHFUL};
pub use prompts::example_questions;
pub use reflect::{AnswerFit, AnswerKind, Gap, GapKind, SelfCritique, StopReason};
pub use search::{CorpusTerms, Search};
pub use state::{Draft, ResearchSettings, ResearchState, SubQueryStatus, SubQueryWork};

use agentloop_llm::{Role, RoleDefault};

pub const AGENT: &str = "research";
/// The role that judges claims and critiques drafts: a judge's word is not
/// itself checked, so by default it is the strong model (`ROLES`).
pub const JUDGE_ROLE: &str = "verifier";
/// The role that breaks a question down: by default the strong model too,
/// since a small model's decomposition sends every later search astray.
pub const DECOMPOSE_ROLE: &str = "decomposer";
/// The role that answers a sub-question from its passages: by default the
/// strong model too, since each answer's items are what the next hop
/// searches for, and a small model tends to list every name it was shown.
pub const READ_ROLE: &str = "reader";
/// The role that writes the answer and its refinements: by default a chain
/// from the small model to the strong one, moved on when its answers are
/// refused.
pub const WRITE_ROLE: &str = "writer";
/// The research agent's roles and the models they get unless configured.
pub const ROLES: &[Role] = &[
    Role::new(JUDGE_ROLE, RoleDefault::Strong),
    Role::new(DECOMPOSE_ROLE, RoleDefault::Strong),
    Role::new(READ_ROLE, RoleDefault::Strong),
    Role::new(WRITE_ROLE, RoleDefault::Escalating),
];
/// The corpus searched when none is named.
pub const DEFAULT_CORPUS: &str = "wiki";

pub fn graph() -> Result<CompiledGraph<ResearchState>> {
    Graph::new(AGENT)
        .node("decompose", nodes::decompose)
        .node("research", nodes::research)
        .node("synthesize", nodes::synthesize)
        .node("reflect", nodes::reflect)
        .node("refine", nodes::refine)
        .entry("decompose")
        .route("decompose", &["research", "synthesize"], |s: &ResearchState| if s.config.closed_book { "synthesize".into() } else { "research".into() })
        .route("research", &["research", "synthesize"], |s: &ResearchState| {
            let phases = s.decomposition.as_ref().map_or(0, |d| d.execution_plan.len());
            if s.phase < phases {
                "research".into()
            } else {
                "synthesize".into()
            }
        })
        .route("synthesize", &["reflect", END], |s: &ResearchState| if nodes::ended(s) { END.into() } else { "reflect".into() })
        .route("reflect", &["refine", END], |s: &ResearchState| if nodes::ended(s) { END.into() } else { "refine".into() })
        .edge("refine", "reflect")
        .compile()
}

/// A runner searching `corpus` with `embedder`. It runs no command, so it
/// offers no MCP tool.
pub fn runner(wiring: &Wiring, corpus: Arc<Corpus>, embedder: Arc<Embedder>) -> Result<Runner<ResearchState>> {
    let tools = Tools::new().with(Search::new(corpus.clone(), embedder)).with(CorpusTerms::new(corpus));
    Ok(wiring.runner(graph()?, tools, None))
}

/// The limits users asked for: iterations enough for every phase, draft and
/// pass; a per-iteration timeout; the token and tool-call budgets and the
/// session deadline when set; the same tool call three times pauses.
pub fn termination(config: &ResearchSettings) -> Termination {
    let iterations = 1 + config.max_sub_queries as u32 + 1 + 2 * config.max_reflections;
    let mut all = vec![
        Termination::max_iterations(iterations),
        Termination::timeout(Duration::from_secs(config.timeout_per_iteration.max(1))),
        Termination::repetition(3),
    ];
    let budget = Budget {
        tokens: (config.max_tokens > 0).then_some(config.max_tokens),
        tool_calls: (config.max_tool_calls > 0).then_some(config.max_tool_calls),
        cost: None,
    };
    if budget.tokens.is_some() || budget.tool_calls.is_some() {
        all.push(Termination::budget(budget));
    }
    if config.deadline > 0 {
        all.push(Termination::deadline(Duration::from_secs(config.deadline)));
    }
    Termination::any_of(all)
}

#[cfg(test)]
mod tests {
    use agentloop_core::json_schema_of;
    use serde_json::Value;

    /// Paths in `schema` to arrays without `maxItems` and free strings
    /// without `maxLength`.
    fn unbounded(schema: &Value, at: &str, out: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                let kind = map.get("type").and_then(Value::as_str);
                if kind == Some("array") && !map.contains_key("maxItems") {
                    out.push(at.to_string());
                }
                if kind == Some("string") && !map.contains_key("maxLength") && !map.contains_key("enum") {
                    out.push(at.to_string());
                }
                for (key, value) in map {
                    unbounded(value, &format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| unbounded(v, &format!("{at}/{i}"), out)),
            _ => {}
        }
    }

    #[test]
    fn every_list_and_text_a_model_writes_is_bounded() {
        let schemas = [
            json_schema_of::<super::decompose::DecompositionAnswer>(),
            json_schema_of::<super::coverage::CoverageAnswer>(),
            json_schema_of::<super::nodes::SubAnswer>(),
            json_schema_of::<super::nodes::ClaimVerdict>(),
            json_schema_of::<super::reflect::SelfCritique>(),
        ];
        let mut found = Vec::new();
        for schema in &schemas {
            unbounded(schema, "", &mut found);
        }
        assert!(found.is_empty(), "unbounded in a model's schema: {found:?}");
        let mut loose = Vec::new();
        unbounded(&json_schema_of::<Vec<String>>(), "", &mut loose);
        assert_eq!(loose, vec!["".to_string(), "/items".to_string()], "the check sees an unbounded list and text");
    }
}

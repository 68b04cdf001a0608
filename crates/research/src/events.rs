//! The research agent's events (the names and payloads its users listed)
//! and how the live view shows them.

use agentloop_core::{EventKind, JsonSchema};
use serde::{Deserialize, Serialize};

use super::decompose::QueryType;
use super::reflect::{Gap, StopReason};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "name", content = "payload", rename_all_fields = "camelCase")]
pub enum ResearchEvent {
    #[serde(rename = "research:decomposition_started")]
    DecompositionStarted { question: String },
    #[serde(rename = "research:sub_query_identified")]
    SubQueryIdentified { id: String, text: String, dependencies: Vec<String>, kind: QueryType, priority: u8, phase: usize },
    #[serde(rename = "research:decomposition_completed")]
    DecompositionCompleted { complex: bool, sub_queries: usize, execution_plan: Vec<Vec<String>>, error: Option<String> },
    /// A search round for a sub-question: cycle 0 the first, then gap-filling.
    #[serde(rename = "research:retrieval_cycle_started")]
    RetrievalCycleStarted { sub_query: String, cycle: u32, queries: Vec<String> },
    #[serde(rename = "research:coverage_checked")]
    CoverageChecked { sub_query: String, cycle: u32, coverage: f32, aspects: usize, answered_aspects: usize, suggested_retrievals: Vec<String> },
    #[serde(rename = "research:retrieval_cycle_completed")]
    RetrievalCycleCompleted { sub_query: String, cycle: u32, passages_found: usize, new_passages: usize, coverage: Option<f32>, complete: bool },
    #[serde(rename = "research:sub_query_answered")]
    SubQueryAnswered { id: String, answer: String, citations: Vec<u32>, answered: bool },
    /// A draft of the answer (the first, or a refinement's) with its scores.
    #[serde(rename = "research:draft")]
    Draft { version: usize, answer: String, claims: usize, faithfulness: Option<f32>, answers_question: bool, refused_citations: Vec<u32> },
    #[serde(rename = "research:gap_detected")]
    GapDetected { iteration: u32, gaps: Vec<Gap> },
    #[serde(rename = "research:self_critique_completed")]
    SelfCritiqueCompleted { iteration: u32, overall_assessment: String, confidence: f32, weaknesses: Vec<String>, suggested_improvements: Vec<String> },
    #[serde(rename = "research:reflection_iteration")]
    ReflectionIteration { iteration: u32, quality: f32, best_quality: f32, gaps: usize },
    #[serde(rename = "research:refinement_pass")]
    RefinementPass { iteration: u32, quality_before: f32, quality_after: f32, kept: bool },
    #[serde(rename = "research:reflection_completed")]
    ReflectionCompleted { iterations: u32, quality: f32, reason: StopReason },
}

impl EventKind for ResearchEvent {}

fn percent(x: f32) -> String {
    format!("{:.0}%", x * 100.0)
}

impl ResearchEvent {
    /// The live line: the sub-question tree as it resolves, each cycle's
    /// coverage, each reflection pass's score.
    pub fn line(&self) -> String {
        match self {
            Self::DecompositionStarted { .. } => "  breaking the question down…".into(),
            Self::SubQueryIdentified { id, text, dependencies, phase, .. } => {
                let after = if dependencies.is_empty() { String::new() } else { format!(" (after {})", dependencies.join(", ")) };
                format!("  {}{id}: {text}{after}", "  ".repeat(*phase))
            }
            Self::DecompositionCompleted { complex: false, error, .. } => match error {
                Some(e) => format!("  asked as one question ({e})"),
                None => "  a simple question: one search".into(),
            },
            Self::DecompositionCompleted { sub_queries, execution_plan, .. } => format!("  {sub_queries} sub-questions in {} phase(s)", execution_plan.len()),
            Self::RetrievalCycleStarted { sub_query, cycle, queries } => {
                format!("  {sub_query} {}: {}", if *cycle == 0 { "searching".to_string() } else { format!("gap search {cycle}") }, queries.join(" | "))
            }
            Self::CoverageChecked { sub_query, coverage, answered_aspects, aspects, .. } => {
                format!("  {sub_query} coverage {} ({answered_aspects}/{aspects} aspects)", percent(*coverage))
            }
            Self::RetrievalCycleCompleted { .. } => String::new(),
            Self::SubQueryAnswered { id, answer, answered: true, .. } => format!("  ✓ {id}: {answer}"),
            Self::SubQueryAnswered { id, .. } => format!("  ✗ {id}: not found in the documents"),
            Self::Draft { version, claims, faithfulness, answers_question, refused_citations, .. } => {
                let refused =
                    if refused_citations.is_empty() { String::new() } else { format!(", citations outside the evidence removed: {refused_citations:?}") };
                let off = if *answers_question { "" } else { ", does not give what the question asks for" };
                format!("  draft {}: {claims} claim(s), faithfulness {}{off}{refused}", version + 1, faithfulness.map_or("–".into(), percent))
            }
            Self::GapDetected { gaps, .. } if gaps.is_empty() => "  no gaps found".into(),
            Self::GapDetected { gaps, .. } => {
                format!("  {} gap(s): {}", gaps.len(), gaps.iter().map(|g| g.detail.as_str()).take(3).collect::<Vec<_>>().join("; "))
            }
            Self::SelfCritiqueCompleted { overall_assessment, confidence, .. } => format!("  critique ({}): {overall_assessment}", percent(*confidence)),
            Self::ReflectionIteration { iteration, quality, best_quality, .. } => {
                format!("  reflection {iteration}: quality {} (best {})", percent(*quality), percent(*best_quality))
            }
            Self::RefinementPass { quality_before, quality_after, kept, .. } => {
                format!(
                    "  refinement: {} → {}{}",
                    percent(*quality_before),
                    percent(*quality_after),
                    if *kept { "" } else { " (worse: the earlier answer is kept)" }
                )
            }
            Self::ReflectionCompleted { iterations, quality, reason } => {
                format!("  reflection done after {iterations} pass(es), quality {} ({reason:?})", percent(*quality))
            }
        }
    }
}

//! How much of a sub-question the evidence covers: the aspects it has,
//! which are answered and how surely, and what to search for next.

use agentloop_core::JsonSchema;
use serde::{Deserialize, Serialize};

/// One thing a full answer must say. Every list and text is bounded in the
/// schema: a small model held to an unbounded array can repeat an item
/// until its token limit cuts the JSON off.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Aspect {
    #[schemars(length(max = 200))]
    pub description: String,
    #[serde(default)]
    #[schemars(length(max = 5), inner(length(max = 60)))]
    pub keywords: Vec<String>,
    pub answered: bool,
    /// 0–1: how surely the passages answer it.
    pub confidence: f32,
    /// The passage numbers that answer it.
    #[serde(default)]
    #[schemars(length(max = 8))]
    pub supporting_sources: Vec<u32>,
}

/// What the coverage check writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoverageAnswer {
    #[schemars(length(max = 4))]
    pub aspects: Vec<Aspect>,
    /// Searches that would find what is missing.
    #[serde(default)]
    #[schemars(length(max = 3), inner(length(max = 100)))]
    pub suggested_retrievals: Vec<String>,
}

/// The mean over aspects of the confidence of those answered (an
/// unanswered aspect counts 0; no aspects, 0).
pub fn coverage(aspects: &[Aspect]) -> f32 {
    if aspects.is_empty() {
        return 0.0;
    }
    aspects.iter().map(|a| if a.answered { a.confidence.clamp(0.0, 1.0) } else { 0.0 }).sum::<f32>() / aspects.len() as f32
}

/// One check of one sub-question, kept in working memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoverageReport {
    pub sub_query: String,
    /// 0 for the first retrieval, 1… for gap-filling ones.
    pub cycle: u32,
    pub coverage: f32,
    pub complete: bool,
    pub aspects: Vec<Aspect>,
    pub suggested_retrievals: Vec<String>,
}

/// The suggestions not yet searched (compared without case or spacing),
/// at most `limit`: a search already run is never run again.
pub fn new_searches(suggested: &[String], done: &[String], limit: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in suggested.iter().filter(|s| !s.trim().is_empty()) {
        if !searched(s, done) && !searched(s, &out) {
            out.push(s.trim().to_string());
        }
    }
    out.truncate(limit);
    out
}

/// `query` is among `done`, compared without case or spacing.
pub fn searched(query: &str, done: &[String]) -> bool {
    let key = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    done.iter().any(|d| key(d) == key(query))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aspect(answered: bool, confidence: f32) -> Aspect {
        Aspect { description: "x".into(), keywords: vec![], answered, confidence, supporting_sources: vec![] }
    }

    #[test]
    fn coverage_is_the_mean_confidence_of_answered_aspects_over_all_aspects() {
        assert_eq!(coverage(&[aspect(true, 0.9), aspect(true, 0.7), aspect(false, 0.8)]), (0.9 + 0.7) / 3.0);
        assert_eq!(coverage(&[aspect(true, 1.5)]), 1.0, "confidence is clamped");
        assert_eq!(coverage(&[]), 0.0);
    }

    #[test]
    fn a_search_already_run_is_not_suggested_again() {
        let done = vec!["Ada Lovelace father".to_string()];
        let next = new_searches(&["ada  lovelace FATHER".into(), "Lord Byron".into(), "Lord Byron".into(), " ".into(), "Annabella".into()], &done, 1);
        assert_eq!(next, ["Lord Byron"]);
    }
}

//! The reflexion loop's judgements: the gaps in a draft, the self-critique
//! the model writes, a draft's quality, and when to stop refining.

use agentloop_core::JsonSchema;
use serde::{Deserialize, Serialize};

use super::evidence::{Claim, Scores};

/// A claim the judge is less sure of than this is weak.
pub const WEAK_CLAIM: f32 = 0.5;

/// What the model writes about a draft.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelfCritique {
    #[schemars(length(max = 400))]
    pub overall_assessment: String,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(max = 200)))]
    pub strengths: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(max = 200)))]
    pub weaknesses: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(max = 200)))]
    pub suggested_improvements: Vec<String>,
    /// Errors that make the answer wrong (a contradiction, a wrong name).
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(max = 200)))]
    pub critical_issues: Vec<String>,
    /// 0–1: how sure the critic is that the answer is right and complete.
    pub confidence: f32,
}

/// What a question asks for, or what an answer names: kinds coarse enough
/// that a small model, held to them by constrained decoding, sorts them
/// reliably — asked for free text, it echoes the answer's own words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    Person,
    Place,
    Organization,
    Date,
    Number,
    #[default]
    Other,
}

impl AnswerKind {
    fn phrase(self) -> &'static str {
        match self {
            Self::Person => "a person",
            Self::Place => "a place",
            Self::Organization => "an organization",
            Self::Date => "a date",
            Self::Number => "a number",
            Self::Other => "something else",
        }
    }
}

/// The kind a judge sorted a question or an answer into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KindOf {
    pub kind: AnswerKind,
}

/// Whether an answer gives what its question asks for: faithfulness only
/// says its claims rest on their passages, and a well-cited answer can
/// still name an organization when the question asks for a place.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswerFit {
    /// The kind of thing the question asks for.
    pub asks_for: AnswerKind,
    /// The kind of thing the answer names as its answer.
    pub gives: AnswerKind,
}

impl AnswerFit {
    /// The kinds agree; `Other` on either side agrees with anything, since
    /// the kinds do not sort it.
    pub fn answers_it(&self) -> bool {
        self.asks_for == self.gives || self.asks_for == AnswerKind::Other || self.gives == AnswerKind::Other
    }

    /// The gap an answer that misses its question leaves, if it does.
    pub fn gap(&self) -> Option<Gap> {
        (!self.answers_it()).then(|| Gap {
            kind: GapKind::QueryCoverage,
            detail: format!("the question asks for {}; the answer gives {}", self.asks_for.phrase(), self.gives.phrase()),
        })
    }
}

/// Whether a draft answers the question asked rather than a neighbour of
/// it: the kind of thing it gives (`fit`, when sorted) and the question's
/// words its sources never mention (`Evidence::unmentioned`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Aim<'a> {
    pub fit: Option<&'a AnswerFit>,
    pub unmentioned: &'a [String],
}

impl Aim<'_> {
    /// The answer gives another kind of thing, or its sources leave part
    /// of the question out.
    pub fn beside(&self) -> bool {
        self.fit.is_some_and(|f| !f.answers_it()) || !self.unmentioned.is_empty()
    }

    /// The gaps such an answer leaves.
    fn gaps(&self) -> impl Iterator<Item = Gap> {
        let left_out = (!self.unmentioned.is_empty()).then(|| Gap { kind: GapKind::QueryCoverage, detail: never_mentioned(self.unmentioned) });
        self.fit.and_then(AnswerFit::gap).into_iter().chain(left_out)
    }
}

/// The sentence that names the question's words an answer's sources leave out.
pub fn never_mentioned(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("“{w}”")).collect();
    format!("the cited passages never mention {} from the question", quoted.join(", "))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GapKind {
    WeakClaim,
    UnsupportedClaim,
    MissingInformation,
    Contradiction,
    QueryCoverage,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Gap {
    pub kind: GapKind,
    pub detail: String,
}

/// The gaps of a draft: weak and unsupported claims, sub-questions left
/// unanswered, the critic's critical issues, an answer beside the question
/// (`Aim`), and question coverage below the threshold.
pub fn gaps(claims: &[Claim], unanswered: &[String], critical: &[String], aim: Aim, coverage: f32, threshold: f32) -> Vec<Gap> {
    let mut out = Vec::new();
    for c in claims {
        let gap = match (c.supported, c.confidence) {
            (Some(false), _) | (None, _) => Some(GapKind::UnsupportedClaim),
            _ if c.citations.is_empty() => Some(GapKind::UnsupportedClaim),
            (Some(true), Some(conf)) if conf < WEAK_CLAIM => Some(GapKind::WeakClaim),
            _ => None,
        };
        if let Some(kind) = gap {
            out.push(Gap { kind, detail: c.text.clone() });
        }
    }
    out.extend(unanswered.iter().map(|q| Gap { kind: GapKind::MissingInformation, detail: q.clone() }));
    out.extend(critical.iter().map(|c| Gap { kind: GapKind::Contradiction, detail: c.clone() }));
    out.extend(aim.gaps());
    if coverage < threshold {
        out.push(Gap { kind: GapKind::QueryCoverage, detail: format!("the evidence covers {:.0}% of the question", coverage * 100.0) });
    }
    out
}

/// A draft's quality, 0–1: half faithfulness (its claims carried by its
/// citations), a quarter the share of sub-questions answered, a quarter
/// the critic's confidence — halved when the answer is beside the question
/// (`Aim`), so that a well-cited answer to another question never reaches
/// the target. An answer with no claims has no faithfulness and so at most
/// half.
pub fn quality(scores: &Scores, answered_share: f32, critique: &SelfCritique, aim: Aim) -> f32 {
    let q = 0.5 * scores.faithfulness.unwrap_or(0.0) + 0.25 * answered_share.clamp(0.0, 1.0) + 0.25 * critique.confidence.clamp(0.0, 1.0);
    if aim.beside() {
        q / 2.0
    } else {
        q
    }
}

/// Why the loop stopped refining.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    QualityReached,
    MaxIterations,
    NoImprovement,
    GapsUnchanged,
}

/// Limits of the loop.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_iterations: u32,
    pub quality_target: f32,
    pub min_improvement: f32,
}

/// Whether to stop after reflection pass `iteration` (1-based) with these
/// qualities so far (one per draft, the first draft first) and the gaps of
/// the last two passes.
pub fn should_stop(iteration: u32, qualities: &[f32], gaps: &[Vec<Gap>], limits: Limits) -> Option<StopReason> {
    let last = *qualities.last()?;
    if last >= limits.quality_target {
        return Some(StopReason::QualityReached);
    }
    if qualities.len() >= 2 {
        let before = qualities[..qualities.len() - 1].iter().copied().fold(f32::MIN, f32::max);
        if last - before < limits.min_improvement {
            return Some(StopReason::NoImprovement);
        }
    }
    if gaps.len() >= 2 && gaps[gaps.len() - 1] == gaps[gaps.len() - 2] {
        return Some(StopReason::GapsUnchanged);
    }
    if iteration >= limits.max_iterations {
        return Some(StopReason::MaxIterations);
    }
    None
}

/// The index of the best draft: the highest quality, the earlier on a tie
/// (a refinement must be better to replace what came before).
pub fn best(qualities: &[f32]) -> usize {
    let mut best = 0;
    for (i, q) in qualities.iter().enumerate() {
        if *q > qualities[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits { max_iterations: 3, quality_target: 0.9, min_improvement: 0.05 };

    fn gap(detail: &str) -> Gap {
        Gap { kind: GapKind::WeakClaim, detail: detail.into() }
    }

    #[test]
    fn the_loop_stops_at_the_quality_target() {
        assert_eq!(should_stop(1, &[0.92], &[vec![]], LIMITS), Some(StopReason::QualityReached));
    }

    #[test]
    fn the_loop_stops_when_a_refinement_improves_too_little() {
        assert_eq!(should_stop(2, &[0.6, 0.62], &[vec![gap("a")], vec![gap("b")]], LIMITS), Some(StopReason::NoImprovement));
        assert_eq!(should_stop(2, &[0.6, 0.7], &[vec![gap("a")], vec![gap("b")]], LIMITS), None);
        assert_eq!(
            should_stop(3, &[0.7, 0.5, 0.72], &[vec![gap("a")], vec![gap("b")], vec![gap("c")]], LIMITS),
            Some(StopReason::NoImprovement),
            "measured against the best so far"
        );
    }

    #[test]
    fn the_loop_stops_at_its_iteration_limit_and_when_the_gaps_stop_changing() {
        assert_eq!(should_stop(3, &[0.3, 0.5, 0.7], &[vec![gap("a")], vec![gap("b")], vec![gap("c")]], LIMITS), Some(StopReason::MaxIterations));
        assert_eq!(should_stop(2, &[0.3, 0.5], &[vec![gap("a")], vec![gap("a")]], LIMITS), Some(StopReason::GapsUnchanged));
    }

    #[test]
    fn a_worse_refinement_does_not_replace_the_better_draft() {
        assert_eq!(best(&[0.6, 0.5]), 0);
        assert_eq!(best(&[0.6, 0.7, 0.65]), 1);
        assert_eq!(best(&[0.6, 0.6]), 0);
    }

    #[test]
    fn gaps_name_weak_and_unsupported_claims_missing_answers_answers_beside_the_question_and_low_coverage() {
        let claim = |supported, confidence, citations: Vec<u32>| Claim {
            text: "c".into(),
            citations,
            supported: Some(supported),
            confidence: Some(confidence),
            supported_by: vec![],
        };
        let g = gaps(
            &[claim(true, 0.9, vec![1]), claim(true, 0.3, vec![1]), claim(false, 0.9, vec![2]), claim(true, 0.9, vec![])],
            &["q2".into()],
            &["says 1815 and 1816".into()],
            Aim { fit: Some(&AnswerFit { asks_for: AnswerKind::Date, gives: AnswerKind::Person }), unmentioned: &["born".into()] },
            0.5,
            0.85,
        );
        let kinds: Vec<GapKind> = g.iter().map(|g| g.kind).collect();
        assert_eq!(
            kinds,
            [
                GapKind::WeakClaim,
                GapKind::UnsupportedClaim,
                GapKind::UnsupportedClaim,
                GapKind::MissingInformation,
                GapKind::Contradiction,
                GapKind::QueryCoverage,
                GapKind::QueryCoverage,
                GapKind::QueryCoverage
            ]
        );
        assert_eq!(g[5].detail, "the question asks for a date; the answer gives a person");
        assert_eq!(g[6].detail, "the cited passages never mention “born” from the question");
    }

    #[test]
    fn an_answer_to_another_question_or_from_sources_beside_it_is_at_most_half_as_good() {
        let scores = Scores { faithfulness: Some(1.0), ..Scores::default() };
        let sure = SelfCritique { confidence: 1.0, ..SelfCritique::default() };
        let fitting = |asks_for, gives| quality(&scores, 1.0, &sure, Aim { fit: Some(&AnswerFit { asks_for, gives }), unmentioned: &[] });
        assert_eq!(fitting(AnswerKind::Place, AnswerKind::Place), 1.0);
        assert_eq!(fitting(AnswerKind::Other, AnswerKind::Date), 1.0, "a kind not sorted agrees with any");
        assert_eq!(quality(&scores, 1.0, &sure, Aim::default()), 1.0, "not checked: nothing taken off");
        assert_eq!(fitting(AnswerKind::Place, AnswerKind::Organization), 0.5);
        let left_out = ["sailing".to_string()];
        assert_eq!(quality(&scores, 1.0, &sure, Aim { fit: None, unmentioned: &left_out }), 0.5, "sources that leave part of the question out");
    }
}

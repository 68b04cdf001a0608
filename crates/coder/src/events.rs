//! The coder's events and how the live view shows them.

use agentloop_core::{EventKind, JsonSchema};
use serde::{Deserialize, Serialize};

use super::state::{Recommendation, RootCause};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "name", content = "payload", rename_all_fields = "camelCase")]
pub enum CoderEvent {
    /// The phase the coder enters: plan, code, test, reflect, fix, review.
    #[serde(rename = "coder:phase")]
    Phase { phase: String },
    /// REFLECT's verdict on a failed attempt.
    #[serde(rename = "reflection_iteration")]
    Reflection { diagnosis: String, root_cause: RootCause, recommendation: Recommendation, confidence: f64 },
    /// A replan was turned into a fix because fewer tests fail than before.
    #[serde(rename = "coder:keep_approach")]
    KeepApproach { failing_before: u32, failing_now: u32 },
    /// An answer that could not be applied was refused within its step.
    #[serde(rename = "coder:refused")]
    Refused { reason: String, asking_again: bool },
    /// A change that passed fewer tests than the best state before it was
    /// undone (passing counts: `None` when the tests did not run).
    #[serde(rename = "coder:undone")]
    Undone { attempt: usize, back_to: String, passing_now: Option<u32>, passing_best: Option<u32> },
    /// A candidate change was tried against the tests in a scratch copy
    /// (`passing` of `ran` tests; `None` when the output does not say).
    /// `failing_only`: it was run on the failing tests alone, passed none,
    /// and so never ran the whole suite.
    #[serde(rename = "coder:candidate")]
    Candidate { number: usize, of: usize, passing: Option<u32>, ran: Option<u32>, passed: bool, failing_only: bool },
    /// A small edit on a line the failing tests run was tried against the
    /// tests in a scratch copy (`edit`: where, and the line before and
    /// after). `failing_only`: it was run on the failing tests alone, did
    /// not pass them, and so never ran the whole suite. `by_model`: the
    /// edit is the model's rewrite of the line (`line_rewrites.rs`), not a
    /// one-token slip undone; `inserted`: the model's missing statement put
    /// beside the line (`missing_statements.rs`).
    #[serde(rename = "coder:small_edit")]
    SmallEdit {
        number: usize,
        of: usize,
        edit: String,
        passing: Option<u32>,
        ran: Option<u32>,
        passed: bool,
        failing_only: bool,
        #[serde(default)]
        by_model: bool,
        #[serde(default)]
        inserted: bool,
    },
    /// A reflection repeated an earlier diagnosis word for word: it was set
    /// aside for the failing tests' names and what they expected.
    #[serde(rename = "coder:reflection_repeated")]
    ReflectionRepeated { diagnosis: String },
    /// The candidate written to the workspace, the best of those tried.
    #[serde(rename = "coder:candidate_kept")]
    CandidateKept { number: usize, tried: usize },
    /// An MCP tool the model called to look something up before planning.
    #[serde(rename = "coder:tool")]
    Tool { tool: String, arguments: serde_json::Value, result: String },
    /// Something the user should know that changes nothing by itself (an
    /// MCP server whose tools changed since the session started).
    #[serde(rename = "coder:notice")]
    Notice { text: String },
}

impl EventKind for CoderEvent {}

impl CoderEvent {
    pub fn line(&self) -> String {
        match self {
            Self::Phase { phase } => format!("  ▸ {phase}"),
            Self::Tool { tool, arguments, result } => format!("  ⚙ {tool} {arguments}\n    {}", result.lines().take(6).collect::<Vec<_>>().join("\n    ")),
            Self::Notice { text } => format!("  note: {text}"),
            Self::Reflection { diagnosis, recommendation, confidence, .. } => {
                format!(
                    "    reflection: {diagnosis} → {} (confidence {confidence:.2})",
                    serde_json::to_value(recommendation).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
                )
            }
            Self::KeepApproach { failing_before, failing_now } => {
                format!("    failing tests {failing_before} → {failing_now}: keeping the approach (a fix, not a replan)")
            }
            Self::Undone { attempt, back_to, passing_now, passing_best } => {
                let n = |v: &Option<u32>| v.map_or_else(|| "none (the tests did not run)".to_string(), |v| v.to_string());
                format!("    ↶ attempt {attempt} undone: {} test(s) passing against {} for {back_to}", n(passing_now), n(passing_best))
            }
            Self::Candidate { number, of, passing, ran, passed, failing_only } => {
                format!("    candidate {number}/{of} · {}{}", tests_line(*passing, *ran, *failing_only), if *passed { " · passes" } else { "" })
            }
            Self::SmallEdit { number, of, edit, passing, ran, passed, failing_only, by_model, inserted } => {
                let what = match (by_model, inserted) {
                    (_, true) => "missing statement",
                    (true, false) => "line rewrite",
                    (false, false) => "small edit",
                };
                format!("    {what} {number}/{of} · {edit} · {}{}", tests_line(*passing, *ran, *failing_only), if *passed { " · passes" } else { "" })
            }
            Self::CandidateKept { number, tried } => format!("    ✓ kept candidate {number} of {tried}"),
            Self::ReflectionRepeated { diagnosis } => format!("    reflection repeats an earlier one ({diagnosis}): working from the failing tests instead"),
            Self::Refused { reason, asking_again } => {
                format!("    ✗ answer refused: {reason}{}", if *asking_again { "; asking again" } else { "" })
            }
        }
    }
}

/// How many tests passed of those run (the failing tests alone, or the
/// suite), for a line of the live view.
fn tests_line(passing: Option<u32>, ran: Option<u32>, failing_only: bool) -> String {
    let which = if failing_only { "failing tests" } else { "tests" };
    match (passing, ran) {
        (Some(p), Some(r)) => format!("{p} of {r} {which}"),
        _ => format!("the {which} did not say"),
    }
}

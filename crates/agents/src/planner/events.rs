//! The planner's events and how the live view shows them: the restatement,
//! each plan with its time and its diff to the previous one, rejections with
//! their hints, pre-checks, and each step with its time.

use agentloop_core::{EventKind, JsonSchema};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "name", content = "payload", rename_all_fields = "camelCase")]
pub enum PlannerEvent {
    #[serde(rename = "planner:phase")]
    Phase { phase: String },
    /// The goal as WHO / WHAT / WHEN / WHERE / WHY lines.
    #[serde(rename = "planner:restatement")]
    Restatement { restatement: String },
    /// A proposed plan: valid or not, how long the model took, the diff to
    /// the previous one, and what was refused or mended.
    #[serde(rename = "planner:plan")]
    Plan(PlanProposed),
    #[serde(rename = "planner:retry_hints")]
    RetryHints { hints: Vec<String> },
    #[serde(rename = "planner:precheck")]
    Precheck { step: u32, summary: String },
    /// A step ran: ok or not, how long it took, what it produced.
    #[serde(rename = "planner:step")]
    Step { step: u32, action: String, ok: bool, ms: u64, output: String },
    #[serde(rename = "planner:cancelled")]
    Cancelled { steps_run: usize },
    /// VERIFY's judgement once a plan ran: each explicit check, what is
    /// still missing, and one line for people.
    #[serde(rename = "planner:verified")]
    Verified { met: bool, summary: String, checks: Vec<String>, missing: Vec<String> },
    /// What the next plan must do, after a verification that failed.
    #[serde(rename = "planner:reflection")]
    Reflection { missing: Vec<String> },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanProposed {
    pub iteration: u32,
    pub valid: bool,
    pub ms: u64,
    pub repaired: bool,
    pub steps: Vec<String>,
    pub diff: Vec<String>,
    pub rejections: Vec<String>,
    pub held: bool,
    pub mends: Vec<String>,
    pub mended_from: Vec<String>,
}

impl EventKind for PlannerEvent {}

impl PlannerEvent {
    pub fn line(&self) -> String {
        match self {
            Self::Phase { phase } => format!("  ▸ {phase}"),
            Self::Restatement { restatement } => format!("  goal restated:\n{}", indent(restatement, 4)),
            Self::Plan(p) => plan_lines(p),
            Self::RetryHints { hints } => format!("    hints: {}", hints.join(" | ")),
            Self::Precheck { step, summary } => format!("    pre-check step {step}: {summary}"),
            Self::Step { step, action, ok, ms, output } => format!("  {} step {step} ({ms} ms): {action}\n{}", if *ok { "✓" } else { "✗" }, indent(output, 4)),
            Self::Cancelled { steps_run } => format!("  cancelled: {steps_run} step(s) had run"),
            Self::Verified { met, summary, checks, .. } => {
                let mut out = format!("  {} {summary}", if *met { "✓" } else { "✗" });
                for c in checks {
                    out.push_str(&format!("\n    {c}"));
                }
                out
            }
            Self::Reflection { missing } => format!("  reflect: the next plan must still do: {}", missing.join(" | ")),
        }
    }
}

fn plan_lines(p: &PlanProposed) -> String {
    let verdict = if p.valid { "valid" } else { "REFUSED" };
    let how = if !p.mends.is_empty() {
        ", mended"
    } else if p.repaired {
        ", repaired"
    } else {
        ""
    };
    let held = if p.held { ", held to the goal's paths" } else { "" };
    let mut out = format!("  plan {} ({} ms, {verdict}{how}{held})", p.iteration, p.ms);
    for (i, step) in p.steps.iter().enumerate() {
        out.push_str(&format!("\n    {}. {step}", i + 1));
    }
    if !p.diff.is_empty() {
        out.push_str(&format!("\n    changes since the last plan:\n{}", indent(&p.diff.join("\n"), 6)));
    }
    for r in &p.rejections {
        out.push_str(&format!("\n    ✗ {r}"));
    }
    for r in &p.mended_from {
        out.push_str(&format!("\n    ✗ as written: {r}"));
    }
    for m in &p.mends {
        out.push_str(&format!("\n    ✎ mended: {m}"));
    }
    out
}

pub(crate) fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| format!("{pad}{l}")).collect::<Vec<_>>().join("\n")
}

/// The whole text of a planner question; `None` for other questions.
pub fn question(request: &serde_json::Value) -> Option<String> {
    let text = |key: &str| request[key].as_str().unwrap_or_default().to_string();
    match request["kind"].as_str()? {
        "planner_plan" => {
            let mut out = String::new();
            if let Some(r) = request["restatement"].as_str() {
                out.push_str(&format!("{r}\n"));
            }
            out.push_str(&format!("thinking: {}\nconfidence: {}\n", text("thinkingSummary"), request["confidence"]));
            for m in request["mends"].as_array().into_iter().flatten().filter_map(serde_json::Value::as_str) {
                out.push_str(&format!("mended: {m}\n"));
            }
            for s in request["steps"].as_array().into_iter().flatten() {
                out.push_str(&format!("  {}. {}   (expects: {})\n", s["step"], s["action"].as_str().unwrap_or(""), s["expects"].as_str().unwrap_or("")));
            }
            out.push_str("[all] run every step, [step] ask before each, [cancel] run nothing — or say what to change");
            Some(out)
        }
        "planner_step" => Some(format!(
            "step {}: {}\n  expects: {}\n  pre-check: {}\n[yes] run it, [no] skip and replan, [all] run the rest, [cancel] stop",
            request["step"],
            text("action"),
            text("expects"),
            text("precheck")
        )),
        _ => None,
    }
}

//! The planner's events and how the live view shows them: the restatement,
//! each plan with its time and its diff to the previous one, rejections with
//! their hints, each step of a trial with its time, what the trial changed,
//! and what applying it did.

use agentloop_core::{EventKind, JsonSchema, Step};
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
    /// A step ran in the trial's copy: ok or not, how long it took, what it produced.
    #[serde(rename = "planner:step")]
    Step { step: u32, action: String, ok: bool, ms: u64, output: String },
    /// A plan ran whole in a scratch copy of the root: whether every step
    /// ran, what it changed there, and whether it ran without the network
    /// the root's commands would have.
    #[serde(rename = "planner:tried")]
    Tried { ok: bool, changes: Vec<String>, offline: bool },
    /// The approved outcome was applied to the root: whether the root now
    /// holds what the trial showed, and what differs when it does not.
    #[serde(rename = "planner:applied")]
    Applied { ok: bool, changes: Vec<String>, problems: Vec<String> },
    #[serde(rename = "planner:cancelled")]
    Cancelled { steps_run: usize },
    /// VERIFY's judgement once a plan ran: each explicit check, what is
    /// still missing, and one line for people.
    #[serde(rename = "planner:verified")]
    Verified { met: bool, summary: String, checks: Vec<String>, missing: Vec<String> },
    /// What the next plan must do, after a verification that failed.
    #[serde(rename = "planner:reflection")]
    Reflection { missing: Vec<String> },
    /// A CALL_TOOL of the approved plan, made after its changes were applied.
    #[serde(rename = "planner:tool")]
    Tool { action: String, ok: bool, result: String },
    /// Something the user should know that changes nothing by itself (an
    /// MCP server whose tools changed since the session started).
    #[serde(rename = "planner:notice")]
    Notice { text: String },
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
    pub mends: Vec<String>,
    pub mended_from: Vec<String>,
}

impl EventKind for PlannerEvent {}

impl PlannerEvent {
    pub fn line(&self) -> String {
        match self {
            Self::Phase { phase } => format!("  ▸ {phase}"),
            Self::Tool { action, ok, result } => format!("  {} {action}\n{}", if *ok { "✓" } else { "✗" }, indent(result, 4)),
            Self::Notice { text } => format!("  note: {text}"),
            Self::Restatement { restatement } => format!("  goal restated:\n{}", indent(restatement, 4)),
            Self::Plan(p) => plan_lines(p),
            Self::RetryHints { hints } => format!("    hints: {}", hints.join(" | ")),
            Self::Step { step, action, ok, ms, output } => format!("  {} step {step} ({ms} ms): {action}\n{}", if *ok { "✓" } else { "✗" }, indent(output, 4)),
            Self::Tried { ok, changes, offline } => {
                let head = if *ok { "ran in a copy of the root" } else { "failed in a copy of the root (the root is untouched)" };
                let net = if *offline { ", without network" } else { "" };
                let what = if changes.is_empty() { "no file changed".to_string() } else { changes.join("  ") };
                format!("  {head}{net}: {what}")
            }
            Self::Applied { ok: true, changes, .. } => format!("  ✓ applied to the root and checked: {}", changes.join("  ")),
            Self::Applied { ok: false, problems, .. } => format!("  ✗ applying to the root: {}", problems.join("; ")),
            Self::Cancelled { steps_run } => format!("  cancelled: the root is untouched ({steps_run} step(s) had run in copies)"),
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
    let mut out = format!("  plan {} ({} ms, {verdict}{how})", p.iteration, p.ms);
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
            out.push_str(&outcome_text(&request["outcome"]));
            out.push_str("[yes] apply this outcome to the root, [cancel] leave the root as it is — or say what to change");
            Some(out)
        }
        _ => None,
    }
}

/// The observed outcome of a trial, as the approval shows it.
fn outcome_text(outcome: &serde_json::Value) -> String {
    let strings = |key: &str| outcome[key].as_array().into_iter().flatten().filter_map(serde_json::Value::as_str).map(String::from).collect::<Vec<_>>();
    let mut out = String::from("observed in a copy of the root:\n");
    for c in outcome["changes"].as_array().into_iter().flatten() {
        out.push_str(&format!("  {}\n", c["line"].as_str().unwrap_or_default()));
        if let Some(before) = c["before"].as_str() {
            out.push_str(&format!("{}\n", indent(&format!("was:\n{}", indent(before, 2)), 4)));
        }
        if let Some(after) = c["after"].as_str() {
            out.push_str(&format!("{}\n", indent(&format!("now:\n{}", indent(after, 2)), 4)));
        }
    }
    for o in strings("outputs") {
        out.push_str(&format!("  printed: {o}\n"));
    }
    for v in strings("verified") {
        out.push_str(&format!("  {v}\n"));
    }
    for n in strings("notes") {
        out.push_str(&format!("  {n}\n"));
    }
    out
}

/// Says which phase the planner is in, for the live view.
pub fn phase(step: &mut Step, name: &str) {
    step.emit(PlannerEvent::Phase { phase: name.to_string() });
}

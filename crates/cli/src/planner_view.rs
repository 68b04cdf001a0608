//! How the planner's events and questions look in the terminal: the
//! restatement, each plan with its time and its diff to the previous one,
//! rejections with their hints, pre-checks, and each step with its time.

use agentloop_agents::planner::events;
use serde_json::Value;

/// A live line for a planner event; `None` for events of other agents.
pub fn event_line(name: &str, p: &Value) -> Option<String> {
    let strings = |v: &Value| -> Vec<String> { v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect()).unwrap_or_default() };
    let text = match name {
        events::PHASE => format!("  ▸ {}", p["phase"].as_str().unwrap_or("?")),
        events::RESTATEMENT => format!("  goal restated:\n{}", indent(p["restatement"].as_str().unwrap_or(""), 4)),
        events::PLAN => {
            let verdict = if p["valid"] == true { "valid" } else { "REFUSED" };
            let mended = strings(&p["mends"]);
            let how = if !mended.is_empty() { ", mended" } else if p["repaired"] == true { ", repaired" } else { "" };
            let held = if p["held"] == true { ", held to the goal's paths" } else { "" };
            let mut out = format!("  plan {} ({} ms, {verdict}{how}{held})", p["iteration"], p["ms"]);
            for (i, step) in strings(&p["steps"]).iter().enumerate() {
                out.push_str(&format!("\n    {}. {step}", i + 1));
            }
            let diff = strings(&p["diff"]);
            if !diff.is_empty() {
                out.push_str(&format!("\n    changes since the last plan:\n{}", indent(&diff.join("\n"), 6)));
            }
            for r in strings(&p["rejections"]) {
                out.push_str(&format!("\n    ✗ {r}"));
            }
            for r in strings(&p["mendedFrom"]) {
                out.push_str(&format!("\n    ✗ as written: {r}"));
            }
            for m in mended {
                out.push_str(&format!("\n    ✎ mended: {m}"));
            }
            out
        }
        events::RETRY_HINTS => format!("    hints: {}", strings(&p["hints"]).join(" | ")),
        events::PRECHECK => format!("    pre-check step {}: {}", p["step"], p["summary"].as_str().unwrap_or("")),
        events::STEP => format!(
            "  {} step {} ({} ms): {}\n{}",
            if p["ok"] == true { "✓" } else { "✗" },
            p["step"],
            p["ms"],
            p["action"].as_str().unwrap_or("?"),
            indent(p["output"].as_str().unwrap_or(""), 4)
        ),
        events::CANCELLED => format!("  cancelled: {} step(s) had run", p["stepsRun"]),
        _ => return None,
    };
    Some(text)
}

/// The whole question for a planner prompt; `None` for other questions.
pub fn question(request: &Value) -> Option<String> {
    match request["kind"].as_str()? {
        "planner_plan" => {
            let mut out = String::new();
            if let Some(r) = request["restatement"].as_str() {
                out.push_str(&format!("{r}\n"));
            }
            out.push_str(&format!("thinking: {}\nconfidence: {}\n", request["thinkingSummary"].as_str().unwrap_or(""), request["confidence"]));
            for m in request["mends"].as_array().into_iter().flatten().filter_map(Value::as_str) {
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
            request["action"].as_str().unwrap_or(""),
            request["expects"].as_str().unwrap_or(""),
            request["precheck"].as_str().unwrap_or("")
        )),
        _ => None,
    }
}

fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| format!("{pad}{l}")).collect::<Vec<_>>().join("\n")
}

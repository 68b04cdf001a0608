//! The planner's output contract: JSON inside `<json>...</json>` with only
//! the keys `goal`, `thinking_summary`, `reflection`, `ready`, `plan`, each
//! plan item only `step`, `action`, `expects`. Reading an answer takes the
//! text between the tags (or, lenient, a bare object), mends the slips a
//! small model makes (a fence, a trailing comma, a missing closing brace)
//! and parses strictly: an unknown key is a rejection, not ignored.

pub mod propose;

use agentloop_core::JsonSchema;
use agentloop_tools::mcp_client::Listing;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::action::{self, Action};
use super::rejection::{Rejection, Rule};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The goal as the planner understood it.
    #[schemars(length(max = 300))]
    pub goal: String,
    #[schemars(length(max = 400))]
    pub thinking_summary: String,
    /// What the planner learned from earlier rejections or failures.
    #[schemars(length(max = 400))]
    pub reflection: String,
    pub ready: bool,
    #[schemars(length(min = 1, max = 12))]
    pub plan: Vec<PlanStep>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    pub step: u32,
    /// One action line of the action language (its pattern is set by
    /// `schema_for`).
    #[schemars(length(max = 600))]
    pub action: String,
    /// What should be true once the step has run.
    #[schemars(length(max = 200))]
    pub expects: String,
}

impl Plan {
    /// The commands its steps run (inside loops too), for checking before it runs.
    pub fn commands(&self) -> Vec<String> {
        self.plan.iter().filter_map(|item| Action::parse(&item.action).ok()).flat_map(|a| a.commands()).collect()
    }

    /// The action lines, in order.
    pub fn actions(&self) -> Vec<&str> {
        self.plan.iter().map(|i| i.action.as_str()).collect()
    }
}

/// The plan schema for one goal: `goal` may only be the user's goal, word
/// for word. The model writes that key first, so the goal's own names are
/// the last thing it wrote before the plan; free to write any goal, a small
/// model writes the closest worked example's goal and then its plan.
/// `ready` may only be true: a proposal is a plan to run, and a small model
/// writes `ready: false` on right plans, which `not-ready` refuses and
/// nothing may mend. Each action
/// must match the action language's pattern.
pub fn schema_for(goal: &str, tools: &[Listing]) -> Value {
    let mut schema = agentloop_core::json_schema_of::<Plan>();
    if let Some(property) = schema.pointer_mut("/properties/goal") {
        *property = serde_json::json!({"type": "string", "enum": [goal]});
    }
    if let Some(property) = schema.pointer_mut("/properties/ready") {
        *property = serde_json::json!({"type": "boolean", "enum": [true]});
    }
    let pattern = with_tool_calls(&action::pattern(), tools);
    // The step's schema is a definition the plan's items refer to.
    let step = schema.pointer("/properties/plan/items/$ref").and_then(Value::as_str).map(|r| r.trim_start_matches('#').to_string());
    if let Some(action) = schema.pointer_mut(&format!("{}/properties/action", step.unwrap_or_else(|| "/properties/plan/items".into()))) {
        action["pattern"] = Value::String(pattern);
    }
    schema
}

/// An action pattern that also takes CALL_TOOL of the tools offered
/// (their arguments are judged by validation, against each tool's schema).
fn with_tool_calls(pattern: &str, tools: &[Listing]) -> String {
    let names: Vec<String> = tools.iter().flat_map(|l| l.tools.iter().map(move |t| regex_escape(&format!("{} {}", l.server, t.name)))).collect();
    if names.is_empty() {
        return pattern.to_string();
    }
    let inner = pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$')).unwrap_or(pattern);
    format!(r"^(CALL_TOOL ({}) \{{[^\r\n]*\}}|{inner})$", names.join("|"))
}

fn regex_escape(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == ' ' || c == '_' { c.to_string() } else { format!("\\{c}") }).collect()
}

/// The plan in an answer, or why it could not be read (rule `json` or
/// `schema`). `repaired` says whether a mechanical mend was needed.
pub fn read(answer: &str) -> Result<(Plan, bool), Rejection> {
    let body = between_tags(answer);
    let (value, repaired) = match serde_json::from_str::<Value>(body.trim()) {
        Ok(v) => (v, false),
        Err(first) => match serde_json::from_str::<Value>(&mend(body)) {
            Ok(v) => (v, true),
            Err(_) => return Err(Rejection::new(Rule::Json, None, format!("the answer is not valid JSON inside <json> tags ({first})"))),
        },
    };
    let plan: Plan = serde_json::from_value(value).map_err(|e| Rejection::new(Rule::Schema, None, format!("the JSON does not follow the template: {e}")))?;
    Ok((plan, repaired))
}

/// The text between `<json>` and `</json>`; the whole answer if there are no tags.
fn between_tags(answer: &str) -> &str {
    match answer.find("<json>") {
        Some(start) => {
            let body = &answer[start + "<json>".len()..];
            &body[..body.find("</json>").unwrap_or(body.len())]
        }
        None => answer,
    }
}

/// Mends what a small model typically gets wrong in JSON: a code fence,
/// prose around the object, trailing commas, unclosed brackets or string.
fn mend(text: &str) -> String {
    let text = text.trim().trim_start_matches("```json").trim_start_matches("```").trim_end_matches("```");
    let from = text.find('{').unwrap_or(0);
    let text = &text[from..];
    let mut out = String::with_capacity(text.len() + 8);
    let mut closers = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => closers.push('}'),
            '[' => closers.push(']'),
            '}' | ']' => {
                drop_trailing_comma(&mut out);
                if closers.pop().is_none() {
                    break;
                }
            }
            _ => {}
        }
        out.push(c);
        if closers.is_empty() && (c == '}' || c == ']') {
            break; // the object is complete: ignore prose after it
        }
    }
    if in_string {
        out.push('"');
    }
    while let Some(closer) = closers.pop() {
        drop_trailing_comma(&mut out);
        out.push(closer);
    }
    out
}

fn drop_trailing_comma(out: &mut String) {
    let trimmed = out.trim_end().len();
    if out[..trimmed].ends_with(',') {
        out.truncate(trimmed - 1);
    }
}

/// Each step's action, parsed once: every rule takes these.
pub fn parse(plan: &Plan) -> Vec<Result<Action, String>> {
    plan.plan.iter().map(|item| Action::parse(&item.action)).collect()
}

/// Every action, when every step parses.
pub fn all_parsed(actions: &[Result<Action, String>]) -> Option<Vec<Action>> {
    actions.iter().map(|a| a.as_ref().ok().cloned()).collect()
}

/// The action lines removed (`-`) and added (`+`) since the previous plan.
pub fn plan_diff(before: Option<&Plan>, after: Option<&Plan>) -> Vec<String> {
    let (old, new) = (before.map(Plan::actions).unwrap_or_default(), after.map(Plan::actions).unwrap_or_default());
    if before.is_none() {
        return Vec::new();
    }
    let mut out: Vec<String> = old.iter().filter(|l| !new.contains(l)).map(|l| format!("- {l}")).collect();
    out.extend(new.iter().filter(|l| !old.contains(l)).map(|l| format!("+ {l}")));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_holds_the_goal_word_for_word() {
        let schema = super::schema_for("Create a file hello.txt", &[]);
        assert_eq!(schema["properties"]["goal"]["enum"], serde_json::json!(["Create a file hello.txt"]));
        assert_eq!(schema["properties"]["ready"]["enum"], serde_json::json!([true]), "a proposal is a plan to run");
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "goal", "the goal is written first");
        assert_eq!(schema["properties"]["plan"]["items"]["$ref"].as_str().map(|r| r.contains("PlanStep")), Some(true));
    }

    use super::*;

    const GOOD: &str =
        r#"{"goal": "g", "thinking_summary": "t", "reflection": "", "ready": true, "plan": [{"step": 1, "action": "CREATE_DIR a", "expects": "a exists"}]}"#;

    #[test]
    fn a_tagged_plan_reads() {
        let (plan, repaired) = read(&format!("Here you go:\n<json>{GOOD}</json>")).unwrap();
        assert_eq!(plan.plan[0].action, "CREATE_DIR a");
        assert!(!repaired);
    }

    #[test]
    fn slips_are_mended() {
        let broken = r#"<json>```json
{"goal": "g", "thinking_summary": "t", "reflection": "", "ready": true, "plan": [{"step": 1, "action": "CREATE_DIR a", "expects": "a exists"},]"#;
        let (plan, repaired) = read(broken).unwrap();
        assert!(repaired);
        assert_eq!(plan.plan.len(), 1);
    }

    #[test]
    fn garbage_is_a_json_rejection_and_extra_keys_a_schema_one() {
        assert_eq!(read("I cannot do that").unwrap_err().rule, Rule::Json);
        let extra = GOOD.replace("\"ready\": true", "\"ready\": true, \"confidence\": 0.9");
        let err = read(&extra).unwrap_err();
        assert_eq!(err.rule, Rule::Schema);
        assert!(err.reason.contains("confidence"), "{}", err.reason);
        let extra_in_step = GOOD.replace("\"expects\": \"a exists\"", "\"expects\": \"a exists\", \"why\": \"x\"");
        assert_eq!(read(&extra_in_step).unwrap_err().rule, Rule::Schema);
    }
}

//! Asking for more: when the workspace is shown as regions, a plan may
//! name code it needs to see (a definition from the map, a line range) and
//! a word to search for. What it names is opened as a region in every
//! later view, and a search's hits go into every later prompt, both
//! bounded; each request and what it found is an event in the journal.
//! The answer that asks is the plan's own (`PlanAsking`), so asking costs
//! no model call of its own.

use agentloop_codemap::{definitions, open, Definition};
use agentloop_core::{JsonSchema, Step};
use serde::Deserialize;
use serde_json::json;

use super::events::CoderEvent;
use super::state::CoderState;

/// Definitions or ranges one plan may open.
const OPEN_PER_PLAN: usize = 3;
/// Regions kept open at most, the newest.
const OPEN_KEPT: usize = 4;
/// Lines a search lists at most.
const SEARCH_HITS: usize = 12;

/// One plan step, kept to a sentence or two.
#[derive(Deserialize, JsonSchema)]
#[serde(transparent)]
pub(super) struct PlanStep(#[schemars(length(max = 200))] pub(super) String);

/// The plan, with what the model asks to see before it changes the code.
#[derive(Deserialize, JsonSchema)]
pub struct PlanAsking {
    #[schemars(length(min = 1, max = 8))]
    pub steps: Vec<PlanStep>,
    /// Definitions from the map (`Class.method`, `function`) or line ranges
    /// (`path:120-160`) to see before changing the code; empty when the
    /// regions shown are enough.
    #[serde(default)]
    #[schemars(length(max = 3))]
    pub open: Vec<Asked>,
    /// A word or identifier to search the code for; empty for none.
    #[serde(default)]
    #[schemars(length(max = 60))]
    pub search: String,
}

/// One thing asked for, kept short.
#[derive(Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Asked(#[schemars(length(max = 120))] pub String);

/// Opens what `asked` names and runs its search, over `files`.
pub fn take(s: &mut CoderState, step: &mut Step, files: &[(String, String)], asked: &PlanAsking) {
    let defs: Vec<Definition> = files.iter().flat_map(|(p, c)| definitions(p, c)).collect();
    for a in asked.open.iter().take(OPEN_PER_PLAN) {
        let found = open::resolve(files, &defs, &a.0);
        let result = match &found {
            Some(r) => format!("{} lines {}-{}", r.path, r.start, r.end),
            None => "nothing by that name or range".to_string(),
        };
        step.emit(CoderEvent::Tool { tool: "open".into(), arguments: json!({"asked": a.0}), result: result.clone() });
        match found {
            Some(region) if !s.opened.contains(&region) => s.opened.push(region),
            Some(_) => {}
            None => s.lookups.push(format!("open `{}` → {result}", a.0)),
        }
    }
    let excess = s.opened.len().saturating_sub(OPEN_KEPT);
    s.opened.drain(..excess);
    let word = asked.search.trim();
    if !word.is_empty() {
        let hits = open::search(files, word, SEARCH_HITS);
        let result = if hits.is_empty() { "no line holds it".to_string() } else { hits.join("\n  ") };
        step.emit(CoderEvent::Tool { tool: "search".into(), arguments: json!({"word": word}), result: result.clone() });
        s.lookups.push(format!("search `{word}` →\n  {result}"));
    }
}

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

/// One thing asked for, kept short: a definition's name or a path with a
/// line or range, never a sentence (a small model otherwise copies its
/// plan's steps here, which name nothing).
#[derive(Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Asked(#[schemars(length(max = 120), pattern(NAME_OR_RANGE))] pub String);

/// What `open::resolve` can find: `name`, `Class.method`, `path:120`,
/// `path:120-160`, where a path ends in a file's extension, which starts
/// with a letter (a small model otherwise repeats a test's parameters as a
/// "path" to the length limit, `-13th--1.3:1`).
const NAME_OR_RANGE: &str = r"^([A-Za-z_][A-Za-z0-9_.]*|([A-Za-z0-9_.-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*\.[A-Za-z][A-Za-z0-9]*:[0-9]+(-[0-9]+)?)$";

/// Opens what `asked` names and runs its search, over `files`. A name
/// asked twice in one plan is opened once, and what a lookup found is
/// listed once however often later plans ask it again (a small model
/// repeats a word it cannot resolve).
pub fn take(s: &mut CoderState, step: &mut Step, files: &[(String, String)], asked: &PlanAsking) {
    let defs: Vec<Definition> = files.iter().flat_map(|(p, c)| definitions(p, c)).collect();
    let mut seen = std::collections::HashSet::new();
    for a in asked.open.iter().filter(|a| seen.insert(a.0.trim())).take(OPEN_PER_PLAN) {
        let found = open::resolve(files, &defs, &a.0);
        let result = match &found {
            Some(r) => format!("{} lines {}-{}", r.path, r.start, r.end),
            None => "nothing by that name or range".to_string(),
        };
        step.emit(CoderEvent::Tool { tool: "open".into(), arguments: json!({"asked": a.0}), result: result.clone() });
        match found {
            Some(region) if !s.opened.contains(&region) => s.opened.push(region),
            Some(_) => {}
            None => remember(s, format!("open `{}` → {result}", a.0)),
        }
    }
    let excess = s.opened.len().saturating_sub(OPEN_KEPT);
    s.opened.drain(..excess);
    let word = asked.search.trim();
    if !word.is_empty() {
        let hits = open::search(files, word, SEARCH_HITS);
        let result = if hits.is_empty() { "no line holds it".to_string() } else { hits.join("\n  ") };
        step.emit(CoderEvent::Tool { tool: "search".into(), arguments: json!({"word": word}), result: result.clone() });
        remember(s, format!("search `{word}` →\n  {result}"));
    }
}

/// Adds `lookup` to what every later prompt lists, unless it is there.
fn remember(s: &mut CoderState, lookup: String) {
    if !s.lookups.contains(&lookup) {
        s.lookups.push(lookup);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_plan_held_to_its_schema_asks_for_names_and_ranges_never_sentences() {
        let model = agentloop_llm::catalog::DEFAULT_MODEL.path(&agentloop_llm::catalog::default_data_dir());
        assert!(model.is_file(), "the default model is missing at {}: run `bash scripts/fetch-models.sh`", model.display());
        let probe = agentloop_llm::GrammarProbe::load(&model).unwrap();
        let schema = agentloop_core::json_schema_of::<PlanAsking>();
        let plan = |open: &str| format!(r#"{{"steps": ["make add return the sum"], "open": [{open}], "search": "total += v"}}"#);
        for open in [r#""add""#, r#""Cache.get", "src/pkg/a.py:120-160""#, r#""src/a.py:7""#, ""] {
            probe.follow_schema(&schema, &plan(open)).unwrap_or_else(|e| panic!("{open}: {e}"));
        }
        for sentence in [r#""Check if the code is already correct""#, r#""add the numbers""#, r#""-13th--13th--133:1""#, r#""-13th--13th--1.3:1""#] {
            assert!(probe.follow_schema(&schema, &plan(sentence)).is_err(), "{sentence} is not a name");
        }
    }
}

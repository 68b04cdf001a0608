//! A question broken into sub-questions that depend on one another, and the
//! order to answer them in: phases by dependency (Kahn's layering), each
//! phase's sub-questions independent of one another.

use std::collections::{BTreeMap, BTreeSet};

use agentloop_core::JsonSchema;
use serde::{Deserialize, Serialize};

/// What kind of answer a sub-question wants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueryType {
    #[default]
    Factual,
    Analytical,
    Comparative,
    Temporal,
}

/// One atomic sub-question. Its text may name an earlier answer as
/// `{id}` (for "the father of {q1}"), filled in once `id` is answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubQuery {
    #[schemars(length(max = 8))]
    pub id: String,
    #[schemars(length(max = 200))]
    pub text: String,
    /// The ids whose answers this one needs.
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(max = 8)))]
    pub dependencies: Vec<String>,
    #[serde(default, rename = "type")]
    pub kind: QueryType,
    /// 1 (most important) to 5.
    #[serde(default = "middle")]
    pub priority: u8,
    /// 1 (a lookup) to 5 (needs several sources).
    #[serde(default = "middle")]
    pub estimated_complexity: u8,
    /// The phase it runs in (0-based), set by `Decomposition::new`.
    #[serde(default)]
    pub order: usize,
}

fn middle() -> u8 {
    3
}

/// What the model is asked to write. The sub-questions come first on
/// purpose: the schema keeps declaration order and the model writes keys in
/// that order, so it works the question out before it labels it — asked
/// for the label first, a small model calls nearly every question simple.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecompositionAnswer {
    /// At most five: the schema bounds it, so decoding cannot run on.
    #[serde(default)]
    #[schemars(length(max = 5))]
    pub sub_queries: Vec<SubQuery>,
    /// False when one search can answer the question as asked.
    #[serde(default)]
    pub is_complex: bool,
}

/// The sub-questions and the phases they run in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decomposition {
    pub complex: bool,
    pub sub_queries: Vec<SubQuery>,
    /// Sub-question ids by phase: each phase needs only earlier ones.
    pub execution_plan: Vec<Vec<String>>,
}

impl Decomposition {
    /// The question as its own single sub-question.
    pub fn simple(question: &str) -> Self {
        let only = SubQuery {
            id: "q1".into(),
            text: question.to_string(),
            dependencies: Vec::new(),
            kind: QueryType::Factual,
            priority: 1,
            estimated_complexity: 1,
            order: 0,
        };
        Self { complex: false, execution_plan: vec![vec![only.id.clone()]], sub_queries: vec![only] }
    }

    /// Checks the model's answer and lays out its phases. Fewer than two
    /// sub-questions is the question itself; two or more make it complex
    /// whatever the label says (the chain written out is the evidence); more than
    /// `max` keeps the first `max` (and drops dependencies on the rest).
    /// Duplicate ids, unknown dependencies and cycles are errors that say
    /// which.
    pub fn new(question: &str, answer: DecompositionAnswer, max: usize) -> Result<Self, String> {
        let mut subs: Vec<SubQuery> = answer.sub_queries.into_iter().filter(|s| !s.text.trim().is_empty()).collect();
        if subs.len() < 2 {
            return Ok(Self::simple(question));
        }
        subs.truncate(max.max(2));
        let ids: BTreeSet<String> = subs.iter().map(|s| s.id.clone()).collect();
        if ids.len() != subs.len() {
            return Err("two sub-questions share an id: give each its own".into());
        }
        // The `{id}` a text names say exactly which answers fill it in; when
        // the model wrote any, they are the dependencies (a small model's
        // dependency lists often point the wrong way).
        let named = subs.iter().any(|s| !placeholders(&s.text).is_empty());
        for s in &mut subs {
            if named {
                s.dependencies = placeholders(&s.text);
            }
            s.dependencies.retain(|d| d != &s.id);
            s.dependencies.dedup();
        }
        let plan = execution_plan(&subs)?;
        for (phase, members) in plan.iter().enumerate() {
            for s in subs.iter_mut().filter(|s| members.contains(&s.id)) {
                s.order = phase;
            }
        }
        Ok(Self { complex: true, sub_queries: subs, execution_plan: plan })
    }

    pub fn get(&self, id: &str) -> Option<&SubQuery> {
        self.sub_queries.iter().find(|s| s.id == id)
    }

    /// The first sub-question that needs an earlier answer but does not
    /// say where it goes (no `{id}` in its text), as a sentence: its search
    /// would be the bare text with the answer tacked on, so it is worth
    /// asking once more for the chain written out.
    pub fn unnamed_dependency(&self) -> Option<String> {
        self.sub_queries.iter().find_map(|s| {
            let d = s.dependencies.iter().find(|d| !s.text.contains(&format!("{{{d}}}")))?;
            Some(format!("{} needs the answer of {d} but its text does not say where: write {{{d}}} in its text in place of that answer", s.id))
        })
    }

    /// The first sub-question that starts the chain (it needs no earlier
    /// answer) yet shares no search term with the question, as a sentence:
    /// such a decomposition answers some other question — a small model
    /// shown a worked example sometimes returns the example's chain — and
    /// would be searched, answered and cited as if it were this one's.
    fn off_question(&self, question: &str) -> Option<String> {
        if !self.complex {
            return None;
        }
        let asked: BTreeSet<String> = agentloop_retrieval::terms(question).into_iter().collect();
        self.sub_queries.iter().filter(|s| s.dependencies.is_empty()).find_map(|s| {
            let shared = agentloop_retrieval::terms(&s.text).iter().any(|t| asked.contains(t));
            (!shared).then(|| format!("{} (\"{}\") shares no word with the question: a chain starts from the question's own names and words", s.id, s.text))
        })
    }

    /// `new`, failing also when the chain does not start from the question
    /// (`off_question`): unlike a dependency left unnamed, that cannot stand.
    pub fn checked(question: &str, answer: DecompositionAnswer, max: usize) -> Result<Self, String> {
        let d = Self::new(question, answer, max)?;
        d.off_question(question).map_or(Ok(d), Err)
    }
}

/// Kahn's algorithm by layers: phase 0 holds the sub-questions with no
/// dependencies, each later phase those whose dependencies all came
/// before. Within a phase, higher priority (lower number) first.
pub fn execution_plan(subs: &[SubQuery]) -> Result<Vec<Vec<String>>, String> {
    let known: BTreeSet<&str> = subs.iter().map(|s| s.id.as_str()).collect();
    for s in subs {
        if let Some(d) = s.dependencies.iter().find(|d| !known.contains(d.as_str())) {
            return Err(format!("{} depends on {d}, which is not one of the sub-questions", s.id));
        }
    }
    let mut waiting: BTreeMap<&str, BTreeSet<&str>> = subs.iter().map(|s| (s.id.as_str(), s.dependencies.iter().map(String::as_str).collect())).collect();
    let mut phases = Vec::new();
    while !waiting.is_empty() {
        let mut ready: Vec<&SubQuery> = subs.iter().filter(|s| waiting.get(s.id.as_str()).is_some_and(BTreeSet::is_empty)).collect();
        if ready.is_empty() {
            return Err(format!("the sub-questions depend on each other in a circle: {}", cycle(&waiting)));
        }
        ready.sort_by_key(|s| s.priority);
        for s in &ready {
            waiting.remove(s.id.as_str());
        }
        for deps in waiting.values_mut() {
            for s in &ready {
                deps.remove(s.id.as_str());
            }
        }
        phases.push(ready.iter().map(|s| s.id.clone()).collect());
    }
    Ok(phases)
}

/// One cycle among sub-questions that are all still waiting, as
/// "a → b → a": follow any dependency until an id repeats.
fn cycle(waiting: &BTreeMap<&str, BTreeSet<&str>>) -> String {
    let Some(mut at) = waiting.keys().next().copied() else { return String::new() };
    let mut path: Vec<&str> = Vec::new();
    loop {
        if let Some(i) = path.iter().position(|p| *p == at) {
            let mut circle = path[i..].to_vec();
            circle.push(at);
            return circle.join(" → ");
        }
        path.push(at);
        match waiting.get(at).and_then(|d| d.iter().next()) {
            Some(next) => at = next,
            None => return path.join(" → "),
        }
    }
}

/// The ids a text names as `{id}`, in order, each once.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        let id = &rest[open + 1..open + close];
        if !id.is_empty() && id.len() <= 8 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
        rest = &rest[open + close + 1..];
    }
    out
}

/// A sub-question's texts with the answers it depends on filled in, one
/// text per combination of those answers' items (the first `most` of
/// them): each `{id}` replaced by an item, and a dependency not named that
/// way added as context, so a search for "the father of {q1}" looks for
/// each person q1 found.
pub fn resolved(sub: &SubQuery, answers: &BTreeMap<String, Vec<String>>, most: usize) -> Vec<String> {
    let unknown = vec!["unknown".to_string()];
    // Each text with the context it has gathered so far.
    let mut texts = vec![(sub.text.clone(), Vec::<String>::new())];
    for d in &sub.dependencies {
        let items = answers.get(d).filter(|items| !items.is_empty()).unwrap_or(&unknown);
        let placeholder = format!("{{{d}}}");
        let named = sub.text.contains(&placeholder);
        texts = texts
            .iter()
            .flat_map(|(text, context)| {
                items.iter().map(|item| {
                    if named {
                        (text.replace(&placeholder, item), context.clone())
                    } else {
                        (text.clone(), context.iter().cloned().chain([item.clone()]).collect())
                    }
                })
            })
            .take(most.max(1))
            .collect();
    }
    texts.into_iter().map(|(text, context)| if context.is_empty() { text } else { format!("{text} ({})", context.join("; ")) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(id: &str, deps: &[&str]) -> SubQuery {
        SubQuery {
            id: id.into(),
            text: format!("text of {id}"),
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
            kind: QueryType::Factual,
            priority: 3,
            estimated_complexity: 2,
            order: 0,
        }
    }

    #[test]
    fn a_simple_question_is_its_own_single_sub_question() {
        let d = Decomposition::new("Who wrote Dune?", DecompositionAnswer { is_complex: false, sub_queries: vec![] }, 5).unwrap();
        assert!(!d.complex);
        assert_eq!(d.sub_queries.len(), 1);
        assert_eq!(d.sub_queries[0].text, "Who wrote Dune?");
        let chained = Decomposition::new("…", DecompositionAnswer { is_complex: false, sub_queries: vec![sub("a", &[]), sub("b", &["a"])] }, 5).unwrap();
        assert!(chained.complex, "a chain written out is complex whatever the label");
        let one = Decomposition::new("Who wrote Dune?", DecompositionAnswer { is_complex: true, sub_queries: vec![sub("a", &[])] }, 5).unwrap();
        assert!(!one.complex, "one sub-question is no decomposition");
    }

    #[test]
    fn a_complex_question_is_laid_out_in_phases_by_dependency() {
        let answer = DecompositionAnswer { is_complex: true, sub_queries: vec![sub("q1", &[]), sub("q2", &["q1"]), sub("q3", &[]), sub("q4", &["q2", "q3"])] };
        let d = Decomposition::new("…", answer, 5).unwrap();
        assert!(d.complex);
        assert_eq!(d.execution_plan, vec![vec!["q1", "q3"], vec!["q2"], vec!["q4"]]);
        assert_eq!(d.get("q4").unwrap().order, 2);
        let capped =
            Decomposition::new("…", DecompositionAnswer { is_complex: true, sub_queries: (1..=7).map(|i| sub(&format!("q{i}"), &[])).collect() }, 5).unwrap();
        assert_eq!(capped.sub_queries.len(), 5);
    }

    #[test]
    fn a_cycle_or_an_unknown_dependency_is_an_error_that_names_it() {
        let err = execution_plan(&[sub("q1", &["q3"]), sub("q2", &["q1"]), sub("q3", &["q2"]), sub("q4", &[])]).unwrap_err();
        assert!(err.contains("q1 → q3 → q2 → q1"), "{err}");
        let err = execution_plan(&[sub("q1", &["q9"])]).unwrap_err();
        assert!(err.contains("q1 depends on q9"), "{err}");
    }

    #[test]
    fn the_answers_a_text_names_are_its_dependencies() {
        let mut subs = vec![sub("q1", &["q2"]), sub("q2", &["q3"]), sub("q3", &[])];
        subs[1].text = "What is the friend of {q1}?".into();
        subs[2].text = "Who is the grandson of {q2}?".into();
        let d = Decomposition::new("…", DecompositionAnswer { is_complex: true, sub_queries: subs }, 5).unwrap();
        assert_eq!(d.execution_plan, vec![vec!["q1"], vec!["q2"], vec!["q3"]], "the lists pointed the wrong way; the texts did not");
        assert_eq!(placeholders("{a} and {b} and {a}, {not an id}"), ["a", "b"]);
    }

    #[test]
    fn a_dependency_its_text_does_not_name_is_pointed_out() {
        let mut subs = vec![sub("q1", &[]), sub("q2", &["q1"])];
        let d = Decomposition::new("…", DecompositionAnswer { is_complex: true, sub_queries: subs.clone() }, 5).unwrap();
        assert_eq!(
            d.unnamed_dependency().unwrap(),
            "q2 needs the answer of q1 but its text does not say where: write {q1} in its text in place of that answer"
        );
        subs[1].text = "Who wrote {q1}?".into();
        let d = Decomposition::new("…", DecompositionAnswer { is_complex: true, sub_queries: subs }, 5).unwrap();
        assert_eq!(d.unnamed_dependency(), None);
    }

    #[test]
    fn a_chain_that_does_not_start_from_the_question_is_off_it() {
        let mut subs = vec![sub("q1", &[]), sub("q2", &["q1"])];
        subs[0].text = "Who invented the telephone?".into();
        subs[1].text = "Where was {q1} born?".into();
        let question = "In which city was the inventor of the phonograph born?";
        let err = Decomposition::checked(question, DecompositionAnswer { is_complex: true, sub_queries: subs.clone() }, 5).unwrap_err();
        assert!(err.starts_with("q1 (\"Who invented the telephone?\") shares no word with the question"), "{err}");
        subs[0].text = "Who invented the phonograph?".into();
        assert!(Decomposition::checked(question, DecompositionAnswer { is_complex: true, sub_queries: subs }, 5).is_ok(), "phonograph is the question's word");
        let simple = Decomposition::checked(question, DecompositionAnswer { is_complex: false, sub_queries: vec![] }, 5).unwrap();
        assert_eq!(simple.off_question(question), None, "the question asked whole is about itself");
    }

    #[test]
    fn a_dependent_sub_question_is_filled_in_with_its_dependencys_answer() {
        let mut s = sub("q2", &["q1"]);
        s.text = "Who is the father of {q1}?".into();
        let answers = BTreeMap::from([("q1".to_string(), vec!["Ada Byron".to_string()])]);
        assert_eq!(resolved(&s, &answers, 5), ["Who is the father of Ada Byron?"]);
        s.text = "Who is that person's father?".into();
        assert_eq!(resolved(&s, &answers, 5), ["Who is that person's father? (Ada Byron)"]);
    }

    #[test]
    fn a_dependency_with_several_items_asks_once_per_item_up_to_the_limit() {
        let mut s = sub("q3", &["q1", "q2"]);
        s.text = "Is {q1} older than {q2}?".into();
        let answers =
            BTreeMap::from([("q1".to_string(), vec!["Ann".to_string(), "Bo".to_string()]), ("q2".to_string(), vec!["Cy".to_string(), "Di".to_string()])]);
        assert_eq!(resolved(&s, &answers, 8), ["Is Ann older than Cy?", "Is Ann older than Di?", "Is Bo older than Cy?", "Is Bo older than Di?"]);
        assert_eq!(resolved(&s, &answers, 3).len(), 3, "the combinations are capped");
        s.text = "Who are their parents?".into();
        assert_eq!(resolved(&s, &answers, 2), ["Who are their parents? (Ann; Cy)", "Who are their parents? (Ann; Di)"], "an unnamed dependency is context");
        assert_eq!(resolved(&s, &BTreeMap::new(), 8), ["Who are their parents? (unknown; unknown)"]);
    }
}

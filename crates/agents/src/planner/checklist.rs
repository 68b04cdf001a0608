//! The goal as a checklist, each item judged on its own against what is on
//! disk.
//!
//! One verdict on a whole goal lets a small judge wave through an outcome
//! that is merely close: a file holding a command instead of its result, a
//! result with more or less than was asked, one file where one per item was
//! wanted. So the goal is first written out as a short checklist — from the
//! goal alone, before any outcome is shown, so the list cannot bend towards
//! what was done — and each item is then judged separately against what
//! OBSERVE saw. Each item must quote the part of the goal it comes from, and
//! two items from the same part are one: a small model asked for a list
//! pads it with conditions the goal never set (a folder "must be writable",
//! "must be empty"), which no outcome could be shown to meet. The judge
//! must copy the line that decides the item, and is asked once more when
//! what it copied is not there (small judges copy the requirement itself);
//! an item
//! said done whose copied text is not in what was shown is not done, since
//! nothing shows the judge looked.

use agentloop_core::JsonSchema;
use serde::{Deserialize, Serialize};

use super::execute::shorten;
use super::goal;

// (Doc comments of the schema types would become the schema's descriptions,
// which the model reads; the prompts say what each field is for.)

/// What the model writes for the goal: what must be true once it is done.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Checklist {
    #[schemars(length(min = 1, max = 5))]
    pub requirements: Vec<Requirement>,
}

/// One item: the goal's words it comes from, then what must be true.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Requirement {
    #[schemars(length(max = 120))]
    pub from_goal: String,
    #[schemars(length(max = 160))]
    pub requirement: String,
}

impl Checklist {
    /// The requirements as plain sentences, one per part of the goal they
    /// quote; the whole goal as the one requirement when the model wrote
    /// none that quotes it.
    pub fn into_items(self, goal: &str) -> Vec<String> {
        let mut items: Vec<String> = Vec::new();
        let mut parts: Vec<String> = Vec::new();
        for r in self.requirements {
            let part = r.from_goal.trim().trim_matches(|c: char| matches!(c, '"' | '\'' | '`')).trim().to_lowercase();
            let text = r.requirement.trim().to_string();
            let quotes_goal = part.chars().any(char::is_alphanumeric) && goal::holds(goal, &part);
            if quotes_goal && !parts.contains(&part) && text.chars().any(char::is_alphanumeric) && !items.contains(&text) {
                parts.push(part);
                items.push(text);
            }
        }
        if items.is_empty() {
            items.push(goal.trim().to_string());
        }
        items
    }
}

/// The model's verdict on one requirement: the text that decides it, copied
/// from what was shown, then whether it is done.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ItemVerdict {
    #[schemars(length(max = 200))]
    pub copied_line: String,
    pub done: bool,
}

/// One requirement as judged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Judged {
    pub requirement: String,
    /// The text the judge copied as deciding it.
    pub shown: String,
    /// The judge said it is done.
    pub done: bool,
    /// The copied text is in what the judge was shown.
    pub grounded: bool,
}

impl Judged {
    pub fn new(requirement: String, verdict: ItemVerdict, observation: &str) -> Self {
        let grounded = grounded(&verdict.copied_line, observation);
        Self { requirement, shown: verdict.copied_line, done: verdict.done, grounded }
    }

    /// Done, and shown to be.
    pub fn held(&self) -> bool {
        self.done && self.grounded
    }

    /// The requirement with what decided it, for the user.
    pub fn line(&self) -> String {
        let quote = shorten(self.shown.trim(), 100);
        if self.held() {
            format!("✓ {} (shown: \"{quote}\")", self.requirement)
        } else {
            format!("✗ {}", self.missing())
        }
    }

    /// The requirement as still to do, with what was seen instead when
    /// that is really there (a line the judge made up would mislead the
    /// next plan).
    pub fn missing(&self) -> String {
        let quote = shorten(self.shown.trim(), 100);
        if self.grounded && !quote.is_empty() {
            format!("{} (found: \"{quote}\")", self.requirement)
        } else if self.done {
            format!("{} (nothing on disk or printed shows it)", self.requirement)
        } else {
            self.requirement.clone()
        }
    }
}

/// Whether `shown` is text from `observation` (ignoring case, runs of
/// spaces and the quotes or brackets a model may wrap a copy in). A copy of
/// several lines may keep or drop the listing's bullets and take along the
/// prompt's own lines (the goal, a heading); what is left must be there, and
/// text with no letter or digit shows nothing.
pub fn grounded(shown: &str, observation: &str) -> bool {
    let unwrap = |s: &str| s.trim().trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '<' | '>' | '«' | '»' | '“' | '”')).trim().to_string();
    let quote = unwrap(shown);
    if goal::holds(observation, &quote) && quote.chars().any(char::is_alphanumeric) {
        return true;
    }
    let lines: Vec<String> =
        quote.lines().map(|l| unwrap(l.trim().trim_start_matches("- "))).filter(|l| l.chars().any(char::is_alphanumeric) && !scaffolding(l)).collect();
    !lines.is_empty() && lines.iter().all(|l| goal::holds(observation, l))
}

/// A line of the judge's prompt that is not observed text: the goal, the
/// requirement, or a heading (capitals ending in a colon).
fn scaffolding(line: &str) -> bool {
    let upper = line.to_uppercase();
    upper.starts_with("GOAL:") || upper.starts_with("REQUIREMENT:") || (line.ends_with(':') && !line.chars().any(char::is_lowercase))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEEN: &str = "FILES AND FOLDERS NOW UNDER THE ROOT:\n- poems/\n- poems/a.txt\n- count.txt\n\nTEXT OF count.txt:\n<<<\n2 files\n>>>\n";

    #[test]
    fn a_copied_text_is_grounded_and_an_invented_one_is_not() {
        assert!(grounded("2 files", SEEN));
        assert!(grounded("\"2   Files\"", SEEN), "case, spaces and quotes do not matter");
        assert!(grounded("- poems/\n- poems/a.txt", SEEN), "several lines of the listing");
        assert!(grounded("poems/\npoems/a.txt", SEEN), "with the bullets dropped");
        assert!(!grounded("count.txt holds 2", SEEN), "a paraphrase is not a copy");
        assert!(!grounded("", SEEN) && !grounded(" `` ", SEEN), "nothing copied shows nothing");
        assert!(grounded("GOAL: Make poems.\nFILES AND FOLDERS NOW UNDER THE ROOT:\n- poems/", SEEN), "the prompt's own lines are left aside");
        assert!(!grounded("GOAL: Make poems.\nFILES AND FOLDERS NOW UNDER THE ROOT:", SEEN), "but they alone show nothing");
    }

    #[test]
    fn a_requirement_holds_only_when_done_and_shown() {
        let judged = |shown: &str, done| Judged::new("count.txt holds the number of poems".into(), ItemVerdict { copied_line: shown.into(), done }, SEEN);
        assert!(judged("2 files", true).held());
        let invented = judged("2", false);
        assert!(!invented.held() && invented.missing().contains("found: \"2\""), "{}", invented.missing());
        let unshown = judged("count.txt holds 1", true);
        assert!(!unshown.held() && unshown.missing().ends_with("(nothing on disk or printed shows it)"), "{}", unshown.missing());
        assert!(!unshown.missing().contains("holds 1"), "a made-up line is not shown to the next plan");
        assert!(unshown.line().starts_with('✗'));
    }

    fn item(from_goal: &str, requirement: &str) -> Requirement {
        Requirement { from_goal: from_goal.into(), requirement: requirement.into() }
    }

    #[test]
    fn each_part_of_the_goal_gives_one_requirement() {
        let goal = "Make a.txt and a folder b.";
        let list = Checklist {
            requirements: vec![
                item("make a.txt", "a.txt exists"),
                item("Make a.txt", "a.txt is writable"),
                item("a folder b", " "),
                item("a folder c", "c exists"),
                item("\"a folder b\"", "folder b exists"),
            ],
        };
        assert_eq!(list.into_items(goal), vec!["a.txt exists", "folder b exists"], "padding from the same part and items quoting no part are dropped");
        assert_eq!(Checklist::default().into_items(goal), vec![goal], "no item: the whole goal");
    }
}

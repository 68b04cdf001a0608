//! The goal as a checklist, each item judged on its own against what is on
//! disk.
//!
//! One verdict on a whole goal lets a small judge wave through an outcome
//! that is merely close: a file holding a command instead of its result, a
//! result with more or less than was asked, one file where one per item was
//! wanted. So the goal is first written out as a short checklist — from the
//! goal alone, before any outcome is shown, so the list cannot bend towards
//! what was done — and each item is then judged separately against what
//! OBSERVE saw, the judge writing what it sees before it decides.
//!
//! Each item must quote the part of the goal it comes from, and two items
//! from the same part about the same paths are one: a small model asked for
//! a list pads it with conditions the goal never set (a folder "must be
//! writable", "must be empty"), which no outcome could be shown to meet.

use agentloop_core::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{goal, goal_paths};
use crate::text::shorten;

// (The schema types' fields carry no doc comments: they would become the
// schema's descriptions, which the model reads; the prompts say what each
// field is for.)

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
    /// quote and paths they name; the whole goal as the one requirement
    /// when the model wrote none that quotes it.
    pub fn into_items(self, goal: &str) -> Vec<String> {
        let mut items: Vec<String> = Vec::new();
        let mut seen: Vec<(String, Vec<String>)> = Vec::new();
        for r in self.requirements {
            let part = r.from_goal.trim().trim_matches(|c: char| matches!(c, '"' | '\'' | '`')).trim().to_lowercase();
            let text = r.requirement.trim().to_string();
            let key = (part, goal_paths::named_paths(&text));
            let quotes_goal = key.0.chars().any(char::is_alphanumeric) && goal::holds(goal, &key.0);
            if quotes_goal && !seen.contains(&key) && text.chars().any(char::is_alphanumeric) && !items.contains(&text) {
                seen.push(key);
                items.push(text);
            }
        }
        if items.is_empty() {
            items.push(goal.trim().to_string());
        }
        items
    }
}

/// The model's verdict on one requirement: what the observed text shows of
/// it, then whether it is done (written in that order, so the judge looks
/// before it decides).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ItemVerdict {
    #[schemars(length(max = 200))]
    pub evidence: String,
    pub done: bool,
}

/// One requirement as judged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Judged {
    pub requirement: String,
    /// What the judge saw of it.
    pub evidence: String,
    pub done: bool,
}

impl Judged {
    pub fn new(requirement: String, verdict: ItemVerdict) -> Self {
        Self { requirement, evidence: verdict.evidence, done: verdict.done }
    }

    /// The requirement marked done or not, for the user.
    pub fn line(&self) -> String {
        format!("{} {}", if self.done { "✓" } else { "✗" }, self.missing())
    }

    /// The requirement with what the judge saw of it (for one not done,
    /// what the next plan must still do).
    pub fn missing(&self) -> String {
        let evidence = shorten(self.evidence.trim(), 160);
        if evidence.is_empty() {
            self.requirement.clone()
        } else {
            format!("{} ({evidence})", self.requirement)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requirement_not_done_is_missing_with_what_was_seen() {
        let judged = |evidence: &str, done| Judged::new("count.txt holds the number of poems".into(), ItemVerdict { evidence: evidence.into(), done });
        assert_eq!(judged("count.txt holds 2", true).line(), "✓ count.txt holds the number of poems (count.txt holds 2)");
        assert_eq!(judged("it holds a command", false).missing(), "count.txt holds the number of poems (it holds a command)");
        assert_eq!(judged(" ", false).missing(), "count.txt holds the number of poems");
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
                item("Make a.txt", "the folder holds a.txt/b.txt"),
                item("a folder b", " "),
                item("a folder c", "c exists"),
                item("\"a folder b\"", "folder b exists"),
            ],
        };
        assert_eq!(
            list.into_items(goal),
            vec!["a.txt exists", "the folder holds a.txt/b.txt", "folder b exists"],
            "padding from the same part about the same paths, and items quoting no part, are dropped"
        );
        assert_eq!(Checklist::default().into_items(goal), vec![goal], "no item: the whole goal");
    }
}

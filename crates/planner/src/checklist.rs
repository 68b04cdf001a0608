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
//!
//! Each item may also carry a shell command that exits 0 exactly when it
//! holds, written with the item and so from the goal alone. It runs in a
//! sandbox that cannot change the root, and a failed command outranks the
//! judge: a model reading text is easily persuaded that a file is "close
//! enough", a command comparing it is not. A command that cannot run (bad
//! syntax, a program this machine lacks) is set aside, and the judge alone
//! decides that item. But a command is derived by a model too, and can
//! test the wrong thing (that a word the goal removes is still there): when
//! two independent judgments and every check read off the goal's own words
//! say the item is done, the item is disputed, and the outcome goes to the
//! user with the dispute shown: the user's approval settles it, and with
//! no one asked (`--approve all`) the command stands.

use agentloop_core::JsonSchema;
use serde::{Deserialize, Serialize};

use super::evidence::{before_after, Evidence, Kind};
use super::{goal, goal_paths};
use agentloop_agent::text::shorten;

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
    #[serde(default)]
    pub kind: Kind,
    #[schemars(length(max = 200))]
    pub check: String,
}

/// One item of the checklist: what must be true, and the command that
/// tells (empty when none does).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "ItemRecord")]
pub struct Item {
    pub requirement: String,
    pub check: String,
    /// Whether the goal makes it true or keeps it true.
    #[serde(default)]
    pub kind: Kind,
}

/// An item as journaled: sessions from before items had commands kept the
/// requirement alone.
#[derive(Deserialize)]
#[serde(untagged)]
enum ItemRecord {
    Requirement(String),
    Item {
        requirement: String,
        check: String,
        #[serde(default)]
        kind: Kind,
    },
}

impl From<ItemRecord> for Item {
    fn from(r: ItemRecord) -> Self {
        match r {
            ItemRecord::Requirement(requirement) => Self { requirement, check: String::new(), kind: Kind::Target },
            ItemRecord::Item { requirement, check, kind } => Self { requirement, check, kind },
        }
    }
}

impl Checklist {
    /// The requirements, one per part of the goal they quote and paths
    /// they name; the whole goal as the one requirement (with no command)
    /// when the model wrote none that quotes it.
    ///
    /// An item may quote a requirement already kept instead of the goal:
    /// models often write a list as a chain, each item's source being the
    /// item before it, and dropping those drops every requirement after
    /// the first (often the one about what a file must hold). An item with
    /// no such source is still kept when it quotes text the goal gives and
    /// names only paths the goal names: what a file must hold, in the
    /// goal's own words, is never padding. Two items from one part about
    /// the same paths are one only when they also quote the same texts
    /// (a list of two tasks is two items).
    pub fn into_items(self, goal: &str) -> Vec<Item> {
        let mut items: Vec<Item> = Vec::new();
        let mut seen: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
        for r in self.requirements {
            let part = r.from_goal.trim().trim_matches(|c: char| matches!(c, '"' | '\'' | '`')).trim().to_lowercase();
            let text = r.requirement.trim().to_string();
            let key = (part, goal_paths::named_paths(&text), quoted_texts(&text));
            let quotes = |source: &str| key.0.chars().any(char::is_alphanumeric) && goal::holds(source, &key.0);
            let in_goals_words = !key.2.is_empty() && key.1.iter().chain(&key.2).all(|named| goal::holds(goal, named));
            let sourced = quotes(goal) || items.iter().any(|i| quotes(&i.requirement)) || in_goals_words;
            if sourced && !seen.contains(&key) && text.chars().any(char::is_alphanumeric) && !items.iter().any(|i| i.requirement == text) {
                seen.push(key);
                items.push(Item { requirement: text, check: derived_from(goal, r.check.trim()), kind: r.kind });
            }
        }
        if items.is_empty() {
            items.push(Item { requirement: goal.trim().to_string(), check: String::new(), kind: Kind::Target });
        }
        items
    }
}

/// The item's command, or none when it names a file the goal never names:
/// such a command was not derived from this goal (a small model copies the
/// prompt's own illustration, or guesses a name), and failing it would
/// refuse every outcome. The judge alone decides that item.
fn derived_from(goal: &str, check: &str) -> String {
    let foreign = goal_paths::named_paths(check).into_iter().any(|path| {
        let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or(&path).to_string();
        goal_paths::has_extension(&name) && !goal_paths::mentions(goal, &name)
    });
    if foreign {
        String::new()
    } else {
        check.to_string()
    }
}

/// The texts a requirement quotes ('…', "…" or `…`): a quote opens after a
/// space or at the start and closes before a space, punctuation or the end,
/// so an apostrophe inside a word opens nothing.
fn quoted_texts(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['\'', '"', '`']) {
        let mark = rest[open..].chars().next().unwrap_or('\'');
        let opens = rest[..open].chars().next_back().is_none_or(|c| c.is_whitespace() || c == '(');
        let after = &rest[open + 1..];
        let close =
            after.match_indices(mark).map(|(at, _)| at).find(|&at| after[at + 1..].chars().next().is_none_or(|c| c.is_whitespace() || ".,;:!?)".contains(c)));
        match close {
            Some(close) if opens && !after[..close].trim().is_empty() => {
                found.push(after[..close].trim().to_string());
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    found
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
    /// What the judge saw of it (or what the failed command printed).
    pub evidence: String,
    pub done: bool,
    /// The item's command and how it went, when it had one.
    #[serde(default)]
    pub check: Option<CheckRun>,
    /// The command failed, but both judgments found the item done: shown
    /// to the user, and the failed command still stands.
    #[serde(default)]
    pub disputed: bool,
    #[serde(default)]
    pub kind: Kind,
    /// Whether the item held on the root before the plan (by its command,
    /// or by the judgment of the before view), when that was asked.
    #[serde(default)]
    pub before: Option<bool>,
    /// What the judgment of the root before said (the root already met it).
    #[serde(default)]
    pub judged_before: Option<bool>,
    /// Whether the item's command held on the root before, when it ran on both sides.
    #[serde(default)]
    pub command_before: Option<bool>,
    /// What before and after say of the plan.
    #[serde(default)]
    pub weighed: Option<Evidence>,
}

/// An item's command as run on the outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckRun {
    pub command: String,
    /// `Some(true)`: it exited 0; `Some(false)`: it did not; `None`: it
    /// could not run (why in `shown`) and was set aside.
    pub held: Option<bool>,
    pub shown: String,
}

impl CheckRun {
    pub fn failed(&self) -> bool {
        self.held == Some(false)
    }
}

impl Judged {
    /// An item weighed before and after the plan. Its command is evidence
    /// when it ran on both sides and tells them apart: a target that failed
    /// before and passes after counts, one that fails after is a miss, a
    /// keep that fails after is broken. A miss stands whatever the
    /// judgments say: when both judgments of the outcome call the item done
    /// it is marked disputed, for the user to see, but no count of
    /// judgments outweighs a check that failed after. (A check the wrong
    /// way round, which the untouched root passes, is already left out as
    /// saying nothing.) A command that did not tell the sides apart, could
    /// not run, or is missing says nothing, and the judgments decide: the
    /// one of the root before, and the two of the outcome, which must agree.
    pub fn weigh(item: &Item, before: ItemVerdict, after: [ItemVerdict; 2], runs: [Option<CheckRun>; 2]) -> Self {
        let [a, b] = after;
        let agreed = a.done && b.done;
        let evidence = if !a.done || b.done { a.evidence } else { b.evidence };
        let [run_before, run_after] = runs;
        let ran = |run: &Option<CheckRun>| run.as_ref().and_then(|r| r.held);
        let judged = Evidence::of(item.kind, Some(before.done), Some(agreed));
        let base = Self {
            requirement: item.requirement.clone(),
            evidence,
            done: agreed,
            check: None,
            disputed: false,
            kind: item.kind,
            before: Some(before.done),
            judged_before: Some(before.done),
            command_before: None,
            weighed: Some(judged),
        };
        let (Some(held_before), Some(held_after), Some(run)) = (ran(&run_before), ran(&run_after), run_after.clone()) else {
            return Self { check: run_after, ..base };
        };
        let by_command = Evidence::of(item.kind, Some(held_before), Some(held_after));
        let base = Self { command_before: Some(held_before), ..base };
        let printed = run.shown.trim();
        let failed = match printed.is_empty() {
            true => format!("`{}` failed", run.command),
            false => format!("`{}` failed: {}", run.command, shorten(printed, 120)),
        };
        match by_command {
            Evidence::Flipped => Self { done: true, check: Some(run), before: Some(false), weighed: Some(Evidence::Flipped), ..base },
            e if e.refuses() => Self { evidence: failed, done: false, check: Some(run), disputed: agreed, before: Some(held_before), weighed: Some(e), ..base },
            _ => Self { check: Some(run), ..base },
        }
    }

    /// What the outcome alone says of it, without the root before: its
    /// command held after, or both judgments of the outcome called it done
    /// (a disputed failure included). The bench's measure of what the rule
    /// adds; never a verdict.
    pub fn done_after_alone(&self) -> bool {
        self.check.as_ref().and_then(|r| r.held) == Some(true) || self.done || self.disputed
    }

    /// The requirement marked done or not, for the user.
    pub fn line(&self) -> String {
        let disputed = if self.disputed { " — disputed: two judgments say it is done, and the failed check stands" } else { "" };
        let command = match (&self.check, self.command_before) {
            (Some(run), Some(before)) => format!(" [`{}`: {}]", run.command, before_after(Some(before), run.held)),
            _ => String::new(),
        };
        let weighed = match self.weighed {
            Some(w) => format!(" [{}: {}]", before_after(self.before, Some(self.done)), w.word()),
            None => String::new(),
        };
        format!("{} {}{disputed}{command}{weighed}", if self.done { "✓" } else { "✗" }, self.missing())
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

    /// Both judgments of the outcome the same verdict; the root before
    /// judged not done, and a command's run before failed.
    fn judged_once(requirement: String, verdict: ItemVerdict, check: Option<CheckRun>) -> Judged {
        let before = check.as_ref().map(|c| CheckRun { held: c.held.map(|_| false), ..c.clone() });
        let item = Item { requirement, check: String::new(), kind: Kind::Target };
        Judged::weigh(&item, ItemVerdict::default(), [verdict.clone(), verdict], [before, check])
    }

    #[test]
    fn a_requirement_not_done_is_missing_with_what_was_seen() {
        let judged = |evidence: &str, done| judged_once("count.txt holds the number of poems".into(), ItemVerdict { evidence: evidence.into(), done }, None);
        assert_eq!(
            judged("count.txt holds 2", true).line(),
            "✓ count.txt holds the number of poems (count.txt holds 2) [before ✗ → after ✓: made true by the plan]"
        );
        assert_eq!(judged("it holds a command", false).missing(), "count.txt holds the number of poems (it holds a command)");
        assert_eq!(judged(" ", false).missing(), "count.txt holds the number of poems");
    }

    fn item(from_goal: &str, requirement: &str) -> Requirement {
        Requirement { from_goal: from_goal.into(), requirement: requirement.into(), ..Requirement::default() }
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
        let requirements = |items: Vec<Item>| items.into_iter().map(|i| i.requirement).collect::<Vec<_>>();
        assert_eq!(
            requirements(list.into_items(goal)),
            vec!["a.txt exists", "the folder holds a.txt/b.txt", "folder b exists"],
            "padding from the same part about the same paths, and items quoting no part, are dropped"
        );
        assert_eq!(requirements(Checklist::default().into_items(goal)), vec![goal], "no item: the whole goal");
        let chained = Checklist {
            requirements: vec![
                item("Make a.txt and a folder b.", "a.txt exists"),
                item("a.txt exists", "a.txt holds hello"),
                item("a.txt holds hello", "folder b exists"),
                item("the file is tidy", "a.txt is sorted"),
            ],
        };
        assert_eq!(
            requirements(chained.into_items(goal)),
            vec!["a.txt exists", "a.txt holds hello", "folder b exists"],
            "an item quoting a kept requirement is kept; one quoting neither goal nor item is not"
        );
        let goal = "Make a folder notes with a file todo.txt listing 'buy milk' and 'call Anna'.";
        let tasks = Checklist {
            requirements: vec![
                item("a file todo.txt", "notes/todo.txt exists"),
                item("listing 'buy milk' and 'call Anna'", "todo.txt contains 'buy milk'"),
                item("listing 'buy milk' and 'call Anna'", "todo.txt contains 'call Anna'"),
                item("todo.txt contains the tasks", "todo.txt contains \"call Anna\""),
                item("todo.txt contains the tasks", "todo.txt contains 'buy bread'"),
                item("todo.txt contains the tasks", "todo.txt is not empty"),
            ],
        };
        assert_eq!(
            requirements(tasks.into_items(goal)),
            vec!["notes/todo.txt exists", "todo.txt contains 'buy milk'", "todo.txt contains 'call Anna'", "todo.txt contains \"call Anna\""],
            "each quoted task is an item; an unsourced item stays only when it quotes the goal's own text"
        );
    }

    #[test]
    fn a_command_naming_a_file_the_goal_never_names_is_set_aside() {
        let goal = "Write 'hello' into notes/a.txt.";
        let with = |check: &str| Checklist {
            requirements: vec![Requirement {
                from_goal: "notes/a.txt".into(),
                requirement: "notes/a.txt holds hello".into(),
                check: check.into(),
                ..Requirement::default()
            }],
        };
        assert_eq!(with("grep -qx hello notes/a.txt").into_items(goal)[0].check, "grep -qx hello notes/a.txt");
        assert_eq!(with("grep -q hello a.txt").into_items(goal)[0].check, "grep -q hello a.txt", "the file's name is the goal's");
        assert_eq!(with("grep -qx 'version = 2' setup.cfg").into_items(goal)[0].check, "", "a file from nowhere in the goal");
        assert_eq!(with("test -d notes").into_items(goal)[0].check, "test -d notes");
    }

    #[test]
    fn quoted_texts_open_after_a_space_and_skip_apostrophes() {
        assert_eq!(quoted_texts("the goal's file holds 'a b', \"c\" and `d`."), vec!["a b", "c", "d"]);
        assert_eq!(quoted_texts("it's Anna's list"), Vec::<String>::new());
    }

    #[test]
    fn a_failed_command_outranks_one_judge_and_one_that_could_not_run_is_set_aside() {
        let said_done = || ItemVerdict { evidence: "count.txt holds a number".into(), done: true };
        let run = |held| CheckRun { command: "test \"$(cat n.txt)\" = 3".into(), held, shown: String::new() };
        assert!(judged_once("n.txt holds 3".into(), said_done(), Some(run(Some(true)))).done);
        assert!(!judged_once("n.txt holds 3".into(), said_done(), Some(run(Some(false)))).done);
        assert!(judged_once("n.txt holds 3".into(), said_done(), Some(run(None))).done, "a command that could not run decides nothing");
        let refuted = judged_once("n.txt holds 3".into(), said_done(), Some(CheckRun { shown: "cat: n.txt: No such file".into(), ..run(Some(false)) }));
        assert!(!refuted.done && refuted.evidence.contains("failed: cat: n.txt: No such file"), "{refuted:?}");
    }

    #[test]
    fn both_judgments_must_agree_and_a_disputed_miss_still_refuses() {
        let verdict = |done| ItemVerdict { evidence: "the file holds NEW".into(), done };
        let run = |held| Some(CheckRun { command: "grep -q NEW a.txt".into(), held: Some(held), shown: String::new() });
        let item = Item { requirement: "a.txt holds NEW".into(), check: String::new(), kind: Kind::Target };
        let judged = Judged::weigh(&item, verdict(false), [verdict(true), verdict(false)], [None, None]);
        assert_eq!(judged.weighed, Some(Evidence::Missed), "one judgment of the outcome is not enough");
        assert_eq!(Judged::weigh(&item, verdict(false), [verdict(true), verdict(true)], [None, None]).weighed, Some(Evidence::Flipped));
        assert_eq!(Judged::weigh(&item, verdict(true), [verdict(true), verdict(true)], [None, None]).weighed, Some(Evidence::AlreadyTrue));
        let disputed = Judged::weigh(&item, verdict(false), [verdict(true), verdict(true)], [run(false), run(false)]);
        assert!(disputed.disputed && !disputed.done && disputed.weighed == Some(Evidence::Missed), "a disputed miss is still a miss: {disputed:?}");
        assert!(disputed.line().contains("disputed"), "{}", disputed.line());
        let inverted = Judged::weigh(&item, verdict(true), [verdict(true), verdict(true)], [run(true), run(true)]);
        assert_eq!(inverted.weighed, Some(Evidence::AlreadyTrue), "what held before says nothing of the plan");
        let flipped = Judged::weigh(&item, verdict(true), [verdict(false), verdict(false)], [run(false), run(true)]);
        assert_eq!(flipped.weighed, Some(Evidence::Flipped), "a command that tells the sides apart outranks the judgments");
        let idle = Judged::weigh(&item, verdict(false), [verdict(false), verdict(false)], [run(true), run(true)]);
        assert_eq!(idle.weighed, Some(Evidence::Missed), "a command the root already passed says nothing: the judgments decide");
        let keep = Item { kind: Kind::Keep, ..item.clone() };
        assert_eq!(Judged::weigh(&keep, verdict(true), [verdict(false), verdict(false)], [run(true), run(false)]).weighed, Some(Evidence::Broken));
    }

    #[test]
    fn items_journaled_before_commands_still_read() {
        let items: Vec<Item> = serde_json::from_str(r#"["a.txt exists", {"requirement": "b exists", "check": "test -d b"}]"#).unwrap();
        assert_eq!(items[0], Item { requirement: "a.txt exists".into(), check: String::new(), kind: Kind::Target });
        assert_eq!(items[1].check, "test -d b");
    }

    #[test]
    fn the_schema_asks_for_every_items_command() {
        let schema = serde_json::to_value(schemars::schema_for!(Checklist)).unwrap();
        let required = schema["$defs"]["Requirement"]["required"].to_string();
        assert!(required.contains("\"check\""), "{schema}");
    }
}

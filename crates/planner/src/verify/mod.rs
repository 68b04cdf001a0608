//! What VERIFY judges a trial's outcome by (`judge.rs` asks): the
//! checks read off the goal, and the verification of one trial.
//!
//! A plan that ran is not a goal met: a small model writes `ls | wc -l` as
//! the text of a file meant to hold a count, or writes one file where the
//! goal asked for one per note. So the planner looks at what the trial left
//! in its copy (`trial.rs`: the entries, the files the goal names and the
//! files the plan wrote, what its commands printed), checks what the goal
//! makes explicit (`goal::Expectation`), and has the judge decide each item
//! of the goal's checklist (`checklist.rs`) twice, independently, beside
//! the item's own command. Only an outcome that passes all of it is offered
//! for approval, and only an approved one reaches the root.

pub mod judge;

use agentloop_tools::Entry;
use serde::{Deserialize, Serialize};

use super::checklist::Judged;
use super::evidence::{self, before_after, Evidence, Kind};
use super::goal::{self, Expectation};
use agentloop_agent::text::shorten;

/// What a trial left: the entries, the files read, what commands printed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub entries: Vec<Entry>,
    /// The files read, with their text (shortened).
    pub files: Vec<FileSeen>,
    /// What each command of the plan printed.
    pub outputs: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSeen {
    pub path: String,
    pub text: String,
}

impl Outcome {
    /// The entry at `path`, or with `anywhere` the first whose name is
    /// `path`'s (the kind that fits preferred).
    fn entry(&self, path: &str, anywhere: bool, is_dir: Option<bool>) -> Option<&Entry> {
        let key = path.trim_start_matches("./").trim_end_matches('/');
        let named = |e: &&Entry| e.path == key || (anywhere && e.path.rsplit('/').next() == Some(key));
        let fits = |e: &&Entry| is_dir.is_none_or(|d| e.is_dir == d);
        self.entries.iter().filter(named).find(fits).or_else(|| self.entries.iter().find(named))
    }

    fn text_of(&self, path: &str) -> Option<&str> {
        let key = path.trim_start_matches("./");
        self.files.iter().find(|f| f.path == key).map(|f| f.text.as_str())
    }
}

/// One explicit expectation and whether it held.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub expected: String,
    pub held: bool,
    /// What was there instead, when it did not hold.
    pub saw: String,
    /// Whether it held on the root before the plan.
    #[serde(default)]
    pub before: Option<bool>,
    /// What before and after say of the plan (the goal's checks are targets).
    #[serde(default)]
    pub weighed: Option<Evidence>,
}

impl Check {
    pub fn line(&self) -> String {
        let weighed = match self.weighed {
            Some(w) => format!(" [{}: {}]", before_after(self.before, Some(self.held)), w.word()),
            None => String::new(),
        };
        if self.held {
            format!("✓ {}{weighed}", self.expected)
        } else {
            format!("✗ {} ({}){weighed}", self.expected, self.saw)
        }
    }

    fn refuses(&self) -> bool {
        self.weighed.map_or(!self.held, Evidence::refuses)
    }
}

/// VERIFY's judgement of one run plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    pub iteration: u32,
    pub checks: Vec<Check>,
    /// Each requirement of the goal's checklist as the model judged it;
    /// none when an explicit check already failed.
    #[serde(default)]
    pub judged: Vec<Judged>,
    pub met: bool,
    /// Whether the trial changed any file or folder.
    #[serde(default)]
    pub changed: bool,
}

impl Verification {
    /// Each check's evidence, the goal's own and the items'.
    pub fn evidence(&self) -> impl Iterator<Item = Evidence> + '_ {
        self.checks.iter().filter_map(|c| c.weighed).chain(self.judged.iter().filter_map(|j| j.weighed))
    }

    /// The rule (`evidence::met`) over every check.
    pub fn by_the_rule(&self) -> bool {
        evidence::met(self.changed, self.evidence())
    }

    /// The verdict read from the outcome alone, as before the rule: every
    /// goal check held after and every item was done after
    /// (`Judged::done_after_alone`), whatever the root before said and
    /// whether or not anything changed. Measured by the bench beside the
    /// rule; never a verdict.
    pub fn met_after_alone(&self) -> bool {
        (!self.checks.is_empty() || !self.judged.is_empty()) && self.checks.iter().all(|c| c.held) && self.judged.iter().all(Judged::done_after_alone)
    }

    /// Nothing changed and every check already held on the root as it was:
    /// the goal was met before anything ran.
    pub fn already_met(&self) -> bool {
        let all: Vec<Evidence> = self.evidence().collect();
        let judged_so = self.judged.iter().all(|j| j.judged_before == Some(true));
        !self.changed
            && judged_so
            && !all.is_empty()
            && all.iter().all(|e| matches!(e, Evidence::AlreadyTrue | Evidence::Kept))
            && all.contains(&Evidence::AlreadyTrue)
    }

    /// A failed command was set aside because both judgments contradicted it.
    pub fn disputed(&self) -> bool {
        self.judged.iter().any(|j| j.disputed)
    }

    pub fn missing(&self) -> Vec<String> {
        let checks = self.checks.iter().filter(|c| c.refuses()).map(|c| format!("{} ({})", c.expected, c.saw));
        let mut missing: Vec<String> = checks.chain(self.judged.iter().filter(|j| j.weighed.is_some_and(Evidence::refuses)).map(Judged::missing)).collect();
        if missing.is_empty() && !self.met && !self.already_met() {
            missing.push(if self.changed {
                "nothing the goal asks for was made true by the plan: every check either held before it ran or could not tell".to_string()
            } else {
                "the plan changed no file: what the goal asks for is not done".to_string()
            });
        }
        missing
    }

    /// Every explicit check and judged requirement, one line each.
    pub fn lines(&self) -> Vec<String> {
        self.checks.iter().map(Check::line).chain(self.judged.iter().map(Judged::line)).collect()
    }

    /// One line for the summary.
    pub fn summary(&self) -> String {
        let held = self.checks.iter().filter(|c| c.held).count();
        let checks = if self.checks.is_empty() { "no explicit check".to_string() } else { format!("{held} of {} check(s) held", self.checks.len()) };
        let judged = if self.judged.is_empty() {
            String::new()
        } else {
            format!("; {} of {} requirement(s) judged done", self.judged.iter().filter(|j| j.done).count(), self.judged.len())
        };
        let flipped = self.evidence().filter(|e| *e == Evidence::Flipped).count();
        let head = if self.met {
            format!("verified ({flipped} check(s) made true by the plan)")
        } else if self.already_met() {
            "already met: every check passed before anything ran".to_string()
        } else {
            "not verified".to_string()
        };
        let mut line = format!("{head}: {checks}{judged}");
        if !self.met && !self.already_met() {
            line.push_str(&format!("; missing: {}", self.missing().join("; ")));
        }
        line
    }
}

/// The goal's checks weighed: each run on the root before the plan and on
/// its outcome; every one is a target (the goal asks for it).
pub fn weighed_checks(expect: &[Expectation], before: &Outcome, after: &Outcome) -> Vec<Check> {
    let was = checks(expect, before);
    checks(expect, after)
        .into_iter()
        .zip(was)
        .map(|(now, was)| Check { before: Some(was.held), weighed: Some(Evidence::of(Kind::Target, Some(was.held), Some(now.held))), ..now })
        .collect()
}

/// The goal's expectations against what was observed.
pub fn checks(expect: &[Expectation], seen: &Outcome) -> Vec<Check> {
    expect
        .iter()
        .map(|e| {
            let kind = match e {
                Expectation::Exists { folder: true, .. } => Some(true),
                Expectation::Exists { file: true, .. } | Expectation::Holds { .. } => Some(false),
                _ => None,
            };
            let found = seen.entry(e.path(), e.anywhere(), kind);
            let (held, saw) = match e {
                Expectation::Exists { folder, file, .. } => match found {
                    None => (false, "it does not exist".to_string()),
                    Some(f) if *folder && !f.is_dir => (false, "it is a file".to_string()),
                    Some(f) if *file && f.is_dir => (false, "it is a folder".to_string()),
                    Some(_) => (true, String::new()),
                },
                Expectation::Absent { .. } => (found.is_none(), "it is still there".to_string()),
                Expectation::Holds { text, .. } => match found.and_then(|f| seen.text_of(&f.path)) {
                    Some(got) if goal::holds(got, text) => (true, String::new()),
                    Some(got) => (false, format!("it holds \"{}\"", shorten(got.trim(), 120))),
                    None => (false, "it could not be read".to_string()),
                },
            };
            Check { expected: e.describe(), held, saw: if held { String::new() } else { saw }, before: None, weighed: None }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(entries: &[(&str, bool)], files: &[(&str, &str)]) -> Outcome {
        Outcome {
            entries: entries.iter().map(|(p, d)| Entry { path: p.to_string(), is_dir: *d }).collect(),
            files: files.iter().map(|(p, t)| FileSeen { path: p.to_string(), text: t.to_string() }).collect(),
            outputs: Vec::new(),
        }
    }

    #[test]
    fn each_expectation_is_checked_against_what_was_seen() {
        let expect = vec![
            Expectation::Exists { path: "docs".into(), folder: true, file: false, anywhere: false },
            Expectation::Holds { path: "count.txt".into(), text: "3".into(), anywhere: false },
            Expectation::Absent { path: "old.txt".into() },
        ];
        let got = checks(&expect, &seen(&[("docs", false), ("count.txt", false), ("old.txt", false)], &[("count.txt", "ls | wc -l")]));
        assert_eq!(got.iter().map(|c| c.held).collect::<Vec<_>>(), vec![false, false, false]);
        assert_eq!(got[0].saw, "it is a file");
        assert!(got[1].line().contains("ls | wc -l"), "{}", got[1].line());
        let good = checks(&expect, &seen(&[("docs", true), ("count.txt", false)], &[("count.txt", "3\n")]));
        assert!(good.iter().all(|c| c.held));
        let anywhere = vec![Expectation::Holds { path: "a.txt".into(), text: "hello".into(), anywhere: true }];
        let nested = seen(&[("notes", true), ("notes/a.txt", false)], &[("notes/a.txt", "hello")]);
        assert!(checks(&anywhere, &nested)[0].held, "a name the goal puts in no folder may be in any");
        assert!(!checks(&expect[..1], &seen(&[("x/docs", true)], &[]))[0].held, "a path the goal gives is that path");
    }

    #[test]
    fn a_requirement_not_done_is_what_is_missing() {
        let judged = |evidence: &str, done, weighed| Judged {
            requirement: "run the script".into(),
            evidence: evidence.into(),
            done,
            weighed: Some(weighed),
            before: Some(false),
            ..Judged::default()
        };
        let v = Verification { iteration: 1, judged: vec![judged("", false, Evidence::Missed)], changed: true, ..Verification::default() };
        assert_eq!(v.missing(), vec!["run the script"]);
        assert!(v.summary().starts_with("not verified: no explicit check; 0 of 1 requirement(s) judged done; missing: run the script"), "{}", v.summary());
        let v = Verification { iteration: 1, judged: vec![judged("hello", true, Evidence::Flipped)], met: true, changed: true, ..Verification::default() };
        assert_eq!(v.lines(), vec!["✓ run the script (hello) [before ✗ → after ✓: made true by the plan]"]);
    }
}

//! What a check says about a plan: only a check that tells the root as it
//! was from the outcome is evidence. Each check runs twice, on the root
//! before the plan (the trial's fresh copy, before any step) and on the
//! trial's outcome.
//!
//! A test that already passes before a fix is no evidence for the fix: a
//! check the goal asks to become true (a *target*) counts only if it fails
//! before and passes after. One that already passes says nothing (where an
//! inverted check, "the file must still hold the old word", ends up), and
//! one that fails on both is a miss. A check of what must stay true (a
//! *keep*) must pass on both: failing after, it refuses the plan; failing
//! before, it was mislabelled and says nothing. A check that cannot run
//! (bad syntax, grep's exit 2, a missing program, a write the read-only
//! view refused) is left out, never counted either way.

use agentloop_core::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a check is of what the goal changes or of what it keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// What the goal asks to become true.
    #[default]
    Target,
    /// What must stay true.
    Keep,
}

/// What one check, run before and after, says of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Evidence {
    /// A target that failed before and passes after: the plan made it true.
    Flipped,
    /// A target that already passed before: it says nothing of the plan.
    AlreadyTrue,
    /// A target that fails after: the plan did not make it true.
    Missed,
    /// A keep that passed on both.
    Kept,
    /// A keep that passed before and fails after: the plan broke it.
    Broken,
    /// A keep that already failed before: not a keep; left out.
    Mislabelled,
    /// The check could not run on one side or both: left out.
    Unrunnable,
}

impl Evidence {
    /// What a check of `kind` says when it held (`Some(true)`), failed
    /// (`Some(false)`) or could not run (`None`) before and after.
    pub fn of(kind: Kind, before: Option<bool>, after: Option<bool>) -> Self {
        let (Some(before), Some(after)) = (before, after) else { return Self::Unrunnable };
        match (kind, before, after) {
            (Kind::Target, false, true) => Self::Flipped,
            (Kind::Target, true, _) => Self::AlreadyTrue,
            (Kind::Target, false, false) => Self::Missed,
            (Kind::Keep, true, true) => Self::Kept,
            (Kind::Keep, true, false) => Self::Broken,
            (Kind::Keep, false, _) => Self::Mislabelled,
        }
    }

    /// Whether it keeps the plan from being met.
    pub fn refuses(self) -> bool {
        matches!(self, Self::Missed | Self::Broken)
    }

    /// In words, for the verification's lines.
    pub fn word(self) -> &'static str {
        match self {
            Self::Flipped => "made true by the plan",
            Self::AlreadyTrue => "already true before the plan: left out",
            Self::Missed => "not made true",
            Self::Kept => "kept",
            Self::Broken => "broken by the plan",
            Self::Mislabelled => "already false before the plan, so not something to keep: left out",
            Self::Unrunnable => "could not run: left out",
        }
    }
}

/// The rule, and nothing else: met with at least one target the plan made
/// true, no keep broken and no target missed, by a plan that changed a file.
pub fn met(changed: bool, evidence: impl IntoIterator<Item = Evidence>) -> bool {
    let mut flipped = false;
    for e in evidence {
        if e.refuses() {
            return false;
        }
        flipped |= e == Evidence::Flipped;
    }
    changed && flipped
}

/// Before and after side by side: `✗ → ✓`.
pub fn before_after(before: Option<bool>, after: Option<bool>) -> String {
    let mark = |held: Option<bool>| match held {
        Some(true) => "✓",
        Some(false) => "✗",
        None => "?",
    };
    format!("before {} → after {}", mark(before), mark(after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_counts_only_when_it_flips_and_a_keep_only_when_it_holds_on_both() {
        use Evidence::*;
        let t = |b, a| Evidence::of(Kind::Target, Some(b), Some(a));
        let k = |b, a| Evidence::of(Kind::Keep, Some(b), Some(a));
        assert_eq!([t(false, true), t(true, true), t(true, false), t(false, false)], [Flipped, AlreadyTrue, AlreadyTrue, Missed]);
        assert_eq!([k(true, true), k(true, false), k(false, true), k(false, false)], [Kept, Broken, Mislabelled, Mislabelled]);
        assert_eq!(Evidence::of(Kind::Target, None, Some(true)), Unrunnable);
    }

    #[test]
    fn met_needs_a_flip_no_miss_no_break_and_a_change() {
        use Evidence::*;
        assert!(met(true, [Flipped, AlreadyTrue, Kept, Unrunnable, Mislabelled]));
        assert!(!met(true, [AlreadyTrue, Kept]), "nothing flipped: no evidence");
        assert!(!met(true, [Flipped, Missed]), "a miss is never outweighed");
        assert!(!met(true, [Flipped, Broken]), "a broken keep refuses the plan");
        assert!(!met(false, [Flipped]), "an outcome that changed nothing is not a success");
    }
}

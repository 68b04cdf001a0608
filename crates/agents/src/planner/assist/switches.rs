//! Each assist by name, so that one can be left out while the others stay
//! on (`--without-assist checks,mends`): what a single assist adds to the
//! goals met is measured by running without it.

use crate::planner::rejection::Rule;

/// One of the planner's assists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assist {
    /// The names the goal gives, listed in the plan prompt.
    Names,
    /// Worked examples as earlier turns of the plan prompt.
    Examples,
    /// After a plan refused for its paths, the next decoded with only the
    /// goal's paths (and what exists) to choose from.
    Held,
    /// Refusals of a plan that misses a name or a text the goal gives, or
    /// borrows one from a worked example.
    Checks,
    /// Slips the checks name exactly, repaired without another plan.
    Mends,
}

impl Assist {
    pub const ALL: [Assist; 5] = [Assist::Names, Assist::Examples, Assist::Held, Assist::Checks, Assist::Mends];
    /// Those that act on a plan once it is written (the others shape every
    /// prompt): a session's record shows whether they acted.
    pub const ACTING: [Assist; 3] = [Assist::Mends, Assist::Held, Assist::Checks];

    pub fn name(self) -> &'static str {
        match self {
            Assist::Names => "names",
            Assist::Examples => "examples",
            Assist::Held => "held",
            Assist::Checks => "checks",
            Assist::Mends => "mends",
        }
    }

    /// The refusals only this assist makes, by rule: a session's record
    /// shows where the checks acted by these.
    pub fn rules(self) -> &'static [Rule] {
        match self {
            Assist::Checks => &[Rule::GoalPath, Rule::GoalText, Rule::ExampleText],
            _ => &[],
        }
    }

    /// Whether `without` (a comma-separated list of names) leaves this one out.
    pub fn left_out_by(self, without: &str) -> bool {
        without.split(',').any(|n| n.trim() == self.name())
    }
}

/// Checks a comma-separated list of assists to leave out: the list as
/// given, or one sentence naming the word that is not an assist.
pub fn parse_without(text: &str) -> Result<String, String> {
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if !Assist::ALL.iter().any(|a| a.name() == word) {
            let names: Vec<&str> = Assist::ALL.iter().map(|a| a.name()).collect();
            return Err(format!("`{word}` is not an assist: name some of {}, separated by commas", names.join(", ")));
        }
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_leaves_out_exactly_the_assists_it_names() {
        let without = parse_without("checks, mends").unwrap();
        assert!(Assist::Checks.left_out_by(&without) && Assist::Mends.left_out_by(&without));
        assert!(!Assist::Examples.left_out_by(&without) && !Assist::Names.left_out_by(""));
        assert!(parse_without("check").unwrap_err().contains("`check` is not an assist"));
    }
}

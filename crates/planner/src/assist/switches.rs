//! Each assist by name, so that one can be left out while the others stay
//! on (`--without-assist examples`): what a single assist adds to the
//! goals met is measured by running without it.

/// One of the planner's assists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assist {
    /// The names the goal gives, listed in the plan prompt.
    Names,
    /// Worked examples as earlier turns of the plan prompt.
    Examples,
    /// Slips a rule names exactly, repaired without another plan.
    Mends,
}

impl Assist {
    pub const ALL: [Assist; 3] = [Assist::Names, Assist::Examples, Assist::Mends];

    pub fn name(self) -> &'static str {
        match self {
            Assist::Names => "names",
            Assist::Examples => "examples",
            Assist::Mends => "mends",
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
        let without = parse_without("names, examples").unwrap();
        assert!(Assist::Names.left_out_by(&without) && Assist::Examples.left_out_by(&without));
        assert!(!Assist::Examples.left_out_by("names") && !Assist::Names.left_out_by(""));
        assert!(parse_without("example").unwrap_err().contains("`example` is not an assist"));
        assert!(parse_without("held").unwrap_err().contains("name some of names, examples, mends"));
    }
}

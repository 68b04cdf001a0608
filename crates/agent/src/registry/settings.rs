//! One declaration per setting. An agent declares its settings once, in a
//! struct written with [`declare_settings!`]: each field with its
//! doc (the flag's help and the schema's description), its flag and its one
//! default. From that one declaration come the `agentloop run` flag, the
//! key of the agent's `agentloop.toml` table (the field's name), the field
//! of its JSON input (the name in camelCase) and the default the
//! flag, the table and a JSON input all fall back on. Adding a setting
//! touches one place.
//!
//! Which value wins: a flag given on the command line (or its environment
//! variable), then the table, then the default ([`merged`]). Values from
//! the table or a JSON input pass the flag's own value parser ([`check`]),
//! so a limit such as "at least 1" holds wherever the value came from.

use agentloop_core::{Error, JsonSchema, Result};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Args, Command, FromArgMatches};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// What a settings struct is: `declare_settings!` derives all of it.
pub trait Settings: Args + FromArgMatches + Serialize + DeserializeOwned + JsonSchema + Default + Clone + Send + Sync + 'static {}

impl<T: Args + FromArgMatches + Serialize + DeserializeOwned + JsonSchema + Default + Clone + Send + Sync + 'static> Settings for T {}

/// Declares a settings struct: each field as `name: Type = default,` under
/// its doc comment and `#[arg(long …)]`. The default is written once and
/// becomes both the flag's `default_value_t` and the struct's `Default`, so
/// a table or a JSON input that leaves a setting out gets the same value as
/// a command line that does.
#[macro_export]
macro_rules! declare_settings {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                pub $field:ident: $ty:ty = $default:expr,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, clap::Args, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase", default)]
        pub struct $name {
            $(
                $(#[$field_meta])*
                #[arg(default_value_t = $default)]
                pub $field: $ty,
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }
    };
}
pub use crate::declare_settings;

declare_settings! {
    /// The settings of an agent that has none.
    pub struct NoSettings {}
}

/// The settings of `agent` from the flags in `matches` (explicitly given
/// ones only), over its `table` from `agentloop.toml`, over the defaults.
/// A key the table does not declare, or a value its flag would refuse, is
/// one sentence naming it.
pub fn merged<S: Settings>(agent: &str, matches: &ArgMatches, table: Option<&toml::Value>) -> Result<S> {
    let from_flags = S::from_arg_matches(matches).map_err(|e| Error::other(e.to_string()))?;
    let Value::Object(mut values) = serde_json::to_value(&from_flags)? else {
        return Err(Error::other(format!("the settings of {agent} are not a table of values")));
    };
    let command = declared::<S>();
    let table = match table {
        None => Map::new(),
        Some(toml::Value::Table(t)) => serde_json::to_value(t)?.as_object().cloned().unwrap_or_default(),
        Some(_) => return Err(Error::other(format!("[{agent}] in agentloop.toml must be a table of settings"))),
    };
    for (key, value) in table {
        if command.get_arguments().all(|a| a.get_id().as_str() != key) {
            let known: Vec<&str> = command.get_arguments().map(|a| a.get_id().as_str()).collect();
            return Err(Error::other(format!("the [{agent}] table in agentloop.toml has no setting `{key}`: its settings are {}", known.join(", "))));
        }
        if matches!(matches.value_source(&key), Some(ValueSource::CommandLine | ValueSource::EnvVariable)) {
            continue;
        }
        values.insert(camel_case(&key), value);
    }
    let settings: S =
        serde_json::from_value(Value::Object(values)).map_err(|e| Error::other(format!("the [{agent}] table in agentloop.toml is not valid: {e}")))?;
    check(&settings, &format!("the [{agent}] table in agentloop.toml"))?;
    Ok(settings)
}

/// Holds each value of `settings` to its flag's parser (a range, a list of
/// choices) by giving them all to the flags; `source` says where the values
/// came from, for the error.
pub fn check<S: Settings>(settings: &S, source: &str) -> Result<()> {
    let command = declared::<S>();
    let values = serde_json::to_value(settings)?;
    let mut args: Vec<String> = Vec::new();
    for arg in command.get_arguments().filter(|a| matches!(a.get_action(), ArgAction::Set)) {
        let (Some(long), Some(value)) = (arg.get_long(), values.get(camel_case(arg.get_id().as_str()))) else { continue };
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => continue,
        };
        args.push(format!("--{long}={text}"));
    }
    match command.try_get_matches_from(&args) {
        Ok(_) => Ok(()),
        Err(e) => {
            let why = e.to_string();
            let why = why.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
            Err(Error::other(format!("{source}: {why}")))
        }
    }
}

/// A value parser for a fraction from 0 to 1 (a threshold, a target).
pub fn fraction<T: std::str::FromStr + PartialOrd + From<f32>>(text: &str) -> std::result::Result<T, String> {
    match text.trim().parse::<T>() {
        Ok(v) if v >= T::from(0.0) && v <= T::from(1.0) => Ok(v),
        _ => Err(format!("`{text}` is not a number from 0 to 1")),
    }
}

/// The settings' flags as a command of their own.
fn declared<S: Settings>() -> Command {
    S::augment_args(Command::new("settings").no_binary_name(true))
}

/// `max_iterations` → `maxIterations`: a table key as its JSON field.
fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    declare_settings! {
        /// Settings of a test agent.
        pub struct Sample {
            /// Turns at most.
            #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
            pub max_turns: u32 = 5,
            /// Judge each turn.
            #[arg(long = "no-judge", action = clap::ArgAction::SetFalse)]
            pub judge: bool = true,
            /// Where answers go.
            #[arg(long)]
            pub target: String = "out".to_string(),
        }
    }

    /// The defaults as the flags declare them (what `S::default()` also gives).
    fn declared_defaults<S: Settings>() -> Result<S> {
        let matches = declared::<S>().try_get_matches_from(Vec::<std::ffi::OsString>::new()).map_err(|e| Error::other(e.to_string()))?;
        S::from_arg_matches(&matches).map_err(|e| Error::other(e.to_string()))
    }

    fn matches(args: &[&str]) -> ArgMatches {
        Sample::augment_args(Command::new("run")).try_get_matches_from(std::iter::once("run").chain(args.iter().copied())).unwrap()
    }

    fn table(text: &str) -> toml::Value {
        text.parse::<toml::Table>().map(toml::Value::Table).unwrap()
    }

    #[test]
    fn the_one_default_is_the_flags_and_the_structs() {
        assert_eq!(declared_defaults::<Sample>().unwrap(), Sample::default());
        assert_eq!(Sample::default(), Sample { max_turns: 5, judge: true, target: "out".into() });
    }

    #[test]
    fn a_given_flag_wins_over_the_table_which_wins_over_the_default() {
        let t = table("max_turns = 7\njudge = false\ntarget = \"there\"");
        let got: Sample = merged("sample", &matches(&["--max-turns", "9"]), Some(&t)).unwrap();
        assert_eq!(got, Sample { max_turns: 9, judge: false, target: "there".into() });
        let got: Sample = merged("sample", &matches(&[]), None).unwrap();
        assert_eq!(got, Sample::default());
    }

    #[test]
    fn a_json_input_uses_camel_case_and_falls_back_on_the_defaults() {
        let got: Sample = serde_json::from_value(serde_json::json!({"maxTurns": 2})).unwrap();
        assert_eq!(got, Sample { max_turns: 2, ..Sample::default() });
    }

    #[test]
    fn an_unknown_key_or_a_refused_value_is_one_sentence() {
        let err = merged::<Sample>("sample", &matches(&[]), Some(&table("turns = 2"))).unwrap_err().to_string();
        assert!(err.contains("has no setting `turns`") && err.contains("max_turns, judge, target"), "{err}");
        let err = merged::<Sample>("sample", &matches(&[]), Some(&table("max_turns = 0"))).unwrap_err().to_string();
        assert!(err.contains("invalid value '0' for '--max-turns"), "{err}");
        let err = merged::<Sample>("sample", &matches(&[]), Some(&table("max_turns = \"x\""))).unwrap_err().to_string();
        assert!(err.contains("is not valid"), "{err}");
        let err = check(&Sample { max_turns: 0, ..Sample::default() }, "the input").unwrap_err().to_string();
        assert!(err.starts_with("the input: invalid value '0' for '--max-turns"), "{err}");
    }
}

//! The planner's action language: one action per line, a verb in capitals
//! and its arguments. The README has the grammar; in short:
//!
//! ```text
//! CREATE_DIR <path>
//! WRITE_FILE <path> <content>        content: the rest of the line, \n for a newline
//! READ_FILE <path>
//! LIST_DIR <path> AS <key>           stores the entries' absolute paths under <key>
//! FOR_EACH <key> <action>            {item}: each stored absolute path, {name}: its file name
//! REPEAT <n> <action>                {index}: 0..n-1, {index:03d}: zero-padded to 3,
//!                                    {number}: 1..n (and {number:03d})
//! RUN_COMMAND <command>              run by the configured shell in the root
//! CALL_TOOL <server> <tool> <json>   a tool of the session's MCP servers, with its
//!                                    arguments as one JSON object (only when it has some)
//! ```
//!
//! A path is one word or a double-quoted string. Actions are parsed before
//! anything runs, so a plan with one unparsable action runs nothing.

use std::fmt;

use agentloop_core::JsonSchema;
use serde::{Deserialize, Serialize};

/// The verbs, in the order the prompt lists them.
pub const VERBS: [&str; 7] = ["CREATE_DIR", "WRITE_FILE", "READ_FILE", "LIST_DIR", "FOR_EACH", "REPEAT", "RUN_COMMAND"];

/// A path in the action language: one word or a double-quoted string.
/// Neither it nor any other part of a line may hold a line break, `\r`
/// included: a model held to the grammar must not write a line that does
/// not parse.
const ANY_PATH: &str = r#"("[^"\r\n]+"|[^ "\r\n]+)"#;

/// A key LIST_DIR stores and FOR_EACH reads, up to 40 characters in the
/// grammar: a model can otherwise run a key on for hundreds of characters
/// with nothing to stop it.
const KEY: &str = "[A-Za-z_][A-Za-z0-9_]{0,39}";

/// The grammar of one action line as a regular expression, for constrained
/// decoding: a model whose tokens are masked by it cannot write an action
/// that does not parse (LIST_DIR without `AS key`, REPEAT without a count,
/// a verb of its own). What it means — paths, keys, content — is still
/// judged by the rules. FOR_EACH may not run CREATE_DIR, and neither loop
/// may hold another.
pub fn pattern() -> String {
    let plain = format!(r"(READ_FILE {ANY_PATH}|WRITE_FILE {ANY_PATH} [^\r\n]+|LIST_DIR {ANY_PATH} AS {KEY}|RUN_COMMAND [^\r\n]+)");
    let create = format!("CREATE_DIR {ANY_PATH}|");
    format!("^({create}{plain}|FOR_EACH {KEY} {plain}|REPEAT [1-9][0-9]{{0,2}} ({create}{plain}))$")
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    CreateDir {
        path: String,
    },
    WriteFile {
        path: String,
        content: String,
    },
    ReadFile {
        path: String,
    },
    ListDir {
        path: String,
        key: String,
    },
    ForEach {
        key: String,
        body: Box<Action>,
    },
    Repeat {
        times: u32,
        body: Box<Action>,
    },
    RunCommand {
        command: String,
    },
    /// An MCP server's tool with its arguments (a JSON object, compact).
    CallTool {
        server: String,
        tool: String,
        arguments: String,
    },
}

/// `REPEAT` beyond this many is refused: a plan is not a load generator.
pub const MAX_REPEAT: u32 = 1000;

impl Action {
    /// The command lines it runs: RUN_COMMAND's, or its loop body's.
    pub fn commands(&self) -> Vec<String> {
        match self {
            Action::RunCommand { command } => vec![command.clone()],
            Action::ForEach { body, .. } | Action::Repeat { body, .. } => body.commands(),
            _ => Vec::new(),
        }
    }

    /// Parses one action line. The error says what is wrong in words the
    /// model can act on.
    pub fn parse(line: &str) -> Result<Action, String> {
        if line.contains('\n') || line.contains('\r') {
            return Err("an action must be a single line (write \\n inside WRITE_FILE content for a newline)".into());
        }
        let line = line.trim();
        let (verb, rest) = split_word(line);
        let rest = rest.trim_start();
        match verb {
            "CREATE_DIR" => Ok(Action::CreateDir { path: only_path(verb, rest)? }),
            "READ_FILE" => Ok(Action::ReadFile { path: only_path(verb, rest)? }),
            "WRITE_FILE" => {
                let (path, content) = take_path(verb, rest)?;
                Ok(Action::WriteFile { path, content: unescape(content.trim_start()) })
            }
            "LIST_DIR" => {
                let (path, after) = take_path(verb, rest)?;
                let (as_word, key) = split_word(after.trim_start());
                if as_word != "AS" || !is_key(key.trim()) {
                    return Err(format!("LIST_DIR needs `AS <key>` after the path, e.g. `LIST_DIR {path} AS files` (got `{line}`)"));
                }
                Ok(Action::ListDir { path, key: key.trim().to_string() })
            }
            "FOR_EACH" => {
                let (key, body) = split_word(rest);
                if !is_key(key) {
                    return Err(format!("FOR_EACH needs a key made of letters, digits and _ first, e.g. `FOR_EACH files READ_FILE {{item}}` (got `{line}`)"));
                }
                Ok(Action::ForEach { key: key.to_string(), body: Box::new(Self::nested(verb, body)?) })
            }
            "REPEAT" => {
                let (count, body) = split_word(rest);
                let times: u32 =
                    count.parse().map_err(|_| format!("REPEAT needs a whole number first, e.g. `REPEAT 3 CREATE_DIR dir_{{index}}` (got `{line}`)"))?;
                if times == 0 || times > MAX_REPEAT {
                    return Err(format!("REPEAT takes 1 to {MAX_REPEAT} (got {times})"));
                }
                Ok(Action::Repeat { times, body: Box::new(Self::nested(verb, body)?) })
            }
            "RUN_COMMAND" if !rest.trim().is_empty() => Ok(Action::RunCommand { command: rest.trim().to_string() }),
            "RUN_COMMAND" => Err("RUN_COMMAND needs a command after it".into()),
            "CALL_TOOL" => {
                let (server, after) = split_word(rest);
                let (tool, arguments) = split_word(after);
                let arguments: serde_json::Value = serde_json::from_str(arguments.trim())
                    .map_err(|_| format!("CALL_TOOL needs a server, a tool and the arguments as one JSON object, e.g. `CALL_TOOL files read {{\"path\": \"a.txt\"}}` (got `{line}`)"))?;
                if server.is_empty() || tool.is_empty() || !arguments.is_object() {
                    return Err(format!("CALL_TOOL needs a server, a tool and the arguments as one JSON object (got `{line}`)"));
                }
                Ok(Action::CallTool { server: server.to_string(), tool: tool.to_string(), arguments: arguments.to_string() })
            }
            "" => Err("the action is empty".into()),
            other => Err(format!("`{other}` is not an allowed action (allowed: {})", VERBS.join(", "))),
        }
    }

    fn nested(verb: &str, body: &str) -> Result<Action, String> {
        if body.trim().is_empty() {
            return Err(format!("{verb} needs an action to run after its argument"));
        }
        Self::parse(body).map_err(|e| format!("the action inside {verb}: {e}"))
    }

    /// The path the action names itself (a loop's body names its own).
    pub fn path(&self) -> Option<&str> {
        match self {
            Action::CreateDir { path } | Action::ReadFile { path } | Action::WriteFile { path, .. } | Action::ListDir { path, .. } => Some(path),
            Action::ForEach { .. } | Action::Repeat { .. } | Action::RunCommand { .. } | Action::CallTool { .. } => None,
        }
    }

    pub fn verb(&self) -> &'static str {
        match self {
            Action::CreateDir { .. } => "CREATE_DIR",
            Action::WriteFile { .. } => "WRITE_FILE",
            Action::ReadFile { .. } => "READ_FILE",
            Action::ListDir { .. } => "LIST_DIR",
            Action::ForEach { .. } => "FOR_EACH",
            Action::Repeat { .. } => "REPEAT",
            Action::RunCommand { .. } => "RUN_COMMAND",
            Action::CallTool { .. } => "CALL_TOOL",
        }
    }

    /// The action with `vars` filled into its paths, content and command
    /// (`{item}`, `{name}`, `{index}`, `{index:03d}`, `{number}`). A nested loop keeps
    /// its own placeholders for when it runs.
    pub fn fill(&self, vars: &Vars) -> Action {
        let f = |text: &str| vars.fill(text);
        match self {
            Action::CreateDir { path } => Action::CreateDir { path: f(path) },
            Action::WriteFile { path, content } => Action::WriteFile { path: f(path), content: f(content) },
            Action::ReadFile { path } => Action::ReadFile { path: f(path) },
            Action::ListDir { path, key } => Action::ListDir { path: f(path), key: key.clone() },
            Action::ForEach { key, body } => Action::ForEach { key: key.clone(), body: body.clone() },
            Action::Repeat { times, body } => Action::Repeat { times: *times, body: body.clone() },
            Action::RunCommand { command } => Action::RunCommand { command: f(command) },
            Action::CallTool { server, tool, arguments } => Action::CallTool { server: server.clone(), tool: tool.clone(), arguments: f(arguments) },
        }
    }
}

/// Kept in state as the text it parses from (one line, the plan's own
/// form), so a journaled plan reads as written.
impl serde::Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for Action {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Action::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::CreateDir { path } | Action::ReadFile { path } => write!(f, "{} {}", self.verb(), quote(path)),
            Action::WriteFile { path, content } => write!(f, "WRITE_FILE {} {}", quote(path), content.replace('\\', "\\\\").replace('\n', "\\n")),
            Action::ListDir { path, key } => write!(f, "LIST_DIR {} AS {key}", quote(path)),
            Action::ForEach { key, body } => write!(f, "FOR_EACH {key} {body}"),
            Action::Repeat { times, body } => write!(f, "REPEAT {times} {body}"),
            Action::RunCommand { command } => write!(f, "RUN_COMMAND {command}"),
            Action::CallTool { server, tool, arguments } => write!(f, "CALL_TOOL {server} {tool} {arguments}"),
        }
    }
}

/// The values a loop fills in.
#[derive(Clone, Debug, Default)]
pub struct Vars {
    pub item: Option<String>,
    pub index: Option<u32>,
}

impl Vars {
    pub fn item(path: &str) -> Self {
        Self { item: Some(path.to_string()), index: None }
    }

    pub fn index(i: u32) -> Self {
        Self { item: None, index: Some(i) }
    }

    pub(crate) fn fill(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open..];
            let Some(close) = after.find('}') else {
                break;
            };
            match self.value(&after[1..close]) {
                Some(v) => {
                    out.push_str(&v);
                    rest = &after[close + 1..];
                }
                None => {
                    // Not a placeholder (JSON in content, say): keep the brace, look further.
                    out.push('{');
                    rest = &after[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }

    fn value(&self, placeholder: &str) -> Option<String> {
        match placeholder {
            "item" => self.item.clone(),
            "name" => self.item.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p).to_string()),
            "index" => self.index.map(|i| i.to_string()),
            "number" => self.index.map(|i| (i + 1).to_string()),
            _ => {
                // {index:03d}, {number:03d}: zero-padded to the width given.
                let (i, spec) = match placeholder.split_once(':')? {
                    ("index", spec) => (self.index?, spec),
                    ("number", spec) => (self.index? + 1, spec),
                    _ => return None,
                };
                let spec = spec.strip_suffix('d')?;
                let width: usize = spec.trim_start_matches('0').parse().ok().or_else(|| (spec == "0").then_some(0))?;
                Some(if spec.starts_with('0') { format!("{i:0width$}") } else { format!("{i:width$}") })
            }
        }
    }
}

fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    }
}

/// A path (one word, or a double-quoted string) and what follows it.
fn take_path<'a>(verb: &str, text: &'a str) -> Result<(String, &'a str), String> {
    let text = text.trim_start();
    if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted.find('"').ok_or_else(|| format!("{verb}: the quoted path has no closing quote"))?;
        return Ok((quoted[..end].to_string(), &quoted[end + 1..]));
    }
    let (path, rest) = split_word(text);
    if path.is_empty() {
        return Err(format!("{verb} needs a path"));
    }
    Ok((path.to_string(), rest))
}

fn only_path(verb: &str, text: &str) -> Result<String, String> {
    let (path, rest) = take_path(verb, text)?;
    if !rest.trim().is_empty() {
        return Err(format!("{verb} takes only a path (quote a path with spaces): `{}` is left over", rest.trim()));
    }
    Ok(path)
}

fn is_key(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn quote(path: &str) -> String {
    if path.contains(char::is_whitespace) {
        format!("\"{path}\"")
    } else {
        path.to_string()
    }
}

/// `\n`, `\t` and `\\` in WRITE_FILE content.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The shell RUN_COMMAND runs in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Shell {
    #[default]
    Sh,
    Powershell,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verb_parses() {
        assert_eq!(Action::parse("CREATE_DIR notes").unwrap(), Action::CreateDir { path: "notes".into() });
        assert_eq!(
            Action::parse("WRITE_FILE \"my notes/a.txt\" hello\\nworld").unwrap(),
            Action::WriteFile { path: "my notes/a.txt".into(), content: "hello\nworld".into() }
        );
        assert_eq!(Action::parse("LIST_DIR logs AS files").unwrap(), Action::ListDir { path: "logs".into(), key: "files".into() });
        assert_eq!(
            Action::parse("FOR_EACH files READ_FILE {item}").unwrap(),
            Action::ForEach { key: "files".into(), body: Box::new(Action::ReadFile { path: "{item}".into() }) }
        );
        assert_eq!(
            Action::parse("REPEAT 3 CREATE_DIR day_{index:03d}").unwrap(),
            Action::Repeat { times: 3, body: Box::new(Action::CreateDir { path: "day_{index:03d}".into() }) }
        );
        assert_eq!(Action::parse("RUN_COMMAND ls -la | wc -l").unwrap(), Action::RunCommand { command: "ls -la | wc -l".into() });
    }

    #[test]
    fn bad_actions_say_what_is_wrong() {
        assert!(Action::parse("DELETE_FILE a").unwrap_err().contains("not an allowed action"));
        assert!(Action::parse("LIST_DIR logs").unwrap_err().contains("AS <key>"));
        assert!(Action::parse("REPEAT many CREATE_DIR x").unwrap_err().contains("whole number"));
        assert!(Action::parse("REPEAT 3").unwrap_err().contains("needs an action"));
        assert!(Action::parse("CREATE_DIR a b").unwrap_err().contains("left over"));
        assert!(Action::parse("WRITE_FILE a.txt one\ntwo").unwrap_err().contains("single line"));
    }

    #[test]
    fn placeholders_fill_in() {
        let body = Action::parse("WRITE_FILE day_{index:03d}.txt Day {index}").unwrap();
        assert_eq!(body.fill(&Vars::index(7)), Action::WriteFile { path: "day_007.txt".into(), content: "Day 7".into() });
        let from_one = Action::parse("WRITE_FILE day_{number:03d}.txt Day {number}").unwrap();
        assert_eq!(from_one.fill(&Vars::index(0)), Action::WriteFile { path: "day_001.txt".into(), content: "Day 1".into() });
        let copy = Action::parse("RUN_COMMAND cp {item} backup/{name}").unwrap();
        assert_eq!(copy.fill(&Vars::item("/root/logs/a.log")), Action::RunCommand { command: "cp /root/logs/a.log backup/a.log".into() });
        // Braces that are not placeholders stay as they are.
        let json = Action::parse("WRITE_FILE a.json {\"k\": {index}}").unwrap();
        assert_eq!(json.fill(&Vars::index(1)), Action::WriteFile { path: "a.json".into(), content: "{\"k\": 1}".into() });
    }

    #[test]
    fn display_round_trips() {
        for line in ["CREATE_DIR \"a b\"", "WRITE_FILE x.txt a\\nb", "LIST_DIR . AS all", "FOR_EACH all READ_FILE {item}", "REPEAT 2 RUN_COMMAND echo {index}"]
        {
            let action = Action::parse(line).unwrap();
            assert_eq!(Action::parse(&action.to_string()).unwrap(), action, "{line}");
        }
    }

    #[test]
    fn the_pattern_takes_every_parsable_form_and_nothing_that_fails_to_parse() {
        let pattern = regex::Regex::new(&pattern()).unwrap();
        let good = [
            "CREATE_DIR notes",
            "CREATE_DIR \"my notes\"",
            "WRITE_FILE a.txt hello\\nworld",
            "READ_FILE {item}",
            "LIST_DIR . AS all_files",
            "FOR_EACH files RUN_COMMAND wc -l {item}",
            "REPEAT 10 WRITE_FILE note_{index:02d}.txt note",
            "REPEAT 3 CREATE_DIR run_{index}",
            "RUN_COMMAND ls | sort > listing.txt",
        ];
        for line in good {
            assert!(pattern.is_match(line), "the pattern refuses {line:?}");
            assert!(Action::parse(line).is_ok(), "{line:?} matches but does not parse");
        }
        let run_on_key = format!("FOR_EACH {} RUN_COMMAND cat {{item}}", "inbox_files_".repeat(4));
        assert!(!pattern.is_match(&run_on_key), "a key runs to 40 characters at most");
        let bad = [
            "LIST_DIR logs",
            "REPEAT CREATE_DIR x",
            "REPEAT 3",
            "DELETE_FILE a",
            "CREATE_DIR a b",
            "FOR_EACH files CREATE_DIR {name}",
            "WRITE_FILE a.txt",
            "RUN_COMMAND ",
            "WRITE_FILE README.md # Title\r\rText",
            "RUN_COMMAND ls\r",
        ];
        for line in bad {
            assert!(!pattern.is_match(line), "the pattern lets through {line:?}");
        }
    }
}

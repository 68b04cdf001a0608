//! The rules any plan must keep, whatever its goal: paths stay in the jail,
//! actions are in the language and fill their loop variables, FOR_EACH
//! loops over a stored key, a path is used as the kind it is, commands fit
//! the shell and write into folders that exist, and no step replaces what
//! an earlier one wrote unread. Each rule has its own
//! rejection reason, which the next plan is given.

mod missing_folder;
mod overwrite;
mod shell_check;

use std::collections::{BTreeMap, BTreeSet};

use agentloop_tools::mcp_client::{argument_problems, Listing};
use agentloop_tools::Workspace;

pub use shell_check::shell_check;

use super::action::{Action, Vars, VERBS};
use super::goal_paths::{self, goal_calls, FILE_WORDS, FOLDER_WORDS};
use super::observe::Observed;
use super::plan::Plan;
use super::plan::{all_parsed, parse};
use super::rejection::{Context, Rejection, Rule};

/// Every rejection of a plan, each with its own reason; empty when it may
/// run. A plan with one rejection runs nothing. Its steps are parsed once
/// into typed actions, which every rule then judges.
pub fn validate(plan: &Plan, cx: &Context<'_>) -> Vec<Rejection> {
    let actions = parse(plan);
    let mut out = Vec::new();
    if plan.plan.is_empty() || !plan.ready {
        out.push(Rejection::new(Rule::NotReady, None, "a plan needs `ready: true` and at least one step"));
    }
    let mut keys = BTreeSet::new();
    let mut kinds = BTreeMap::new();
    for (item, action) in plan.plan.iter().zip(&actions) {
        let n = Some(item.step);
        let action = match action {
            Ok(a) => a,
            Err(why) => {
                out.push(Rejection::new(Rule::AllowedAction, n, why.clone()));
                continue;
            }
        };
        let mut reject = |rule, reason: String| out.push(Rejection::new(rule, n, reason));
        if let Some(reason) = unfilled_variable(action, None) {
            reject(Rule::LoopVariable, reason);
        }
        if let Some(path) = item_inside_a_folder(action) {
            reject(
                Rule::LoopVariable,
                format!(
                    "{path}: {{item}} is already the entry's whole path, so nothing is under another folder's name: write {} ({{name}} is the file name)",
                    path.replace("/{item}", "/{name}")
                ),
            );
        }
        for (rule, reason) in check_action(action, cx, &keys) {
            reject(rule, reason);
        }
        if let Some(reason) = path_kind(action, item.step, cx.seen, &mut kinds) {
            reject(Rule::PathKind, reason);
        }
        stored_keys(action, &mut keys);
    }
    if let Some(parsed) = all_parsed(&actions) {
        for (i, folder) in missing_folders(&parsed, |f| cx.seen.is_folder(f)) {
            let step = plan.plan.get(i).map(|item| item.step);
            out.push(Rejection::new(Rule::MissingFolder, step, format!("the command writes into {folder}, which does not exist and no earlier step makes (a redirect makes no folders): add `CREATE_DIR {folder}` before it")));
        }
        for Overwrite { at, earlier, path } in overwrites(&parsed) {
            let (step, earlier) = (plan.plan.get(at).map(|item| item.step), plan.plan.get(earlier).map_or(0, |item| item.step));
            out.push(Rejection::new(
                Rule::Overwrite,
                step,
                format!("this replaces {path}, which step {earlier} wrote, so what step {earlier} wrote is lost: append with `>>`, or write the file once with all of its text"),
            ));
        }
    }
    out
}

pub use missing_folder::{missing_folders, redirects};
pub use overwrite::{overwrites, Overwrite};

/// The rules that look at one parsed action (and the actions inside it).
fn check_action(action: &Action, cx: &Context<'_>, keys: &BTreeSet<String>) -> Vec<(Rule, String)> {
    let mut out = Vec::new();
    if let Some(path) = action.path() {
        if let Err(e) = cx.root.resolve(&with_sample_values(path, cx.root)) {
            out.push((Rule::Path, format!("{e}; every path must stay under the root")));
        }
    }
    if let Some(verb) = crammed_action(action, cx.goal) {
        out.push((Rule::OneAction, format!("{verb} appears inside this step's text, where it would not run: put each action in its own step")));
    }
    match action {
        Action::CreateDir { path }
            if (goal_paths::looks_like_file(path) || goal_calls(cx.goal, path, &FILE_WORDS)) && !goal_calls(cx.goal, path, &FOLDER_WORDS) =>
        {
            out.push((
                Rule::PathKind,
                format!("{path} is a file name, but CREATE_DIR makes a folder: create the file with WRITE_FILE (its folder is made for it)"),
            ));
        }
        Action::WriteFile { path, content } => {
            if let Some(what) = placeholder(content, cx.goal) {
                out.push((Rule::Placeholder, format!("the content for {path} is {what}, not real text: write the actual content")));
            }
        }
        Action::CallTool { server, tool, arguments } => {
            if let Some(why) = tool_call_problem(cx.tools, server, tool, arguments) {
                out.push((Rule::ToolCall, why));
            }
        }
        Action::ForEach { key, body } => {
            if matches!(**body, Action::CallTool { .. }) {
                out.push((Rule::ToolCall, "CALL_TOOL is made once, after the outcome is approved: it cannot run inside FOR_EACH".into()));
            }
            if !keys.contains(key) {
                out.push((
                    Rule::ForEachKey,
                    format!("FOR_EACH uses the key `{key}`, which no earlier step stored: add `LIST_DIR <folder> AS {key}` before it"),
                ));
            }
            if contains_create_dir(body) {
                out.push((Rule::ForEachCreateDir, "FOR_EACH may not CREATE_DIR: create the folders in their own steps".into()));
            }
            out.extend(check_action(body, cx, keys));
        }
        Action::Repeat { times, body } => {
            if matches!(**body, Action::CallTool { .. }) {
                out.push((Rule::ToolCall, "CALL_TOOL is made once, after the outcome is approved: it cannot run inside REPEAT".into()));
            }
            if let Some(path) = repeated_path(action) {
                out.push((Rule::LoopPath, format!("REPEAT {times} makes {path} every time: put {{index}} in the path, or write it once without REPEAT")));
            }
            out.extend(check_action(body, cx, keys));
        }
        Action::RunCommand { command } => {
            if let Some(why) = cx.seen.command_problem(command) {
                out.push((Rule::Shell, why.to_string()));
            }
            for token in command.split_whitespace().map(|t| t.trim_matches(|c| c == '"' || c == '\'')) {
                if token.starts_with('~') || ((token.starts_with('/') || token.contains("..")) && token != "/dev/null") {
                    if let Err(e) = cx.root.resolve(&with_sample_values(token.trim_start_matches(['>', '<']), cx.root)) {
                        out.push((Rule::Path, format!("the command names {token}: {e}; every path must stay under the root")));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// A loop variable in a path or a command that no enclosing loop fills.
/// `inside` is the verb of the loop around `action`, if any. File content
/// is not looked at: a Python file may well hold `{index}` in an f-string.
fn unfilled_variable(action: &Action, inside: Option<&str>) -> Option<String> {
    match action {
        Action::Repeat { body, .. } => unfilled_variable(body, Some("REPEAT")),
        Action::ForEach { body, .. } => unfilled_variable(body, Some("FOR_EACH")),
        other => {
            // A command gets `{item}` as literal text outside FOR_EACH
            // (`RUN_COMMAND head -n 1 {item}` ran and failed).
            let text = match other {
                Action::RunCommand { command } => command.as_str(),
                _ => other.path()?,
            };
            let counter = if text.contains("{number") { "{number}" } else { "{index}" };
            let uses = [(counter, uses_counter(text), "REPEAT"), ("{item}", text.contains("{item}") || text.contains("{name}"), "FOR_EACH")];
            let (variable, _, needs) = uses.into_iter().find(|&(_, used, needs)| used && inside != Some(needs))?;
            Some(format!("{text} uses {variable}, which only {needs} fills: write the real name, or put the step inside {needs}"))
        }
    }
}

/// The word of a FOR_EACH's action that puts `{item}` under a folder
/// (`archive/{item}`): `{item}` is an absolute path, so that names nothing
/// (`cp inbox/{item} archive/{item}` ran and failed); `{name}` was meant.
pub fn item_inside_a_folder(action: &Action) -> Option<String> {
    let Action::ForEach { body, .. } = action else { return None };
    let text = match body.as_ref() {
        Action::RunCommand { command } => command.as_str(),
        other => other.path()?,
    };
    text.split_whitespace().find(|word| with_item_named(word) != *word).map(String::from)
}

/// `folder/{item}` as `folder/{name}`; a `{item}` standing alone (or after
/// a bare `/`) is kept.
pub fn with_item_named(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("/{item}") {
        let after_name = rest[..at].chars().next_back().is_some_and(goal_paths::is_name_char);
        out.push_str(&rest[..at]);
        out.push_str(if after_name { "/{name}" } else { "/{item}" });
        rest = &rest[at + "/{item}".len()..];
    }
    out.push_str(rest);
    out
}

/// An action verb inside a WRITE_FILE's content or a command, unless the
/// goal itself uses it (a README documenting this very language may). A
/// loop's body is checked when `check_action` reaches it.
fn crammed_action(action: &Action, goal: &str) -> Option<&'static str> {
    let text = match action {
        Action::WriteFile { content, .. } => content,
        Action::RunCommand { command } => command,
        _ => return None,
    };
    let words: BTreeSet<&str> = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
    VERBS.into_iter().find(|verb| words.contains(verb) && !goal.contains(verb))
}

/// What a path is: a folder or a file, and which step made it so (0: it
/// already was).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Folder(u32),
    File(u32),
}

/// Checks that `action` uses its path as what it is — on disk or as an
/// earlier step of the plan left it — and records what it makes. Small
/// models write `CREATE_DIR hello.txt` then `WRITE_FILE hello.txt …`; that
/// plan would fail halfway, so it is refused before anything runs.
fn path_kind(action: &Action, step: u32, seen: &Observed, kinds: &mut BTreeMap<String, Kind>) -> Option<String> {
    let (path, wants) = match action {
        Action::CreateDir { path } => (path, Kind::Folder(step)),
        Action::WriteFile { path, .. } | Action::ReadFile { path } => (path, Kind::File(step)),
        Action::ListDir { path, .. } => (path, Kind::Folder(step)),
        _ => return None,
    };
    if path.contains('{') {
        return None;
    }
    let key = path.trim_start_matches("./").trim_end_matches('/').to_string();
    let is = kinds.get(&key).copied().or_else(|| {
        if seen.is_folder(&key) {
            Some(Kind::Folder(0))
        } else if seen.is_file(&key) {
            Some(Kind::File(0))
        } else {
            None
        }
    });
    let by = |n: u32| if n == 0 { "already".to_string() } else { format!("(step {n} makes it so)") };
    let conflict = match (is, wants) {
        (Some(Kind::Folder(n)), Kind::File(_)) => {
            Some(format!("{key} is {} a folder, so it cannot be used as a file: write files inside it, or create only the folders the goal names", by(n)))
        }
        (Some(Kind::File(n)), Kind::Folder(_)) => Some(format!("{key} is {} a file, so it cannot be used as a folder: name a folder, not a file", by(n))),
        _ => None,
    };
    if conflict.is_none() && !matches!(action, Action::ReadFile { .. } | Action::ListDir { .. }) {
        kinds.insert(key, wants);
    }
    conflict
}

fn stored_keys(action: &Action, keys: &mut BTreeSet<String>) {
    match action {
        Action::ListDir { key, .. } => {
            keys.insert(key.clone());
        }
        Action::ForEach { body, .. } | Action::Repeat { body, .. } => stored_keys(body, keys),
        _ => {}
    }
}

fn contains_create_dir(action: &Action) -> bool {
    match action {
        Action::CreateDir { .. } => true,
        Action::ForEach { body, .. } | Action::Repeat { body, .. } => contains_create_dir(body),
        _ => false,
    }
}

/// The path with loop placeholders replaced by values they could take:
/// `{item}` is an absolute path under the root (LIST_DIR only stores those).
fn with_sample_values(path: &str, root: &Workspace) -> String {
    let vars = Vars { item: Some(root.root().join("item").display().to_string()), index: Some(0) };
    vars.fill(path)
}

/// The path a `REPEAT n` (n > 1) writes or creates every round because it
/// holds no counter: the `loop-path` rule refuses it, `mend` runs it once.
pub fn repeated_path(action: &Action) -> Option<&str> {
    let Action::Repeat { times, body } = action else { return None };
    body.path().filter(|p| *times > 1 && !uses_counter(p) && matches!(**body, Action::WriteFile { .. } | Action::CreateDir { .. }))
}

/// Whether a path holds REPEAT's counter, `{index…}` or `{number…}`.
fn uses_counter(path: &str) -> bool {
    path.contains("{index") || path.contains("{number")
}

/// Names the placeholder `content` is, if it is one.
fn placeholder(content: &str, goal: &str) -> Option<&'static str> {
    let text = content.trim();
    let lower = text.to_lowercase();
    if text.is_empty() {
        return Some("empty");
    }
    if text.chars().all(|c| matches!(c, '.' | '…' | ' ')) {
        return Some("an ellipsis");
    }
    // Unless the goal is about one: then "todo …" is the list's own text.
    let goal = goal.to_lowercase();
    if ["todo", "fixme", "tbd"].iter().any(|marker| lower.starts_with(marker) && !goal.contains(marker)) {
        return Some("a TODO");
    }
    if lower.contains("lorem ipsum") {
        return Some("lorem ipsum");
    }
    if text.starts_with('<') && text.ends_with('>') && !text[1..text.len() - 1].contains(['<', '>']) {
        return Some("a <placeholder>");
    }
    // A model held to the action grammar has written out a piece of its
    // regular expression as the content (`WRITE_FILE logs/app.log [^\r\n]+`).
    if text.len() <= 12 && text.starts_with("[^") && (text.ends_with("]+") || text.ends_with("]*")) {
        return Some("a piece of the action grammar");
    }
    if ["content", "placeholder", "your content here", "text here", "insert content here", "file content"].contains(&lower.as_str()) {
        return Some("a placeholder");
    }
    None
}

/// Why CALL_TOOL `server tool arguments` cannot be made: no such tool among
/// the session's, or arguments its schema refuses.
fn tool_call_problem(tools: &[Listing], server: &str, tool: &str, arguments: &str) -> Option<String> {
    let offered = || tools.iter().flat_map(|l| l.tools.iter().map(move |t| format!("{} {}", l.server, t.name))).collect::<Vec<_>>();
    let Some(listed) = tools.iter().find(|l| l.server == server).and_then(|l| l.tool(tool)) else {
        return Some(if tools.is_empty() {
            "CALL_TOOL needs an MCP server, and this session has none: use the other actions".into()
        } else {
            format!("there is no tool `{tool}` on the MCP server `{server}`: the tools are {}", offered().join(", "))
        });
    };
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let problems = argument_problems(&jsonschema::validator_for(&listed.input_schema).ok()?, &value);
    (!problems.is_empty())
        .then(|| format!("the arguments of {server} {tool} do not fit its schema ({}): its schema is {}", problems.join("; "), listed.input_schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_recognised_and_real_text_is_not() {
        for p in ["", "...", "…", "TODO: write this", "<content>", "Lorem ipsum dolor sit amet", "placeholder", "[^\n]+", "[^\\n]+", "[^\\r\\n]+"] {
            assert!(placeholder(p, "Create notes.md.").is_some(), "{p:?}");
        }
        for real in ["# Notes\n\nBuy milk.", "<html><body>hi</body></html>", "x = 1", "import re\nWORD = re.compile(r'[^\\n]+')"] {
            assert!(placeholder(real, "Create notes.md.").is_none(), "{real:?}");
        }
        let goal = "Create a folder notes and inside it a file todo.txt listing two tasks: buy milk and call Anna.";
        assert!(placeholder("todo 1 buy milk\ncall Anna", goal).is_none(), "a todo list's text for a goal about one");
        assert!(placeholder("TODO", "Create notes.md.").is_some());
    }
}

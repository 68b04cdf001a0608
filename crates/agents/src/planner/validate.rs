//! Every rule a plan must pass before any of it runs, each its own check
//! with its own rejection reason. A plan with one rejection runs nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use agentloop_core::JsonSchema;
use agentloop_tools::Workspace;
use serde::{Deserialize, Serialize};

use super::action::{Action, Vars, VERBS};
use super::examples;
use super::goal_paths::{self, goal_calls, FILE_WORDS, FOLDER_WORDS};
use super::missing_folder;
use super::observe::Observed;
use super::plan::Plan;

/// Which rule a plan broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The answer is not JSON inside `<json>` tags, even after mending.
    Json,
    /// The JSON has other keys or types than the template.
    Schema,
    /// No steps, or `ready` is false.
    NotReady,
    /// An action outside the action language, or one that does not parse.
    AllowedAction,
    /// A path that leads outside the root.
    Path,
    /// WRITE_FILE content that is a placeholder, not real text.
    Placeholder,
    /// FOR_EACH over a key no earlier LIST_DIR stored.
    ForEachKey,
    /// FOR_EACH that creates folders.
    ForEachCreateDir,
    /// A path used as a file and as a folder (WRITE_FILE into a folder an
    /// earlier step creates, LIST_DIR of a file, …).
    PathKind,
    /// RUN_COMMAND that is not valid for the configured shell or calls a
    /// command this machine does not have.
    Shell,
    /// A file or folder the goal names that no step mentions: the plan does
    /// something else than was asked.
    GoalPath,
    /// Another action written into a step's text (`WRITE_FILE a.py x
    /// READ_FILE a.py …`): the grammar reads it as content, so it would be
    /// written into the file instead of run.
    OneAction,
    /// REPEAT over a path without `{index}`: every round makes the same path.
    LoopPath,
    /// WRITE_FILE content pasted from a worked example ("Q1: sales up")
    /// that the goal never quotes.
    ExampleText,
    /// `{index}` in a path outside REPEAT, or `{item}`/`{name}` outside
    /// FOR_EACH: nothing fills it, so the step would use the braces as a name.
    LoopVariable,
    /// The goal gives a file's text ("each saying 'log'") and no step holds
    /// it: the plan writes something else than was asked.
    GoalText,
    /// A command redirects into a folder that does not exist and no earlier
    /// step makes: the shell makes no folders, so the step would fail.
    MissingFolder,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = serde_json::to_value(self).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        f.write_str(&name)
    }
}

/// Why a plan was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub rule: Rule,
    pub step: Option<u32>,
    pub reason: String,
}

impl Rejection {
    pub fn new(rule: Rule, step: Option<u32>, reason: impl Into<String>) -> Self {
        Self { rule, step, reason: reason.into() }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(n) => write!(f, "step {n} ({}): {}", self.rule, self.reason),
            None => write!(f, "{}: {}", self.rule, self.reason),
        }
    }
}

/// The shell RUN_COMMAND runs in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Shell {
    #[default]
    Sh,
    Powershell,
}

/// What validation needs to know besides the plan.
pub struct Context<'a> {
    /// The jail every path is checked against.
    pub root: &'a Workspace,
    /// What the root held and what the commands' checks said, as observed.
    pub seen: &'a Observed,
    pub shell: Shell,
    /// Keys stored by steps that already ran (a replan may loop over them).
    pub known_keys: &'a BTreeSet<String>,
    /// The user's goal; the plan must mention every path it names.
    pub goal: &'a str,
    /// Actions already run, which count as mentioning their paths.
    pub done: &'a [String],
    /// Also judge the plan against the goal's words (goal-path, goal-text,
    /// example-text): the planner's assists. Off, only the rules any plan
    /// must keep whatever the goal are checked.
    pub assist: bool,
}

/// All the rejections of a plan; empty when it may run.
pub fn validate(plan: &Plan, cx: &Context<'_>) -> Vec<Rejection> {
    let mut out = Vec::new();
    if plan.plan.is_empty() || !plan.ready {
        out.push(Rejection::new(Rule::NotReady, None, "a plan needs `ready: true` and at least one step"));
    }
    let mut keys = cx.known_keys.clone();
    let mut kinds = BTreeMap::new();
    let mut parsed = Vec::new();
    let mut all_parse = true;
    for item in &plan.plan {
        let n = Some(item.step);
        let action = match Action::parse(&item.action) {
            Ok(a) => a,
            Err(why) => {
                out.push(Rejection::new(Rule::AllowedAction, n, why));
                all_parse = false;
                continue;
            }
        };
        let mut reject = |rule, reason: String| out.push(Rejection::new(rule, n, reason));
        if let Some(reason) = unfilled_variable(&action, None) {
            reject(Rule::LoopVariable, reason);
        }
        if let Some(path) = item_inside_a_folder(&action) {
            reject(
                Rule::LoopVariable,
                format!(
                    "{path}: {{item}} is already the entry's whole path, so nothing is under another folder's name: write {} ({{name}} is the file name)",
                    path.replace("/{item}", "/{name}")
                ),
            );
        }
        for (rule, reason) in check_action(&action, cx, &keys) {
            reject(rule, reason);
        }
        if let Some(reason) = path_kind(&action, item.step, cx.seen, &mut kinds) {
            reject(Rule::PathKind, reason);
        }
        if let Some(text) = example_text(&action, cx.goal).filter(|_| cx.assist) {
            reject(Rule::ExampleText, format!("the text {text:?} comes from a worked example, not from this goal: write the content this goal asks for"));
        }
        stored_keys(&action, &mut keys);
        parsed.push(action);
    }
    // Only a plan whose every step parses can be judged on what it covers.
    let judged = all_parse && cx.assist;
    let missing = if judged && !parsed.is_empty() { goal_paths::uncovered(cx.goal, &parsed, cx.done) } else { Vec::new() };
    let borrowed = if judged { goal_paths::copied(cx.goal, &parsed, examples::names()) } else { Vec::new() };
    if !borrowed.is_empty() {
        out.push(Rejection::new(
            Rule::GoalPath,
            None,
            format!("{} come from the worked examples, not from this goal: use only the names the goal gives", borrowed.join(", ")),
        ));
    }
    if all_parse {
        for (i, folder) in missing_folder::missing_folders(&parsed, cx.done, |f| cx.seen.is_folder(f)) {
            let step = plan.plan.get(i).map(|item| item.step);
            out.push(Rejection::new(Rule::MissingFolder, step, format!("the command writes into {folder}, which does not exist and no earlier step makes (a redirect makes no folders): add `CREATE_DIR {folder}` before it")));
        }
    }
    // A plan missing a goal's file is told the file's text by goal-path.
    if let Some(text) = (judged && missing.is_empty()).then(|| missing_text(cx.goal, plan, cx.done)).flatten() {
        let files: Vec<String> =
            goal_paths::named_paths(cx.goal).into_iter().filter(|n| goal_paths::looks_like_file(n) && !goal_paths::is_archive(n)).collect();
        let how = match files.as_slice() {
            [file] => format!("write it with `WRITE_FILE {} {text}`", goal_paths::in_its_folder(cx.goal, file)),
            _ => "write exactly that text in the file".to_string(),
        };
        out.push(Rejection::new(Rule::GoalText, None, format!("the goal gives the text {text:?} but no step writes it: {how}")));
    }
    let misplaced = if judged { goal_paths::misplaced(cx.goal, &parsed, cx.done, |name| cx.seen.on_disk(name)) } else { Vec::new() };
    if !misplaced.is_empty() {
        let inside: Vec<String> = misplaced.iter().map(|(file, folder)| format!("{folder}/{file}")).collect();
        let said: Vec<String> = misplaced.iter().map(|(file, folder)| format!("{file} in the folder {folder}")).collect();
        out.push(Rejection::new(Rule::GoalPath, None, format!("the goal puts {} but the plan names it outside: write {}", said.join(", "), inside.join(", "))));
    }
    if !missing.is_empty() {
        let reason = match goal_paths::counts_from_zero(cx.goal, &parsed, &missing) {
            Some(path) => {
                format!("the goal names {} but {path} counts from 0: write {} (counts from 1)", missing.join(", "), goal_paths::counting_from_one(path))
            }
            None => {
                format!("the goal names {} but no step creates or uses it: add {}", missing.join(", "), missing_steps(cx.goal, &missing, cx.seen).join(", "))
            }
        };
        out.push(Rejection::new(Rule::GoalPath, None, reason));
    }
    out
}

/// The text the goal gives for a file (`goal_paths::given_text`) when no
/// step (nor one already run) holds it, in any case. A whole-word `N`
/// stands for a number ('part N' with its number): the words before it
/// are what must be there.
pub fn missing_text(goal: &str, plan: &Plan, done: &[String]) -> Option<String> {
    let text = goal_paths::given_text(goal)?;
    let words: Vec<&str> = text.split_whitespace().take_while(|w| *w != "N").collect();
    let wanted = words.join(" ").to_lowercase().replace('\n', "\\n");
    if wanted.is_empty() {
        return None;
    }
    let holds = |action: &str| action.to_lowercase().contains(&wanted);
    (!plan.plan.iter().any(|i| holds(&i.action)) && !done.iter().any(|a| holds(a))).then_some(text)
}

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
        Action::ForEach { key, body } => {
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

/// A line of WRITE_FILE content that a worked example quoted from its own
/// goal and this goal does not, ignoring case: the model changes the case
/// of what it copies.
fn example_text(action: &Action, goal: &str) -> Option<String> {
    let content = match action {
        Action::WriteFile { content, .. } => content,
        Action::ForEach { body, .. } | Action::Repeat { body, .. } => return example_text(body, goal),
        _ => return None,
    };
    content.lines().find(|line| is_example_line(line, goal)).map(|line| example_line_text(line).to_string())
}

/// A line of content that is text a worked example quoted from its own
/// goal (`first entry`, also as `first entry'`), which `goal` does not quote.
pub fn is_example_line(line: &str, goal: &str) -> bool {
    let text = example_line_text(line);
    examples::quoted_texts().iter().any(|q| q.eq_ignore_ascii_case(text)) && !goal.to_lowercase().contains(&text.to_lowercase())
}

/// The line without the spaces and stray quotes around it.
fn example_line_text(line: &str) -> &str {
    line.trim().trim_matches(|c: char| matches!(c, '\'' | '"' | '`')).trim()
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

/// What to add for each name the plan misses, in words the model can copy:
/// `CREATE_DIR 2024/q1` for a folder, `WRITE_FILE notes/todo.txt` and its
/// text for a file (a command for an archive, which is not text), the
/// REPEAT that makes a range the goal gives as "a to b"
/// (`goal_paths::range_loop`), and "a step that uses" a name that exists.
/// When one file is to be written and the goal quotes its text ("with the
/// line 'started'"), the step holds that text: a small model copies a
/// step whole, and told to add "`WRITE_FILE a.md` with the text the goal
/// gives" it wrote those words into the file.
fn missing_steps(goal: &str, missing: &[String], seen: &Observed) -> Vec<String> {
    needed_steps(goal, missing, seen)
        .into_iter()
        .map(|needed| match needed {
            Needed::Step { step, makes } => format!("`{step}`{makes}"),
            Needed::Write { step, makes } => format!("`{step}` with {GIVEN_TEXT}{makes}"),
            Needed::Advice(advice) => advice,
        })
        .collect()
}

/// What one missing name (or range) of the goal needs.
#[derive(Debug, PartialEq, Eq)]
pub enum Needed {
    /// A whole step, the goal's words only: `CREATE_DIR project/src`,
    /// `WRITE_FILE logs/app.log started` (the text the goal gives), `REPEAT 3
    /// CREATE_DIR run_{index}`; `makes` says which names a loop makes.
    Step { step: String, makes: String },
    /// A write whose text the goal does not give: `WRITE_FILE notes.md`.
    Write { step: String, makes: String },
    /// Words only: "a step that uses input.txt", "a RUN_COMMAND that makes backup.tar.gz".
    Advice(String),
}

/// The step each missing name needs (`missing` in the goal's order, as
/// `goal_paths::uncovered` gives them). The text the goal gives goes into
/// the write when there is one write (`goal_paths::given_text`).
pub fn needed_steps(goal: &str, missing: &[String], seen: &Observed) -> Vec<Needed> {
    let mut steps = Vec::new();
    let mut names = missing.iter().peekable();
    while let Some(name) = names.next() {
        if let Some(last) = names.peek().filter(|last| goal.contains(&format!("{name} to {last}"))) {
            let folder = goal_paths::in_its_folder(goal, name).strip_suffix(name.as_str()).map(String::from).unwrap_or_default();
            let makes = format!(" (it makes {name} to {last})");
            steps.push(match goal_paths::range_loop(name, last).map(|step| step.replace("WRITE_FILE ", &format!("WRITE_FILE {folder}"))) {
                Some(step) if step.contains("WRITE_FILE") => Needed::Write { step, makes },
                Some(step) => Needed::Step { step, makes },
                None => Needed::Advice(format!("one REPEAT that makes {name} to {last}")),
            });
            names.next();
        } else if seen.on_disk(name) {
            steps.push(Needed::Advice(format!("a step that uses {name}")));
        } else if goal_paths::is_archive(name) {
            steps.push(Needed::Advice(format!("a RUN_COMMAND that makes {name}")));
        } else if goal_paths::has_extension(name) && !goal_calls(goal, name, &FOLDER_WORDS) {
            steps.push(Needed::Write { step: format!("WRITE_FILE {}", goal_paths::in_its_folder(goal, name)), makes: String::new() });
        } else {
            steps.push(Needed::Step { step: format!("CREATE_DIR {name}"), makes: String::new() });
        }
    }
    let writes = steps.iter().filter(|s| matches!(s, Needed::Write { .. })).count();
    match goal_paths::given_text(goal).filter(|_| writes == 1) {
        Some(text) => steps
            .into_iter()
            .map(|needed| match needed {
                Needed::Write { step, makes } => Needed::Step { step: format!("{step} {text}"), makes },
                other => other,
            })
            .collect(),
        None => steps,
    }
}

/// How a hint refers to a file's text when the goal quotes none; the words
/// are refused as content (the model copies hints).
const GIVEN_TEXT: &str = "the text the goal gives";

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
pub(super) fn repeated_path(action: &Action) -> Option<&str> {
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
    // regular expression as the content (`WRITE_FILE logs/app.log [^\n]+`).
    if ["[^\n]+", "[^\\n]+", "[^ \"\n]+", "[^ \"\\n]+"].contains(&text) {
        return Some("a piece of the action grammar");
    }
    if lower.contains(GIVEN_TEXT) {
        return Some("the words of a hint");
    }
    if ["content", "placeholder", "your content here", "text here", "insert content here", "file content"].contains(&lower.as_str()) {
        return Some("a placeholder");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_recognised_and_real_text_is_not() {
        for p in
            ["", "...", "…", "TODO: write this", "<content>", "Lorem ipsum dolor sit amet", "placeholder", "[^\n]+", "[^\\n]+", "with the text the goal gives"]
        {
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

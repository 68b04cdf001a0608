//! The planner's assists: checks of a plan against the goal's words (a
//! name the goal gives that no step uses, a name or text taken from a
//! worked example, a file's text the goal quotes and no step writes), the
//! mends that repair such plans mechanically, decoding held to the goal's
//! paths, and the worked examples. All behind one switch (`[planner]
//! assist`): off, plans are held to `rules` alone and still verified. Each
//! can also be left out alone (`switches`).

pub mod examples;
pub mod held_paths;
pub mod mend;
pub mod switches;

use super::action::Action;
use super::goal_paths::{self, goal_calls, FOLDER_WORDS};
use super::observe::Observed;
use super::plan::all_parsed;
use super::plan::Plan;
use super::rejection::{Context, Rejection, Rule};

/// The assists' rejections of a plan whose steps parsed to `actions`.
pub fn check(plan: &Plan, actions: &[Result<Action, String>], cx: &Context<'_>) -> Vec<Rejection> {
    let mut out = Vec::new();
    for (item, action) in plan.plan.iter().zip(actions) {
        if let Some(text) = action.as_ref().ok().and_then(|a| example_text(a, cx.goal)) {
            out.push(Rejection::new(
                Rule::ExampleText,
                Some(item.step),
                format!("the text {text:?} comes from a worked example, not from this goal: write the content this goal asks for"),
            ));
        }
    }
    // Only a plan whose every step parses can be judged on what it covers.
    let Some(parsed) = all_parsed(actions) else { return out };
    let missing = if parsed.is_empty() { Vec::new() } else { goal_paths::uncovered(cx.goal, &parsed) };
    let borrowed = goal_paths::copied(cx.goal, &parsed, examples::names());
    if !borrowed.is_empty() {
        out.push(Rejection::new(
            Rule::GoalPath,
            None,
            format!("{} come from the worked examples, not from this goal: use only the names the goal gives", borrowed.join(", ")),
        ));
    }
    // A plan missing a goal's file is told the file's text by goal-path.
    if let Some(text) = missing.is_empty().then(|| missing_text(cx.goal, plan)).flatten() {
        let files: Vec<String> =
            goal_paths::named_paths(cx.goal).into_iter().filter(|n| goal_paths::looks_like_file(n) && !goal_paths::is_archive(n)).collect();
        let how = match files.as_slice() {
            [file] => format!("write it with `WRITE_FILE {} {text}`", goal_paths::in_its_folder(cx.goal, file)),
            _ => "write exactly that text in the file".to_string(),
        };
        out.push(Rejection::new(Rule::GoalText, None, format!("the goal gives the text {text:?} but no step writes it: {how}")));
    }
    let misplaced = goal_paths::misplaced(cx.goal, &parsed, |name| cx.seen.on_disk(name));
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
/// step holds it, in any case. A whole-word `N`
/// stands for a number ('part N' with its number): the words before it
/// are what must be there.
pub fn missing_text(goal: &str, plan: &Plan) -> Option<String> {
    let text = goal_paths::given_text(goal)?;
    let words: Vec<&str> = text.split_whitespace().take_while(|w| *w != "N").collect();
    let wanted = words.join(" ").to_lowercase().replace('\n', "\\n");
    if wanted.is_empty() {
        return None;
    }
    let holds = |action: &str| action.to_lowercase().contains(&wanted);
    (!plan.plan.iter().any(|i| holds(&i.action))).then_some(text)
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
pub const GIVEN_TEXT: &str = "the text the goal gives";

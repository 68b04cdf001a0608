//! Mechanical mends for a refused plan, tried before the model is asked
//! again: each is a change the rules name exactly, and a mended plan runs
//! only if it then passes every rule, like any other plan.
//!
//! A small model's refused plans are often one slip away from right:
//! `REPEAT 3 WRITE_FILE notes/todo.txt …` (the same file three times),
//! `day_{index:03d}.txt` for a goal that counts from 1, or a right plan
//! with a stray step pasted from a worked example. Asking again costs a
//! minute and often brings a worse plan; these slips are mended in place:
//!
//! 1. a REPEAT whose path has no counter runs once, and a FOR_EACH that
//!    puts `{item}` under a folder (`archive/{item}`) names `{name}` there;
//! 2. a REPEAT shaped like a range the goal gives ("note_00.txt to
//!    note_09.txt") that makes other names (`REPEAT 3 …
//!    notes/note_{index:03d}.txt`) makes that range: its count, counter and
//!    padding; one that makes the goal's names only when counting from 1
//!    gets `{number}` for `{index}`;
//! 3. a CREATE_DIR of a file name that a later step writes as a file
//!    (`CREATE_DIR chapter_1.md`, then `WRITE_FILE chapter_1.md …`) is
//!    dropped: the write makes the file and its folder;
//! 4. lines of WRITE_FILE content a worked example quoted from its own goal
//!    (`# Inventory\nfirst entry`) are removed, when other text remains;
//! 5. a FOR_EACH over a key no step stored, where the key is a folder's
//!    name (`inbox_files` for the folder `inbox`, which exists or an
//!    earlier step creates), gets the `LIST_DIR inbox AS inbox_files`
//!    before it that the `for-each-key` reason asks for;
//! 6. a plan that misses exactly one file the goal names (one to make) and
//!    writes exactly one new file the goal never names, by WRITE_FILE or a
//!    redirect, wrote the goal's file under another name (`echo started >>
//!    logs.txt` for "a file logs/app.log with the line 'started'"): that
//!    name becomes the goal's in every step;
//! 7. a file the goal puts in a folder (`notes/todo.txt` for "a folder
//!    notes and inside it a file todo.txt") that the plan names at the root
//!    is named in its folder: in WRITE_FILE and READ_FILE paths (a REPEAT's
//!    too) and as a whole word in a command that does not `cd`;
//! 8. a command that redirects into a folder nothing makes gets the
//!    CREATE_DIR before it (`missing-folder`);
//! 9. when the goal gives a file's text ("each saying 'log'") that no step
//!    holds, and the plan writes one of the goal's files with one
//!    WRITE_FILE (a REPEAT's too) or one plain `echo … > file`, that step
//!    writes the goal's text (`WRITE_FILE hello.txt Hello, world!`);
//! 10. when every name the plan still misses has a whole step in the
//!     goal's own words (`CREATE_DIR project/src`; `WRITE_FILE logs/app.log
//!     started`, the text the goal gives) and the plan does part of the
//!     goal, those steps are put first: a completion, never a plan of its own;
//! 11. steps refused on their own (or naming an example's files) that name
//!     none of the goal's paths are dropped — only when the goal names paths
//!     and every one of them is still covered by the steps that remain, so
//!     what is left is judged against what was asked, and a refused step
//!     about the goal's own files (`RUN_COMMAND wcc story.txt`) is never
//!     silently lost;
//! 12. a step that replaces a file an earlier step wrote, unread in between
//!     (`overwrite`), adds to it instead: its command's `>` becomes `>>`,
//!     or, when both steps are WRITE_FILE, the second's text joins the
//!     first's on a new line.
//!
//! A plan that tries to leave the root is never mended: it is refused whole.

use super::examples;
use super::held_paths;
use crate::planner::action::{Action, Vars};
use crate::planner::goal_paths;
use crate::planner::plan::{Plan, PlanStep};
use crate::planner::rejection::{Context, Rejection, Rule};
use crate::planner::rules;

/// A plan that passes every rule after mending, and what was changed.
#[derive(Debug)]
pub struct Mended {
    pub plan: Plan,
    /// One sentence per change, for the user and the journal.
    pub changes: Vec<String>,
}

/// The mended plan, when mending makes `plan` pass every check of
/// `validate` (the whole validation, given by the caller: mending sits
/// below it).
pub fn mend(plan: &Plan, rejections: &[Rejection], cx: &Context<'_>, validate: &dyn Fn(&Plan) -> Vec<Rejection>) -> Option<Mended> {
    let unmendable = [Rule::Json, Rule::Schema, Rule::NotReady, Rule::Path, Rule::AlreadyRan, Rule::ToolCall];
    if rejections.is_empty() || rejections.iter().any(|r| unmendable.contains(&r.rule)) {
        return None;
    }
    let mut plan = plan.clone();
    let mut changes = Vec::new();
    run_loops_once(&mut plan, &mut changes);
    name_items_by_name(&mut plan, &mut changes);
    fit_ranges(&mut plan, cx, &mut changes);
    count_from_one(&mut plan, cx, &mut changes);
    drop_folders_later_written(&mut plan, &mut changes);
    drop_example_lines(&mut plan, cx, &mut changes);
    list_before_loops(&mut plan, cx, &mut changes);
    name_the_goals_file(&mut plan, cx, &mut changes);
    place_files(&mut plan, cx, &mut changes);
    create_missing_folders(&mut plan, cx, &mut changes);
    append_instead_of_replacing(&mut plan, &mut changes);
    write_given_text(&mut plan, cx, &mut changes);
    add_missing_steps(&mut plan, cx, &mut changes);
    let left = if changes.is_empty() { rejections.to_vec() } else { validate(&plan) };
    if !left.is_empty() {
        drop_refused_steps(&mut plan, &left, cx, &mut changes);
    }
    let valid = left.is_empty() || validate(&plan).is_empty();
    (!changes.is_empty() && valid).then_some(Mended { plan, changes })
}

/// `REPEAT n WRITE_FILE p …` (or CREATE_DIR) where `p` has no counter makes
/// the same path n times: once is what was meant.
fn run_loops_once(plan: &mut Plan, changes: &mut Vec<String>) {
    for item in &mut plan.plan {
        let Ok(action) = Action::parse(&item.action) else { continue };
        let (Some(path), Action::Repeat { times, body }) = (rules::repeated_path(&action), &action) else { continue };
        changes.push(format!("step {}: REPEAT {times} made {path} every time, so it runs once", item.step));
        item.action = body.to_string();
    }
}

/// `FOR_EACH k … archive/{item}` names `archive/{name}`: `{item}` is the
/// entry's whole path (`rules::item_inside_a_folder`).
fn name_items_by_name(plan: &mut Plan, changes: &mut Vec<String>) {
    for item in &mut plan.plan {
        let Some(word) = Action::parse(&item.action).ok().as_ref().and_then(rules::item_inside_a_folder) else { continue };
        let Some((key, body)) = item.action.strip_prefix("FOR_EACH ").and_then(|rest| rest.split_once(' ')) else { continue };
        let mended = format!("FOR_EACH {key} {}", rules::with_item_named(body));
        changes.push(format!("step {}: {word} put the entry's whole path under a folder, so `{}` is `{mended}`", item.step, item.action));
        item.action = mended;
    }
}

/// A REPEAT with the shape of a range the goal gives makes that range
/// (`goal_paths::fitted_to_range`).
fn fit_ranges(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let ranges = goal_paths::ranges(cx.goal);
    for item in &mut plan.plan {
        let Ok(action) = Action::parse(&item.action) else { continue };
        let Some((fitted, (first, last))) = ranges.iter().find_map(|range| goal_paths::fitted_to_range(&action, &range.0, &range.1).map(|f| (f, range))) else {
            continue;
        };
        changes.push(format!("step {}: `{action}` made other names than {first} to {last}, so it is `{fitted}`", item.step));
        item.action = fitted.to_string();
    }
}

/// A REPEAT that would make the goal's missing names had it counted from 1
/// counts from 1.
fn count_from_one(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let missing = goal_paths::uncovered(cx.goal, &parsed);
    let Some(path) = goal_paths::counts_from_zero(cx.goal, &parsed, &missing).map(String::from) else { return };
    for (item, action) in plan.plan.iter_mut().zip(&parsed) {
        if matches!(action, Action::Repeat { body, .. } if body.path() == Some(path.as_str())) {
            item.action = goal_paths::counting_from_one(&item.action);
            changes.push(format!("step {}: {path} counted from 0 where the goal counts from 1, so it uses {{number}}", item.step));
        }
    }
}

/// Drops `CREATE_DIR p` where `p` has a file's extension and a later step
/// writes `p` as a file: the folder would make that write fail.
fn drop_folders_later_written(plan: &mut Plan, changes: &mut Vec<String>) {
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let written_after = |i: usize, path: &str| parsed[i + 1..].iter().any(|a| matches!(a, Action::WriteFile { path: p, .. } if p == path));
    let doomed: Vec<bool> = parsed
        .iter()
        .enumerate()
        .map(|(i, a)| matches!(a, Action::CreateDir { path } if goal_paths::looks_like_file(path) && written_after(i, path)))
        .collect();
    if !doomed.contains(&true) {
        return;
    }
    let (dropped, kept): (Vec<_>, Vec<_>) = plan.plan.drain(..).zip(doomed).partition(|(_, doomed)| *doomed);
    changes.push(format!("dropped {}: a later step writes that name as a file", described(dropped.iter().map(|(item, _)| item))));
    plan.plan = kept.into_iter().map(|(item, _)| item).collect();
    renumber(plan);
}

/// Removes the lines of WRITE_FILE content that `example-text` refuses,
/// when other text remains: the rest is what the model wrote for this goal.
fn drop_example_lines(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    for item in &mut plan.plan {
        let Some((mended, removed)) = Action::parse(&item.action).ok().and_then(|a| without_example_lines(&a, cx.goal)) else { continue };
        changes.push(format!("step {}: removed {}, text from a worked example", item.step, removed.join(", ")));
        item.action = mended.to_string();
    }
}

/// The action without the example's lines in what it writes, and those
/// lines; None when there are none or nothing else would be left.
fn without_example_lines(action: &Action, goal: &str) -> Option<(Action, Vec<String>)> {
    match action {
        Action::WriteFile { path, content } => {
            let (copied, kept): (Vec<&str>, Vec<&str>) = content.lines().partition(|line| super::is_example_line(line, goal));
            if copied.is_empty() || kept.iter().all(|line| line.trim().is_empty()) {
                return None;
            }
            let removed = copied.iter().map(|line| format!("{:?}", line.trim())).collect();
            Some((Action::WriteFile { path: path.clone(), content: kept.join("\n") }, removed))
        }
        Action::Repeat { times, body } => {
            without_example_lines(body, goal).map(|(body, removed)| (Action::Repeat { times: *times, body: Box::new(body) }, removed))
        }
        Action::ForEach { key, body } => {
            without_example_lines(body, goal).map(|(body, removed)| (Action::ForEach { key: key.clone(), body: Box::new(body) }, removed))
        }
        _ => None,
    }
}

/// Adds `LIST_DIR folder AS key` before a FOR_EACH over a key nothing
/// stored, when the key names a folder (`folder_of_key`).
fn list_before_loops(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let mut keys = std::collections::BTreeSet::new();
    let mut created: Vec<&str> = Vec::new();
    let mut steps = Vec::with_capacity(plan.plan.len() + 1);
    let mut listed = false;
    for (item, action) in plan.plan.iter().zip(&parsed) {
        match action {
            Action::ForEach { key, .. } if !keys.contains(key) => {
                if let Some(folder) = folder_of_key(key, cx, &created) {
                    let list = Action::ListDir { path: folder.clone(), key: key.clone() };
                    changes.push(format!("step {}: FOR_EACH used `{key}`, which nothing stored, so `{list}` comes before it", item.step));
                    steps.push(PlanStep { step: item.step, action: list.to_string(), expects: format!("the entries of {folder} are stored as {key}") });
                    keys.insert(key.clone());
                    listed = true;
                }
            }
            Action::CreateDir { path } => created.push(path),
            Action::ListDir { key, .. } => {
                keys.insert(key.clone());
            }
            _ => {}
        }
        steps.push(item.clone());
    }
    if listed {
        plan.plan = steps;
        renumber(plan);
    }
}

/// The folder a FOR_EACH key names: the key itself (`inbox`) or its stem
/// before one last word (`inbox_files`, `data_list`), when that folder
/// exists under the root or an earlier step creates it. A run-on key
/// (`inbox_files_RUN_COMMANDcp…`) names none.
fn folder_of_key(key: &str, cx: &Context<'_>, created: &[&str]) -> Option<String> {
    let stem =
        key.rsplit_once('_').filter(|(stem, word)| !stem.is_empty() && !word.is_empty() && word.chars().all(|c| c.is_ascii_alphabetic())).map(|(stem, _)| stem);
    [Some(key), stem].into_iter().flatten().find(|folder| created.contains(folder) || cx.seen.is_folder(folder)).map(String::from)
}

/// Gives the goal's one missing file's name to the one new file the plan
/// writes that the goal never names.
fn name_the_goals_file(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let on_disk = |p: &str| cx.seen.on_disk(p);
    let missing = goal_paths::uncovered(cx.goal, &parsed);
    let [wanted] = missing.as_slice() else { return };
    if !goal_paths::has_extension(wanted) || goal_paths::is_archive(wanted) || on_disk(wanted) || !goal_paths::kind_in_goal(cx.goal, wanted).may_be_file() {
        return;
    }
    // Every name of a range too: chapter_2.md is the goal's in "chapter_1.md to chapter_3.md".
    let named = held_paths::goal_names(cx.goal);
    let mut written: Vec<String> = parsed
        .iter()
        .flat_map(rules::written_files)
        .filter(|p| !p.contains('{') && !on_disk(p) && !named.iter().any(|n| p == n || p.ends_with(&format!("/{n}"))))
        .collect();
    written.dedup();
    let [other] = written.as_slice() else { return };
    for item in &mut plan.plan {
        let renamed = with_word_replaced(&item.action, other, wanted);
        if renamed != item.action && Action::parse(&renamed).is_ok() {
            changes.push(format!(
                "step {}: the plan wrote {other}, which the goal never names, and not {wanted}, which it does: `{}` is `{renamed}`",
                item.step, item.action
            ));
            item.action = renamed;
        }
    }
}

/// Adds `CREATE_DIR folder` before each step that redirects into a folder
/// nothing makes (`missing_folder`).
fn create_missing_folders(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let missing = rules::missing_folders(&parsed, |f| cx.seen.is_folder(f));
    for (i, folder) in missing.iter().rev() {
        let create = Action::CreateDir { path: folder.clone() };
        let Some(step) = plan.plan.get(*i).map(|item| item.step) else { continue };
        changes.push(format!("step {step} writes into {folder}, which nothing made, so `{create}` comes before it"));
        plan.plan.insert(*i, PlanStep { step, action: create.to_string(), expects: format!("the folder {folder} exists") });
    }
    if !missing.is_empty() {
        renumber(plan);
    }
}

/// Turns each step that replaces a file an earlier step wrote (`overwrite`)
/// into one that adds to it.
fn append_instead_of_replacing(plan: &mut Plan, changes: &mut Vec<String>) {
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let mut dropped = Vec::new();
    for rules::Overwrite { at, earlier, path } in rules::overwrites(&parsed) {
        let (Some(later_step), Some(earlier_step)) = (plan.plan.get(at).map(|i| i.step), plan.plan.get(earlier).map(|i| i.step)) else { continue };
        match (&parsed[earlier], &parsed[at]) {
            (Action::WriteFile { content: first, .. }, Action::WriteFile { content: second, .. }) if !dropped.contains(&earlier) => {
                let joined = Action::WriteFile { path: path.clone(), content: format!("{}\n{second}", first.trim_end_matches('\n')) };
                changes
                    .push(format!("step {later_step} wrote {path} again, which would lose what step {earlier_step} wrote, so step {earlier_step} writes both"));
                plan.plan[earlier].action = joined.to_string();
                dropped.push(at);
            }
            (_, Action::RunCommand { command }) => {
                let Some(r) = rules::redirects(&parsed[at]).into_iter().find(|r| !r.appends && r.target == path) else { continue };
                let appended = Action::RunCommand { command: format!("{}>{}", &command[..r.at], &command[r.at..]) };
                changes.push(format!("step {later_step} replaced {path}, which step {earlier_step} wrote, so it appends: `{appended}`"));
                plan.plan[at].action = appended.to_string();
            }
            _ => {}
        }
    }
    if !dropped.is_empty() {
        let mut i = 0;
        plan.plan.retain(|_| {
            i += 1;
            !dropped.contains(&(i - 1))
        });
        renumber(plan);
    }
}

/// Puts first the whole steps the goal's missing names need, when each has
/// one (`super::needed_steps`: a folder to create, a file whose text the
/// goal gives) and the plan already does part of the goal (names one of its
/// names): a completion of the model's plan, never a plan of its own.
fn add_missing_steps(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let missing = goal_paths::uncovered(cx.goal, &parsed);
    if missing.is_empty() {
        return;
    }
    let text = goal_paths::expanded(&parsed);
    if !held_paths::goal_names(cx.goal).iter().any(|name| !missing.contains(name) && goal_paths::mentions(&text, name)) {
        return;
    }
    let mut added = Vec::new();
    for needed in super::needed_steps(cx.goal, &missing, cx.seen) {
        match needed {
            super::Needed::Step { step, .. } if Action::parse(&step).is_ok() => added.push(step),
            _ => return,
        }
    }
    changes.push(format!(
        "added {} first: the goal names what they make and no step made it",
        added.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
    ));
    let new_steps = added.into_iter().map(|action| PlanStep { step: 0, expects: "what the goal names exists".into(), action });
    plan.plan.splice(0..0, new_steps);
    renumber(plan);
}

/// The goal's text in the plan's one WRITE_FILE of a goal's file, when no
/// step holds that text (`super::missing_text`).
fn write_given_text(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    // A text with a stand-in for a number ('part N') is not written as it is.
    let Some(text) = super::missing_text(cx.goal, plan).filter(|t| !t.split_whitespace().any(|w| w == "N")) else { return };
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let writes: Vec<usize> =
        parsed.iter().enumerate().filter(|(_, a)| matches!(write_of(a), Some(Action::WriteFile { .. })) || echo_into(a).is_some()).map(|(i, _)| i).collect();
    let [i] = writes.as_slice() else { return };
    // The one write must be of a file the goal names.
    if goal_paths::uncovered(cx.goal, std::slice::from_ref(&parsed[*i])).len() == goal_paths::named_paths(cx.goal).len() {
        return;
    }
    let with_text = |body: &Action| match body {
        Action::WriteFile { path, .. } => Action::WriteFile { path: path.clone(), content: text.clone() },
        other => other.clone(),
    };
    let mended = match (&parsed[*i], echo_into(&parsed[*i])) {
        (_, Some(path)) => Action::WriteFile { path, content: text.clone() },
        (Action::Repeat { times, body }, None) => Action::Repeat { times: *times, body: Box::new(with_text(body)) },
        (other, None) => with_text(other),
    };
    changes.push(format!("step {}: the goal gives the text {text:?}, so `{}` writes it", plan.plan[*i].step, parsed[*i]));
    plan.plan[*i].action = mended.to_string();
}

/// The file a plain `echo … > file` (or `>>`, or printf) writes: a command
/// that does nothing else, so it is a WRITE_FILE of that file.
fn echo_into(action: &Action) -> Option<String> {
    let Action::RunCommand { command } = action else { return None };
    let command = command.trim();
    let plain = (command.starts_with("echo ") || command.starts_with("printf ")) && !command.contains(['|', ';', '&', '`', '$', '<']);
    let [target] = rules::redirect_targets(action).try_into().ok()?;
    let last_word = command.rsplit([' ', '>']).next().unwrap_or_default().trim_matches(|c| c == '"' || c == '\'');
    (plain && last_word.trim_start_matches("./") == target).then_some(target)
}

/// The write an action makes: itself, or a REPEAT's body.
fn write_of(action: &Action) -> Option<&Action> {
    match action {
        Action::Repeat { body, .. } => Some(body),
        Action::WriteFile { .. } => Some(action),
        _ => None,
    }
}

/// Names each misplaced file (`goal_paths::misplaced`) in the folder the
/// goal puts it in.
fn place_files(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let Some(parsed) = parse_all(&plan.plan) else { return };
    let misplaced = goal_paths::misplaced(cx.goal, &parsed, |name| cx.seen.on_disk(name));
    if misplaced.is_empty() {
        return;
    }
    for (item, action) in plan.plan.iter_mut().zip(parsed) {
        let placed = in_folder(&action, &misplaced);
        if placed != action {
            changes.push(format!(
                "step {}: the goal puts {}, so `{action}` is `{placed}`",
                item.step,
                misplaced.iter().map(|(f, d)| format!("{f} in the folder {d}")).collect::<Vec<_>>().join(", ")
            ));
            item.action = placed.to_string();
        }
    }
}

/// `action` with each of `misplaced`'s files named in its folder.
fn in_folder(action: &Action, misplaced: &[(String, String)]) -> Action {
    let folder_of = |path: &str, filled: &[String]| {
        misplaced.iter().find(|(file, _)| !path.contains('/') && filled.iter().any(|f| f == file)).map(|(_, folder)| folder.as_str())
    };
    match action {
        Action::WriteFile { path, .. } | Action::ReadFile { path } => {
            folder_of(path, std::slice::from_ref(path)).and_then(|folder| moved_into(action, folder)).unwrap_or_else(|| action.clone())
        }
        Action::Repeat { times, body } => {
            let Some(path) = body.path() else { return action.clone() };
            let filled: Vec<String> = (0..(*times).min(1000)).filter_map(|i| body.fill(&Vars::index(i)).path().map(String::from)).collect();
            match folder_of(path, &filled).and_then(|folder| moved_into(body, folder)) {
                Some(body) => Action::Repeat { times: *times, body: Box::new(body) },
                None => action.clone(),
            }
        }
        Action::RunCommand { command } if !command.contains("cd ") => {
            let mut command = command.clone();
            for (file, folder) in misplaced {
                command = with_word_replaced(&command, file, &format!("{folder}/{file}"));
            }
            Action::RunCommand { command }
        }
        _ => action.clone(),
    }
}

/// A WRITE_FILE or READ_FILE with its path inside `folder`.
fn moved_into(action: &Action, folder: &str) -> Option<Action> {
    match action {
        Action::WriteFile { path, content } => Some(Action::WriteFile { path: format!("{folder}/{path}"), content: content.clone() }),
        Action::ReadFile { path } => Some(Action::ReadFile { path: format!("{folder}/{path}") }),
        _ => None,
    }
}

/// `text` with each whole-word `word` (not part of a longer name or path)
/// replaced by `by`.
fn with_word_replaced(text: &str, word: &str, by: &str) -> String {
    let mut out = String::with_capacity(text.len() + by.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + word.len()..];
        let whole = !before.is_some_and(|c| goal_paths::is_name_char(c) || c == '/') && !goal_paths::continues_name(after) && !after.starts_with('/');
        out.push_str(&rest[..at]);
        out.push_str(if whole { by } else { word });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `step 2 `CREATE_DIR a.md`, step 4 `…``: the steps a mend dropped.
fn described<'a>(steps: impl Iterator<Item = &'a PlanStep>) -> String {
    steps.map(|i| format!("step {} `{}`", i.step, i.action)).collect::<Vec<_>>().join(", ")
}

/// Drops the steps refused on their own (`rejections` of the plan as it is
/// now) and those naming an example's files, unless they name one of the
/// goal's paths; only if the goal names paths and the rest still covers
/// them all.
fn drop_refused_steps(plan: &mut Plan, rejections: &[Rejection], cx: &Context<'_>, changes: &mut Vec<String>) {
    let named = goal_paths::named_paths(cx.goal).len();
    if named == 0 {
        return;
    }
    let refused: Vec<u32> = rejections.iter().filter_map(|r| r.step).collect();
    let (kept, dropped): (Vec<PlanStep>, Vec<PlanStep>) = plan.plan.iter().cloned().partition(|item| {
        let action = Action::parse(&item.action).ok();
        let borrowed = action.as_ref().is_some_and(|a| !goal_paths::copied(cx.goal, std::slice::from_ref(a), examples::names()).is_empty());
        let names_goal_path = action.is_some_and(|a| goal_paths::uncovered(cx.goal, &[a]).len() < named);
        !(refused.contains(&item.step) || borrowed) || names_goal_path
    });
    if kept.is_empty() || dropped.is_empty() {
        return;
    }
    let Some(parsed) = parse_all(&kept) else { return };
    if !goal_paths::uncovered(cx.goal, &parsed).is_empty() {
        return;
    }
    changes.push(format!("dropped {}, refused on its own; the other steps cover every name the goal gives", described(dropped.iter())));
    plan.plan = kept;
    renumber(plan);
}

/// Steps numbered 1, 2, … again after some were dropped.
fn renumber(plan: &mut Plan) {
    for (n, item) in plan.plan.iter_mut().enumerate() {
        item.step = u32::try_from(n + 1).unwrap_or(u32::MAX);
    }
}

/// Every step's action, or None if one does not parse.
fn parse_all(steps: &[PlanStep]) -> Option<Vec<Action>> {
    steps.iter().map(|i| Action::parse(&i.action).ok()).collect()
}

#[cfg(test)]
mod tests {

    use agentloop_tools::Workspace;

    use super::*;
    use crate::planner::action::Shell;
    use crate::planner::validate;

    fn plan(actions: &[&str]) -> Plan {
        let plan = actions.iter().enumerate().map(|(i, a)| PlanStep { step: i as u32 + 1, action: a.to_string(), expects: String::new() }).collect();
        Plan { goal: String::new(), thinking_summary: String::new(), reflection: String::new(), ready: true, plan }
    }

    /// Validates and mends in a root holding `folders`: the rejections, and
    /// the mended actions (None: not mendable).
    fn mend_in(folders: &[&str], goal: &str, actions: &[&str]) -> (Vec<Rejection>, Option<Vec<String>>) {
        let dir = tempfile::tempdir().unwrap();
        for folder in folders {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        }
        let root = Workspace::new(dir.path()).unwrap();
        let p = plan(actions);
        let seen = crate::planner::Observed::now(&root, &p.commands(), Shell::Sh);
        let cx = Context { root: &root, seen: &seen, shell: Shell::Sh, goal, assist: true, tools: &[] };
        let rejections = validate::validate(&p, &cx);
        assert!(!rejections.is_empty(), "the plan should be refused first: {actions:?}");
        let mended = mend(&p, &rejections, &cx, &|plan| validate::validate(plan, &cx)).map(|m| {
            assert!(!m.changes.is_empty());
            assert!(validate::validate(&m.plan, &cx).is_empty());
            m.plan.plan.iter().map(|i| format!("{} {}", i.step, i.action)).collect()
        });
        (rejections, mended)
    }

    /// Validates, mends in an empty root, and returns the mended actions (None: not mendable).
    fn mended(goal: &str, actions: &[&str]) -> Option<Vec<String>> {
        mend_in(&[], goal, actions).1
    }

    #[test]
    fn a_step_replacing_what_an_earlier_one_wrote_adds_to_it() {
        let goal = "Put the words alpha and beta into words.txt, one per line.";
        let (refused, mended_plan) = mend_in(&[], goal, &["RUN_COMMAND echo alpha > words.txt", "RUN_COMMAND echo beta > words.txt"]);
        assert!(refused.iter().any(|r| r.rule == Rule::Overwrite && r.step == Some(2) && r.reason.contains("which step 1 wrote")), "{refused:?}");
        assert_eq!(mended_plan.unwrap(), ["1 RUN_COMMAND echo alpha > words.txt", "2 RUN_COMMAND echo beta >> words.txt"]);
        let both = mended(goal, &["WRITE_FILE words.txt alpha", "WRITE_FILE words.txt beta"]);
        assert_eq!(both.unwrap(), ["1 WRITE_FILE words.txt alpha\\nbeta"]);
    }

    #[test]
    fn a_repeat_over_one_path_runs_once() {
        let goal = "Create a folder notes and inside it a file todo.txt listing two tasks: buy milk and call Anna.";
        let m = mended(goal, &["CREATE_DIR notes", "REPEAT 3 WRITE_FILE notes/todo.txt buy milk\\ncall Anna"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR notes", "2 WRITE_FILE notes/todo.txt buy milk\\ncall Anna"]);
    }

    #[test]
    fn a_loop_counting_from_zero_counts_from_one_when_the_goal_does() {
        let goal = "In a folder days, create day_001.txt, day_002.txt and day_003.txt, each saying 'log'.";
        let m = mended(goal, &["CREATE_DIR days", "REPEAT 3 WRITE_FILE days/day_{index:03d}.txt log"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR days", "2 REPEAT 3 WRITE_FILE days/day_{number:03d}.txt log"]);
    }

    #[test]
    fn a_loop_shaped_like_the_goals_range_makes_that_range() {
        let goal = "Create ten empty-ish files note_00.txt to note_09.txt in a folder notes, each with the text 'note'.";
        let m = mended(goal, &["CREATE_DIR notes", "REPEAT 3 WRITE_FILE notes/note_{index:03d}.txt note {index}", "LIST_DIR notes AS note_files"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR notes", "2 REPEAT 10 WRITE_FILE notes/note_{index:02d}.txt note {index}", "3 LIST_DIR notes AS note_files"]);
        let goal = "Create files chapter_1.md to chapter_3.md, each starting with '# Chapter' and its number.";
        let m = mended(goal, &["REPEAT 2 WRITE_FILE chapter_{index}.md # Chapter {index}"]);
        assert_eq!(m.unwrap(), ["1 REPEAT 3 WRITE_FILE chapter_{number}.md # Chapter {number}"]);
    }

    #[test]
    fn a_folder_made_of_a_file_name_that_is_written_later_is_dropped() {
        let goal = "Create files chapter_1.md to chapter_3.md, each starting with '# Chapter' and its number.";
        let m =
            mended(goal, &["CREATE_DIR chapter_1.md", "WRITE_FILE chapter_1.md # Chapter 1", "CREATE_DIR chapter_3.md", "WRITE_FILE chapter_3.md # Chapter 3"]);
        assert_eq!(m.unwrap(), ["1 WRITE_FILE chapter_1.md # Chapter 1", "2 WRITE_FILE chapter_3.md # Chapter 3"]);
    }

    #[test]
    fn lines_a_worked_example_quoted_are_removed_when_other_text_remains() {
        let goal = "Write a README.md with a title line '# Inventory' and one sentence saying it tracks stock.";
        let m = mended(goal, &["WRITE_FILE README.md # Inventory\\nfirst entry"]);
        assert_eq!(m.unwrap(), ["1 WRITE_FILE README.md # Inventory"]);
        let m = mended(goal, &["WRITE_FILE README.md '# Inventory\\nfirst entry'"]);
        assert_eq!(m.unwrap(), ["1 WRITE_FILE README.md '# Inventory"], "a stray quote does not hide the example's line");
        assert_eq!(mended("Create a file notes.md.", &["WRITE_FILE notes.md first entry"]), None, "nothing of the model's own would be left");
    }

    #[test]
    fn a_loop_over_a_key_never_stored_lists_the_folder_the_key_names() {
        let goal = "For every file in the folder inbox, make a copy in the folder archive.";
        let mended = |actions: &[&str]| {
            let (rejections, mended) = mend_in(&["inbox"], goal, actions);
            assert!(rejections.iter().any(|r| r.rule == Rule::ForEachKey), "{rejections:?}");
            mended
        };
        let m = mended(&["CREATE_DIR archive", "FOR_EACH inbox_files RUN_COMMAND cp {item} archive/"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR archive", "2 LIST_DIR inbox AS inbox_files", "3 FOR_EACH inbox_files RUN_COMMAND cp {item} archive/"]);
        let m = mended(&["CREATE_DIR archive", "FOR_EACH archive RUN_COMMAND wc -c {item}"]);
        assert_eq!(
            m.unwrap(),
            ["1 CREATE_DIR archive", "2 LIST_DIR archive AS archive", "3 FOR_EACH archive RUN_COMMAND wc -c {item}"],
            "a folder an earlier step makes"
        );
        assert_eq!(mended(&["CREATE_DIR archive", "FOR_EACH mail_files RUN_COMMAND cp {item} archive/"]), None, "no folder mail");
        assert_eq!(mended(&["CREATE_DIR archive", "FOR_EACH inbox_files_RUN_COMMANDcp RUN_COMMAND cp {item} archive/"]), None, "a run-on key names no folder");
    }

    #[test]
    fn a_file_the_goal_puts_in_a_folder_is_named_there() {
        let goal = "Create a folder notes and inside it a file todo.txt listing two tasks: buy milk and call Anna.";
        let m = mended(goal, &["RUN_COMMAND echo buy milk >> todo.txt", "RUN_COMMAND echo call Anna >> todo.txt"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR notes", "2 RUN_COMMAND echo buy milk >> notes/todo.txt", "3 RUN_COMMAND echo call Anna >> notes/todo.txt"]);
        let goal = "Create a folder src with a file main.py that prints 'hi'.";
        assert_eq!(
            mended(goal, &["WRITE_FILE main.py print('hi')", "READ_FILE main.py"]).unwrap(),
            ["1 WRITE_FILE src/main.py print('hi')", "2 READ_FILE src/main.py"]
        );
        let goal = "In a folder days, create day_001.txt, day_002.txt and day_003.txt, each saying 'log'.";
        assert_eq!(mended(goal, &["REPEAT 3 WRITE_FILE day_{number:03d}.txt log"]).unwrap(), ["1 REPEAT 3 WRITE_FILE days/day_{number:03d}.txt log"]);
    }

    #[test]
    fn the_one_write_of_a_goals_file_writes_the_text_the_goal_gives() {
        let goal = "In a folder days, create day_001.txt, day_002.txt and day_003.txt, each saying 'log'.";
        let m = mended(goal, &["CREATE_DIR days", "REPEAT 3 WRITE_FILE days/day_{number:03d}.txt day {number}"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR days", "2 REPEAT 3 WRITE_FILE days/day_{number:03d}.txt log"]);
        let goal = "Create a file hello.txt containing the text Hello, world!";
        assert_eq!(mended(goal, &["WRITE_FILE hello.txt hello"]).unwrap(), ["1 WRITE_FILE hello.txt Hello, world!"]);
        assert_eq!(
            mended(goal, &["RUN_COMMAND echo hello > hello.txt"]).unwrap(),
            ["1 WRITE_FILE hello.txt Hello, world!"],
            "a plain echo into the file is its write"
        );
        assert_eq!(mended(goal, &["RUN_COMMAND echo hello | tr a-z A-Z > hello.txt"]), None, "a command that does more is not rewritten");
        assert_eq!(
            mended(goal, &["WRITE_FILE hello.txt hi", "WRITE_FILE hello.txt hey"]).unwrap(),
            ["1 WRITE_FILE hello.txt Hello, world!"],
            "two writes of the file are first joined into one"
        );
    }

    #[test]
    fn the_one_file_written_under_another_name_gets_the_goals_name() {
        let goal = "Create a folder logs and a file logs/app.log with the line 'started'.";
        let m = mended(goal, &["RUN_COMMAND echo started >> logs.txt"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR logs", "2 RUN_COMMAND echo started >> logs/app.log"]);
        let goal = "Create a folder src with a file main.py that prints 'hi'.";
        let m = mended(goal, &["WRITE_FILE src.py print('hi')", "RUN_COMMAND head -n 1 {item}"]);
        assert_eq!(m.unwrap(), ["1 WRITE_FILE src/main.py print('hi')"]);
        let goal = "Create files a.txt and b.txt, each with a line of your choice.";
        assert_eq!(mended(goal, &["WRITE_FILE a.txt x", "WRITE_FILE c.txt x", "WRITE_FILE d.txt x"]), None, "two unnamed files: which is b.txt is not known");
    }

    #[test]
    fn a_redirect_into_a_folder_nothing_makes_gets_the_folder_first() {
        let goal = "Create a folder notes and inside it a file todo.txt listing two tasks: buy milk and call Anna.";
        let m = mended(goal, &["RUN_COMMAND echo buy milk >> notes/todo.txt", "RUN_COMMAND echo call Anna >> notes/todo.txt"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR notes", "2 RUN_COMMAND echo buy milk >> notes/todo.txt", "3 RUN_COMMAND echo call Anna >> notes/todo.txt"]);
    }

    #[test]
    fn an_entry_put_under_a_folder_is_named_by_its_file_name() {
        let goal = "For every file in the folder inbox, make a copy in the folder archive.";
        let (rejections, mended) =
            mend_in(&["inbox"], goal, &["LIST_DIR inbox AS inbox_files", "FOR_EACH inbox_files RUN_COMMAND cp inbox/{item} archive/{item}"]);
        assert!(rejections.iter().any(|r| r.rule == Rule::LoopVariable && r.reason.contains("write inbox/{name}")), "{rejections:?}");
        assert_eq!(mended.unwrap()[1], "2 FOR_EACH inbox_files RUN_COMMAND cp inbox/{name} archive/{name}");
        assert_eq!(rules::with_item_named("cp {item} archive/{item} /{item}"), "cp {item} archive/{name} /{item}");
    }

    #[test]
    fn a_range_name_written_is_not_renamed() {
        let goal = "Create files chapter_1.md to chapter_3.md, each starting with '# Chapter' and its number.";
        assert_eq!(
            mended(goal, &["WRITE_FILE chapter_1.md # Chapter 1", "WRITE_FILE chapter_2.md # Chapter 2", "READ_FILE {item}"]),
            None,
            "chapter_2.md is the goal's; chapter_3.md is still missing"
        );
    }

    #[test]
    fn only_whole_words_are_replaced() {
        assert_eq!(
            with_word_replaced("cat todo.txt old_todo.txt todo.txt.bak notes/todo.txt >todo.txt", "todo.txt", "n/todo.txt"),
            "cat n/todo.txt old_todo.txt todo.txt.bak notes/todo.txt >n/todo.txt"
        );
    }

    #[test]
    fn stray_steps_are_dropped_when_the_rest_covers_the_goal() {
        let goal = "Create five files named file_0.txt to file_4.txt, each containing its number.";
        let m = mended(goal, &["REPEAT 5 WRITE_FILE file_{index}.txt {index}", "READ_FILE part_000.txt", "RUN_COMMAND list_dir"]);
        assert_eq!(m.unwrap(), ["1 REPEAT 5 WRITE_FILE file_{index}.txt {index}"]);
    }

    #[test]
    fn the_whole_steps_the_goal_spells_out_complete_a_plan_that_does_part_of_it() {
        let goal = "Create a project layout: folders project/src and project/tests, and a file project/README.md saying 'My project'.";
        let m = mended(goal, &["WRITE_FILE project/README.md My project"]);
        assert_eq!(m.unwrap(), ["1 CREATE_DIR project/src", "2 CREATE_DIR project/tests", "3 WRITE_FILE project/README.md My project"]);
        let m = mended(goal, &["CREATE_DIR project/src", "CREATE_DIR project/tests"]);
        assert_eq!(m.unwrap(), ["1 WRITE_FILE project/README.md My project", "2 CREATE_DIR project/src", "3 CREATE_DIR project/tests"]);
        let logs = "Create a folder logs and a file logs/app.log with the line 'started'.";
        let m = mended(logs, &["LIST_DIR logs AS log_files", "FOR_EACH log_files RUN_COMMAND head -n 1 {item}"]);
        assert_eq!(m.unwrap(), ["1 WRITE_FILE logs/app.log started", "2 LIST_DIR logs AS log_files", "3 FOR_EACH log_files RUN_COMMAND head -n 1 {item}"]);
    }

    #[test]
    fn a_plan_missing_a_goal_name_is_not_completed_without_the_goals_words() {
        let goal = "Create a project layout: folders project/src and project/tests, and a file project/README.md.";
        assert_eq!(mended(goal, &["CREATE_DIR project/src", "CREATE_DIR project/tests"]), None, "the goal gives no text for the README");
        let goal = "Create a project layout: folders project/src and project/tests, and a file project/README.md saying 'My project'.";
        assert_eq!(mended(goal, &["CREATE_DIR build/debug"]), None, "a plan that does none of the goal is not completed");
        assert_eq!(mended("Make a compressed tar archive backup.tar.gz of the folder site.", &["LIST_DIR site AS files"]), None, "an archive needs a command");
    }

    #[test]
    fn a_refused_step_about_the_goals_own_file_is_not_dropped() {
        let goal = "Count the words in story.txt and show story.txt.";
        assert_eq!(mended(goal, &["RUN_COMMAND no_such_wc story.txt", "READ_FILE story.txt"]), None);
    }

    #[test]
    fn steps_are_not_dropped_for_a_goal_that_names_no_path() {
        assert_eq!(mended("Show the current date.", &["RUN_COMMAND date", "RUN_COMMAND no_such_tool_here"]), None);
    }

    #[test]
    fn a_plan_that_leaves_the_root_is_never_mended() {
        let goal = "Create a file notes.txt saying hi.";
        assert_eq!(mended(goal, &["WRITE_FILE notes.txt hi", "WRITE_FILE ../outside.txt hi"]), None);
        assert_eq!(mended(goal, &["WRITE_FILE notes.txt hi", "REPEAT 2 WRITE_FILE /etc/x.txt hi"]), None);
    }
}

//! Mechanical mends for a plan refused by a rule whose reason names the
//! fix exactly, tried before the model is asked again: asking costs a
//! minute and often brings a worse plan. None of them reads the goal; a
//! mended plan runs only if it then passes every rule, like any other plan.
//!
//! 1. a REPEAT whose path has no counter (`loop-path`) runs once;
//! 2. a FOR_EACH that puts `{item}` under a folder (`archive/{item}`,
//!    `loop-variable`) names `{name}` there;
//! 3. a CREATE_DIR of a file name that a later step writes as a file
//!    (`path-kind`) is dropped: the write makes the file and its folder;
//! 4. a FOR_EACH over a key no step stored (`for-each-key`), where the key
//!    is a folder's name (`inbox_files` for the folder `inbox`, which
//!    exists or an earlier step creates), gets the `LIST_DIR inbox AS
//!    inbox_files` before it;
//! 5. a command that redirects into a folder nothing makes
//!    (`missing-folder`) gets the CREATE_DIR before it;
//! 6. a step that replaces a file an earlier step wrote, unread in between
//!    (`overwrite`), adds to it instead: its command's `>` becomes `>>`,
//!    or, when both steps are WRITE_FILE, the second's text joins the
//!    first's on a new line.
//!
//! A plan that tries to leave the root is never mended: it is refused whole.

use crate::action::Action;
use crate::goal_paths;
use crate::plan::{all_parsed, parse, Plan, PlanStep};
use crate::rejection::{Context, Rejection, Rule};
use crate::rules;

/// A plan that passes every rule after mending, and what was changed.
#[derive(Debug)]
pub struct Mended {
    pub plan: Plan,
    /// One sentence per change, for the user and the journal.
    pub changes: Vec<String>,
}

/// The mended plan, when mending makes `plan` pass every rule.
pub fn mend(plan: &Plan, rejections: &[Rejection], cx: &Context<'_>) -> Option<Mended> {
    let unmendable = [Rule::Json, Rule::Schema, Rule::NotReady, Rule::Path, Rule::AlreadyRan, Rule::ToolCall];
    if rejections.is_empty() || rejections.iter().any(|r| unmendable.contains(&r.rule)) {
        return None;
    }
    let mut plan = plan.clone();
    let mut changes = Vec::new();
    run_loops_once(&mut plan, &mut changes);
    name_items_by_name(&mut plan, &mut changes);
    drop_folders_later_written(&mut plan, &mut changes);
    list_before_loops(&mut plan, cx, &mut changes);
    create_missing_folders(&mut plan, cx, &mut changes);
    append_instead_of_replacing(&mut plan, &mut changes);
    (!changes.is_empty() && rules::validate(&plan, cx).is_empty()).then_some(Mended { plan, changes })
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

/// Drops `CREATE_DIR p` where `p` has a file's extension and a later step
/// writes `p` as a file: the folder would make that write fail.
fn drop_folders_later_written(plan: &mut Plan, changes: &mut Vec<String>) {
    let Some(parsed) = all_parsed(&parse(plan)) else { return };
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

/// Adds `LIST_DIR folder AS key` before a FOR_EACH over a key nothing
/// stored, when the key names a folder (`folder_of_key`).
fn list_before_loops(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let Some(parsed) = all_parsed(&parse(plan)) else { return };
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

/// Adds `CREATE_DIR folder` before each step that redirects into a folder
/// nothing makes (`missing_folder`).
fn create_missing_folders(plan: &mut Plan, cx: &Context<'_>, changes: &mut Vec<String>) {
    let Some(parsed) = all_parsed(&parse(plan)) else { return };
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
    let Some(parsed) = all_parsed(&parse(plan)) else { return };
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

/// `step 2 `CREATE_DIR a.md`, step 4 `…``: the steps a mend dropped.
fn described<'a>(steps: impl Iterator<Item = &'a PlanStep>) -> String {
    steps.map(|i| format!("step {} `{}`", i.step, i.action)).collect::<Vec<_>>().join(", ")
}

/// Steps numbered 1, 2, … again after some were dropped.
fn renumber(plan: &mut Plan) {
    for (n, item) in plan.plan.iter_mut().enumerate() {
        item.step = u32::try_from(n + 1).unwrap_or(u32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use agentloop_tools::Workspace;

    use super::*;
    use crate::action::Shell;

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
        let seen = crate::Observed::now(&root, &p.commands(), Shell::Sh);
        let cx = Context { root: &root, seen: &seen, shell: Shell::Sh, goal, tools: &[] };
        let rejections = rules::validate(&p, &cx);
        assert!(!rejections.is_empty(), "the plan should be refused first: {actions:?}");
        let mended = mend(&p, &rejections, &cx).map(|m| {
            assert!(!m.changes.is_empty());
            assert!(rules::validate(&m.plan, &cx).is_empty());
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
    fn a_folder_made_of_a_file_name_that_is_written_later_is_dropped() {
        let goal = "Create files chapter_1.md to chapter_3.md, each starting with '# Chapter' and its number.";
        let m =
            mended(goal, &["CREATE_DIR chapter_1.md", "WRITE_FILE chapter_1.md # Chapter 1", "CREATE_DIR chapter_3.md", "WRITE_FILE chapter_3.md # Chapter 3"]);
        assert_eq!(m.unwrap(), ["1 WRITE_FILE chapter_1.md # Chapter 1", "2 WRITE_FILE chapter_3.md # Chapter 3"]);
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
    fn a_plan_that_leaves_the_root_is_never_mended() {
        let goal = "Create a file notes.txt saying hi.";
        assert_eq!(mended(goal, &["WRITE_FILE notes.txt hi", "WRITE_FILE ../outside.txt hi"]), None);
        assert_eq!(mended(goal, &["WRITE_FILE notes.txt hi", "REPEAT 2 WRITE_FILE /etc/x.txt hi"]), None);
    }
}

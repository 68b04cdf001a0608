//! When no slip and no line's rewrite passes: the model asked what
//! statement a short ranked function lacks, and each answer tried at each
//! place in the function the failing tests run, against the tests.
//!
//! A dropped statement (an update of some state, a guard, a step of a
//! computation) leaves no wrong line to point at: every line the tests run
//! is right, and what is wrong is what they do not run. Asked to rewrite a
//! line, a small model rewrites that line. Asked what the whole function
//! lacks, it can name the statement; and where it goes is for the tests to
//! find, not the model: a function the failing tests run at n lines has at
//! most 2n places, each a try of seconds on the failing tests alone.

use std::collections::BTreeSet;

use agentloop_codemap::small_edits::without_comment;
use agentloop_codemap::{Region, SmallEdit};
use agentloop_core::{Result, Step};

use super::line_rewrites::{self, indentation};
use super::prompts;
use super::state::CoderState;
use super::CODER_ROLE;

/// What an attempt made of a missing statement is called among the attempts.
pub const KIND: &str = "missing statement";

/// Ranked regions asked about, at most: the five a localization counts as
/// the fault shown near the top.
pub const REGIONS: usize = 5;
/// A function longer than this is not shown whole to be asked about.
const REGION_LINES: usize = 60;
/// Lines an answer may hold: a statement, or a guarded one.
const ANSWER_LINES: usize = 4;
/// Edits tried for one function, at most.
pub const TRIES: usize = 30;

/// The regions asked about: the first `REGIONS` of the ranked `regions`
/// that hold a place (a line the failing tests run) and are short enough
/// to show whole.
pub fn regions<'a>(regions: &'a [Region], places: &[(String, usize)]) -> Vec<&'a Region> {
    regions.iter().filter(|r| r.end + 1 - r.start <= REGION_LINES && places.iter().any(|(p, l)| r.covers(p, *l, *l))).take(REGIONS).collect()
}

/// Asks the model for the statement `region` of `path` (whose text is
/// `content`) lacks, and reads its answers as edits that put each at each
/// of `places` (lines of the region, likeliest first).
pub async fn ask(s: &CoderState, step: &mut Step, path: &str, content: &str, region: &Region, places: &[usize]) -> Result<Vec<SmallEdit>> {
    let lines: Vec<&str> = content.split('\n').collect();
    let Some(function) = lines.get(region.start.saturating_sub(1)..region.end.min(lines.len())) else { return Ok(Vec::new()) };
    let asked = line_rewrites::sampled(prompts::missing_statement(s, path, &function.join("\n")), ANSWER_LINES);
    let answers = step.chat_all_as(CODER_ROLE, asked).await?;
    let mut statements: Vec<Vec<String>> = Vec::new();
    for found in answers.iter().filter_map(|a| statement(&a.content, function)).filter(|f| could_run(f, content)) {
        if !statements.contains(&found) {
            statements.push(found);
        }
    }
    if statements.is_empty() {
        step.reject_answer(CODER_ROLE)?;
    }
    Ok(placed(path, &lines, places, &statements))
}

/// The new lines of one answer, their common indentation taken off; `None`
/// when it holds none. Comments are not code, and a line the function
/// already holds is the model copying context, not the missing statement.
fn statement(answer: &str, function: &[&str]) -> Option<Vec<String>> {
    let known: BTreeSet<&str> = function.iter().map(|l| without_comment(l).trim()).filter(|l| !l.is_empty()).collect();
    let code: Vec<&str> = answer
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .map(without_comment)
        .filter(|l| !l.trim().is_empty() && !known.contains(l.trim()))
        .take(ANSWER_LINES)
        .collect();
    let common = code.iter().map(|l| indentation(l).len()).min()?;
    Some(code.iter().map(|l| l[common..].trim_end().to_string()).collect())
}

/// Whether `statement` could be what a function of `content` lacks: it
/// is not a definition of its own (a body lacks a statement, not a nested
/// function), and every private attribute it reads (`obj._name`) is named
/// somewhere in the file, since a class's private state is its own. A
/// small model otherwise writes a helper the class does not have, and each
/// of its places is a try that can only fail.
fn could_run(statement: &[String], content: &str) -> bool {
    let opens_definition = statement.first().is_some_and(|l| ["def ", "async def ", "class "].iter().any(|k| l.starts_with(k)));
    let known: BTreeSet<&str> = content.split(|c: char| !c.is_alphanumeric() && c != '_').collect();
    let private =
        statement.iter().flat_map(|l| l.split('.').skip(1)).map(|after| after.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or_default());
    !opens_definition && private.filter(|name| name.starts_with('_')).all(|name| known.contains(name))
}

/// Each statement put before and after each place, at the place's own
/// indentation: the likeliest place first, each statement there before
/// the next place, so that every statement reaches the likeliest places
/// within the tries; an edit that leaves the file as another already does
/// is left out.
fn placed(path: &str, lines: &[&str], places: &[usize], statements: &[Vec<String>]) -> Vec<SmallEdit> {
    let mut out: Vec<SmallEdit> = Vec::new();
    let mut seen: BTreeSet<(usize, String)> = BTreeSet::new();
    for &place in places {
        let Some(&at) = place.checked_sub(1).and_then(|i| lines.get(i)) else { continue };
        for statement in statements {
            let indent = indentation(at);
            let new: Vec<String> = statement.iter().map(|l| format!("{indent}{l}")).collect();
            let new = new.join("\n");
            // Before the line, and after it unless it opens a block.
            let mut edits = vec![(place, format!("{new}\n{at}"))];
            if !without_comment(at).trim_end().ends_with(':') {
                edits.push((place + 1, format!("{at}\n{new}")));
            }
            for (slot, after) in edits {
                // Before line n+1 at its indentation is after line n at
                // the same: one place, tried once.
                if seen.insert((slot, new.clone())) {
                    out.push(SmallEdit { path: path.to_string(), line: place, before: at.to_string(), after });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const FUNCTION: [&str; 5] = ["def get(self, key):", "    value = self.data[key]", "    if value is None:", "        return None", "    return value"];

    #[test]
    fn an_answer_is_its_new_lines_without_the_context_it_copies() {
        let answer = "```python\n    value = self.data[key]\n    self.order.append(key)  # mark it used\n```";
        assert_eq!(statement(answer, &FUNCTION), Some(vec!["self.order.append(key)".to_string()]));
        let guarded = "try:\n    self.touch(key)\nexcept KeyError:\n    pass";
        assert_eq!(statement(guarded, &FUNCTION).unwrap(), vec!["try:", "    self.touch(key)", "except KeyError:", "    pass"], "relative indentation is kept");
        assert_eq!(statement("```python\nreturn value\n```", &FUNCTION), None, "only lines already there");
    }

    #[test]
    fn a_statement_is_put_before_and_after_each_place_at_its_indentation_once_each() {
        let statements = vec![vec!["self.order.append(key)".to_string()]];
        let edits = placed("m.py", &FUNCTION, &[2, 5], &statements);
        let applied: Vec<String> = edits.iter().map(|e| e.apply(&FUNCTION.join("\n")).unwrap()).collect();
        assert_eq!(edits.len(), 4, "before and after each of the two places: {applied:#?}");
        assert!(applied[1].contains("    value = self.data[key]\n    self.order.append(key)\n    if value"), "{}", applied[1]);
        assert!(applied[2].contains("        return None\n    self.order.append(key)\n    return value"), "{}", applied[2]);
        let openers = placed("m.py", &FUNCTION, &[3, 4], &statements);
        assert_eq!(openers.len(), 3, "nothing goes after a line that opens a block");
        assert!(openers[1].after.starts_with("        self.order"), "inside the block at its own indentation");
    }

    #[test]
    fn every_statement_is_tried_at_the_likeliest_place_before_any_is_tried_at_the_next() {
        let statements = vec![vec!["self.order.append(key)".to_string()], vec!["self.hits += 1".to_string()]];
        let edits = placed("m.py", &FUNCTION, &[5, 2], &statements);
        let first: Vec<&str> = edits.iter().take(4).map(|e| e.after.as_str()).collect();
        assert!(edits.iter().take(4).all(|e| e.line == 5), "{edits:#?}");
        assert_eq!(first[0], "    self.order.append(key)\n    return value");
        assert_eq!(first[2], "    self.hits += 1\n    return value", "{edits:#?}");
    }

    #[test]
    fn a_definition_or_a_private_helper_the_file_never_names_is_not_a_missing_statement() {
        let content = FUNCTION.join("\n") + "\n\n    def _touch(self, key):\n        self.__order.move_to_end(key)\n";
        let ok = |lines: &[&str]| could_run(&lines.iter().map(|l| l.to_string()).collect::<Vec<_>>(), &content);
        assert!(ok(&["self._touch(key)"]) && ok(&["self.__order.move_to_end(key)"]) && ok(&["value = self.data.get(key)"]));
        assert!(ok(&["os.path.join(a, b)"]), "a public name may come from anywhere");
        assert!(!ok(&["self._move_to_end(key)"]), "a private helper the file never names");
        assert!(!ok(&["def first(seq):", "    return next(iter(seq))"]), "a nested definition");
    }

    #[test]
    fn after_a_line_and_before_the_next_at_the_same_indentation_is_one_place() {
        let lines = ["def f(xs):", "    total = 0", "    total += 1", "    return total"];
        let edits = placed("m.py", &lines, &[2, 3], &[vec!["total *= 2".to_string()]]);
        assert_eq!(edits.len(), 3, "before 2, after 2 (= before 3), after 3: {edits:#?}");
    }

    #[test]
    fn only_the_first_short_ranked_regions_that_the_failing_tests_run_are_asked_about() {
        let region = |start, end| Region { path: "m.py".into(), start, end, name: String::new() };
        let ranked: Vec<Region> =
            [(1, 200), (210, 220), (230, 240), (250, 260), (270, 280), (290, 300), (310, 320), (330, 340)].map(|(a, b)| region(a, b)).to_vec();
        let run: Vec<(String, usize)> = [5, 215, 255, 275, 295, 315, 335].map(|l| ("m.py".to_string(), l)).to_vec();
        let asked: Vec<usize> = regions(&ranked, &run).iter().map(|r| r.start).collect();
        assert_eq!(asked, vec![210, 250, 270, 290, 310], "not the long one, not one no failing test runs, five at most");
    }
}

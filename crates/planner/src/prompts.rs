//! What the planner says to its models.

use agentloop_core::{ChatRequest, Message};
use agentloop_tools::mcp_client::Listing;

use super::action::Shell;
use super::assist::examples;
use super::assist::switches::Assist;
use super::goal_paths;
use super::state::PlannerState;
use super::verify::{Check, Outcome};

/// The last rejected answer is shown up to this many characters.
const REJECTED_SHOWN: usize = 600;

pub fn restate(s: &PlannerState) -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        Message::system("You restate a user's goal precisely. Answer with JSON only."),
        Message::user(format!(
            "Goal: {}\n\nRestate the goal as WHO (who it is for), WHAT (exactly what must exist or happen), WHEN (now, or an order of steps), WHERE (which folders and files, relative to the root folder) and WHY (the purpose). One short sentence each.",
            s.goal
        )),
    ]);
    r.max_tokens = Some(300);
    r
}

/// The action language as the planner model is taught it, with CALL_TOOL
/// when the session has MCP tools.
fn action_language(shell: Shell, tools: &[Listing]) -> String {
    let shell_name = match shell {
        Shell::Sh => "POSIX sh",
        Shell::Powershell => "PowerShell",
    };
    format!(
        "Allowed actions (one line each; paths are relative to the root):\n\
         CREATE_DIR <path>\n\
         WRITE_FILE <path> <content>   (the content is the rest of the line; write \\n for a new line)\n\
         READ_FILE <path>\n\
         LIST_DIR <path> AS <key>      (stores the absolute paths of the folder's entries under <key>)\n\
         FOR_EACH <key> <action>       (runs the action for each stored path: {{item}} is the full path, {{name}} the file name; never CREATE_DIR)\n\
         REPEAT <n> <action>           ({{index}} counts from 0, {{number}} from 1; {{index:03d}} pads to 3 digits)\n\
         RUN_COMMAND <command>         ({shell_name}; only commands that exist on this machine){}",
        tool_language(tools)
    )
}

fn tool_language(tools: &[Listing]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let mut text = "\nCALL_TOOL <server> <tool> <arguments as one JSON object>   (made once, after the user approves the outcome; never inside FOR_EACH or REPEAT)\nThe tools CALL_TOOL may name:".to_string();
    for l in tools {
        for t in &l.tools {
            text.push_str(&format!("\n- {} {}: {} Arguments: {}", l.server, t.name, t.description, t.input_schema));
        }
    }
    text
}

/// How many worked examples each plan prompt carries (as earlier turns of
/// the conversation; see `examples`).
const EXAMPLES_SHOWN: usize = 4;

pub fn plan(s: &PlannerState) -> ChatRequest {
    let mut user = format!("GOAL: {}\n", s.goal);
    if let Some(r) = &s.restatement {
        user.push_str(&format!("\nRESTATEMENT:\n{}\n", r.lines()));
    }
    let names = if s.config.uses(Assist::Names) { goal_paths::named_paths(&s.goal) } else { Vec::new() };
    if !names.is_empty() {
        user.push_str(&format!("\nNAMES THE GOAL GIVES (the plan must use each, spelled exactly): {}\n", names.join(", ")));
    }
    if let Some(last) = s.runs.last().map(|r| r.proposal) {
        user.push_str("\nTHE LAST PLAN, TRIED IN A COPY (the root itself is unchanged: the next plan must do everything from the start):\n");
        for run in s.runs.iter().filter(|r| r.proposal == last) {
            user.push_str(&format!("- {} → {}\n", run.action, if run.ok { "ok" } else { "FAILED" }));
        }
    }
    if let Some(failure) = &s.failure {
        user.push_str(&format!("\nTHE LAST STEP FAILED: {failure}\n"));
    }
    if !s.gap.is_empty() && s.failure.is_none() {
        user.push_str("\nTHE LAST PLAN RAN IN A COPY, BUT THE GOAL IS NOT MET. Still missing (the next plan must do these too):\n");
        for g in &s.gap {
            user.push_str(&format!("- {g}\n"));
        }
    }
    if !s.feedback.is_empty() {
        user.push_str("\nUSER FEEDBACK (follow it):\n");
        for f in &s.feedback {
            user.push_str(&format!("- {f}\n"));
        }
    }
    let system = format!(
        "You are {}. {}\n\nYou work in one root folder: write every path relative to it, never an absolute path.\n\n{}\n\n\
         Answer with one JSON object inside <json></json> tags with exactly the keys goal, thinking_summary, reflection, ready and plan; \
         each plan item has exactly step, action and expects. Plan only what the GOAL asks for, with the names it gives. \
         Write the real file content the goal asks for, never placeholders such as ... or TODO.",
        s.config.name,
        s.config.backstory,
        action_language(s.config.shell, &s.mcp)
    );
    // A model that wrote the same refused plan twice starts afresh: other
    // examples, the refusals listed, its own plan not shown again.
    let stuck = s.repeating_a_refused_plan();
    if stuck {
        user.push_str("\nEARLIER PLANS WERE REJECTED FOR THESE REASONS (write a plan that avoids them):\n");
        for r in s.recent_rejections(2) {
            user.push_str(&format!("- {r}\n"));
        }
        for h in s.last_proposal().map(|p| p.retry_hints.as_slice()).unwrap_or_default() {
            user.push_str(&format!("- hint: {h}\n"));
        }
    }
    let mut messages = vec![Message::system(system)];
    let shown = if s.config.uses(Assist::Examples) { EXAMPLES_SHOWN } else { 0 };
    for example in examples::chosen(&s.goal, shown, usize::from(stuck)) {
        messages.push(Message::user(format!("GOAL: {}", example.goal)));
        messages.push(Message::assistant(format!("<json>{}</json>", example.answer())));
    }
    messages.push(Message::user(user));
    // A rejected plan is shown as the model's own last turn, answered by the
    // reasons: quoted inside the request, a small model copied it verbatim.
    if let Some(last) = s.last_proposal().filter(|p| !p.valid() && !stuck) {
        let shown: String = last.raw.chars().take(REJECTED_SHOWN).collect();
        messages.push(Message::assistant(shown));
        messages.push(Message::user(rejection_turn(s, &last.retry_hints)));
    }
    let mut r = ChatRequest::new(messages);
    r.max_tokens = Some(900);
    r
}

/// What the model is told after its plan was rejected (the rejected output
/// itself is the turn before, truncated).
fn rejection_turn(s: &PlannerState, hints: &[String]) -> String {
    let mut text = String::from("That plan was REJECTED and nothing of it ran.\n\nRECENT REJECTIONS (fix these):\n");
    for r in s.recent_rejections(3) {
        text.push_str(&format!("- {r}\n"));
    }
    if !hints.is_empty() {
        text.push_str("\nRETRY_HINTS:\n");
        for h in hints {
            text.push_str(&format!("- {h}\n"));
        }
    }
    text.push_str(&format!("\nWrite a different, corrected plan for the GOAL: {}", s.goal));
    text
}

/// Asks the model to mend an answer whose JSON did not parse.
pub fn repair(answer: &str, error: &str) -> ChatRequest {
    let shown: String = answer.chars().take(2000).collect();
    let mut r = ChatRequest::new(vec![
        Message::system("You fix broken JSON. Answer with the corrected JSON inside <json></json> tags and nothing else."),
        Message::user(format!("This answer should be a JSON plan but does not parse ({error}):\n{shown}\n\nReturn it as valid JSON with the keys goal, thinking_summary, reflection, ready, plan.")),
    ]);
    r.max_tokens = Some(900);
    r
}

pub fn diagnose(s: &PlannerState) -> ChatRequest {
    let last = s.last_proposal();
    let reasons: Vec<String> = last.map(|p| p.rejections.iter().map(|r| r.to_string()).collect()).unwrap_or_default();
    let shown: String = last.map(|p| p.raw.chars().take(REJECTED_SHOWN).collect()).unwrap_or_default();
    let mut r = ChatRequest::new(vec![
        Message::system("You review rejected plans and say concretely how to fix them. Answer with JSON only."),
        Message::user(format!(
            "Goal: {}\n\nA plan was rejected for these reasons:\n- {}\n\nThe plan was:\n{shown}\n\nGive a one-sentence diagnosis and up to three short, concrete fix hints (for example the corrected action line).",
            s.goal,
            reasons.join("\n- ")
        )),
    ]);
    r.max_tokens = Some(300);
    r
}

/// Root entries shown to the judge, at most.
const ENTRIES_SHOWN: usize = 60;

/// What the trial left, as the judge is shown it: the copy's entries, the
/// files read and what the plan's commands printed.
fn observation(o: &Outcome) -> String {
    let mut out = String::from("FILES AND FOLDERS NOW UNDER THE ROOT:\n");
    // Said in words: a small judge reads an empty list as no evidence
    // either way, and then guesses.
    if o.entries.is_empty() {
        out.push_str("(none: the root is empty)\n");
    }
    for e in o.entries.iter().take(ENTRIES_SHOWN) {
        out.push_str(&format!("- {}{}\n", e.path, if e.is_dir { "/" } else { "" }));
    }
    if o.entries.len() > ENTRIES_SHOWN {
        out.push_str(&format!("- … and {} more\n", o.entries.len() - ENTRIES_SHOWN));
    }
    for f in &o.files {
        out.push_str(&format!("\nTEXT OF {}:\n<<<\n{}\n>>>\n", f.path, f.text));
    }
    if !o.outputs.is_empty() {
        out.push_str("\nCOMMANDS THAT RAN AND WHAT THEY PRINTED:\n");
        for line in &o.outputs {
            out.push_str(&format!("- {line}\n"));
        }
    }
    out
}

/// Asks for the goal's checklist, from the goal alone.
pub fn checklist(goal: &str) -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        Message::system(
            "You turn a goal into a checklist for checking the finished work. Write one requirement for each thing the goal asks for \
             (most goals ask for one to three things), in the goal's order, each as one short sentence that names the file or folder \
             and says exactly what it must hold, what a command must print, or what must be gone. Only what the goal states: \
             add no condition it does not mention. For each requirement write kind: target when the goal asks for it to become true, \
             keep when it is something the goal says must stay as it is. Also write check: one POSIX shell command, run in the \
             root folder once the work is done, that exits 0 exactly when the requirement holds and fails otherwise: it tests \
             what the requirement says — the text a file must hold, what a program must print — not only that a file exists, \
             using only the paths and texts the goal gives; it may look and compare but not change anything; \
             leave it empty when no command can tell. Answer with a JSON object: requirements (the list; each with from_goal, \
             the words of the goal it comes from, copied exactly, requirement, kind and check).",
        ),
        Message::user(format!("GOAL: {goal}\n\nWrite the checklist of this goal.")),
    ]);
    r.max_tokens = Some(500);
    r
}

/// Asks whether one requirement is done, from what OBSERVE saw; the
/// explicit checks that held are shown as facts. Everything before the
/// requirement is the same for each item, so a model that keeps its cache
/// reads it once.
pub fn judge(seen: &Outcome, checks: &[Check], requirement: &str) -> ChatRequest {
    // The requirement stands alone: the judge decides this one item, not
    // the goal as a whole. The view may be the root before the plan or its
    // outcome: the judge is not told which, so it judges what it sees.
    let mut user = observation(seen);
    if !checks.is_empty() {
        user.push_str("\nCHECKED AND TRUE:\n");
        for c in checks {
            user.push_str(&format!("- {}\n", c.expected));
        }
    }
    user.push_str(&format!("\nREQUIREMENT: {requirement}\nIs this requirement done, as shown above?"));
    let mut r = ChatRequest::new(vec![
        Message::system(
            "You check finished work against one requirement. You see what is now on disk and what commands printed; judge only from what is shown. \
             Answer with a JSON object: evidence (one sentence: what the listing, the files' text or the commands' output show of the requirement) \
             and done (true only if what is shown proves the requirement fully met; \
             a file must hold the real text or result asked for, not a command or a placeholder).",
        ),
        Message::user(user),
    ]);
    r.max_tokens = Some(160);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_root_is_said_in_words_to_the_judge() {
        let asked = judge(&Outcome::default(), &[], "the folder docs exists");
        let text = &asked.messages.last().unwrap().content;
        assert!(text.contains("FILES AND FOLDERS NOW UNDER THE ROOT:\n(none: the root is empty)\n"), "{text}");
    }
    use crate::plan::read;
    use crate::rejection::{Rejection, Rule};
    use crate::state::{ApproveMode, PlannerSettings, Proposal};

    fn refused(actions: &str) -> Proposal {
        let raw = format!(
            r#"<json>{{"goal": "g", "thinking_summary": "t", "reflection": "", "ready": true, "plan": [{{"step": 1, "action": "{actions}", "expects": "e"}}]}}</json>"#
        );
        let plan = read(&raw).ok().map(|(p, _)| p);
        Proposal {
            iteration: 1,
            raw,
            plan,
            rejections: vec![Rejection::new(Rule::PathKind, None, "the goal names day_003.txt")],
            retry_hints: vec!["write day_003.txt".into()],
            ..Proposal::default()
        }
    }

    fn state(proposals: Vec<Proposal>) -> PlannerState {
        let mut s = PlannerState::new("/r", "In a folder days, create day_001.txt and day_003.txt.", ApproveMode::All, PlannerSettings::default());
        s.proposals = proposals;
        s
    }

    #[test]
    fn no_prompt_carries_the_roots_absolute_path() {
        // An absolute root invites absolute paths (outside the root once the
        // model edits them), and a root that differs from run to run makes
        // greedy first plans differ too.
        let mut s = state(vec![refused("CREATE_DIR days")]);
        s.root = "/tmp/agentloop-bench-123/goal-18".into();
        for request in [restate(&s), plan(&s)] {
            assert!(request.messages.iter().all(|m| !m.content.contains("agentloop-bench-123")), "{:?}", request.messages);
        }
    }

    #[test]
    fn the_goal_names_are_listed_for_the_model() {
        let request = plan(&state(Vec::new()));
        let last = request.messages.last().unwrap().content.clone();
        assert!(last.contains("NAMES THE GOAL GIVES (the plan must use each, spelled exactly): day_001.txt, day_003.txt"), "{last}");
    }

    #[test]
    fn an_assist_left_out_is_gone_from_the_prompt_and_the_others_stay() {
        let names = "NAMES THE GOAL GIVES";
        let examples = |r: &ChatRequest| r.messages.iter().filter(|m| m.content.starts_with("GOAL: ")).count();
        let all = plan(&state(Vec::new()));
        assert!(all.messages.last().unwrap().content.contains(names) && examples(&all) > 1, "{:?}", all.messages);
        let mut s = state(Vec::new());
        s.config.without_assist = "examples".into();
        let without = plan(&s);
        assert!(without.messages.last().unwrap().content.contains(names), "the names stay: {:?}", without.messages);
        assert_eq!(examples(&without), 1, "only the goal itself, no worked example: {:?}", without.messages);
        s.config.without_assist = "names".into();
        let without = plan(&s);
        assert!(!without.messages.last().unwrap().content.contains(names) && examples(&without) > 1, "{:?}", without.messages);
    }

    #[test]
    fn a_refused_plan_is_answered_but_one_repeated_starts_afresh() {
        let once = plan(&state(vec![refused("CREATE_DIR days")]));
        let roles: Vec<String> = once.messages.iter().rev().take(2).map(|m| format!("{:?}", m.role)).collect();
        assert!(once.messages.last().unwrap().content.contains("That plan was REJECTED"));
        assert!(roles[1].contains("Assistant"), "the refused plan is the model's own last turn: {roles:?}");

        let twice = plan(&state(vec![refused("CREATE_DIR days"), refused("CREATE_DIR days")]));
        let last = twice.messages.last().unwrap().content.clone();
        assert!(last.starts_with("GOAL:"), "a fresh request ends with the goal: {last}");
        assert!(
            last.contains("EARLIER PLANS WERE REJECTED") && last.contains("the goal names day_003.txt") && last.contains("hint: write day_003.txt"),
            "{last}"
        );
        assert!(!twice.messages.iter().any(|m| m.content.contains("CREATE_DIR days")), "the repeated plan is not shown again");
        let examples = |r: &ChatRequest| r.messages.iter().filter(|m| m.content.starts_with("GOAL:")).map(|m| m.content.clone()).collect::<Vec<_>>();
        assert_ne!(examples(&once), examples(&twice), "other worked examples are shown");
    }
}

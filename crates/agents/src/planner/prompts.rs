//! What the planner says to its models.

use agentloop_core::{ChatRequest, Message};

use super::examples;
use super::state::PlannerState;
use super::validate::Shell;

/// The last rejected answer is shown up to this many characters.
const REJECTED_SHOWN: usize = 600;

pub fn restate(s: &PlannerState) -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        Message::system("You restate a user's goal precisely. Answer with JSON only."),
        Message::user(format!(
            "Goal: {}\nRoot folder: {}\n\nRestate the goal as WHO (who it is for), WHAT (exactly what must exist or happen), WHEN (now, or an order of steps), WHERE (which folders and files, relative to the root) and WHY (the purpose). One short sentence each.",
            s.goal, s.root
        )),
    ]);
    r.max_tokens = Some(300);
    r
}

/// The action language as the planner model is taught it.
fn action_language(shell: Shell) -> String {
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
         REPEAT <n> <action>           ({{index}} counts from 0; {{index:03d}} pads it to 3 digits)\n\
         RUN_COMMAND <command>         ({shell_name}; only commands that exist on this machine)"
    )
}

/// How many worked examples each plan prompt carries (as earlier turns of
/// the conversation; see `examples`).
const EXAMPLES_SHOWN: usize = 4;

pub fn plan(s: &PlannerState) -> ChatRequest {
    let mut user = format!("GOAL: {}\n", s.goal);
    if let Some(r) = &s.restatement {
        user.push_str(&format!("\nRESTATEMENT:\n{}\n", r.lines()));
    }
    if !s.runs.is_empty() {
        user.push_str("\nSTEPS ALREADY DONE (do not repeat them):\n");
        for run in &s.runs {
            user.push_str(&format!("- {} → {}\n", run.action, if run.ok { "ok" } else { "FAILED" }));
        }
    }
    if !s.stored.is_empty() {
        let keys: Vec<&str> = s.stored.keys().map(String::as_str).collect();
        user.push_str(&format!("\nSTORED KEYS you may use with FOR_EACH: {}\n", keys.join(", ")));
    }
    if let Some(failure) = &s.failure {
        user.push_str(&format!("\nTHE LAST STEP FAILED: {failure}\n"));
    }
    if !s.feedback.is_empty() {
        user.push_str("\nUSER FEEDBACK (follow it):\n");
        for f in &s.feedback {
            user.push_str(&format!("- {f}\n"));
        }
    }
    let system = format!(
        "You are {}. {}\n\nThe root folder is {} and every path must stay inside it.\n\n{}\n\n\
         Answer with one JSON object inside <json></json> tags with exactly the keys goal, thinking_summary, reflection, ready and plan; \
         each plan item has exactly step, action and expects. Plan only what the GOAL asks for, with the names it gives. \
         Write the real file content the goal asks for, never placeholders such as ... or TODO.",
        s.config.name,
        s.config.backstory,
        s.root,
        action_language(s.config.shell)
    );
    let mut messages = vec![Message::system(system)];
    for example in examples::chosen(&s.goal, EXAMPLES_SHOWN) {
        messages.push(Message::user(format!("GOAL: {}", example.goal)));
        messages.push(Message::assistant(format!("<json>{}</json>", example.answer())));
    }
    messages.push(Message::user(user));
    // A rejected plan is shown as the model's own last turn, answered by the
    // reasons: quoted inside the request, a small model copied it verbatim.
    if let Some(last) = s.last_proposal().filter(|p| !p.valid()) {
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

pub fn precheck(s: &PlannerState, action: &str) -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        Message::system("You summarise what a step is about to do, in one short sentence, and warn if it looks risky."),
        Message::user(format!("Next step: {action}\nIn one short sentence, what will this step do to the files under {}?", s.root)),
    ]);
    r.max_tokens = Some(60);
    r
}

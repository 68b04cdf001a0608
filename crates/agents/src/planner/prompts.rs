//! What the planner says to its models.

use agentloop_core::{ChatRequest, Message};

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

/// Worked examples, given as earlier turns of the conversation: a small
/// model copies a template's content but follows an example's shape. With
/// a single example it copied that example into every plan, so there are
/// several short ones of different shapes, the loop example not last, and
/// none of them is one of the benchmark's goals.
const EXAMPLES: [(&str, &str); 5] = [
    (
        "GOAL: Make a folder reports holding summary.md with the line 'Q1: sales up', then count the files in reports.",
        r#"{"goal": "reports/summary.md says Q1: sales up, and the files in reports are counted", "thinking_summary": "Create the folder, write the file, count with ls and wc.", "reflection": "", "ready": true, "plan": [{"step": 1, "action": "CREATE_DIR reports", "expects": "the folder reports exists"}, {"step": 2, "action": "WRITE_FILE reports/summary.md Q1: sales up", "expects": "reports/summary.md holds the line"}, {"step": 3, "action": "RUN_COMMAND ls reports | wc -l", "expects": "prints 1"}]}"#,
    ),
    (
        "GOAL: In a folder parts, create part_000.txt to part_002.txt each saying 'part N' with its number, then show the size of each file.",
        r#"{"goal": "three numbered part files in parts, and their sizes shown", "thinking_summary": "REPEAT writes the numbered files; LIST_DIR stores them; FOR_EACH runs wc on each.", "reflection": "", "ready": true, "plan": [{"step": 1, "action": "CREATE_DIR parts", "expects": "the folder parts exists"}, {"step": 2, "action": "REPEAT 3 WRITE_FILE parts/part_{index:03d}.txt part {index}", "expects": "part_000.txt to part_002.txt exist"}, {"step": 3, "action": "LIST_DIR parts AS part_files", "expects": "the three paths are stored"}, {"step": 4, "action": "FOR_EACH part_files RUN_COMMAND wc -c {item}", "expects": "each size is printed"}]}"#,
    ),
    (
        "GOAL: Append the line 'done' to log.txt and print the file.",
        r#"{"goal": "log.txt ends with the line done and is printed", "thinking_summary": "A shell redirect appends the line; READ_FILE prints it.", "reflection": "", "ready": true, "plan": [{"step": 1, "action": "RUN_COMMAND echo done >> log.txt", "expects": "log.txt ends with done"}, {"step": 2, "action": "READ_FILE log.txt", "expects": "the file is shown"}]}"#,
    ),
    (
        "GOAL: Write a Python script greet.py that prints 'Good morning' and a file NOTES.md with a heading '# Notes' and the line 'first entry'.",
        r#"{"goal": "greet.py prints Good morning; NOTES.md has a heading and one line", "thinking_summary": "Two WRITE_FILE steps; \n separates the lines of a file.", "reflection": "", "ready": true, "plan": [{"step": 1, "action": "WRITE_FILE greet.py print('Good morning')", "expects": "greet.py exists"}, {"step": 2, "action": "WRITE_FILE NOTES.md # Notes\nfirst entry", "expects": "NOTES.md has two lines"}]}"#,
    ),
    (
        "GOAL: Show how much disk space the folder build uses.",
        r#"{"goal": "the size of build is shown", "thinking_summary": "One command does it.", "reflection": "", "ready": true, "plan": [{"step": 1, "action": "RUN_COMMAND du -sh build", "expects": "prints the size of build"}]}"#,
    ),
];

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
    for (goal, answer) in EXAMPLES {
        messages.push(Message::user(goal));
        messages.push(Message::assistant(format!("<json>{answer}</json>")));
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

//! What the repl says to its model.

use agentloop_core::{ChatRequest, Message};

use super::state::ReplState;

/// Output shown back to the model per block, at most.
const OUTPUT_SHOWN: usize = 2000;

/// The system prompt, built once per session.
pub fn system() -> String {
    "You answer questions by writing Python 3 and running it. Never work a number out in your head: every count, sum or result comes from code. \
     The code runs in a persistent session: variables, functions and imports stay defined between your messages. \
     Put code in one ```python block that prints the answer. Only the standard library is available, and files may only be written in the current folder. \
     Answer in plain words, without a code block, only after your code's output has given the answer, or when the question asks for no computation at all."
        .to_string()
}

/// Worked exchanges shown before the conversation, as (user, assistant)
/// turns: told to compute with code, a small model still answers from
/// memory (and often wrongly) until it has seen the shape of a turn.
const EXAMPLES: [(&str, &str); 4] = [
    (
        "How many words in 'to be or not to be' have two letters?",
        "```python\nwords = 'to be or not to be'.split()\nprint(sum(1 for w in words if len(w) == 2))\n```",
    ),
    ("Execution results:\n[block 1]\n6", "All 6 words have two letters: the answer is 6."),
    ("What is the product of the odd numbers from 1 to 9?", "```python\nimport math\nprint(math.prod(range(1, 10, 2)))\n```"),
    ("Execution results:\n[block 1]\n945", "The product is 945."),
];

/// The system prompt and the worked exchanges every conversation starts with.
fn opening(s: &ReplState) -> Vec<Message> {
    let mut messages = vec![Message::system(s.system_prompt.clone())];
    for (user, assistant) in EXAMPLES {
        messages.push(Message::user(user));
        messages.push(Message::assistant(assistant));
    }
    messages
}

/// The conversation so far, for GENERATE.
pub fn generate(s: &ReplState) -> ChatRequest {
    let mut messages = opening(s);
    messages.extend(s.messages.iter().cloned());
    let mut r = ChatRequest::new(messages);
    r.max_tokens = Some(700);
    r
}

/// REFLECT's cross-check: the question alone, in a fresh conversation,
/// sampled, so the program it gets is written independently of the turn
/// being judged.
pub fn recheck(s: &ReplState, temperature: f32) -> ChatRequest {
    let mut messages = opening(s);
    messages.push(Message::user(s.original_prompt.clone()));
    let mut r = ChatRequest::new(messages);
    r.max_tokens = Some(700);
    r.temperature = Some(temperature);
    r
}

/// Runs `code` in a namespace of its own, so a cross-check cannot change
/// the variables the conversation relies on.
pub fn isolated(code: &str) -> String {
    // A JSON string literal is also a valid Python one.
    let literal = serde_json::to_string(code).unwrap_or_else(|_| "''".into());
    format!("exec(compile({literal}, '<check>', 'exec'), {{'__name__': '__check__'}})")
}

/// The message that carries a turn's execution results back to the model.
pub fn results(blocks: &[String], outputs: &[(String, bool)]) -> String {
    let mut text = String::from("Execution results:\n");
    for (i, ((output, failed), _code)) in outputs.iter().zip(blocks).enumerate() {
        let shown: String = output.chars().take(OUTPUT_SHOWN).collect();
        let cut = if output.chars().count() > OUTPUT_SHOWN { "\n… (output cut)" } else { "" };
        text.push_str(&format!(
            "[block {}{}]\n{}{cut}\n",
            i + 1,
            if *failed { ", FAILED" } else { "" },
            if shown.trim().is_empty() { "(no output)" } else { shown.trim_end() }
        ));
    }
    text
}

/// REFLECT: one focused judgement of correctness and completeness.
pub fn reflect(s: &ReplState) -> ChatRequest {
    let code: Vec<String> = s.code_blocks.iter().enumerate().map(|(i, c)| format!("[block {}]\n{c}", i + 1)).collect();
    let outputs: Vec<(String, bool)> = s.turn_results().iter().map(|r| (r.0.clone(), r.1)).collect();
    let mut r = ChatRequest::new(vec![
        Message::system("You judge whether Python code answered a question. Be strict: an error, a missing part or an unprinted result means not complete."),
        Message::user(format!(
            "QUESTION:\n{}\n\nCODE:\n{}\n{}\nFirst say what the question asks for (which numbers, which operation, how many times) and whether the code does exactly that. Then decide: did the code run without errors, and does its output answer the whole question? If not, say the one thing to do next.",
            s.original_prompt,
            code.join("\n"),
            results(&s.code_blocks, &outputs)
        )),
    ]);
    r.max_tokens = Some(300);
    r
}

/// The hint that starts the next turn after an incomplete one.
pub fn continue_with(reasoning: &str, next_action: &str) -> String {
    format!("Not done yet: {reasoning}\nNext: {next_action}\nWrite the code for that (the session still has your variables).")
}

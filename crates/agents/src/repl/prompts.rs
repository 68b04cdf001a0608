//! What the repl says to its model.

use agentloop_core::{ChatRequest, Message};

use super::state::ReplState;

/// Output shown back to the model per block, at most.
const OUTPUT_SHOWN: usize = 2000;

/// The system prompt, built once per session.
pub fn system() -> String {
    "You answer questions by writing Python 3 and running it. The code runs in a persistent session: variables, functions and imports stay \
     defined between your messages. Put code in ```python blocks; print what the answer needs, or end a block with an expression to see its value. \
     Only the standard library is available, and files may only be written in the current folder. \
     When the results already answer the question, or no code is needed, answer in plain words without a code block."
        .to_string()
}

/// The conversation so far, for GENERATE.
pub fn generate(s: &ReplState) -> ChatRequest {
    let mut messages = vec![Message::system(s.system_prompt.clone())];
    messages.extend(s.messages.iter().cloned());
    let mut r = ChatRequest::new(messages);
    r.max_tokens = Some(700);
    r
}

/// The message that carries a turn's execution results back to the model.
pub fn results(blocks: &[String], outputs: &[(String, bool)]) -> String {
    let mut text = String::from("Execution results:\n");
    for (i, ((output, failed), _code)) in outputs.iter().zip(blocks).enumerate() {
        let shown: String = output.chars().take(OUTPUT_SHOWN).collect();
        let cut = if output.chars().count() > OUTPUT_SHOWN { "\n… (output cut)" } else { "" };
        text.push_str(&format!("[block {}{}]\n{}{cut}\n", i + 1, if *failed { ", FAILED" } else { "" }, if shown.trim().is_empty() { "(no output)" } else { shown.trim_end() }));
    }
    text
}

/// REFLECT: one focused judgement of correctness and completeness.
pub fn reflect(s: &ReplState) -> ChatRequest {
    let code: Vec<String> = s.code_blocks.iter().enumerate().map(|(i, c)| format!("[block {}]\n{c}", i + 1)).collect();
    let turn_results = &s.execution_results[s.execution_results.len().saturating_sub(s.code_blocks.len())..];
    let outputs: Vec<(String, bool)> = turn_results.iter().map(|r| (r.0.clone(), r.1)).collect();
    let mut r = ChatRequest::new(vec![
        Message::system("You judge whether Python code answered a question. Be strict: an error, a missing part or an unprinted result means not complete."),
        Message::user(format!(
            "QUESTION:\n{}\n\nCODE:\n{}\n{}\nDid the code run without errors, and does its output answer the whole question? If not, say the one thing to do next.",
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

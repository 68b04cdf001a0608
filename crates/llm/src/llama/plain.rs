//! The yardstick for the embedded provider's speed: the plainest greedy loop
//! over llama.cpp (process the prompt, then sample and decode one token at a
//! time), with no channel, streaming, stop strings, grammar or batching; only
//! the chat template is shared, so both answer the same prompt.
//! `agentloop-bench model` runs it on the same model file and threads as the
//! provider and reports both, so that whatever the provider adds (several
//! sequences, grammars, streaming) can be seen never to cost the speed of one.

use std::num::NonZeroU32;
use std::path::Path;
use std::time::Instant;

use agentloop_core::{Error, Message, Result};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;

use super::engine::backend;
use super::prompt;

/// What the plain loop measured.
#[derive(Clone, Debug, PartialEq)]
pub struct PlainLoop {
    pub generated_tokens: u64,
    /// The answer, so that it can be seen to be the provider's greedy answer.
    pub text: String,
    /// Tokens generated per second after the prompt was processed.
    pub gen_tps: f64,
}

/// Loads the GGUF at `path` on its own and generates up to `tokens` greedy
/// tokens after `messages`, put in the model's chat template as the provider
/// does, so both decode after the same prompt.
pub fn plain_greedy_loop(path: &Path, messages: &[Message], tokens: u32, threads: u32) -> Result<PlainLoop> {
    let fail = |what: &str, e: &dyn std::fmt::Display| Error::Model { model: path.display().to_string(), message: format!("the plain loop {what} ({e})") };
    let backend = backend().map_err(|e| fail("found no llama.cpp", &e))?;
    let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default()).map_err(|e| fail("could not load the model", &e))?;
    let threads = threads.max(1) as i32;
    let params = LlamaContextParams::default().with_n_ctx(NonZeroU32::new(4096)).with_n_threads(threads).with_n_threads_batch(threads);
    let mut ctx = model.new_context(backend, params).map_err(|e| fail("could not make a context", &e))?;
    let template = model.chat_template(None).map_err(|e| fail("found no chat template", &e))?;
    let text = prompt::render(&model, &template, messages, None).map_err(|e| fail("could not write its prompt", &e))?;
    let prompt = model.vocab().tokenize(text.as_bytes(), true, true);
    let mut batch = LlamaBatch::new(prompt.len().max(1), 1);
    batch.add_sequence(&prompt, 0, false).map_err(|e| fail("could not queue its prompt", &e))?;
    ctx.decode(&mut batch).map_err(|e| fail("could not process its prompt", &e))?;
    let mut sampler = LlamaSampler::greedy();
    let mut pos = prompt.len() as i32;
    let mut logits_at = batch.n_tokens() - 1;
    let started = Instant::now();
    let mut generated = 0u64;
    let mut out = Vec::new();
    while generated < u64::from(tokens) {
        let token = sampler.sample(&ctx, logits_at);
        if model.vocab().is_eog(token) {
            break;
        }
        out.extend(model.vocab().token_to_piece(token, false, None));
        batch.clear();
        batch.add(token, pos, &[0], true).map_err(|e| fail("could not queue a token", &e))?;
        ctx.decode(&mut batch).map_err(|e| fail("could not decode a token", &e))?;
        pos += 1;
        logits_at = 0;
        generated += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    Ok(PlainLoop {
        generated_tokens: generated,
        text: String::from_utf8_lossy(&out).into_owned(),
        gen_tps: if secs > 0.0 { generated as f64 / secs } else { 0.0 },
    })
}

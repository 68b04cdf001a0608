//! The yardstick for `agentloop bench model`: the plainest greedy loop over
//! llama-cpp-2 (decode the prompt, then sample and decode one token at a
//! time), with no chat template, channel, streaming or stop checks. Run it
//! next to the benchmark to see what our provider costs on top:
//!
//!   cargo run --release -p agentloop-llm --example plain_loop -- MODEL.gguf [TOKENS] [THREADS]
//!
//! Prints one JSON line: {"gen_tps": ..., "generated_tokens": ...}.

use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: plain_loop MODEL.gguf [TOKENS] [THREADS]")?;
    let tokens: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(128);
    let threads: i32 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(2);
    let mut backend = LlamaBackend::init()?;
    backend.void_logs();
    let model = LlamaModel::load_from_file(&backend, path, &LlamaModelParams::default())?;
    let params = LlamaContextParams::default().with_n_ctx(NonZeroU32::new(4096)).with_n_threads(threads).with_n_threads_batch(threads);
    let mut ctx = model.new_context(&backend, params)?;
    let prompt = "<|im_start|>user\nExplain in detail how a hash map works, with examples.<|im_end|>\n<|im_start|>assistant\n";
    let prompt_tokens = model.vocab().tokenize(prompt.as_bytes(), true, true);
    let mut batch = LlamaBatch::new(512, 1);
    batch.add_sequence(&prompt_tokens, 0, false)?;
    ctx.decode(&mut batch)?;
    let mut sampler = LlamaSampler::greedy();
    let mut pos = prompt_tokens.len() as i32;
    let mut logits_at = batch.n_tokens() - 1;
    let started = Instant::now();
    let mut generated = 0;
    while generated < tokens {
        let token = sampler.sample(&ctx, logits_at);
        if model.vocab().is_eog(token) {
            break;
        }
        batch.clear();
        batch.add(token, pos, &[0], true)?;
        ctx.decode(&mut batch)?;
        pos += 1;
        logits_at = 0;
        generated += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    println!("{{\"gen_tps\": {:.2}, \"generated_tokens\": {generated}}}", generated as f64 / secs);
    Ok(())
}

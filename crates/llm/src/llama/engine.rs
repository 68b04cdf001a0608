//! The thread that owns llama.cpp: it loads the model, keeps one context
//! and the tokens cached in it, and runs jobs one at a time.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::Instant;

use agentloop_core::{ChatRequest, Error, FinishReason, Result};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::grammar::Grammars;
use super::{prompt, Generation, LlamaConfig};

/// One request for the thread; the answer goes back through `reply`.
pub struct Job {
    pub request: ChatRequest,
    /// Empty the KV cache first.
    pub cold: bool,
    /// Only count the prompt's tokens (`Generation::prompt_tokens`): no answer.
    pub measure: bool,
    pub cancel: Arc<AtomicBool>,
    pub reply: tokio::sync::oneshot::Sender<Result<Generation>>,
}

/// Tokens per `decode` call while processing a prompt.
const BATCH: usize = 512;

/// llama.cpp's backend is process-wide and may be initialised only once.
fn backend() -> std::result::Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| format!("llama.cpp could not start ({e})"))?;
            // llama.cpp prints pages of diagnostics to stderr; our errors say what matters.
            backend.void_logs();
            Ok(backend)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Starts the model's thread and waits until the model is loaded.
pub fn spawn(config: LlamaConfig, name: String) -> Result<mpsc::Sender<Job>> {
    let fail = |message: String| Error::Model { model: name.clone(), message };
    if !config.path.is_file() {
        return Err(fail(format!(
            "there is no model file at {}: run `{}` to fetch the default models, or pass the path of a GGUF file with --model",
            config.path.display(),
            crate::catalog::FETCH_COMMAND
        )));
    }
    if !is_gguf(&config.path) {
        return Err(fail(format!(
            "{} is not a GGUF model file (it does not begin with `GGUF`): pass a .gguf file with --model, or a name from `agentloop models list`",
            config.path.display()
        )));
    }
    let (jobs, inbox) = mpsc::channel::<Job>();
    let (ready_tx, ready) = mpsc::sync_channel(1);
    let thread_name = name.clone();
    std::thread::Builder::new()
        .name(format!("llama:{thread_name}"))
        .spawn(move || run(config, thread_name, ready_tx, inbox))
        .map_err(|e| fail(format!("could not start the model's thread ({e})")))?;
    match ready.recv() {
        Ok(Ok(())) => Ok(jobs),
        Ok(Err(message)) => Err(fail(message)),
        Err(_) => Err(fail("the model's thread stopped while loading".into())),
    }
}

/// The file begins with GGUF's magic: anything else (a text file, a
/// model of another format) is not worth handing to llama.cpp.
fn is_gguf(path: &std::path::Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic)).is_ok() && &magic == b"GGUF"
}

fn run(config: LlamaConfig, name: String, ready: mpsc::SyncSender<std::result::Result<(), String>>, inbox: mpsc::Receiver<Job>) {
    let loaded = backend().and_then(|backend| {
        let model = LlamaModel::load_from_file(backend, &config.path, &LlamaModelParams::default()).map_err(|e| {
            format!("{} could not be loaded as a GGUF model ({e}): fetch it again with `{}`", config.path.display(), crate::catalog::FETCH_COMMAND)
        })?;
        Ok((backend, model))
    });
    let (backend, model) = match loaded {
        Ok(v) => v,
        Err(message) => {
            let _ = ready.send(Err(message));
            return;
        }
    };
    let engine = Engine::new(backend, &model, &config, name);
    let mut engine = match engine {
        Ok(e) => e,
        Err(message) => {
            let _ = ready.send(Err(message));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    while let Ok(job) = inbox.recv() {
        if job.cold {
            engine.forget();
        }
        let result = if job.measure { engine.measure(&job.request) } else { engine.generate(&job.request, &job.cancel) };
        let _ = job.reply.send(result);
    }
}

/// The loaded model, its context, and what the context's KV cache holds.
struct Engine<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    template: LlamaChatTemplate,
    /// The tokens whose keys and values are in the KV cache, in order.
    cached: Vec<LlamaToken>,
    grammars: Option<Grammars>,
    /// Index, in the last decoded batch, of the token whose logits come next.
    last_logits: i32,
    max_tokens: u32,
    name: String,
}

impl<'m> Engine<'m> {
    fn new(backend: &LlamaBackend, model: &'m LlamaModel, config: &LlamaConfig, name: String) -> std::result::Result<Self, String> {
        let template = model
            .chat_template(None)
            .map_err(|_| format!("{} has no chat template, so chat messages cannot be turned into a prompt", config.path.display()))?;
        let threads = config.threads.map(|t| t.max(1) as i32).unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get() as i32).unwrap_or(2));
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(config.context.max(256)))
            .with_n_batch(BATCH as u32)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model.new_context(backend, params).map_err(|e| format!("could not create a context of {} tokens ({e})", config.context))?;
        Ok(Self { model, ctx, template, cached: Vec::new(), grammars: None, last_logits: 0, max_tokens: config.max_tokens, name })
    }

    fn fail(&self, message: impl Into<String>) -> Error {
        Error::Model { model: self.name.clone(), message: message.into() }
    }

    /// The request's prompt as this model reads it: its chat template
    /// applied, then tokenized.
    fn prompt_tokens(&self, request: &ChatRequest) -> Result<Vec<LlamaToken>> {
        let schema = request.json_schema.as_ref();
        let text = prompt::render(self.model, &self.template, &request.messages, schema).map_err(|m| self.fail(m))?;
        // The template writes the special tokens out as text; parse them back.
        Ok(self.model.vocab().tokenize(text.as_bytes(), true, true))
    }

    /// How many tokens the request's prompt is, without answering it.
    fn measure(&self, request: &ChatRequest) -> Result<Generation> {
        let tokens = self.prompt_tokens(request)?;
        Ok(Generation {
            text: String::new(),
            finish_reason: FinishReason::Stop,
            prompt_tokens: tokens.len() as u64,
            reused_tokens: 0,
            completion_tokens: 0,
            prefill: std::time::Duration::ZERO,
            generate: std::time::Duration::ZERO,
        })
    }

    fn generate(&mut self, request: &ChatRequest, cancel: &AtomicBool) -> Result<Generation> {
        let tokens = self.prompt_tokens(request)?;
        if tokens.is_empty() {
            return Err(self.fail("the prompt is empty"));
        }
        let n_ctx = self.ctx.n_ctx() as usize;
        if tokens.len() + 1 >= n_ctx {
            return Err(self.fail(format!(
                "the prompt is {} tokens but the context holds {n_ctx}: raise `context` in the model's config or shorten the conversation",
                tokens.len()
            )));
        }
        let mut sampler = self.sampler(request)?;
        let started = Instant::now();
        let reused = self.prefill(&tokens, cancel)?;
        let prefill = started.elapsed();

        let budget = (request.max_tokens.unwrap_or(self.max_tokens) as usize).min(n_ctx - tokens.len());
        let mut out = Vec::new();
        let mut streamed = 0;
        let mut finish = FinishReason::Length;
        let mut generated = 0u64;
        let mut batch = LlamaBatch::new(1, 1);
        let mut logits_at = self.last_logits;
        while (generated as usize) < budget {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let token = sampler.sample(&self.ctx, logits_at);
            if self.model.vocab().is_eog(token) {
                finish = FinishReason::Stop;
                break;
            }
            generated += 1;
            out.extend(self.model.vocab().token_to_piece(token, false, None));
            if let Some(sink) = &request.on_token {
                streamed += stream_ready(&out[streamed..], |s| sink.send(s));
            }
            if let Some(end) = stop_at(&out, &request.stop) {
                out.truncate(end);
                finish = FinishReason::Stop;
                break;
            }
            batch.clear();
            let pos = self.cached.len() as i32;
            batch.add(token, pos, &[0], true).map_err(|e| self.fail(format!("could not queue a token ({e})")))?;
            if let Err(e) = self.ctx.decode(&mut batch) {
                self.forget();
                return Err(self.fail(format!("generation failed ({e})")));
            }
            self.cached.push(token);
            logits_at = 0;
        }
        Ok(Generation {
            text: String::from_utf8_lossy(&out).into_owned(),
            finish_reason: finish,
            prompt_tokens: tokens.len() as u64,
            reused_tokens: reused as u64,
            completion_tokens: generated,
            prefill,
            generate: started.elapsed() - prefill,
        })
    }

    /// Greedy unless the request asks for a temperature; held to the schema
    /// or else the grammar when there is one.
    fn sampler(&mut self, request: &ChatRequest) -> Result<LlamaSampler> {
        let base = match request.temperature {
            Some(t) if t > 0.0 => LlamaSampler::chain_simple([LlamaSampler::temp(t), LlamaSampler::dist(rand::random())]),
            _ => LlamaSampler::greedy(),
        };
        if request.json_schema.is_none() && request.grammar.is_none() {
            return Ok(base);
        }
        if self.grammars.is_none() {
            self.grammars = Some(Grammars::new(self.model).map_err(|m| self.fail(m))?);
        }
        let grammars = self.grammars.as_ref().ok_or_else(|| self.fail("the grammar engine is missing"))?;
        let constrained = match (&request.json_schema, &request.grammar) {
            (Some(schema), _) => grammars.json_sampler(schema),
            (None, Some(lark)) => grammars.lark_sampler(lark),
            (None, None) => return Ok(base),
        }
        .map_err(|m| self.fail(m))?;
        Ok(LlamaSampler::chain_simple([constrained, base]))
    }

    /// Puts `tokens` into the KV cache, keeping the longest prefix already
    /// there; returns how many tokens were reused. Leaves the logits of the
    /// last prompt token at `self.last_logits`.
    fn prefill(&mut self, tokens: &[LlamaToken], cancel: &AtomicBool) -> Result<usize> {
        let mut keep = self.cached.iter().zip(tokens).take_while(|(a, b)| a == b).count();
        // The last prompt token is always decoded again: its logits start the answer.
        keep = keep.min(tokens.len().saturating_sub(1));
        if keep < self.cached.len() {
            let removed = self.ctx.clear_kv_cache_seq(Some(0), Some(keep as u32), None).unwrap_or(false);
            if !removed {
                self.forget();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        let mut batch = LlamaBatch::new(BATCH, 1);
        let fresh = &tokens[keep..];
        for (chunk_index, chunk) in fresh.chunks(BATCH).enumerate() {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            batch.clear();
            let last_chunk = (chunk_index + 1) * BATCH >= fresh.len();
            for (i, token) in chunk.iter().enumerate() {
                let pos = (self.cached.len() + i) as i32;
                let wants_logits = last_chunk && i + 1 == chunk.len();
                batch.add(*token, pos, &[0], wants_logits).map_err(|e| self.fail(format!("could not queue the prompt ({e})")))?;
            }
            if let Err(e) = self.ctx.decode(&mut batch) {
                self.forget();
                return Err(self.fail(format!("the prompt could not be processed ({e})")));
            }
            self.cached.extend_from_slice(chunk);
            self.last_logits = chunk.len() as i32 - 1;
        }
        Ok(keep)
    }

    /// Empties the KV cache (after an error left it in an unknown state).
    fn forget(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }
}

/// Sends the longest complete UTF-8 prefix of `pending` (a token may end
/// inside a character) and returns how many bytes were sent.
fn stream_ready(pending: &[u8], mut send: impl FnMut(&str)) -> usize {
    let valid = match std::str::from_utf8(pending) {
        Ok(s) => s.len(),
        Err(e) => e.valid_up_to(),
    };
    if valid > 0 {
        if let Ok(s) = std::str::from_utf8(&pending[..valid]) {
            send(s);
        }
    }
    valid
}

/// Where the answer should end if it now contains a stop string.
fn stop_at(out: &[u8], stop: &[String]) -> Option<usize> {
    stop.iter().filter(|s| !s.is_empty()).filter_map(|s| out.windows(s.len()).position(|w| w == s.as_bytes())).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_holds_back_half_a_character() {
        let text = "né".as_bytes();
        let mut got = String::new();
        let sent = stream_ready(&text[..2], |s| got.push_str(s));
        assert_eq!((sent, got.as_str()), (1, "n"));
    }

    #[test]
    fn stop_strings_cut_the_answer() {
        assert_eq!(stop_at(b"a = 1\n```\nmore", &["```".to_string()]), Some(6));
        assert_eq!(stop_at(b"abc", &[String::new()]), None);
    }
}

//! The thread that owns llama.cpp: it loads the model, keeps one context
//! and the tokens cached in it, and runs jobs one at a time (a job's
//! requests are decoded together, `decode.rs`).

use std::num::NonZeroU32;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, OnceLock};

use agentloop_core::{ChatRequest, Error, FinishReason, Result};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::drafters::{same_vocabulary, Draft, Drafter};
use super::grammar::{Grammars, Witness};
use super::{prompt, Generation, LlamaConfig};
use crate::roles::Drafting;

/// One request for the thread; the answer goes back through `reply`.
pub struct Job {
    /// Independent requests, answered in their order.
    pub requests: Vec<ChatRequest>,
    /// Empty the KV cache first.
    pub cold: bool,
    /// Only count the prompt's tokens (`Generation::prompt_tokens`): no answer.
    pub measure: bool,
    pub cancel: Arc<AtomicBool>,
    pub reply: tokio::sync::oneshot::Sender<Vec<Result<Generation>>>,
}

/// Tokens per `decode` call while processing a prompt.
pub(super) const BATCH: usize = 512;

/// Sequences decoded together at most: the candidates a search asks for.
pub(super) const SEQUENCES: usize = 4;

/// llama.cpp's backend is process-wide and may be initialised only once.
pub(super) fn backend() -> std::result::Result<&'static LlamaBackend, String> {
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

/// The draft model at `path`, refused with one sentence when it cannot
/// draft for `model` (another tokenizer's tokens would never be accepted).
fn load_draft(backend: &LlamaBackend, model: &LlamaModel, path: &std::path::Path) -> std::result::Result<LlamaModel, String> {
    if !is_gguf(path) {
        return Err(format!("the draft model {} is not a GGUF file: set `draft` to a model of the same family, or leave it out", path.display()));
    }
    let draft = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
        .map_err(|e| format!("the draft model {} could not be loaded ({e})", path.display()))?;
    same_vocabulary(model, &draft)
        .map_err(|why| format!("{} cannot draft for this model: {why}; choose a draft of the same family, or leave `draft` out", path.display()))?;
    Ok(draft)
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
    let draft_file = match &config.draft {
        Some(Drafting::Model(path)) => Some(path.as_path()),
        _ => None,
    };
    let draft_model = match draft_file.map(|path| load_draft(backend, &model, path)).transpose() {
        Ok(d) => d,
        Err(message) => {
            let _ = ready.send(Err(message));
            return;
        }
    };
    let engine = Engine::new(backend, &model, &config, name).and_then(|mut engine| {
        if let Some(draft) = &draft_model {
            engine.draft = Some(Drafter::Model(Draft::new(backend, draft, (engine.cells as u32, BATCH), engine.threads, config.draft_ahead as usize)?));
        } else if config.draft == Some(Drafting::Prompt) {
            engine.draft = Some(Drafter::Prompt { ahead: config.draft_ahead.max(1) as usize });
        }
        Ok(engine)
    });
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
        let result = if job.measure { job.requests.iter().map(|r| engine.measure(r)).collect() } else { engine.generate_all(&job.requests, &job.cancel) };
        let _ = job.reply.send(result);
    }
}

/// The loaded model, its context, and what the context's KV cache holds.
pub(super) struct Engine<'m> {
    pub(super) model: &'m LlamaModel,
    pub(super) ctx: LlamaContext<'m>,
    template: LlamaChatTemplate,
    /// The tokens whose keys and values are in sequence 0's KV cache, in order.
    pub(super) cached: Vec<LlamaToken>,
    grammars: Option<Grammars>,
    /// What drafts tokens ahead for this model (`draft.rs`), if anything.
    pub(super) draft: Option<Drafter<'m>>,
    /// The context one request may fill, prompt and answer (the config's).
    pub(super) context: usize,
    /// KV cells in all: the context plus room for the answers of the other
    /// sequences decoded beside it, which share its prompt's cells.
    pub(super) cells: usize,
    pub(super) max_tokens: u32,
    /// CPU threads for decoding, which a draft model uses too.
    pub(super) threads: i32,
    name: String,
}

impl<'m> Engine<'m> {
    fn new(backend: &LlamaBackend, model: &'m LlamaModel, config: &LlamaConfig, name: String) -> std::result::Result<Self, String> {
        let template = model
            .chat_template(None)
            .map_err(|_| format!("{} has no chat template, so chat messages cannot be turned into a prompt", config.path.display()))?;
        let threads = config.threads.map(|t| t.max(1) as i32).unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get() as i32).unwrap_or(2));
        let context = config.context.max(256);
        let cells = context + (SEQUENCES as u32 - 1) * config.max_tokens;
        // One sequence and one cell more for the row that pads a step (`decode.rs`).
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(cells + 1))
            .with_n_seq_max(SEQUENCES as u32 + 1)
            .with_kv_unified(true)
            .with_n_batch(BATCH as u32)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model.new_context(backend, params).map_err(|e| format!("could not create a context of {} tokens ({e})", config.context))?;
        Ok(Self {
            model,
            ctx,
            template,
            cached: Vec::new(),
            grammars: None,
            draft: None,
            context: context as usize,
            cells: cells as usize,
            max_tokens: config.max_tokens,
            threads,
            name,
        })
    }

    pub(super) fn fail(&self, message: impl Into<String>) -> Error {
        Error::Model { model: self.name.clone(), message: message.into() }
    }

    /// The request's prompt as this model reads it: its chat template
    /// applied, then tokenized.
    pub(super) fn prompt_tokens(&self, request: &ChatRequest) -> Result<Vec<LlamaToken>> {
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
            drafted_tokens: 0,
            accepted_tokens: 0,
        })
    }

    /// Greedy unless the request asks for a temperature; held to the schema
    /// or else the grammar when there is one, with the witness that checks
    /// it stays held (`grammar::Witness`).
    pub(super) fn sampler(&mut self, request: &ChatRequest) -> Result<(LlamaSampler, Option<Witness>)> {
        let base = match request.temperature {
            Some(t) if t > 0.0 => LlamaSampler::chain_simple([LlamaSampler::temp(t), LlamaSampler::dist(rand::random())]),
            _ => LlamaSampler::greedy(),
        };
        if request.json_schema.is_none() && request.grammar.is_none() {
            return Ok((base, None));
        }
        if self.grammars.is_none() {
            self.grammars = Some(Grammars::new(self.model).map_err(|m| self.fail(m))?);
        }
        let grammars = self.grammars.as_ref().ok_or_else(|| self.fail("the grammar engine is missing"))?;
        let (constrained, witness) = match (&request.json_schema, &request.grammar) {
            (Some(schema), _) => grammars.json_sampler(schema),
            (None, Some(lark)) => grammars.lark_sampler(lark),
            (None, None) => return Ok((base, None)),
        }
        .map_err(|m| self.fail(m))?;
        Ok((LlamaSampler::chain_simple([constrained, base]), Some(witness)))
    }

    /// Empties the KV cache (after an error left it in an unknown state).
    pub(super) fn forget(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
        if let Some(draft) = self.draft.as_mut() {
            draft.forget();
        }
    }
}

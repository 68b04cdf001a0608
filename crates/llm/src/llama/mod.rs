//! `llama`: GGUF models run in process by llama.cpp, the default provider.
//!
//! llama.cpp is synchronous and its context borrows the model, so one
//! dedicated thread owns both (`engine.rs`) and takes jobs from a channel;
//! `chat` sends a job and awaits the answer. Dropping the `chat` future (a
//! pause, a terminate, a timeout) raises the job's cancel flag, which the
//! generation loop checks between tokens.
//!
//! The thread keeps the tokens whose keys and values are in the KV cache, so
//! a loop's next turn, whose prompt starts with the previous one, only pays
//! for its new tokens. Requests asked together (`chat_many`: a search's
//! candidates, a judge's votes) are decoded in one batch.

mod decode;
mod draft;
mod drafters;
mod engine;
mod grammar;
mod plain;
mod prompt;
mod tools;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, FinishReason, Result, Usage};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::roles::Drafting;

pub use grammar::GrammarProbe;
pub use plain::{plain_greedy_loop, PlainLoop};

/// How to run a GGUF model. Only `path` is required.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlamaConfig {
    pub path: PathBuf,
    /// Name recorded with every answer; the file's stem when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// CPU threads for generation and prompt processing; all cores when absent.
    #[serde(default)]
    pub threads: Option<u32>,
    /// Context window in tokens (prompt plus answer).
    #[serde(default = "default_context")]
    pub context: u32,
    /// Answer length when the request does not say.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// What drafts tokens ahead for this model (speculative decoding): a
    /// smaller GGUF of the same tokenizer, or the prompt and the answer so
    /// far; every token is still sampled from this model's own logits.
    #[serde(default)]
    pub draft: Option<Drafting>,
    /// Tokens drafted at most in one round.
    #[serde(default = "default_draft_ahead")]
    pub draft_ahead: u32,
}

fn default_draft_ahead() -> u32 {
    5
}

fn default_context() -> u32 {
    crate::DEFAULT_CONTEXT
}

fn default_max_tokens() -> u32 {
    1024
}

impl LlamaConfig {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            name: None,
            threads: None,
            context: default_context(),
            max_tokens: default_max_tokens(),
            draft: None,
            draft_ahead: default_draft_ahead(),
        }
    }

    /// Drafted ahead by the model at `path` (`LlamaConfig::draft`).
    pub fn draft(mut self, path: impl Into<PathBuf>) -> Self {
        self.draft = Some(Drafting::Model(path.into()));
        self
    }

    /// Drafted ahead from the prompt and the answer so far.
    pub fn draft_from_prompt(mut self) -> Self {
        self.draft = Some(Drafting::Prompt);
        self
    }

    pub fn threads(mut self, threads: u32) -> Self {
        self.threads = Some(threads);
        self
    }

    pub fn context(mut self, tokens: u32) -> Self {
        self.context = tokens;
        self
    }

    fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "llama".into()))
    }
}

/// What one generation did, with the timings a benchmark needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Generation {
    pub text: String,
    pub finish_reason: FinishReason,
    pub prompt_tokens: u64,
    /// Prompt tokens whose KV entries were reused from the previous call.
    pub reused_tokens: u64,
    pub completion_tokens: u64,
    /// Time to process the prompt's new tokens.
    pub prefill: Duration,
    /// Time to generate the answer after the prompt was processed.
    pub generate: Duration,
    /// Tokens a draft model proposed for the answer, and of them those the
    /// model agreed with (0 and 0 without a draft model).
    pub drafted_tokens: u64,
    pub accepted_tokens: u64,
}

impl Generation {
    /// Generated tokens per second (0 when nothing was generated).
    pub fn gen_tps(&self) -> f64 {
        rate(self.completion_tokens, self.generate)
    }

    /// Prompt tokens processed per second, counting only the new ones.
    pub fn prompt_tps(&self) -> f64 {
        rate(self.prompt_tokens - self.reused_tokens, self.prefill)
    }
}

fn rate(tokens: u64, took: Duration) -> f64 {
    if tokens == 0 || took.is_zero() {
        0.0
    } else {
        tokens as f64 / took.as_secs_f64()
    }
}

/// A GGUF model loaded in process.
pub struct LlamaModel {
    name: String,
    jobs: mpsc::Sender<engine::Job>,
    context: usize,
}

impl LlamaModel {
    /// Loads the model on its own thread; fails with one sentence naming the
    /// path when the file is missing or is not a GGUF llama.cpp can read.
    pub fn load(config: LlamaConfig) -> Result<Self> {
        let name = config.display_name();
        let context = config.context.max(256) as usize;
        let jobs = engine::spawn(config, name.clone())?;
        Ok(Self { name, jobs, context })
    }

    /// Runs one request and reports timings; `chat` is this plus the shape of
    /// a chat answer.
    pub async fn generate(&self, request: &ChatRequest) -> Result<Generation> {
        self.one(request, false, false).await
    }

    /// `generate` with the KV cache emptied first, so the whole prompt is
    /// processed: what a first call costs (benchmarks compare against it).
    pub async fn generate_cold(&self, request: &ChatRequest) -> Result<Generation> {
        self.one(request, true, false).await
    }

    /// Runs independent requests together, decoded in one batch when they
    /// fit in the context side by side; each result in its request's place.
    pub async fn generate_many(&self, requests: &[ChatRequest]) -> Vec<Result<Generation>> {
        match self.run(requests.to_vec(), false, false).await {
            Ok(all) => all,
            Err(e) => requests.iter().map(|_| Err(e.shared())).collect(),
        }
    }

    async fn one(&self, request: &ChatRequest, cold: bool, measure: bool) -> Result<Generation> {
        self.run(vec![request.clone()], cold, measure).await?.pop().unwrap_or_else(|| Err(self.fail("the model gave no answer")))
    }

    async fn run(&self, requests: Vec<ChatRequest>, cold: bool, measure: bool) -> Result<Vec<Result<Generation>>> {
        let cancel = Arc::new(AtomicBool::new(false));
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = engine::Job { requests, cold, measure, cancel: cancel.clone(), reply };
        self.jobs.send(job).map_err(|_| self.fail("the model's thread has stopped; start agentloop again"))?;
        // Dropping this future (pause, terminate, timeout) stops generation.
        let _stop_on_drop = CancelOnDrop(cancel);
        answer.await.map_err(|_| self.fail("the model's thread stopped during the call"))
    }

    fn fail(&self, message: impl Into<String>) -> Error {
        Error::Model { model: self.name.clone(), message: message.into() }
    }

    /// A generation as a chat answer: a tool call when the request offered
    /// tools and the answer is one.
    fn response(&self, tools_offered: bool, g: Generation) -> ChatResponse {
        let (content, tool_calls, finish_reason) = match tools_offered.then(|| tools::read(&g.text)).flatten() {
            Some(call) => (String::new(), vec![call], FinishReason::ToolCalls),
            None => (g.text, Vec::new(), g.finish_reason),
        };
        ChatResponse {
            content,
            tool_calls,
            finish_reason,
            usage: Usage { prompt_tokens: g.prompt_tokens, completion_tokens: g.completion_tokens, cached_prompt_tokens: g.reused_tokens },
            model: self.name.clone(),
        }
    }
}

struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[async_trait]
impl ChatModel for LlamaModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        "llama.cpp"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        self.chat_many(std::slice::from_ref(request)).await.pop().unwrap_or_else(|| Err(self.fail("the model gave no answer")))
    }

    async fn chat_many(&self, requests: &[ChatRequest]) -> Vec<Result<ChatResponse>> {
        let held: Vec<Option<ChatRequest>> = requests.iter().map(tools::prepare).collect();
        let asked: Vec<ChatRequest> = requests.iter().zip(&held).map(|(r, h)| h.clone().unwrap_or_else(|| r.clone())).collect();
        let generations = self.generate_many(&asked).await;
        held.iter().zip(generations).map(|(held, g)| g.map(|g| self.response(held.is_some(), g))).collect()
    }

    fn context_tokens(&self) -> Option<usize> {
        Some(self.context)
    }

    async fn prompt_tokens(&self, request: &ChatRequest) -> Option<usize> {
        self.one(request, false, true).await.ok().map(|g| g.prompt_tokens as usize)
    }
}

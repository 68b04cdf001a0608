//! Speculative decoding: a small model of the same tokenizer drafts the
//! next few tokens, and the model asked checks them all in one batch. On a
//! CPU one decode of a few tokens costs little more than one of a single
//! token (both read every weight once), so each draft the model agrees
//! with saves it a whole step.
//!
//! The answer is the model's own. Every token of it is still sampled from
//! the asked model's own logits, with its own sampler — its temperature,
//! its grammar — at the position it holds given the tokens before it; a
//! draft only decides which positions were computed ahead. (Logits computed
//! for several positions in one batch may round differently from one
//! position at a time, so where two tokens all but tie, greedy decoding
//! can pick the other one.) The first drafted
//! token the model would not have produced is replaced by the model's own
//! choice, and what was computed after it is dropped. A grammar-held answer
//! stays held: a drafted token outside the grammar is simply not what the
//! held sampler picks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use agentloop_core::{Error, Result};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::decode::Sequence;
use super::engine::{Engine, BATCH};

/// The drafting model, its own context, and what its KV cache holds.
pub(super) struct Draft<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    /// The tokens whose keys and values are in the draft's cache, in order.
    cached: Vec<LlamaToken>,
    /// Tokens drafted ahead at most in one round.
    ahead: usize,
}

/// Why `drafter` refused a model as a draft, in one sentence.
pub(super) fn same_vocabulary(model: &LlamaModel, draft: &LlamaModel) -> std::result::Result<(), String> {
    let (a, b) = (model.n_vocab(), draft.n_vocab());
    // Models of one family may pad their vocabularies differently; the
    // tokens both have must be the same ones.
    let shared = a.min(b);
    let differs =
        (0..shared).step_by(97).map(LlamaToken::new).find(|t| model.vocab().token_to_piece(*t, true, None) != draft.vocab().token_to_piece(*t, true, None));
    match differs {
        None if a.abs_diff(b) < 1024 => Ok(()),
        None => Err(format!("its vocabulary has {b} tokens and the model's {a}")),
        Some(t) => Err(format!("its token {} is not the model's", t.0)),
    }
}

impl<'m> Draft<'m> {
    pub(super) fn new(backend: &LlamaBackend, model: &'m LlamaModel, cells: u32, threads: i32, ahead: usize) -> std::result::Result<Self, String> {
        let params = LlamaContextParams::default()
            .with_n_ctx(std::num::NonZeroU32::new(cells))
            .with_n_batch(BATCH as u32)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model.new_context(backend, params).map_err(|e| format!("could not create the draft model's context ({e})"))?;
        Ok(Self { model, ctx, cached: Vec::new(), ahead: ahead.max(1) })
    }

    /// Brings the draft's cache to the model's `known` tokens and `next`
    /// (keeping what it shares with them, and always decoding `next` for
    /// its logits) and drafts up to `n` greedy tokens after them.
    fn propose(&mut self, known: &[LlamaToken], next: LlamaToken, n: usize) -> std::result::Result<Vec<LlamaToken>, String> {
        let mut keep = self.cached.iter().zip(known).take_while(|(a, b)| a == b).count();
        if keep < self.cached.len() {
            if !self.ctx.clear_kv_cache_seq(Some(0), Some(keep as u32), None).unwrap_or(false) {
                self.forget();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        let mut batch = LlamaBatch::new(BATCH, 1);
        let fresh: Vec<LlamaToken> = known[keep..].iter().copied().chain(std::iter::once(next)).collect();
        for (c, chunk) in fresh.chunks(BATCH).enumerate() {
            batch.clear();
            let last_chunk = (c + 1) * BATCH >= fresh.len();
            for (i, token) in chunk.iter().enumerate() {
                let logits = last_chunk && i + 1 == chunk.len();
                batch.add(*token, (self.cached.len() + i) as i32, &[0], logits).map_err(|e| e.to_string())?;
            }
            self.ctx.decode(&mut batch).map_err(|e| format!("the draft model could not decode ({e})"))?;
            self.cached.extend_from_slice(chunk);
        }
        let mut logits_at = batch.n_tokens() - 1;
        let mut greedy = LlamaSampler::greedy();
        let mut out = Vec::new();
        while out.len() < n {
            let token = greedy.sample(&self.ctx, logits_at);
            if self.model.vocab().is_eog(token) {
                break;
            }
            out.push(token);
            if out.len() == n {
                break;
            }
            batch.clear();
            batch.add(token, self.cached.len() as i32, &[0], true).map_err(|e| e.to_string())?;
            self.ctx.decode(&mut batch).map_err(|e| format!("the draft model could not decode ({e})"))?;
            self.cached.push(token);
            logits_at = 0;
        }
        Ok(out)
    }

    pub(super) fn forget(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }
}

/// What drafting did for one answer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Drafted {
    pub drafted: u64,
    pub accepted: u64,
}

impl Engine<'_> {
    /// One answer, its tokens drafted ahead and checked a round at a time.
    /// Each token is sampled as `generate_steps` samples it; only the number
    /// of model steps differs. A draft model that fails hands the rest of
    /// the answer back to plain steps.
    pub(super) fn generate_drafted(&mut self, s: &mut Sequence, cancel: &AtomicBool, started: Instant) -> Result<Drafted> {
        let mut stats = Drafted::default();
        let Some(mut next) = self.next_token(s) else {
            s.took = started.elapsed();
            return Ok(stats);
        };
        let mut batch = LlamaBatch::new(BATCH, 1);
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let room = s.budget.saturating_sub(s.generated as usize);
            let proposed = match self.draft.as_mut() {
                Some(draft) if room > 0 => {
                    let ahead = draft.ahead.min(room);
                    draft.propose(&self.cached, next, ahead).unwrap_or_else(|_| {
                        draft.forget();
                        Vec::new()
                    })
                }
                _ => Vec::new(),
            };
            batch.clear();
            batch.add(next, s.pos, &[0], true).map_err(|e| self.fail(format!("could not queue a token ({e})")))?;
            for (i, token) in proposed.iter().enumerate() {
                batch.add(*token, s.pos + 1 + i as i32, &[0], true).map_err(|e| self.fail(format!("could not queue a token ({e})")))?;
            }
            self.decode(&mut batch, "generation failed")?;
            self.cached.push(next);
            s.pos += 1;
            stats.drafted += proposed.len() as u64;
            let mut following = None;
            for (i, drafted) in proposed.iter().map(Some).chain(std::iter::once(None)).enumerate() {
                s.logits_at = i as i32;
                let Some(token) = self.next_token(s) else { break };
                if drafted == Some(&token) {
                    stats.accepted += 1;
                    self.cached.push(token);
                    s.pos += 1;
                } else {
                    following = Some(token);
                    break;
                }
            }
            // What was computed after the last token kept is dropped.
            if !self.ctx.clear_kv_cache_seq(Some(0), Some(s.pos as u32), None).unwrap_or(false) {
                return Err(self.fail("the KV cache could not drop a rejected draft"));
            }
            match following {
                Some(token) => next = token,
                None => {
                    s.took = started.elapsed();
                    return Ok(stats);
                }
            }
        }
    }
}

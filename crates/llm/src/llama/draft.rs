//! Speculative decoding: a small model of the same tokenizer, or the
//! context itself (`drafters`), drafts the next few tokens, and the model
//! asked checks them all in one batch. On a CPU one decode of a few tokens
//! costs less than as many decodes of one (each reads every weight once),
//! so each draft the model agrees with saves it most of a step.
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
use llama_cpp_2::llama_batch::LlamaBatch;

use super::decode::Sequence;
use super::engine::{Engine, BATCH};

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
                    let ahead = draft.ahead().min(room);
                    draft.propose(&self.cached, next, ahead)
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

//! Decoding one answer, or several together: the prompts' shared prefix is
//! processed once, its keys and values are shared by every sequence, and
//! each generation step decodes one token of every unfinished sequence in
//! one batch. On a CPU a step is bound by reading the weights, which one
//! batch reads once for all its sequences, so N answers cost far less than
//! N times one. One answer is the same path with one sequence.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentloop_core::{ChatRequest, Error, FinishReason, Result};
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::engine::{Engine, BATCH, SEQUENCES};
use super::grammar::Witness;
use super::Generation;

/// One answer being decoded: its prompt, its sampler, what it wrote so far.
pub(super) struct Sequence<'r> {
    /// Where its request stands in the job, so the answer goes back there.
    slot: usize,
    request: &'r ChatRequest,
    tokens: Vec<LlamaToken>,
    sampler: LlamaSampler,
    /// Follows the answer when the sampler holds it to a grammar.
    witness: Option<Witness>,
    pub(super) budget: usize,
    out: Vec<u8>,
    streamed: usize,
    pub(super) generated: u64,
    finish: Option<FinishReason>,
    /// Position of its next token in its sequence.
    pub(super) pos: i32,
    /// Index, in the last decoded batch, of its logits.
    pub(super) logits_at: i32,
    pub(super) took: Duration,
}

impl Engine<'_> {
    /// Answers every request, each in its place: together in groups of up to
    /// `SEQUENCES` when their prompts and answers fit in the context side by
    /// side, one at a time when they do not.
    pub(super) fn generate_all(&mut self, requests: &[ChatRequest], cancel: &AtomicBool) -> Vec<Result<Generation>> {
        let mut results: Vec<Option<Result<Generation>>> = requests.iter().map(|_| None).collect();
        let mut ready = Vec::new();
        for (slot, request) in requests.iter().enumerate() {
            match self.sequence(slot, request) {
                Ok(sequence) => ready.push(sequence),
                Err(e) => results[slot] = Some(Err(e)),
            }
        }
        let mut ready = ready.into_iter().peekable();
        while ready.peek().is_some() {
            let group: Vec<Sequence> = ready.by_ref().take(SEQUENCES).collect();
            let groups = if self.fits_together(&group) { vec![group] } else { group.into_iter().map(|s| vec![s]).collect() };
            for group in groups {
                let slots: Vec<usize> = group.iter().map(|s| s.slot).collect();
                match self.decode_together(group, cancel) {
                    Ok(done) => done.into_iter().for_each(|(slot, g)| results[slot] = Some(Ok(g))),
                    Err(e) => slots.into_iter().for_each(|slot| results[slot] = Some(Err(e.shared()))),
                }
            }
        }
        results.into_iter().map(|r| r.unwrap_or_else(|| Err(self.fail("the request was not answered")))).collect()
    }

    /// A request made ready to decode: its prompt's tokens (which must leave
    /// room for an answer), its sampler and its answer's budget.
    fn sequence<'r>(&mut self, slot: usize, request: &'r ChatRequest) -> Result<Sequence<'r>> {
        let tokens = self.prompt_tokens(request)?;
        if tokens.is_empty() {
            return Err(self.fail("the prompt is empty"));
        }
        let context = self.context;
        if tokens.len() + 1 >= context {
            return Err(self.fail(format!(
                "the prompt is {} {} {context}: raise `context` in the model's config or shorten the conversation",
                tokens.len(),
                crate::OVER_CONTEXT
            )));
        }
        let (sampler, witness) = self.sampler(request)?;
        let budget = (request.max_tokens.unwrap_or(self.max_tokens) as usize).min(context - tokens.len());
        Ok(Sequence {
            slot,
            request,
            tokens,
            sampler,
            witness,
            budget,
            out: Vec::new(),
            streamed: 0,
            generated: 0,
            finish: None,
            pos: 0,
            logits_at: 0,
            took: Duration::ZERO,
        })
    }

    /// Whether the group's sequences fit in the KV cache at once: the shared
    /// prefix once, then every prompt's own tokens and every full answer.
    fn fits_together(&self, group: &[Sequence]) -> bool {
        let shared = shared_prefix(group);
        let own: usize = group.iter().map(|s| s.tokens.len() - shared + s.budget).sum();
        shared + own <= self.cells
    }

    /// Decodes the group's answers together; sequence 0 is the first's and
    /// keeps its tokens cached for the next call, the others are dropped at
    /// the end.
    fn decode_together(&mut self, mut group: Vec<Sequence>, cancel: &AtomicBool) -> Result<Vec<(usize, Generation)>> {
        let started = Instant::now();
        let shared = shared_prefix(&group);
        let reused = self.prefill_shared(&group[0].tokens[..shared], cancel)?;
        let result = self.prefill_own(&mut group, shared, cancel).and_then(|()| {
            let prefill = started.elapsed();
            // One answer alone is drafted ahead when there is a draft model;
            // answers decoded together already share each step.
            let drafted = match group.as_mut_slice() {
                [one] if self.draft.is_some() => Some(self.generate_drafted(one, cancel, started)?),
                _ => {
                    self.generate_steps(&mut group, cancel, started)?;
                    None
                }
            };
            Ok((prefill, drafted))
        });
        for seq in 1..group.len() {
            if !self.ctx.clear_kv_cache_seq(Some(seq as u32), None, None).unwrap_or(false) {
                self.forget();
            }
        }
        let (prefill, drafted) = result?;
        let drafted = drafted.unwrap_or_default();
        Ok(group
            .into_iter()
            .enumerate()
            .map(|(seq, s)| {
                let generation = Generation {
                    text: String::from_utf8_lossy(&s.out).into_owned(),
                    finish_reason: s.finish.unwrap_or(FinishReason::Length),
                    prompt_tokens: s.tokens.len() as u64,
                    reused_tokens: if seq == 0 { reused } else { shared } as u64,
                    completion_tokens: s.generated,
                    prefill,
                    generate: s.took.saturating_sub(prefill),
                    drafted_tokens: drafted.drafted,
                    accepted_tokens: drafted.accepted,
                };
                (s.slot, generation)
            })
            .collect())
    }

    /// Puts `prefix` in sequence 0's cache, keeping the longest part of what
    /// is cached there already; returns how many tokens were kept.
    fn prefill_shared(&mut self, prefix: &[LlamaToken], cancel: &AtomicBool) -> Result<usize> {
        let mut keep = self.cached.iter().zip(prefix).take_while(|(a, b)| a == b).count();
        if keep < self.cached.len() {
            if !self.ctx.clear_kv_cache_seq(Some(0), Some(keep as u32), None).unwrap_or(false) {
                self.forget();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        let mut batch = LlamaBatch::new(BATCH, 1);
        for chunk in prefix[keep..].chunks(BATCH) {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            batch.clear();
            for (i, token) in chunk.iter().enumerate() {
                let pos = (self.cached.len() + i) as i32;
                batch.add(*token, pos, &[0], false).map_err(|e| self.fail(format!("could not queue the prompt ({e})")))?;
            }
            self.decode(&mut batch, "the prompt could not be processed")?;
            self.cached.extend_from_slice(chunk);
        }
        Ok(keep)
    }

    /// Shares the prefix with every other sequence, then processes each
    /// prompt's own tokens; every prompt's last token is decoded in the last
    /// batch, whose logits start the answers.
    fn prefill_own(&mut self, group: &mut [Sequence], shared: usize, cancel: &AtomicBool) -> Result<()> {
        for seq in 1..group.len() {
            self.ctx.copy_kv_cache_seq(0, seq as i32, None, None).map_err(|e| self.fail(format!("could not share the prompt ({e})")))?;
        }
        let own: Vec<(LlamaToken, i32, i32)> = group
            .iter()
            .enumerate()
            .flat_map(|(seq, s)| {
                let last = s.tokens.len() - 1;
                s.tokens[shared..last].iter().enumerate().map(move |(i, t)| (*t, (shared + i) as i32, seq as i32))
            })
            .collect();
        let mut batch = LlamaBatch::new(BATCH.max(group.len()), 1);
        for chunk in own.chunks(BATCH) {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            batch.clear();
            for (token, pos, seq) in chunk {
                batch.add(*token, *pos, &[*seq], false).map_err(|e| self.fail(format!("could not queue the prompt ({e})")))?;
            }
            self.decode(&mut batch, "the prompt could not be processed")?;
        }
        batch.clear();
        for (seq, s) in group.iter_mut().enumerate() {
            let last = s.tokens.len() - 1;
            batch.add(s.tokens[last], last as i32, &[seq as i32], true).map_err(|e| self.fail(format!("could not queue the prompt ({e})")))?;
            s.logits_at = seq as i32;
            s.pos = s.tokens.len() as i32;
        }
        self.decode(&mut batch, "the prompt could not be processed")?;
        self.cached = group[0].tokens.clone();
        Ok(())
    }

    /// One token of every unfinished sequence per batch, until each has
    /// stopped, hit a stop string or used its budget.
    fn generate_steps(&mut self, group: &mut [Sequence], cancel: &AtomicBool, started: Instant) -> Result<()> {
        let mut batch = LlamaBatch::new(group.len() + 1, 1);
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            batch.clear();
            let mut queued = 0;
            let mut first_token = None;
            for (seq, s) in group.iter_mut().enumerate().filter(|(_, s)| s.finish.is_none()) {
                let Some(token) = self.next_token(s) else {
                    s.took = started.elapsed();
                    continue;
                };
                batch.add(token, s.pos, &[seq as i32], true).map_err(|e| self.fail(format!("could not queue a token ({e})")))?;
                s.logits_at = queued;
                s.pos += 1;
                queued += 1;
                if seq == 0 {
                    first_token = Some(token);
                }
            }
            if queued == 0 {
                return Ok(());
            }
            let padded = queued as usize == PAD_AT_ROWS;
            if padded {
                // Any token does: the row is computed and thrown away.
                let token = LlamaToken::new(0);
                batch.add(token, 0, &[PAD_SEQUENCE], false).map_err(|e| self.fail(format!("could not queue a token ({e})")))?;
            }
            self.decode(&mut batch, "generation failed")?;
            if padded && !self.ctx.clear_kv_cache_seq(Some(PAD_SEQUENCE as u32), None, None).unwrap_or(false) {
                self.forget();
                return Err(self.fail("the padding row could not be cleared from the cache"));
            }
            self.cached.extend(first_token);
        }
    }

    /// Samples the sequence's next token and adds it to its answer; `None`
    /// when the answer has ended (its `finish` then says why).
    pub(super) fn next_token(&self, s: &mut Sequence) -> Option<LlamaToken> {
        if s.generated as usize >= s.budget {
            s.finish = Some(FinishReason::Length);
            return None;
        }
        let token = s.sampler.sample(&self.ctx, s.logits_at);
        if self.model.vocab().is_eog(token) {
            s.finish = Some(FinishReason::Stop);
            return None;
        }
        if s.witness.as_mut().is_some_and(|w| w.follow(token.0.cast_unsigned()).is_err()) {
            // The grammar no longer holds the answer: it ends here, cut off,
            // rather than running on unheld to its budget.
            s.finish = Some(FinishReason::Length);
            return None;
        }
        s.generated += 1;
        s.out.extend(self.model.vocab().token_to_piece(token, false, None));
        if let Some(sink) = &s.request.on_token {
            s.streamed += stream_ready(&s.out[s.streamed..], |text| sink.send(text));
        }
        if let Some(end) = stop_at(&s.out, &s.request.stop) {
            s.out.truncate(end);
            s.finish = Some(FinishReason::Stop);
            return None;
        }
        Some(token)
    }

    /// One `decode`; a failure leaves the cache in an unknown state, so it
    /// is emptied.
    pub(super) fn decode(&mut self, batch: &mut LlamaBatch, what: &str) -> Result<()> {
        self.ctx.decode(batch).map_err(|e| {
            self.forget();
            self.fail(format!("{what} ({e})"))
        })
    }
}

/// A step of this many rows is padded with one more. On the CPU a matrix
/// product over four rows or more is one kernel that reads each block of
/// weights once for all of them; over one to three rows it is one
/// matrix-vector pass a row, so three answers' step costs more than four
/// rows' (measured by `agentloop-bench model`). The padding row is a
/// sequence of its own (`PAD_SEQUENCE`), cleared after each step.
const PAD_AT_ROWS: usize = 3;

/// The sequence no answer uses, for the padding row.
const PAD_SEQUENCE: i32 = SEQUENCES as i32;

/// How many leading tokens every prompt of the group shares, leaving each
/// at least its last token to decode (its logits start its answer).
fn shared_prefix(group: &[Sequence]) -> usize {
    let Some(first) = group.first() else { return 0 };
    group.iter().map(|s| first.tokens.iter().zip(&s.tokens).take_while(|(a, b)| a == b).count().min(s.tokens.len() - 1)).min().unwrap_or(0)
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

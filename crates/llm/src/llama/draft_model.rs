//! The drafting model of speculative decoding (`draft`): a small model of
//! the same tokenizer, with its own context, that proposes the next few
//! tokens greedily and keeps in its cache what it shares with the answer
//! so far.

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

/// The drafting model, its own context, and what its KV cache holds.
pub(super) struct Draft<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    /// The tokens whose keys and values are in the draft's cache, in order.
    cached: Vec<LlamaToken>,
    /// Tokens drafted ahead at most in one round.
    pub(super) ahead: usize,
    /// Tokens decoded at most in one batch.
    batch: usize,
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
    pub(super) fn new(
        backend: &LlamaBackend,
        model: &'m LlamaModel,
        (cells, batch): (u32, usize),
        threads: i32,
        ahead: usize,
    ) -> std::result::Result<Self, String> {
        let params = LlamaContextParams::default()
            .with_n_ctx(std::num::NonZeroU32::new(cells))
            .with_n_batch(batch as u32)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model.new_context(backend, params).map_err(|e| format!("could not create the draft model's context ({e})"))?;
        Ok(Self { model, ctx, cached: Vec::new(), ahead: ahead.max(1), batch })
    }

    /// Brings the draft's cache to the model's `known` tokens and `next`
    /// (keeping what it shares with them, and always decoding `next` for
    /// its logits) and drafts up to `n` greedy tokens after them.
    pub(super) fn propose(&mut self, known: &[LlamaToken], next: LlamaToken, n: usize) -> std::result::Result<Vec<LlamaToken>, String> {
        let mut keep = self.cached.iter().zip(known).take_while(|(a, b)| a == b).count();
        if keep < self.cached.len() {
            if !self.ctx.clear_kv_cache_seq(Some(0), Some(keep as u32), None).unwrap_or(false) {
                self.forget();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        let mut batch = LlamaBatch::new(self.batch, 1);
        let fresh: Vec<LlamaToken> = known[keep..].iter().copied().chain(std::iter::once(next)).collect();
        for (c, chunk) in fresh.chunks(self.batch).enumerate() {
            batch.clear();
            let last_chunk = (c + 1) * self.batch >= fresh.len();
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

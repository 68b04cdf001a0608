//! Where speculative decoding's drafted tokens come from (`draft`): a
//! small model of the same tokenizer, with its own context, that proposes
//! the next few tokens greedily; or the prompt and the answer so far, at no
//! cost, where the answer repeats them.

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

/// A source of drafted tokens.
pub(super) enum Drafter<'m> {
    /// A smaller model of the same tokenizer.
    Model(Draft<'m>),
    /// The context itself: the tokens that followed the latest earlier
    /// occurrence of its last few. An answer that quotes its prompt — a
    /// file's lines in an edit, a path, a name in a verdict — is drafted
    /// for nothing, and where it quotes nothing no token is drafted, so a
    /// step costs what it did without drafting.
    Prompt {
        /// Tokens drafted ahead at most in one round.
        ahead: usize,
    },
}

impl Drafter<'_> {
    /// Up to `n` tokens to follow `known` (the context so far) and `next`.
    /// A draft model that fails drafts nothing this round and starts over.
    pub(super) fn propose(&mut self, known: &[LlamaToken], next: LlamaToken, n: usize) -> Vec<LlamaToken> {
        match self {
            Drafter::Model(draft) => draft.propose(known, next, n).unwrap_or_else(|_| {
                draft.forget();
                Vec::new()
            }),
            Drafter::Prompt { .. } => from_context(known, next, n),
        }
    }

    pub(super) fn ahead(&self) -> usize {
        match self {
            Drafter::Model(draft) => draft.ahead,
            Drafter::Prompt { ahead } => *ahead,
        }
    }

    pub(super) fn forget(&mut self) {
        if let Drafter::Model(draft) = self {
            draft.forget();
        }
    }
}

/// Tokens of context that must match before what followed them is drafted:
/// fewer drafts by chance more often, and each rejected token costs a
/// position of the checking batch.
const MATCH: usize = 3;

/// Prompt lookup: up to `n` tokens that followed the latest earlier
/// occurrence of the last `MATCH` tokens of `known` then `next`; none when
/// they occur nowhere earlier.
pub(super) fn from_context<T: Copy + PartialEq>(known: &[T], next: T, n: usize) -> Vec<T> {
    let len = known.len() + 1;
    let at = |i: usize| if i < known.len() { known[i] } else { next };
    if n == 0 || len <= MATCH {
        return Vec::new();
    }
    let tail = len - MATCH;
    (0..tail).rev().find(|&j| (0..MATCH).all(|t| at(j + t) == at(tail + t))).map(|j| (j + MATCH..len.min(j + MATCH + n)).map(at).collect()).unwrap_or_default()
}

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

#[cfg(test)]
mod tests {
    use super::from_context;

    #[test]
    fn the_context_drafts_what_followed_the_latest_match_of_its_last_tokens() {
        // "a b c d e ... a b c" drafts "d e" (then what followed).
        let known = [1, 2, 3, 4, 5, 9, 1, 2];
        assert_eq!(from_context(&known, 3, 2), vec![4, 5]);
        // The latest occurrence wins.
        let known = [1, 2, 3, 4, 1, 2, 3, 7, 1, 2];
        assert_eq!(from_context(&known, 3, 3), vec![7, 1, 2]);
        // A draft may run into the tokens just matched.
        let known = [1, 1, 1];
        assert_eq!(from_context(&known, 1, 4), vec![1]);
    }

    #[test]
    fn nothing_is_drafted_without_a_match() {
        assert!(from_context(&[1, 2, 3, 4, 5], 6, 4).is_empty());
        assert!(from_context(&[1, 2], 3, 4).is_empty(), "too short to match");
        assert!(from_context(&[1, 2, 3, 1, 2], 3, 0).is_empty());
    }
}

//! A fallback chain: the first model answers until it has failed (an error)
//! or been rejected (an unusable answer) `switch_after` times; then the next
//! one takes over, for this call and the ones after it. Misses are counted
//! per model, not in a row: an answer is only known to be good when nobody
//! rejects it, so a success cannot wipe the slate. Every answer names the
//! model that produced it. Each session gets its own position
//! (`for_session`), so one session's misses never escalate another's.

use std::sync::{Arc, Mutex, MutexGuard};

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, Result};
use async_trait::async_trait;

pub struct FallbackChain {
    name: String,
    models: Vec<Arc<dyn ChatModel>>,
    switch_after: u32,
    at: Mutex<Position>,
}

#[derive(Default)]
struct Position {
    model: usize,
    misses: u32,
}

impl FallbackChain {
    /// `models` in order of preference; `switch_after` is at least 1.
    pub fn new(name: impl Into<String>, models: Vec<Arc<dyn ChatModel>>, switch_after: u32) -> Result<Self> {
        if models.is_empty() {
            return Err(Error::Other("a fallback chain needs at least one model".into()));
        }
        Ok(Self { name: name.into(), models, switch_after: switch_after.max(1), at: Mutex::default() })
    }

    /// The model that answers next.
    pub fn current(&self) -> &str {
        self.models[self.position().model].name()
    }

    fn position(&self) -> MutexGuard<'_, Position> {
        self.at.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn exhausted(&self, last: &str, e: &Error) -> Error {
        Error::Model { model: self.name.clone(), message: format!("every model in the chain failed; the last, `{last}`, with: {e}") }
    }

    /// Counts a miss; moves to the next model at the threshold. Returns
    /// false when the last model has used up its misses.
    fn miss(&self) -> bool {
        let mut at = self.position();
        at.misses += 1;
        if at.misses < self.switch_after {
            return true;
        }
        if at.model + 1 < self.models.len() {
            at.model += 1;
            at.misses = 0;
            return true;
        }
        false
    }
}

#[async_trait]
impl ChatModel for FallbackChain {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        let at = self.at.lock().map(|p| p.model).unwrap_or(0);
        self.models.get(at).map_or("agentloop", |m| m.provider())
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        loop {
            let model = self.models[self.position().model].clone();
            match model.chat(request).await {
                Ok(mut answer) => {
                    if answer.model.is_empty() {
                        answer.model = model.name().to_string();
                    }
                    return Ok(answer);
                }
                Err(e) if matches!(e, Error::Cancelled) => return Err(e),
                Err(e) => {
                    if !self.miss() {
                        return Err(self.exhausted(model.name(), &e));
                    }
                }
            }
        }
    }

    /// Asked together of the member that answers now; a request it failed
    /// counts a miss and is asked again alone, as `chat` would.
    async fn chat_many(&self, requests: &[ChatRequest]) -> Vec<Result<ChatResponse>> {
        let model = self.models[self.position().model].clone();
        let first = model.chat_many(requests).await;
        let mut out = Vec::with_capacity(first.len());
        for (request, result) in requests.iter().zip(first) {
            out.push(match result {
                Ok(mut answer) => {
                    if answer.model.is_empty() {
                        answer.model = model.name().to_string();
                    }
                    Ok(answer)
                }
                Err(Error::Cancelled) => Err(Error::Cancelled),
                Err(_) if self.miss() => self.chat(request).await,
                Err(e) => Err(self.exhausted(model.name(), &e)),
            });
        }
        out
    }

    /// The smallest context of the chain: a prompt sized to it fits
    /// whichever member answers.
    fn context_tokens(&self) -> Option<usize> {
        self.models.iter().filter_map(|m| m.context_tokens()).min()
    }

    /// Counted by the member that would answer now.
    async fn prompt_tokens(&self, request: &ChatRequest) -> Option<usize> {
        let model = self.models[self.position().model].clone();
        model.prompt_tokens(request).await
    }

    fn reject(&self) {
        // At the end of the chain a rejection has nowhere to go: keep the last model.
        let _ = self.miss();
    }

    /// The same members, from the first, for a new session.
    fn for_session(&self) -> Option<Arc<dyn ChatModel>> {
        Some(Arc::new(Self { name: self.name.clone(), models: self.models.clone(), switch_after: self.switch_after, at: Mutex::default() }))
    }
}

//! A model loaded on its first call. The stronger model of a default chain
//! is only needed when the first one keeps missing; loading it up front
//! would cost every session its memory and load time.

use std::sync::Arc;

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, Result};
use async_trait::async_trait;
use tokio::sync::OnceCell;

type Loader = Box<dyn Fn() -> Result<Arc<dyn ChatModel>> + Send + Sync>;

pub struct LazyModel {
    name: String,
    load: Arc<Loader>,
    model: OnceCell<Arc<dyn ChatModel>>,
    /// The context it will have once loaded, when known before.
    context: Option<usize>,
}

impl LazyModel {
    /// `name` is what answers are recorded under until (and after) `load`
    /// runs; a failed load is tried again on the next call.
    pub fn new(name: impl Into<String>, load: impl Fn() -> Result<Arc<dyn ChatModel>> + Send + Sync + 'static) -> Self {
        Self { name: name.into(), load: Arc::new(Box::new(load)), model: OnceCell::new(), context: None }
    }

    /// Says the context the model will have, so that prompts are sized to
    /// it before it is loaded.
    pub fn with_context(mut self, tokens: usize) -> Self {
        self.context = Some(tokens);
        self
    }

    async fn model(&self) -> Result<&Arc<dyn ChatModel>> {
        self.model
            .get_or_try_init(|| async {
                let load = self.load.clone();
                tokio::task::spawn_blocking(move || load()).await.map_err(|e| Error::other(format!("loading the model stopped ({e})")))?
            })
            .await
    }
}

#[async_trait]
impl ChatModel for LazyModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        self.model.get().map_or("llama.cpp", |m| m.provider())
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let mut answer = self.model().await?.chat(request).await?;
        if answer.model.is_empty() {
            answer.model = self.name.clone();
        }
        Ok(answer)
    }

    async fn chat_many(&self, requests: &[ChatRequest]) -> Vec<Result<ChatResponse>> {
        let model = match self.model().await {
            Ok(m) => m,
            Err(e) => return requests.iter().map(|_| Err(e.shared())).collect(),
        };
        let mut answers = model.chat_many(requests).await;
        for answer in answers.iter_mut().flatten() {
            if answer.model.is_empty() {
                answer.model = self.name.clone();
            }
        }
        answers
    }

    fn context_tokens(&self) -> Option<usize> {
        self.model.get().and_then(|m| m.context_tokens()).or(self.context)
    }

    /// Counted once loaded; before, the caller estimates (loading a model
    /// to count a prompt it may never answer would cost its load time).
    async fn prompt_tokens(&self, request: &ChatRequest) -> Option<usize> {
        self.model.get()?.prompt_tokens(request).await
    }

    fn reject(&self) {
        if let Some(m) = self.model.get() {
            m.reject();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScriptedModel;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn before_it_is_loaded_it_says_its_context_counts_nothing_and_a_chain_takes_the_smallest() {
        let scripted = || Ok(Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("hi")))) as Arc<dyn ChatModel>);
        let small = Arc::new(LazyModel::new("small", scripted).with_context(4096));
        let request = ChatRequest::new(vec![agentloop_core::Message::user("hello")]);
        assert_eq!(small.context_tokens(), Some(4096));
        assert_eq!(small.prompt_tokens(&request).await, None, "loading a model only to count a prompt would cost its load");
        let big = Arc::new(LazyModel::new("big", scripted).with_context(8192));
        let chain = crate::FallbackChain::new("chain", vec![big as Arc<dyn ChatModel>, small], 1).unwrap();
        assert_eq!(chain.context_tokens(), Some(4096), "a prompt sized to the chain fits whichever member answers");
    }

    #[tokio::test]
    async fn the_model_is_loaded_once_on_the_first_call() {
        let loads = Arc::new(AtomicU32::new(0));
        let counted = loads.clone();
        let lazy = LazyModel::new("big", move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text("hi")))) as Arc<dyn ChatModel>)
        });
        assert_eq!(loads.load(Ordering::SeqCst), 0, "nothing is loaded before a call");
        let request = ChatRequest::new(vec![agentloop_core::Message::user("hello")]);
        assert_eq!(lazy.chat(&request).await.unwrap().content, "hi");
        lazy.chat(&request).await.unwrap();
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    }
}

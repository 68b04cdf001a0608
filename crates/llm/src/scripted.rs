//! `ScriptedModel`: answers from a queue or a closure, records every request,
//! and can be slow on purpose (to test cancellation). Deterministic tests
//! never need a network or a real model.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Error, Result};
use async_trait::async_trait;

type Responder = Box<dyn FnMut(&ChatRequest) -> Result<ChatResponse> + Send>;

enum Script {
    Queue(VecDeque<Result<ChatResponse>>),
    Closure(Responder),
}

pub struct ScriptedModel {
    name: String,
    script: Mutex<Script>,
    requests: Mutex<Vec<ChatRequest>>,
    delay: Duration,
    /// Only the first call waits (a slow call that is cancelled, then a quick retry).
    delay_first_only: bool,
}

impl ScriptedModel {
    /// Answers with these responses in order, then fails.
    pub fn queue(responses: impl IntoIterator<Item = ChatResponse>) -> Self {
        Self::from_script(Script::Queue(responses.into_iter().map(Ok).collect()))
    }

    /// Answers with these texts in order (finish reason `stop`), then fails.
    pub fn texts<S: Into<String>>(texts: impl IntoIterator<Item = S>) -> Self {
        Self::queue(texts.into_iter().map(|t| ChatResponse::text(t)))
    }

    /// Answers with whatever the closure returns for each request.
    pub fn with(f: impl FnMut(&ChatRequest) -> Result<ChatResponse> + Send + 'static) -> Self {
        Self::from_script(Script::Closure(Box::new(f)))
    }

    fn from_script(script: Script) -> Self {
        Self { name: "scripted".into(), script: Mutex::new(script), requests: Mutex::new(Vec::new()), delay: Duration::ZERO, delay_first_only: false }
    }

    /// Waits this long before answering (the wait is cancellable).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Only the first call waits `delay`; later ones answer at once.
    pub fn delay_first(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self.delay_first_only = true;
        self
    }

    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Every request received so far, including ones cancelled mid-call.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.requests).clone()
    }

    pub fn calls(&self) -> usize {
        lock(&self.requests).len()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        "scripted"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let n = {
            let mut requests = lock(&self.requests);
            requests.push(request.clone());
            requests.len()
        };
        if !self.delay.is_zero() && (n == 1 || !self.delay_first_only) {
            tokio::time::sleep(self.delay).await;
        }
        let mut response = match &mut *lock(&self.script) {
            Script::Queue(q) => {
                q.pop_front().unwrap_or_else(|| Err(Error::Model { model: self.name.clone(), message: format!("the script ran out of responses at call {n}") }))
            }
            Script::Closure(f) => f(request),
        }?;
        if response.model.is_empty() {
            response.model = self.name.clone();
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_core::Message;

    #[tokio::test]
    async fn queue_answers_in_order_records_requests_then_fails() {
        let m = ScriptedModel::texts(["one", "two"]);
        let req = ChatRequest::new(vec![Message::user("hi")]);
        assert_eq!(m.chat(&req).await.unwrap().content, "one");
        assert_eq!(m.chat(&req).await.unwrap().content, "two");
        let err = m.chat(&req).await.unwrap_err().to_string();
        assert!(err.contains("ran out of responses at call 3"), "{err}");
        assert_eq!(m.calls(), 3);
        assert_eq!(m.requests()[0].messages[0].content, "hi");
    }

    #[tokio::test]
    async fn closure_sees_the_request() {
        let m = ScriptedModel::with(|r| Ok(ChatResponse::text(format!("echo {}", r.messages.len()))));
        let req = ChatRequest::new(vec![Message::user("a"), Message::user("b")]);
        assert_eq!(m.chat(&req).await.unwrap().content, "echo 2");
    }
}

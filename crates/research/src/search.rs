//! The corpus's tools: `search`, hybrid retrieval over one corpus, and
//! `corpus_terms`, which of a text's search terms the corpus holds. Both
//! read-only, so the journal keeps their results and a resumed session
//! never asks again for what it already has.

use std::sync::Arc;

use agentloop_core::{Effect, Error, Result, Tool};
use agentloop_retrieval::{Corpus, Embedder};
use async_trait::async_trait;
use serde_json::{json, Value};

pub const TOOL: &str = "search";
pub const TERMS_TOOL: &str = "corpus_terms";

pub struct Search {
    corpus: Arc<Corpus>,
    embedder: Arc<Embedder>,
}

impl Search {
    pub fn new(corpus: Arc<Corpus>, embedder: Arc<Embedder>) -> Self {
        Self { corpus, embedder }
    }
}

#[async_trait]
impl Tool for Search {
    fn name(&self) -> &str {
        TOOL
    }

    fn description(&self) -> &str {
        "Searches the corpus (BM25 and sentence vectors, fused) and returns the best passages with their ids, titles and places."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1}}, "required": ["query"]})
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    async fn call(&self, input: Value) -> Result<Value> {
        let query = input.get("query").and_then(Value::as_str).ok_or_else(|| Error::other("search needs a `query` string"))?;
        let k = input.get("k").and_then(Value::as_u64).unwrap_or(5) as usize;
        let found = self.corpus.search(query, k, &self.embedder).map_err(|e| Error::other(e.to_string()))?;
        Ok(json!({"passages": found.into_iter().map(|f| f.passage).collect::<Vec<_>>()}))
    }
}

/// Which of a text's search terms some passage of the corpus holds: the
/// words a question shares with the corpus, which an answer's sources must
/// mention (a word the corpus never uses cannot be asked of them).
pub struct CorpusTerms {
    corpus: Arc<Corpus>,
}

impl CorpusTerms {
    pub fn new(corpus: Arc<Corpus>) -> Self {
        Self { corpus }
    }
}

#[async_trait]
impl Tool for CorpusTerms {
    fn name(&self) -> &str {
        TERMS_TOOL
    }

    fn description(&self) -> &str {
        "Lists the search terms of a text (lowercased, stemmed, stop words dropped) that some passage of the corpus holds."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    async fn call(&self, input: Value) -> Result<Value> {
        let text = input.get("text").and_then(Value::as_str).ok_or_else(|| Error::other("corpus_terms needs a `text` string"))?;
        let held = self.corpus.index.held(&agentloop_retrieval::terms(text)).map_err(|e| Error::other(e.to_string()))?;
        Ok(json!({"held": held}))
    }
}

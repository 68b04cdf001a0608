//! The `search` tool: hybrid retrieval over one corpus. Read-only, so the
//! journal keeps its results and a resumed session never searches again
//! for what it already found.

use std::sync::Arc;

use agentloop_core::{Effect, Error, Result, Tool};
use agentloop_retrieval::{Corpus, Embedder};
use async_trait::async_trait;
use serde_json::{json, Value};

pub const TOOL: &str = "search";

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

//! Local retrieval for the research agent: documents read from files, cut
//! into passages that keep their exact place in the document (so a citation
//! points at the text it quotes), searched two ways — BM25 over the words
//! and MiniLM sentence vectors over the meaning — fused by rank.

mod bm25;
pub mod bundled;
mod corpus;
mod dense;
mod documents;
pub mod embed;
mod fusion;
mod passage;

pub use bm25::{terms, Bm25Index, Hit};
pub use corpus::{corpora_dir, Corpus, Found};
pub use documents::{read as read_documents, Document, JsonFields};
pub use embed::Embedder;
pub use passage::{passages, Passage};

/// A retrieval failure, in one sentence that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the index at {path} could not be {doing}: {why}")]
    Index { path: String, doing: &'static str, why: String },
    #[error("the embedding model at {path} could not be used: {why}; scripts/fetch-models.sh installs it")]
    Model { path: String, why: String },
    #[error("{path} could not be read as documents: {why}")]
    Document { path: String, why: String },
    #[error("corpus `{name}` is not built yet: a first `agentloop run research` in a terminal builds it, or scripts/install-corpora.sh")]
    NotBuilt { name: String },
}

pub type Result<T> = std::result::Result<T, Error>;

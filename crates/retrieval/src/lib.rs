//! Local retrieval for the research agent: documents read from files, cut
//! into passages that keep their exact place in the document (so a citation
//! points at the text it quotes), and a BM25 index over them.

mod bm25;
mod corpus;
mod documents;
mod passage;

pub use bm25::{Bm25Index, Hit};
pub use corpus::{corpora_dir, Corpus};
pub use documents::{read as read_documents, Document, JsonFields};
pub use passage::{passages, Passage};

/// A retrieval failure, in one sentence that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the index at {path} could not be {doing}: {why}")]
    Index { path: String, doing: &'static str, why: String },
    #[error("{path} could not be read as documents: {why}")]
    Document { path: String, why: String },
}

pub type Result<T> = std::result::Result<T, Error>;

//! Named corpora under the data dir: `corpora/NAME/` holds a BM25 index
//! and the sentence vectors of every passage of the files added to it, and
//! a search fuses the two rankings.

use std::path::{Path, PathBuf};

use crate::dense::DenseIndex;
use crate::fusion::reciprocal_rank;
use crate::{passages, read_documents, Bm25Index, Embedder, Error, JsonFields, Passage, Result};

/// How deep each ranking is read before fusing: enough that a passage one
/// method ranks far down can still surface when the other ranks it well.
const FUSE_DEPTH: usize = 50;
/// Passages embedded between two progress reports (sorted by length within
/// it, so larger chunks pad less).
const EMBED_CHUNK: usize = 1024;

/// A corpus name is a folder name: letters, digits, `-` and `_`.
fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(Error::Document { path: name.to_string(), why: "a corpus name uses only letters, digits, - and _".into() });
    }
    Ok(())
}

/// Where the corpora live.
pub fn corpora_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("corpora")
}

pub struct Corpus {
    pub name: String,
    pub index: Bm25Index,
    dense: DenseIndex,
    /// A new corpus is built in a hidden folder and moved into place once
    /// its first file is in, so an indexing stopped midway leaves no corpus
    /// rather than one that looks present and holds nothing.
    staged: Option<Staged>,
}

/// A new corpus's hidden folder and the folder it becomes.
struct Staged {
    at: PathBuf,
    becomes: PathBuf,
}

/// One passage found by a hybrid search, with its fused score and where
/// each method ranked it (1 = first; `None` = not in its top).
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub passage: Passage,
    pub score: f32,
    pub bm25_rank: Option<usize>,
    pub dense_rank: Option<usize>,
}

impl Corpus {
    /// Opens corpus `name`, creating it when `create`. A created corpus
    /// exists for others (`names`, `open`) once `add_file` has put a file in.
    pub fn open(data_dir: &Path, name: &str, create: bool) -> Result<Self> {
        check_name(name)?;
        let dir = corpora_dir(data_dir).join(name);
        if dir.is_dir() {
            return Ok(Self { name: name.to_string(), index: Bm25Index::open(&dir)?, dense: DenseIndex::open(&dir)?, staged: None });
        }
        if !create {
            return Err(Error::Document {
                path: name.to_string(),
                why: "there is no such corpus: `agentloop corpus list` shows them, `corpus add` makes one".into(),
            });
        }
        // A corpus name has no `.`, so this folder is never taken for one.
        let staging = corpora_dir(data_dir).join(format!(".{name}.new"));
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(|e| Error::Index { path: staging.display().to_string(), doing: "cleared", why: e.to_string() })?;
        }
        let (index, dense) = (Bm25Index::open(&staging)?, DenseIndex::open(&staging)?);
        Ok(Self { name: name.to_string(), index, dense, staged: Some(Staged { at: staging, becomes: dir }) })
    }

    /// Adds the documents of `file`, replacing what the same file gave
    /// before; returns how many passages it holds. `progress` hears
    /// (passages embedded, passages in all) as the vectors are made.
    pub fn add_file(&mut self, file: &Path, fields: &JsonFields, embedder: &Embedder, progress: &mut dyn FnMut(usize, usize)) -> Result<usize> {
        let docs = read_documents(file, fields)?;
        let all: Vec<Passage> = docs.iter().flat_map(|d| passages(&d.id, &d.title, &d.text)).collect();
        let mut vectors = Vec::with_capacity(all.len());
        for chunk in all.chunks(EMBED_CHUNK) {
            let texts: Vec<String> = chunk.iter().map(embedded_text).collect();
            vectors.extend(embedder.embed(&texts.iter().map(String::as_str).collect::<Vec<_>>())?);
            progress(vectors.len(), all.len());
        }
        self.index.add(&all)?;
        self.dense.replace(all.iter().zip(vectors).map(|(p, v)| (p.id.clone(), p.doc_id.clone(), v)).collect())?;
        if let Some(Staged { at, becomes }) = self.staged.take() {
            std::fs::rename(&at, &becomes).map_err(|e| Error::Index { path: becomes.display().to_string(), doing: "put in place", why: e.to_string() })?;
            self.index = Bm25Index::open(&becomes)?;
            self.dense = DenseIndex::open(&becomes)?;
        }
        Ok(all.len())
    }

    /// The `k` passages best for `query`: BM25 and sentence-vector
    /// rankings fused by reciprocal rank.
    pub fn search(&self, query: &str, k: usize, embedder: &Embedder) -> Result<Vec<Found>> {
        let lexical: Vec<String> = self.index.search(query, FUSE_DEPTH)?.into_iter().map(|h| h.passage.id).collect();
        let vector = embedder.embed(&[query])?.pop().unwrap_or_default();
        let dense: Vec<String> = self.dense.search(&vector, FUSE_DEPTH).into_iter().map(|(id, _)| id).collect();
        let fused: Vec<(String, f32)> = reciprocal_rank(&[lexical.clone(), dense.clone()]).into_iter().take(k).collect();
        let ids: Vec<String> = fused.iter().map(|(id, _)| id.clone()).collect();
        let rank = |list: &[String], id: &str| list.iter().position(|x| x == id).map(|i| i + 1);
        Ok(self
            .index
            .get(&ids)?
            .into_iter()
            .zip(fused)
            .map(|(passage, (id, score))| Found { bm25_rank: rank(&lexical, &id), dense_rank: rank(&dense, &id), passage, score })
            .collect())
    }

    /// The corpora there are, by name.
    pub fn names(data_dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(corpora_dir(data_dir))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Deletes corpus `name` and its index.
    pub fn remove(data_dir: &Path, name: &str) -> Result<()> {
        check_name(name)?;
        let dir = corpora_dir(data_dir).join(name);
        if !dir.is_dir() {
            return Err(Error::Document { path: name.to_string(), why: "there is no such corpus: `agentloop corpus list` shows them".into() });
        }
        std::fs::remove_dir_all(&dir).map_err(|e| Error::Index { path: dir.display().to_string(), doing: "removed", why: e.to_string() })
    }
}

/// What a passage's vector is made from: its title too, since a summary's
/// sentences often say "he" or "it" where the title names the subject.
fn embedded_text(p: &Passage) -> String {
    format!("{}. {}", p.title, p.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `add_file` leaves, without an embedding model: passages in a
    /// corpus folder.
    fn indexed_by_hand(data: &Path, name: &str) {
        Bm25Index::open(&corpora_dir(data).join(name)).unwrap().add(&passages("tides.md", "Tides", "The moon pulls the sea twice a day.")).unwrap();
    }

    #[test]
    fn a_corpus_is_listed_opened_and_removed_by_name() {
        let data = tempfile::tempdir().unwrap();
        indexed_by_hand(data.path(), "notes");
        let c = Corpus::open(data.path(), "notes", false).unwrap();
        assert_eq!(c.index.search("moon", 1).unwrap()[0].passage.title, "Tides");
        assert_eq!(Corpus::names(data.path()), ["notes"]);
        drop(c);
        assert!(Corpus::open(data.path(), "../etc", true).is_err(), "a name is a folder name, nothing more");
        let missing = Corpus::open(data.path(), "nope", false).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(missing.contains("corpus list"), "{missing}");
        Corpus::remove(data.path(), "notes").unwrap();
        assert!(Corpus::names(data.path()).is_empty());
    }

    #[test]
    fn an_indexing_stopped_before_its_first_file_is_in_leaves_no_corpus() {
        let data = tempfile::tempdir().unwrap();
        let stopped = Corpus::open(data.path(), "notes", true).unwrap();
        stopped.index.add(&passages("half.md", "Half", "Written before the stop.")).unwrap();
        drop(stopped);
        assert!(Corpus::names(data.path()).is_empty(), "a corpus not yet filled is not listed");
        assert!(Corpus::open(data.path(), "notes", false).is_err(), "nor opened");
        let again = Corpus::open(data.path(), "notes", true).unwrap();
        assert!(again.index.is_empty(), "the next indexing starts clean");
    }
}

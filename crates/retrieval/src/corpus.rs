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
    /// Opens corpus `name`, creating it when `create`.
    pub fn open(data_dir: &Path, name: &str, create: bool) -> Result<Self> {
        check_name(name)?;
        let dir = corpora_dir(data_dir).join(name);
        if !create && !dir.is_dir() {
            return Err(Error::Document {
                path: name.to_string(),
                why: "there is no such corpus: `agentloop corpus list` shows them, `corpus add` makes one".into(),
            });
        }
        Ok(Self { name: name.to_string(), index: Bm25Index::open(&dir)?, dense: DenseIndex::open(&dir)? })
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
            .map(|rd| rd.filter_map(|e| e.ok()).filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
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

    #[test]
    fn a_corpus_is_made_listed_and_removed_by_name() {
        let data = tempfile::tempdir().unwrap();
        let c = Corpus::open(data.path(), "notes", true).unwrap();
        c.index.add(&passages("tides.md", "Tides", "The moon pulls the sea twice a day.")).unwrap();
        assert_eq!(c.index.search("moon", 1).unwrap()[0].passage.title, "Tides");
        assert_eq!(Corpus::names(data.path()), ["notes"]);
        drop(c);
        assert!(Corpus::open(data.path(), "../etc", true).is_err(), "a name is a folder name, nothing more");
        let missing = Corpus::open(data.path(), "nope", false).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(missing.contains("corpus list"), "{missing}");
        Corpus::remove(data.path(), "notes").unwrap();
        assert!(Corpus::names(data.path()).is_empty());
    }
}

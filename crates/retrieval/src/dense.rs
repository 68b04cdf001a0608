//! Passage vectors on disk, searched exactly: every query is compared with
//! every passage. At tens of thousands of passages that is a few
//! milliseconds; an approximate index (HNSW) would earn its place in the
//! millions.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::embed::{cosine, DIMENSIONS};
use crate::{Error, Result};

/// One stored vector and what it belongs to.
struct Row {
    passage_id: String,
    doc_id: String,
    vector: Vec<f32>,
}

/// All vectors of a corpus, held in memory, saved whole on each change
/// (written aside and renamed, so a crash leaves the old file or the new).
pub struct DenseIndex {
    file: PathBuf,
    rows: Vec<Row>,
}

impl DenseIndex {
    /// Opens `dir/vectors.bin`; no file is an empty index.
    pub fn open(dir: &Path) -> Result<Self> {
        let file = dir.join("vectors.bin");
        let fail = |why: String| Error::Index { path: file.display().to_string(), doing: "read", why };
        let mut rows = Vec::new();
        if file.exists() {
            let mut bytes = Vec::new();
            std::fs::File::open(&file).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(|e| fail(e.to_string()))?;
            let mut at = 0;
            while at < bytes.len() {
                let passage_id = text(&bytes, &mut at).ok_or_else(|| fail("it is cut short; `corpus add` the files again".into()))?;
                let doc_id = text(&bytes, &mut at).ok_or_else(|| fail("it is cut short; `corpus add` the files again".into()))?;
                let raw = bytes.get(at..at + DIMENSIONS * 4).ok_or_else(|| fail("it is cut short; `corpus add` the files again".into()))?;
                at += DIMENSIONS * 4;
                let vector = raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                rows.push(Row { passage_id, doc_id, vector });
            }
        }
        Ok(Self { file, rows })
    }

    /// Puts `vectors` in place of whatever the same documents had.
    pub fn replace(&mut self, entries: Vec<(String, String, Vec<f32>)>) -> Result<()> {
        let docs: std::collections::HashSet<&str> = entries.iter().map(|(_, d, _)| d.as_str()).collect();
        self.rows.retain(|r| !docs.contains(r.doc_id.as_str()));
        self.rows.extend(entries.into_iter().map(|(passage_id, doc_id, vector)| Row { passage_id, doc_id, vector }));
        self.save()
    }

    /// The `k` passage ids nearest `query`, nearest first, with their cosine.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(String, f32)> {
        let mut scored: Vec<(usize, f32)> = self.rows.iter().enumerate().map(|(i, r)| (i, cosine(query, &r.vector))).collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.into_iter().take(k).map(|(i, s)| (self.rows[i].passage_id.clone(), s)).collect()
    }

    fn save(&self) -> Result<()> {
        let fail = |e: std::io::Error| Error::Index { path: self.file.display().to_string(), doing: "written", why: e.to_string() };
        let mut bytes = Vec::with_capacity(self.rows.len() * (DIMENSIONS * 4 + 64));
        for r in &self.rows {
            for s in [&r.passage_id, &r.doc_id] {
                bytes.extend((s.len() as u32).to_le_bytes());
                bytes.extend(s.as_bytes());
            }
            for x in &r.vector {
                bytes.extend(x.to_le_bytes());
            }
        }
        let aside = self.file.with_extension("bin.partial");
        std::fs::File::create(&aside).and_then(|mut f| f.write_all(&bytes).and_then(|_| f.sync_all())).map_err(fail)?;
        std::fs::rename(&aside, &self.file).map_err(fail)
    }
}

/// A length-prefixed UTF-8 string at `*at`, moving past it.
fn text(bytes: &[u8], at: &mut usize) -> Option<String> {
    let len = u32::from_le_bytes(bytes.get(*at..*at + 4)?.try_into().ok()?) as usize;
    let s = String::from_utf8(bytes.get(*at + 4..*at + 4 + len)?.to_vec()).ok()?;
    *at += 4 + len;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(i: usize) -> Vec<f32> {
        let mut v = vec![0.0; DIMENSIONS];
        v[i] = 1.0;
        v
    }

    #[test]
    fn vectors_survive_reopening_and_a_document_added_again_replaces_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = DenseIndex::open(dir.path()).unwrap();
        index.replace(vec![("a#0".into(), "a".into(), unit(0)), ("a#1".into(), "a".into(), unit(1)), ("b#0".into(), "b".into(), unit(2))]).unwrap();
        index.replace(vec![("a#0".into(), "a".into(), unit(3))]).unwrap();
        let index = DenseIndex::open(dir.path()).unwrap();
        assert_eq!(index.rows.len(), 2);
        assert_eq!(index.search(&unit(3), 1), vec![("a#0".to_string(), 1.0)]);
        assert_eq!(index.search(&unit(2), 1)[0].0, "b#0");
        std::fs::write(dir.path().join("vectors.bin"), [1, 0, 0]).unwrap();
        let broken = DenseIndex::open(dir.path()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(broken.contains("corpus add"), "{broken}");
    }
}

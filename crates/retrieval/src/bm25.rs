//! A BM25 index of passages on disk (tantivy): the lexical half of the
//! research agent's hybrid retrieval.

use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, Schema, Value, INDEXED, STORED, STRING, TEXT};
use tantivy::{doc, Index, IndexReader, IndexWriter, TantivyDocument, Term};

use crate::{Error, Passage, Result};

/// Memory the writer may buffer before it flushes a segment.
const WRITER_BYTES: usize = 50_000_000;

/// One passage found, with its BM25 score.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub passage: Passage,
    pub score: f32,
}

struct Fields {
    id: Field,
    doc_id: Field,
    title: Field,
    text: Field,
    start: Field,
    end: Field,
}

pub struct Bm25Index {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    path: String,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        doc_id: b.add_text_field("doc_id", STRING | STORED),
        title: b.add_text_field("title", TEXT | STORED),
        text: b.add_text_field("text", TEXT | STORED),
        start: b.add_u64_field("start", INDEXED | STORED),
        end: b.add_u64_field("end", STORED),
    };
    (b.build(), fields)
}

impl Bm25Index {
    /// Opens the index in `dir`, creating it (and the folder) if needed.
    pub fn open(dir: &Path) -> Result<Self> {
        let path = dir.display().to_string();
        let fail = |doing: &'static str| {
            let path = path.clone();
            move |e: tantivy::TantivyError| Error::Index { path: path.clone(), doing, why: e.to_string() }
        };
        std::fs::create_dir_all(dir).map_err(|e| Error::Index { path: path.clone(), doing: "created", why: e.to_string() })?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| Error::Index { path: path.clone(), doing: "opened", why: e.to_string() })?;
        let index = Index::open_or_create(directory, schema).map_err(fail("opened"))?;
        let reader = index.reader().map_err(fail("read"))?;
        Ok(Self { index, reader, fields, path })
    }

    /// Adds `passages`, replacing any earlier passages of the same
    /// documents (adding a file twice does not duplicate it).
    pub fn add(&self, passages: &[Passage]) -> Result<()> {
        let mut writer: IndexWriter = self.index.writer(WRITER_BYTES).map_err(|e| self.fail("written", e))?;
        let mut docs: Vec<&str> = passages.iter().map(|p| p.doc_id.as_str()).collect();
        docs.sort_unstable();
        docs.dedup();
        for d in docs {
            writer.delete_term(Term::from_field_text(self.fields.doc_id, d));
        }
        let f = &self.fields;
        for p in passages {
            writer
                .add_document(doc!(f.id => p.id.as_str(), f.doc_id => p.doc_id.as_str(), f.title => p.title.as_str(), f.text => p.text.as_str(), f.start => p.start as u64, f.end => p.end as u64))
                .map_err(|e| self.fail("written", e))?;
        }
        writer.commit().map_err(|e| self.fail("written", e))?;
        self.reader.reload().map_err(|e| self.fail("read", e))?;
        Ok(())
    }

    /// The `k` passages that best match `query` (titles and text; any
    /// punctuation a person types is taken as words, never an error).
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<Hit>> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let parser = QueryParser::for_index(&self.index, vec![self.fields.title, self.fields.text]);
        let (query, _) = parser.parse_query_lenient(query);
        let top = searcher.search(&query, &TopDocs::with_limit(k).order_by_score()).map_err(|e| self.fail("searched", e))?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let stored: TantivyDocument = searcher.doc(address).map_err(|e| self.fail("read", e))?;
            let text = |f: Field| stored.get_first(f).and_then(|v| v.as_str()).unwrap_or_default().to_string();
            let number = |f: Field| stored.get_first(f).and_then(|v| v.as_u64()).unwrap_or_default() as usize;
            let f = &self.fields;
            hits.push(Hit {
                passage: Passage {
                    id: text(f.id),
                    doc_id: text(f.doc_id),
                    title: text(f.title),
                    start: number(f.start),
                    end: number(f.end),
                    text: text(f.text),
                },
                score,
            });
        }
        Ok(hits)
    }

    /// Passages indexed.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn fail(&self, doing: &'static str, e: tantivy::TantivyError) -> Error {
        Error::Index { path: self.path.clone(), doing, why: e.to_string() }
    }
}

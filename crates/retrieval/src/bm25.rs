//! A BM25 index of passages on disk (tantivy): the lexical half of the
//! research agent's hybrid retrieval.

use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::query::{QueryParser, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, INDEXED, STORED, STRING};
use tantivy::tokenizer::{Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer};
use tantivy::{doc, Index, IndexReader, IndexWriter, TantivyDocument, Term};

use crate::{Error, Passage, Result};

/// Memory the writer may buffer before it flushes a segment.
const WRITER_BYTES: usize = 50_000_000;

/// The analyzer titles and text are indexed and queried with.
const ANALYZER: &str = "en";

/// Words too common to say what a passage is about: Lucene's English list
/// plus the question words and auxiliaries every question is made of (a
/// question's "who" or "does" would otherwise match any passage using it).
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
    "their", "then", "there", "these", "they", "this", "to", "was", "will", "with", "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    "do", "does", "did", "has", "have", "had", "were", "been", "being", "from", "about", "than", "so", "can", "could", "would", "should", "its", "his", "her",
];

/// Words split on non-alphanumerics, lowercased, stop words dropped,
/// stemmed (so "raises" finds "raise").
fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(STOP_WORDS.iter().map(|w| w.to_string())))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The words a search for `text` matches on: lowercased, stop words
/// dropped, stemmed. Two texts that share none are about different things
/// as far as this index can tell.
pub fn terms(text: &str) -> Vec<String> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        out.push(token.text.clone());
    }
    out
}

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
    let indexing = TextFieldIndexing::default().set_tokenizer(ANALYZER).set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let text = TextOptions::default().set_indexing_options(indexing).set_stored();
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        doc_id: b.add_text_field("doc_id", STRING | STORED),
        title: b.add_text_field("title", text.clone()),
        text: b.add_text_field("text", text),
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
        index.tokenizers().register(ANALYZER, analyzer());
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
        top.into_iter()
            .map(|(score, address)| {
                let stored: TantivyDocument = searcher.doc(address).map_err(|e| self.fail("read", e))?;
                Ok(Hit { passage: self.passage_of(&stored), score })
            })
            .collect()
    }

    /// The passages with these ids, in the same order; an id not in the
    /// index is left out.
    pub fn get(&self, ids: &[String]) -> Result<Vec<Passage>> {
        let searcher = self.reader.searcher();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let query = TermQuery::new(Term::from_field_text(self.fields.id, id), IndexRecordOption::Basic);
            let top = searcher.search(&query, &TopDocs::with_limit(1).order_by_score()).map_err(|e| self.fail("searched", e))?;
            if let Some((_, address)) = top.first() {
                let stored: TantivyDocument = searcher.doc(*address).map_err(|e| self.fail("read", e))?;
                out.push(self.passage_of(&stored));
            }
        }
        Ok(out)
    }

    fn passage_of(&self, stored: &TantivyDocument) -> Passage {
        let text = |f: Field| stored.get_first(f).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        let number = |f: Field| stored.get_first(f).and_then(|v| v.as_u64()).unwrap_or_default() as usize;
        let f = &self.fields;
        Passage { id: text(f.id), doc_id: text(f.doc_id), title: text(f.title), start: number(f.start), end: number(f.end), text: text(f.text) }
    }

    /// The terms among `terms` (as `terms()` gives them) that some passage
    /// holds, in its title or its text, each once in the order given.
    pub fn held(&self, terms: &[String]) -> Result<Vec<String>> {
        let searcher = self.reader.searcher();
        let mut out: Vec<String> = Vec::new();
        for t in terms {
            if out.contains(t) {
                continue;
            }
            for field in [self.fields.title, self.fields.text] {
                if searcher.doc_freq(&Term::from_field_text(field, t)).map_err(|e| self.fail("read", e))? > 0 {
                    out.push(t.clone());
                    break;
                }
            }
        }
        Ok(out)
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

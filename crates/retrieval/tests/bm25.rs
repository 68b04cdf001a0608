//! The BM25 index on a tiny corpus, on disk: what is added is found, ranked
//! by relevance, with its exact place in its document; adding a document
//! again replaces it; the index reopens with what it held.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_retrieval::{passages, Bm25Index};

fn corpus() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        ("ada", "Ada Lovelace", "Ada Lovelace was an English mathematician.\n\nShe wrote the first algorithm for Charles Babbage's Analytical Engine."),
        ("babbage", "Charles Babbage", "Charles Babbage designed the Difference Engine and the Analytical Engine."),
        ("sea", "Sailing", "Sailing uses the wind to move a boat across the sea."),
    ]
}

/// The index of `corpus()`, in `dir`.
fn indexed(dir: &tempfile::TempDir) -> Bm25Index {
    let index = Bm25Index::open(dir.path()).unwrap();
    for (id, title, text) in corpus() {
        index.add(&passages(id, title, text)).unwrap();
    }
    index
}

#[test]
fn passages_are_found_by_relevance_with_their_place_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(&dir);
    assert_eq!(index.len(), 4);
    let hits = index.search("who wrote the first algorithm?", 3).unwrap();
    assert_eq!(hits[0].passage.id, "ada#1", "{hits:?}");
    let text = corpus()[0].2.chars().collect::<Vec<_>>();
    let p = &hits[0].passage;
    assert_eq!(p.text, text[p.start..p.end].iter().collect::<String>());
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    let sea = index.search("boat wind", 1).unwrap();
    assert_eq!(sea[0].passage.title, "Sailing");
    assert!(index.search("\"unbalanced (quote AND", 2).is_ok(), "a person's punctuation is never an error");

    index.add(&passages("sea", "Sailing", "Sailing is fun.")).unwrap();
    assert_eq!(index.len(), 4, "the same document again replaces its passages");
    drop(index);
    let reopened = Bm25Index::open(dir.path()).unwrap();
    assert_eq!(reopened.len(), 4);
    assert_eq!(reopened.search("Babbage Difference Engine", 1).unwrap()[0].passage.doc_id, "babbage");
}

#[test]
fn a_text_s_terms_are_its_stemmed_words_without_the_question_words() {
    assert_eq!(agentloop_retrieval::terms("Who invented the Telephones?"), ["invent", "telephon"]);
    assert!(agentloop_retrieval::terms("What is it, and where was that?").is_empty());
}

#[test]
fn the_terms_held_are_those_some_title_or_text_has() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(&dir);
    let asked = agentloop_retrieval::terms("Which person sailing boats wrote algorithms for Lovelace, and which boats?");
    assert_eq!(index.held(&asked).unwrap(), ["sail", "boat", "wrote", "algorithm", "lovelac"], "\"person\" is in no passage; each term once");
}

//! The embedding model against reference values, and hybrid search over a
//! tiny corpus on disk. Needs the model `scripts/fetch-models.sh` installs.

use agentloop_llm::catalog::{default_data_dir, models_dir};
use agentloop_retrieval::embed::{cosine, MODEL_DIR};
use agentloop_retrieval::{Corpus, Embedder, JsonFields};

fn embedder() -> Embedder {
    let dir = models_dir(&default_data_dir()).join(MODEL_DIR);
    Embedder::load(&dir).unwrap_or_else(|e| panic!("{e}"))
}

/// Reference: the same model's weights run through a plain NumPy BERT
/// (mean pooling over the sentence's tokens, unit length), as
/// sentence-transformers computes all-MiniLM-L6-v2.
const MOON: (&str, [f32; 8]) = ("The moon pulls the sea twice a day.", [-0.00698, 0.046608, 0.133294, 0.066505, -0.094107, -0.066752, -0.003275, -0.083599]);
const FOOD: (&str, [f32; 8]) = ("A man is eating food.", [0.033242, 0.004406, -0.006277, 0.048379, -0.138702, -0.033617, 0.101128, -0.054385]);

#[test]
fn a_known_sentence_embeds_to_the_reference_values() {
    let e = embedder();
    // Embedded together: padding the shorter one must not change it.
    let got = e.embed(&[MOON.0, FOOD.0]).unwrap();
    for (vector, (text, reference)) in got.iter().zip([MOON, FOOD]) {
        assert_eq!(vector.len(), 384);
        assert!((cosine(vector, vector) - 1.0).abs() < 1e-4, "unit length");
        for (i, (g, r)) in vector.iter().zip(reference).enumerate() {
            assert!((g - r).abs() < 1e-4, "{text:?} dimension {i}: {g} against {r}");
        }
    }
    let alone = e.embed(&[FOOD.0]).unwrap();
    assert!(cosine(&alone[0], &got[1]) > 0.9999, "the same text embeds the same alone or in a batch");
    let close = e.embed(&["Someone is having a meal."]).unwrap();
    assert!(cosine(&close[0], &got[1]) > cosine(&close[0], &got[0]) + 0.3, "a paraphrase is nearer than an unrelated sentence");
}

#[test]
fn hybrid_search_finds_by_meaning_and_by_rare_words_and_survives_reopening() {
    let e = embedder();
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("notes.json");
    std::fs::write(
        &file,
        serde_json::json!({
            "Tides": {"title": "Tides", "extract": "The moon's gravity raises the oceans twice daily along every coast."},
            "Kettle": {"title": "Kettle", "extract": "Part number QX-7731 is the heating element of the office kettle."},
            "Bread": {"title": "Bread", "extract": "Dough rises when yeast ferments its sugars into gas."},
            "Trains": {"title": "Trains", "extract": "The night train leaves the station at ten and arrives at dawn."}
        })
        .to_string(),
    )
    .unwrap();
    let mut corpus = Corpus::open(data.path(), "notes", true).unwrap();
    assert!(Corpus::names(data.path()).is_empty(), "a corpus exists once a file is in");
    let mut seen = Vec::new();
    assert_eq!(corpus.add_file(&file, &JsonFields::default(), &e, &mut |done, all| seen.push((done, all))).unwrap(), 4);
    assert_eq!(Corpus::names(data.path()), ["notes"]);
    assert_eq!(seen.last(), Some(&(4, 4)), "progress reaches the end");
    corpus.add_file(&file, &JsonFields::default(), &e, &mut |_, _| {}).unwrap();
    drop(corpus);

    let corpus = Corpus::open(data.path(), "notes", false).unwrap();
    assert_eq!(corpus.index.len(), 4, "adding the file again replaced it");
    let by_meaning = corpus.search("why does sea level go up and down", 2, &e).unwrap();
    assert_eq!(by_meaning[0].passage.title, "Tides", "{by_meaning:?}");
    assert_eq!(by_meaning[0].dense_rank, Some(1), "found by its vector: no word of the query is in it");
    let by_code = corpus.search("QX-7731", 2, &e).unwrap();
    assert_eq!(by_code[0].passage.title, "Kettle", "{by_code:?}");
    assert_eq!(by_code[0].bm25_rank, Some(1));
    let p = &by_code[0].passage;
    assert_eq!(p.text.chars().count(), p.end - p.start, "the passage keeps its exact range");
    assert!(by_code[0].score > by_code[1].score);
}

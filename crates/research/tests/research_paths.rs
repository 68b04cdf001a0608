//! The research agent's graph through its paths, with a scripted model, a
//! real corpus on disk (BM25 and the real embedding model) and real SQLite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Effect, Models, Outcome, Runner, SessionStatus, StartOptions, Store, Tool, Tools};
use agentloop_llm::catalog::{default_data_dir, models_dir};
use agentloop_llm::ScriptedModel;
use agentloop_research::{self as research, CorpusTerms, ResearchEvent, ResearchSettings, ResearchState, Search, StopReason, SubQueryStatus};
use agentloop_retrieval::{Corpus, Embedder, JsonFields};
use agentloop_store::SqliteStore;
use serde_json::{json, Value};

const PEOPLE: &str = r#"{
  "Mara Quill": {"title": "Mara Quill", "extract": "Mara Quill is a carpenter from Ostrava Bay. Her hobby is sailing. Her father is Tobin Quill."},
  "Tobin Quill": {"title": "Tobin Quill", "extract": "Tobin Quill is a lighthouse keeper. He was born in 1950."},
  "Ennis Vale": {"title": "Ennis Vale", "extract": "Ennis Vale is a baker whose hobby is chess."}
}"#;

/// A corpus of three fictional people and the embedder, shared by the tests.
fn corpus() -> (Arc<Corpus>, Arc<Embedder>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let embedder = Embedder::installed(&models_dir(&default_data_dir())).unwrap();
    let file = dir.path().join("people.json");
    std::fs::write(&file, PEOPLE).unwrap();
    let mut c = Corpus::open(dir.path(), "people", true).unwrap();
    c.add_file(&file, &JsonFields::default(), &embedder, &mut |_, _| {}).unwrap();
    (Arc::new(c), Arc::new(embedder), dir)
}

/// Counts the searches that really run (replayed ones do not reach it).
struct Counted {
    inner: Search,
    queries: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Tool for Counted {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn effect(&self) -> Effect {
        self.inner.effect()
    }
    async fn call(&self, input: Value) -> agentloop_core::Result<Value> {
        self.queries.lock().unwrap().push(input["query"].as_str().unwrap_or_default().to_string());
        self.inner.call(input).await
    }
}

/// Which of the agent's prompts a request is, by its system prompt.
fn kind(req: &ChatRequest) -> &'static str {
    let system = &req.messages[0].content;
    for (prefix, kind) in [
        ("You plan research", "decompose"),
        ("You check whether", "coverage"),
        ("Answer the question from the passages", "sub_answer"),
        ("You answer a research question", "synthesize"),
        ("You check a statement", "judge"),
        ("You review an answer", "critique"),
        ("You improve an answer", "refine"),
        ("You sort a question", "question_kind"),
        ("You sort an answer", "answer_kind"),
    ] {
        if system.starts_with(prefix) {
            return kind;
        }
    }
    "other"
}

fn user(req: &ChatRequest) -> String {
    req.messages.iter().skip(1).map(|m| m.content.clone()).collect::<Vec<_>>().join("\n")
}

/// The number a prompt gives the passage of `title`.
fn number_of(req: &ChatRequest, title: &str) -> u32 {
    let text = user(req);
    let line = text.lines().find(|l| l.contains(&format!("] {title}:"))).unwrap_or_else(|| panic!("{title} is not among the passages:\n{text}"));
    line[1..line.find(']').unwrap()].parse().unwrap()
}

/// A judge's verdict quoting every passage it was shown.
fn judged(req: &ChatRequest, supported: bool) -> String {
    let text = user(req);
    let quotes: Vec<&str> = text.lines().filter(|l| l.starts_with('[')).filter_map(|l| l.split_once(": ")).map(|(_, t)| t).collect();
    json!({"quotes": quotes, "supported": supported, "confidence": 0.9, "supportingCitations": agentloop_research::cited(&text)}).to_string()
}

const TWO_HOPS: &str = r#"{"isComplex": true, "subQueries": [
  {"id": "q1", "text": "Whose hobby is sailing?", "dependencies": [], "type": "factual", "priority": 1, "estimatedComplexity": 1},
  {"id": "q2", "text": "Who is the father of {q1}?", "dependencies": ["q1"], "type": "factual", "priority": 1, "estimatedComplexity": 1}
]}"#;

fn covered() -> String {
    json!({"aspects": [{"description": "who", "keywords": [], "answered": true, "confidence": 0.95, "supportingSources": [1]}], "suggestedRetrievals": []})
        .to_string()
}

fn critique(confidence: f32) -> String {
    json!({"overallAssessment": "checked", "strengths": [], "weaknesses": [], "suggestedImprovements": [], "criticalIssues": [], "confidence": confidence})
        .to_string()
}

/// The answers of a model that gets the two-hop question right; `overrides`
/// answers a kind of prompt its own way (given the request and how many of
/// that kind came before).
fn scripted(overrides: impl Fn(&str, &ChatRequest, usize) -> Option<String> + Send + 'static) -> Arc<ScriptedModel> {
    let mut seen: std::collections::HashMap<&'static str, usize> = Default::default();
    Arc::new(ScriptedModel::with(move |req| {
        let k = kind(req);
        let n = *seen.entry(k).and_modify(|n| *n += 1).or_insert(0);
        if let Some(text) = overrides(k, req, n) {
            return Ok(ChatResponse::text(text));
        }
        let text = match k {
            "decompose" => TWO_HOPS.to_string(),
            "coverage" => covered(),
            "sub_answer" if user(req).lines().next().is_some_and(|q| q.contains("hobby is sailing")) => {
                json!({"answers": ["Mara Quill"], "citations": [number_of(req, "Mara Quill")], "found": true}).to_string()
            }
            "sub_answer" => json!({"answers": ["Tobin Quill"], "citations": [number_of(req, "Mara Quill")], "found": true}).to_string(),
            "synthesize" | "refine" => {
                let m = number_of(req, "Mara Quill");
                format!("Mara Quill's hobby is sailing [{m}]. Her father is Tobin Quill [{m}].")
            }
            "judge" => judged(req, true),
            "critique" => critique(0.95),
            "question_kind" | "answer_kind" => json!({"kind": "person"}).to_string(),
            other => panic!("unexpected prompt {other}: {:?}", req.messages[0].content),
        };
        Ok(ChatResponse::text(text))
    }))
}

struct Run {
    out: Outcome,
    store: Arc<dyn Store>,
    model: Arc<ScriptedModel>,
    searches: Vec<String>,
}

impl Run {
    fn state(&self) -> ResearchState {
        serde_json::from_value(self.store.load(&self.out.session_id).unwrap().state).unwrap()
    }

    fn events(&self) -> Vec<ResearchEvent> {
        self.store
            .events(&self.out.session_id, 0, usize::MAX)
            .unwrap()
            .into_iter()
            .filter(|e| e.name.starts_with("research:"))
            .map(|e| serde_json::from_value(json!({"name": e.name, "payload": e.payload})).unwrap())
            .collect()
    }

    fn requests(&self, of: &str) -> Vec<ChatRequest> {
        self.model.requests().into_iter().filter(|r| kind(r) == of).collect()
    }
}

fn runner(corpus: &Arc<Corpus>, embedder: &Arc<Embedder>, model: Arc<dyn ChatModel>, store: &Arc<dyn Store>) -> (Runner<ResearchState>, Arc<Counted>) {
    let counted = Arc::new(Counted { inner: Search::new(corpus.clone(), embedder.clone()), queries: Mutex::new(Vec::new()) });
    let mut tools = Tools::new();
    tools.add(counted.clone());
    tools.add(Arc::new(CorpusTerms::new(corpus.clone())));
    (Runner::new(research::graph().unwrap(), store.clone()).models(Models::new(model)).tools(tools), counted)
}

async fn run(question: &str, config: ResearchSettings, model: Arc<ScriptedModel>) -> Run {
    let (corpus, embedder, _dir) = corpus();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let (runner, counted) = runner(&corpus, &embedder, model.clone(), &store);
    let state = ResearchState::new(question, "people", config.clone());
    let out = runner.start(state, StartOptions::new(research::termination(&config))).unwrap().wait().await.unwrap();
    let searches = counted.queries.lock().unwrap().clone();
    Run { out, store, model, searches }
}

const QUESTION: &str = "Who is the father of the person whose hobby is sailing?";

#[tokio::test]
async fn a_two_hop_question_is_answered_in_dependency_order_with_checked_citations() {
    let r = run(QUESTION, ResearchSettings::default(), scripted(|_, _, _| None)).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.out.finish_reason.as_deref(), Some("answered"));
    let s = r.state();
    let d = s.decomposition.as_ref().unwrap();
    assert_eq!(d.execution_plan, vec![vec!["q1"], vec!["q2"]]);
    assert_eq!(s.sub_queries[1].resolved, "Who is the father of Mara Quill?", "the dependency's answer is filled in");
    assert_eq!(r.searches, ["Whose hobby is sailing?", "Who is the father of Mara Quill?"], "the second search used the first answer");
    assert!(s.sub_queries.iter().all(|w| w.status == SubQueryStatus::Answered));
    let answer = s.answer().unwrap();
    assert_eq!(answer.scores.faithfulness, Some(1.0));
    assert_eq!(s.stopped, Some(StopReason::QualityReached));
    // The phase's sub-question prompt saw the passages its search found.
    assert!(user(&r.requests("sub_answer")[1]).contains("Mara Quill"));

    let names: Vec<String> =
        r.events().iter().map(|e| serde_json::to_value(e).unwrap()["name"].as_str().unwrap().trim_start_matches("research:").to_string()).collect();
    assert_eq!(
        names,
        [
            "decomposition_started",
            "sub_query_identified",
            "sub_query_identified",
            "decomposition_completed",
            "retrieval_cycle_started",
            "coverage_checked",
            "retrieval_cycle_completed",
            "sub_query_answered",
            "retrieval_cycle_started",
            "coverage_checked",
            "retrieval_cycle_completed",
            "sub_query_answered",
            "draft",
            "gap_detected",
            "self_critique_completed",
            "reflection_iteration",
            "reflection_completed"
        ]
    );
}

#[tokio::test]
async fn a_dependency_answered_with_several_items_is_followed_up_once_per_item() {
    let model = scripted(|k, req, _| match k {
        // Two people the passages name, and one they do not (dropped).
        "sub_answer" if user(req).starts_with("Question: Whose hobby is sailing?") => {
            Some(json!({"answers": ["Mara Quill", "Ennis Vale", "Zora Nobody"], "citations": [number_of(req, "Mara Quill")], "found": true}).to_string())
        }
        "sub_answer" if user(req).starts_with("Question: Who is the father of Ennis Vale?") => {
            Some(json!({"answers": [], "citations": [], "found": false}).to_string())
        }
        _ => None,
    });
    let r = run(QUESTION, ResearchSettings { reflection: false, ..ResearchSettings::default() }, model).await;
    let s = r.state();
    assert_eq!(s.sub_queries[0].items, ["Mara Quill", "Ennis Vale"], "an item no passage states is dropped");
    assert_eq!(r.searches, ["Whose hobby is sailing?", "Who is the father of Mara Quill?", "Who is the father of Ennis Vale?"]);
    let ids: Vec<&str> = s.sub_queries.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["q1", "q2-1", "q2-2"], "one branch per item");
    assert!(s.sub_queries[1..].iter().all(|w| w.query == "q2"));
    assert_eq!(s.sub_queries[1].status, SubQueryStatus::Answered);
    assert_eq!(s.sub_queries[2].status, SubQueryStatus::Unanswered);
    assert_eq!(s.answered_items()["q2"], ["Tobin Quill"], "the sub-question's answer is its branches' together");
    assert_eq!(s.final_items(), ["Tobin Quill"], "the short answer is the last phase's");
    let synth = user(&r.requests("synthesize")[0]);
    assert!(synth.contains("Who is the father of Mara Quill? → Tobin Quill"), "{synth}");
}

#[tokio::test]
async fn an_answer_citing_outside_the_retrieved_passages_is_refused_and_asked_again() {
    let model = scripted(|k, req, n| (k == "synthesize" && n == 0).then(|| format!("Her father is Tobin Quill [{}] [42].", number_of(req, "Mara Quill"))));
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    let synth = r.requests("synthesize");
    assert_eq!(synth.len(), 2, "asked again once");
    assert!(user(&synth[1]).contains("You cited [42], which is not in the list: only [1]"), "{}", user(&synth[1]));
    let first = r.state().drafts[0].clone();
    assert!(!first.answer.contains("[42]"), "{}", first.answer);
    assert!(r.events().iter().any(|e| matches!(e, ResearchEvent::Draft { refused_citations, .. } if refused_citations == &[42])));

    // Still outside after the repair: the marker is removed, never shown.
    let stubborn = scripted(|k, _, _| (k == "synthesize").then(|| "Her father is Tobin Quill [42].".to_string()));
    let r = run(QUESTION, ResearchSettings { reflection: false, ..ResearchSettings::default() }, stubborn).await;
    let shown = r.state().answer().unwrap().clone();
    assert_eq!(shown.answer, "Her father is Tobin Quill.");
    assert_eq!(shown.scores.faithfulness, Some(0.0), "an uncited claim is unsupported");
    assert_eq!(r.out.finish_reason.as_deref(), Some("unverified"), "an unsupported answer is not a checked one");
}

#[tokio::test]
async fn an_answer_that_copies_its_passages_out_or_cites_none_is_asked_for_again_then_replaced_by_the_findings() {
    let copy = |req: &ChatRequest| {
        let m = number_of(req, "Mara Quill");
        format!("[{m}] Mara Quill: Mara Quill is a carpenter from Ostrava Bay. Her hobby is sailing.")
    };
    let model = scripted(move |k, req, n| (k == "synthesize" && n == 0).then(|| copy(req)));
    let r = run(QUESTION, ResearchSettings::default().baseline(), model).await;
    let synth = r.requests("synthesize");
    assert_eq!(synth.len(), 2, "asked again once");
    assert!(user(&synth[1]).contains("That copies the passages out"), "{}", user(&synth[1]));
    assert!(r.state().drafts[0].answer.starts_with("Mara Quill's hobby is sailing ["), "the second answer is used");

    let stubborn = scripted(move |k, req, _| (k == "synthesize").then(|| copy(req)));
    let r = run(QUESTION, ResearchSettings::default().baseline(), stubborn).await;
    let s = r.state();
    let m = s.evidence.passages.iter().position(|p| p.title == "Mara Quill").unwrap() + 1;
    assert_eq!(s.answer().unwrap().answer, format!("The passages answer “{QUESTION}” with Mara Quill [{m}]."), "the findings, each with its citations");
    assert_eq!(r.requests("synthesize").len(), 2, "asked twice, then no more");

    // An answer that cites nothing cannot be checked: asked again the same way.
    let uncited = scripted(|k, _, n| (k == "synthesize" && n == 0).then(|| "Her father is Tobin Quill.".to_string()));
    let r = run(QUESTION, ResearchSettings::default().baseline(), uncited).await;
    let synth = r.requests("synthesize");
    assert!(user(&synth[1]).contains("That cites no passage"), "{}", user(&synth[1]));
    assert!(r.state().drafts[0].answer.starts_with("Mara Quill's hobby is sailing ["));
}

#[tokio::test]
async fn an_answer_that_does_not_give_what_the_question_asks_for_is_not_a_checked_one() {
    let model = scripted(|k, _, _| (k == "answer_kind").then(|| json!({"kind": "place"}).to_string()));
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    let s = r.state();
    let first = &s.drafts[0];
    assert_eq!(first.scores.faithfulness, Some(1.0), "every claim rests on its passage");
    assert!(first.gaps.iter().any(|g| g.detail == "the question asks for a person; the answer gives a place"), "{:?}", first.gaps);
    assert!(first.quality.unwrap() <= 0.5, "a well-cited answer to another question stays below the target");
    assert_eq!(r.out.finish_reason.as_deref(), Some("unverified"), "never `answered`");
    assert!(r.events().iter().any(|e| matches!(e, ResearchEvent::Draft { answers_question: false, .. })));
    assert!(user(&r.requests("question_kind")[0]).contains(QUESTION));
    let sorted = user(&r.requests("answer_kind")[0]);
    assert_eq!(sorted, "Answer: Tobin Quill", "the answer's findings are sorted, without the question");
}

/// A model whose every claim passes its judge, but the passage it cites is
/// about someone the question never leads to: the chain started from the
/// wrong person.
fn from_the_wrong_person() -> Arc<ScriptedModel> {
    scripted(|k, req, _| match k {
        "sub_answer" => Some(json!({"answers": ["Tobin Quill"], "citations": [number_of(req, "Tobin Quill")], "found": true}).to_string()),
        "synthesize" => Some(format!("Tobin Quill, a lighthouse keeper, is the one asked about [{}].", number_of(req, "Tobin Quill"))),
        _ => None,
    })
}

#[tokio::test]
async fn an_answer_whose_sources_never_touch_what_the_question_names_is_not_a_checked_one() {
    let r = run(QUESTION, ResearchSettings::default().baseline(), from_the_wrong_person()).await;
    let s = r.state();
    assert_eq!(s.answer().unwrap().scores.faithfulness, Some(1.0), "the judge passed it");
    assert_eq!(s.asked_terms, ["father", "hobbi", "sail"], "the question's terms the corpus holds");
    assert_eq!(s.unmentioned(s.answer().unwrap()), ["father", "hobby", "sailing"]);
    assert_eq!(r.out.finish_reason.as_deref(), Some("unverified"), "never `answered`");

    let r = run(QUESTION, ResearchSettings::default().baseline(), scripted(|_, _, _| None)).await;
    let s = r.state();
    assert!(s.unmentioned(s.answer().unwrap()).is_empty(), "Mara Quill's passage names the father, the hobby and sailing");
    assert_eq!(r.out.finish_reason.as_deref(), Some("answered"));
}

#[tokio::test]
async fn reflection_sees_the_question_words_a_draft_s_sources_leave_out_and_refines_it() {
    let r = run(QUESTION, ResearchSettings::default(), from_the_wrong_person()).await;
    let s = r.state();
    let first = &s.drafts[0];
    assert!(first.gaps.iter().any(|g| g.detail == "the cited passages never mention “father”, “hobby”, “sailing” from the question"), "{:?}", first.gaps);
    assert!(first.quality.unwrap() <= 0.5, "beside the question: at most half");
    assert!(user(&r.requests("refine")[0]).contains("never mention “father”"), "the refinement is told what its sources left out");
    assert_eq!(s.best, 1, "the refined draft, citing Mara Quill's passage, is the answer");
    assert_eq!(r.requests("answer_kind").len(), 2, "each draft's answer is sorted");
    assert_eq!(r.requests("question_kind").len(), 1, "the question's kind is sorted once");
    assert_eq!(r.out.finish_reason.as_deref(), Some("answered"));
}

#[tokio::test]
async fn a_claim_the_judge_passes_on_a_sentence_stating_another_relation_is_not_supported() {
    // The judge quotes "Her father is Tobin Quill." for a claim about the
    // chess player's father: the quote never says chess or hobby.
    let model = scripted(|k, req, _| match k {
        "synthesize" => Some(format!("Tobin Quill is the father of the person whose hobby is chess [{}].", number_of(req, "Mara Quill"))),
        "judge" => Some(json!({"quotes": ["Her father is Tobin Quill."], "supported": true, "confidence": 0.9, "supportingCitations": [1]}).to_string()),
        _ => None,
    });
    let r = run("Who is the father of the person whose hobby is chess?", ResearchSettings::default().baseline(), model).await;
    let s = r.state();
    let claim = &s.answer().unwrap().claims[0];
    assert_eq!(claim.supported, Some(false), "voted supported, but the quote does not carry the question's words");
    assert_eq!(r.out.finish_reason.as_deref(), Some("unverified"));
}

#[tokio::test]
async fn with_nothing_found_the_agent_abstains_instead_of_guessing() {
    let model = scripted(|k, _, _| match k {
        "sub_answer" => Some(json!({"answers": [], "citations": [], "found": false}).to_string()),
        "coverage" => Some(json!({"aspects": [{"description": "who", "answered": false, "confidence": 0.0}], "suggestedRetrievals": []}).to_string()),
        _ => None,
    });
    let r = run("Which ship did Ennis Vale captain?", ResearchSettings::default(), model).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("abstained"));
    let s = r.state();
    assert!(s.abstained);
    assert!(s.answer().unwrap().answer.contains("nothing that answers"), "{}", s.answer().unwrap().answer);
    assert!(r.requests("synthesize").is_empty(), "no answer was written from nothing");
}

#[tokio::test]
async fn a_worse_refinement_is_not_kept_and_ends_the_loop() {
    let model = scripted(|k, req, n| match (k, n) {
        ("critique", 0) => Some(critique(0.4)),
        ("refine", _) => Some(format!("Tobin Quill sails boats [{}].", number_of(req, "Tobin Quill"))),
        ("judge", _) if user(req).contains("sails boats") => Some(judged(req, false)),
        _ => None,
    });
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    let s = r.state();
    assert_eq!(s.drafts.len(), 2);
    assert_eq!(s.best, 0, "the first draft stays the answer");
    assert_eq!(s.stopped, Some(StopReason::NoImprovement));
    assert!(r.events().iter().any(|e| matches!(e, ResearchEvent::RefinementPass { kept: false, .. })));
    assert!(s.answer().unwrap().answer.contains("Her father is Tobin Quill"));
}

#[tokio::test]
async fn the_pass_limit_ends_reflection_and_the_loops_off_baseline_has_none() {
    let model = scripted(|k, _, _| (k == "critique").then(|| critique(0.4)));
    let r = run(QUESTION, ResearchSettings { max_reflections: 1, ..ResearchSettings::default() }, model).await;
    assert_eq!(r.state().stopped, Some(StopReason::MaxIterations));
    assert!(r.requests("refine").is_empty());

    let r = run(QUESTION, ResearchSettings::default().baseline(), scripted(|_, _, _| None)).await;
    assert!(r.requests("decompose").is_empty() && r.requests("coverage").is_empty() && r.requests("critique").is_empty());
    assert_eq!(r.searches, [QUESTION], "one retrieval, the question as asked");
}

#[tokio::test]
async fn gap_filling_searches_what_is_missing_once_and_never_repeats_a_search() {
    let model = scripted(|k, req, _| {
        match k {
        "coverage" if user(req).contains("hobby is sailing?") => Some(
            json!({"aspects": [{"description": "who", "answered": false, "confidence": 0.2}], "suggestedRetrievals": ["Whose hobby is sailing?", "sailing hobby carpenter"]}).to_string(),
        ),
        _ => None,
    }
    });
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    assert_eq!(
        r.searches,
        ["Whose hobby is sailing?", "sailing hobby carpenter", "Who is the father of Mara Quill?"],
        "the repeated suggestion was not searched again"
    );
    let s = r.state();
    assert_eq!(s.cycles, 1);
    assert_eq!(s.sub_queries[0].coverage.len(), 2, "checked again after the gap search, then no more cycles for it");
}

#[tokio::test]
async fn a_tool_call_budget_stops_the_session() {
    // The question's terms looked up, then one search.
    let r = run(QUESTION, ResearchSettings { max_tool_calls: 2, ..ResearchSettings::default() }, scripted(|_, _, _| None)).await;
    assert_eq!(r.out.status, SessionStatus::Terminated, "{:?}", r.out);
    assert_eq!(r.out.finish_reason.as_deref(), Some("budget"));
    assert_eq!(r.searches.len(), 1);
}

/// Answers like `scripted` but never answers a coverage check: the process
/// "dies" while it waits.
struct HangsOnCoverage(Arc<ScriptedModel>);

#[async_trait::async_trait]
impl ChatModel for HangsOnCoverage {
    fn name(&self) -> &str {
        "hangs"
    }
    async fn chat(&self, request: &ChatRequest) -> agentloop_core::Result<ChatResponse> {
        if kind(request) == "coverage" {
            std::future::pending::<()>().await;
        }
        self.0.chat(request).await
    }
}

#[tokio::test]
async fn a_session_killed_mid_retrieval_resumes_without_repeating_a_model_call_or_a_search() {
    let (corpus, embedder, _dir) = corpus();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let first = scripted(|_, _, _| None);
    let (runner1, counted1) = runner(&corpus, &embedder, Arc::new(HangsOnCoverage(first.clone())), &store);
    let config = ResearchSettings::default();
    let handle = runner1.start(ResearchState::new(QUESTION, "people", config.clone()), StartOptions::new(research::termination(&config))).unwrap();
    let id = handle.id().to_string();
    let searched = AtomicUsize::new(0);
    for _ in 0..400 {
        searched.store(store.calls(&id).unwrap().iter().filter(|c| c.name == "search").count(), Ordering::Relaxed);
        if searched.load(Ordering::Relaxed) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(searched.load(Ordering::Relaxed), 1, "the first search was journaled");
    handle.abort();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(counted1.queries.lock().unwrap().len(), 1);

    let again = scripted(|_, _, _| None);
    let (runner2, counted2) = runner(&corpus, &embedder, again.clone(), &store);
    let out = runner2.resume(&id, false).unwrap().wait().await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let kinds: Vec<&str> = again.requests().iter().map(kind).collect();
    assert!(!kinds.contains(&"decompose"), "the decomposition was not asked again: {kinds:?}");
    assert_eq!(counted2.queries.lock().unwrap().as_slice(), ["Who is the father of Mara Quill?"], "only the search not yet made ran");
    assert_eq!(first.requests().iter().filter(|r| kind(r) == "decompose").count(), 1);
}

#[tokio::test]
async fn a_decomposition_in_a_circle_is_asked_for_again_with_the_circle_named() {
    let circle = r#"{"subQueries": [
      {"id": "q1", "text": "Whose hobby is sailing?", "dependencies": ["q2"]},
      {"id": "q2", "text": "Who is that person's father?", "dependencies": ["q1"]}
    ], "isComplex": true}"#;
    let model = scripted(move |k, _, n| (k == "decompose" && n == 0).then(|| circle.to_string()));
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    let asked = r.requests("decompose");
    assert_eq!(asked.len(), 2);
    assert!(user(&asked[1]).contains("in a circle: q1 → q2 → q1"), "{}", user(&asked[1]));
    assert_eq!(r.state().decomposition.unwrap().execution_plan, vec![vec!["q1"], vec!["q2"]]);
    assert_eq!(r.out.finish_reason.as_deref(), Some("answered"));
}

#[tokio::test]
async fn a_sub_question_whose_dependency_went_unanswered_is_not_searched_for() {
    let model = scripted(|k, req, _| {
        (k == "sub_answer" && user(req).contains("hobby is sailing")).then(|| json!({"answers": [], "citations": [], "found": false}).to_string())
    });
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    assert_eq!(r.searches, ["Whose hobby is sailing?"], "no search for the father of an unknown person");
    let s = r.state();
    assert!(s.sub_queries.iter().all(|w| w.status == SubQueryStatus::Unanswered));
    assert_eq!(r.out.finish_reason.as_deref(), Some("abstained"));
}

#[tokio::test]
async fn a_chain_whose_texts_do_not_name_the_earlier_answer_is_asked_for_once_more() {
    let unnamed = r#"{"subQueries": [
      {"id": "q1", "text": "Whose hobby is sailing?", "dependencies": []},
      {"id": "q2", "text": "Who is that person's father?", "dependencies": ["q1"]}
    ], "isComplex": true}"#;
    let model = scripted(move |k, _, n| (k == "decompose" && n == 0).then(|| unnamed.to_string()));
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    let asked = r.requests("decompose");
    assert_eq!(asked.len(), 2);
    assert!(user(&asked[1]).contains("q2 needs the answer of q1 but its text does not say where"), "{}", user(&asked[1]));
    assert_eq!(r.state().decomposition.unwrap().sub_queries[1].text, "Who is the father of {q1}?", "the chain written out is used");

    // Asked again and still not written out: the first one stands.
    let model = scripted(move |k, _, _| (k == "decompose").then(|| unnamed.to_string()));
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    assert_eq!(r.requests("decompose").len(), 2);
    let d = r.state().decomposition.unwrap();
    assert_eq!(d.execution_plan, vec![vec!["q1"], vec!["q2"]]);
    assert_eq!(r.state().sub_queries[1].resolved, "Who is that person's father? (Mara Quill)");
}

#[tokio::test]
async fn a_chain_about_another_question_is_refused_and_then_the_question_is_asked_whole() {
    let elsewhere = r#"{"subQueries": [
      {"id": "q1", "text": "Who designed the first steam engine?", "dependencies": []},
      {"id": "q2", "text": "Where was {q1} born?", "dependencies": ["q1"]}
    ], "isComplex": true}"#;
    // Refused once, then a chain that starts from the question is used.
    let model = scripted(move |k, _, n| (k == "decompose" && n == 0).then(|| elsewhere.to_string()));
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    let asked = r.requests("decompose");
    assert_eq!(asked.len(), 2);
    assert!(user(&asked[1]).contains("q1 (\"Who designed the first steam engine?\") shares no word with the question"), "{}", user(&asked[1]));
    assert_eq!(r.searches[0], "Whose hobby is sailing?");

    // Refused twice: nothing of the other question is searched; the question is asked whole.
    let model = scripted(move |k, _, _| (k == "decompose").then(|| elsewhere.to_string()));
    let r = run(QUESTION, ResearchSettings::default(), model).await;
    assert_eq!(r.requests("decompose").len(), 2);
    assert!(!r.state().decomposition.unwrap().complex);
    assert_eq!(r.searches[0], QUESTION);
    assert!(r.searches.iter().all(|q| !q.contains("steam")), "{:?}", r.searches);
}

#[tokio::test]
async fn a_bundled_corpus_is_built_on_first_use_only_where_its_progress_is_shown() {
    use agentloop_agent::registry::{AgentEnv, Launch, Registry};
    let data = tempfile::tempdir().unwrap();
    // The embedding model the set-up installed, seen from this data dir.
    std::os::unix::fs::symlink(models_dir(&default_data_dir()), data.path().join("models")).unwrap();
    // `wiki` is built from the file the set-up places; a small one stands in.
    std::fs::create_dir_all(data.path().join("benchmarks")).unwrap();
    std::fs::write(data.path().join("benchmarks/wiki-summaries-en.json"), PEOPLE).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(data.path().join("s.sqlite"), Default::default()).unwrap());
    let model: Arc<dyn ChatModel> = scripted(|_, _, _| None);
    let env = AgentEnv {
        store,
        models: Models::new(model),
        data_dir: data.path().to_path_buf(),
        tokens: None,
        sandbox: Default::default(),
        mcp_servers: Default::default(),
        preparing: None,
    };
    let registry = Registry::new().with_spec::<agentloop_research::Research>();
    let research = registry.get("research").unwrap();
    let input = json!({"question": "Who is the father of Mara Quill?", "corpus": "wiki"});
    let launch = || Launch { session_id: None, exit_when_paused: true };
    let refused = research.start(&env, &input, launch()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(refused.contains("not built yet") && refused.contains("run research"), "{refused}");
    assert!(Corpus::names(data.path()).is_empty(), "nothing built unseen");

    let heard = Arc::new(AtomicUsize::new(0));
    let counter = heard.clone();
    let preparing: agentloop_agent::registry::Preparing = Arc::new(move |what: &str, done, all| {
        assert!(what.contains("`wiki`") && done <= all);
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let env = AgentEnv { preparing: Some(preparing), ..env };
    let handle = research.start(&env, &input, launch()).unwrap();
    handle.terminate("enough");
    let _ = handle.wait().await;
    assert!(heard.load(Ordering::SeqCst) > 0, "the building was reported");
    assert_eq!(Corpus::names(data.path()), ["wiki"]);
    assert_eq!(Corpus::open(data.path(), "wiki", false).unwrap().index.len(), 3);
}

//! What the research agent asks its models. Every prompt is general: how to
//! decompose, judge and cite, never what any particular question is about.

use agentloop_core::{ChatRequest, Message};
use agentloop_retrieval::Passage;

use super::evidence::{Claim, Evidence};
use super::reflect::{Gap, SelfCritique};
use super::state::ResearchState;

/// Characters of a passage shown to a model (they are cut at 800 already).
const PASSAGE_CHARS: usize = 800;

fn ask(system: &str, user: String) -> ChatRequest {
    let mut r = ChatRequest::new(vec![Message::system(system), Message::user(user)]);
    r.temperature = Some(0.0);
    r
}

/// Passages one prompt shows at most: enough for a few hops, few enough
/// that the prompt fits a small model's context.
pub const PROMPT_PASSAGES: usize = 8;

/// `[n] Title: text`, one per line, for the first `PROMPT_PASSAGES` of
/// the numbers given.
pub fn passages(evidence: &Evidence, numbers: &[u32]) -> String {
    numbers.iter().take(PROMPT_PASSAGES).filter_map(|n| evidence.get(*n).map(|p| format!("[{n}] {}: {}", p.title, clip(p)))).collect::<Vec<_>>().join("\n")
}

fn clip(p: &Passage) -> String {
    p.text.chars().take(PASSAGE_CHARS).collect::<String>().replace('\n', " ")
}

/// The worked decomposition the decomposer is shown, question first (a
/// test keeps it apart from every benchmark question).
const EXAMPLE: (&str, &str) = (
    "What is the capital of the country where the inventor of the telephone was born?",
    "q1 \"Who invented the telephone?\", q2 \"In which country was {q1} born?\" (dependencies [q1]) and q3 \"What is the capital of {q2}?\" \
(dependencies [q2])",
);

/// The questions of the worked decompositions.
pub fn example_questions() -> Vec<&'static str> {
    vec![EXAMPLE.0]
}

pub fn decompose(question: &str, max: usize) -> ChatRequest {
    let (example, worked) = EXAMPLE;
    ask(
        &format!(
            "You plan research over a document collection. Break the question into the lookups it needs: \
2 to {max} atomic sub-questions, each answerable by one lookup, in the order they must be answered. \
A question that chains relations needs one sub-question per link, innermost first, and a sub-question that needs an earlier answer \
names it in its text as {{id}} and lists that id in dependencies: \"{example}\" becomes {worked}. If one search can answer the question \
as asked, list none and set isComplex to false. Types: factual, analytical, comparative, temporal. Priority 1 (most important) to 5; \
estimatedComplexity 1 to 5."
        ),
        format!("Question: {question}"),
    )
}

/// The temperature an answer is asked for again at: at 0 the same prompt
/// with a complaint added tends to bring back the same answer.
const AGAIN_TEMPERATURE: f32 = 0.7;

/// Asked again when a decomposition does not hold together.
pub fn decompose_again(request: ChatRequest, answer: &super::decompose::DecompositionAnswer, problem: &str) -> ChatRequest {
    let answer = serde_json::to_string(answer).unwrap_or_default();
    again(request, &answer, format!("That does not hold together: {problem}. Write the sub-questions again."))
}

pub fn coverage(sub_question: &str, evidence: &Evidence, numbers: &[u32]) -> ChatRequest {
    ask(
        "You check whether retrieved passages answer a question. List the aspects a complete answer needs (usually 1 to 3). \
For each: answered is true only if a passage states it; confidence 0 to 1; supportingSources the passage numbers that state it. \
Then suggestedRetrievals: short search queries (names and key words) that would find what is still missing; none if nothing is missing.",
        format!("Question: {sub_question}\n\nPassages:\n{}", passages(evidence, numbers)),
    )
}

pub fn sub_answer(sub_question: &str, evidence: &Evidence, numbers: &[u32]) -> ChatRequest {
    ask(
        "Answer the question from the passages only. answers: the names, numbers, dates or short phrases the passages state as its \
answer, one per item — not every name the passages mention, only those that answer this question; citations: the numbers of the \
passages that state them; found: false (and no answers) if the passages do not say.",
        format!("Question: {sub_question}\n\nPassages:\n{}", passages(evidence, numbers)),
    )
}

const CITE_RULES: &str = "Use only the numbered passages. After every sentence put the number of the passage that states it, like [2] or [1, 3]. \
Cite only numbers from the list. Do not add anything the passages do not say. If they do not answer the question, say that plainly.";

/// The findings so far, one line per answered sub-question.
fn findings(s: &ResearchState) -> String {
    let lines: Vec<String> = s
        .sub_queries
        .iter()
        .filter(|w| !w.answer.is_empty())
        .map(|w| format!("- {} → {} {}", w.resolved, w.answer, w.citations.iter().map(|c| format!("[{c}]")).collect::<String>()))
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!("Findings so far:\n{}\n\n", lines.join("\n"))
    }
}

/// The passages an answer is written from, most useful first: those the
/// answered sub-questions cite — taken in turns, each sub-question's first
/// citation before any second, so every finding's evidence is shown — then
/// what each sub-question's searches found, then anything else retrieved;
/// `PROMPT_PASSAGES` at most. An answer may cite only these.
pub fn answer_numbers(s: &ResearchState) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let longest = s.sub_queries.iter().map(|w| w.citations.len()).max().unwrap_or(0);
    let cited = (0..longest).flat_map(|i| s.sub_queries.iter().filter_map(move |w| w.citations.get(i)));
    let found = s.sub_queries.iter().flat_map(|w| w.found.iter());
    for n in cited.chain(found).copied().chain(1..=s.evidence.passages.len() as u32) {
        if !out.contains(&n) && s.evidence.get(n).is_some() {
            out.push(n);
        }
    }
    out.truncate(PROMPT_PASSAGES);
    out
}

/// Tokens an answer may take: a few sentences, so that a model that starts
/// copying its passages out is cut short.
const ANSWER_TOKENS: u32 = 200;

/// How an answer is to be written, for the first draft and every refinement.
const ANSWER_SHAPE: &str = "Give the answer itself in the first sentence, in your own words, then at most two sentences that support it; \
do not copy the passages out.";

fn answer_request(system: &str, user: String) -> ChatRequest {
    let mut r = ask(&format!("{system} {ANSWER_SHAPE} {CITE_RULES}"), user);
    r.max_tokens = Some(ANSWER_TOKENS);
    r
}

pub fn synthesize(s: &ResearchState) -> ChatRequest {
    answer_request(
        "You answer a research question in one to three sentences.",
        format!("Question: {}\n\n{}Passages:\n{}\n\nAnswer with citations:", s.question, findings(s), passages(&s.evidence, &answer_numbers(s))),
    )
}

/// The same request, with the answer it got and what is wrong with it,
/// asked a little warmer.
fn again(mut request: ChatRequest, answer: &str, complaint: String) -> ChatRequest {
    request.messages.push(Message::assistant(answer));
    request.messages.push(Message::user(complaint));
    request.temperature = Some(AGAIN_TEMPERATURE);
    request
}

/// Asked again when an answer cites numbers it was not given.
pub fn cite_again(request: ChatRequest, answer: &str, outside: &[u32], allowed: &[u32]) -> ChatRequest {
    let complaint = format!(
        "You cited {}, which {} not in the list: only {} exist. Write the answer again citing only those.",
        outside.iter().map(|n| format!("[{n}]")).collect::<Vec<_>>().join(", "),
        if outside.len() == 1 { "is" } else { "are" },
        allowed.iter().map(|n| format!("[{n}]")).collect::<Vec<_>>().join(", ")
    );
    again(request, answer, complaint)
}

/// Asked again when an answer cannot be used as written (`problem` says why).
pub fn answer_again(request: ChatRequest, answer: &str, problem: &str) -> ChatRequest {
    let complaint = format!(
        "That {problem}. Write the answer itself in one to three sentences of your own, each followed by the number of the passage \
that states it, like [2]."
    );
    again(request, answer, complaint)
}

pub fn judge_claim(claim: &Claim, evidence: &Evidence) -> ChatRequest {
    let text = super::evidence::drop_citations(&claim.text, &claim.citations);
    ask(
        "You check a statement against its sources. quotes: the sentences of the passages that state it, copied word for word \
(none if no sentence does); supported: true only if those sentences together state it, with the same relation between the same \
names (not merely mention the same names); confidence 0 to 1; supportingCitations: the passage numbers that support it each on its own.",
        format!("Statement: {text}\n\nPassages:\n{}", passages(evidence, &claim.citations)),
    )
}

pub fn critique(s: &ResearchState, answer: &str, gaps: &[Gap]) -> ChatRequest {
    let gaps =
        if gaps.is_empty() { "none found".to_string() } else { gaps.iter().map(|g| format!("- {:?}: {}", g.kind, g.detail)).collect::<Vec<_>>().join("\n") };
    ask(
        "You review an answer to a research question against its sources. Say what is right (strengths), what is wrong or missing \
(weaknesses), what would improve it (suggestedImprovements), and errors that make it wrong (criticalIssues: contradictions, names or \
facts the passages do not support). confidence: 0 to 1, how sure you are the answer is correct and complete.",
        format!(
            "Question: {}\n\nPassages:\n{}\n\nAnswer:\n{answer}\n\nProblems found by checking each sentence:\n{gaps}",
            s.question,
            passages(&s.evidence, &answer_numbers(s))
        ),
    )
}

pub fn refine(s: &ResearchState, answer: &str, critique: &SelfCritique, gaps: &[Gap]) -> ChatRequest {
    let mut notes: Vec<String> = critique.critical_issues.iter().chain(&critique.weaknesses).chain(&critique.suggested_improvements).cloned().collect();
    notes.extend(gaps.iter().map(|g| format!("{:?}: {}", g.kind, g.detail)));
    answer_request(
        "You improve an answer to a research question using a review of it, in one to three sentences. Remove any sentence the passages \
do not support.",
        format!(
            "Question: {}\n\n{}Passages:\n{}\n\nEarlier answer:\n{answer}\n\nReview:\n{}\n\nImproved answer with citations:",
            s.question,
            findings(s),
            passages(&s.evidence, &answer_numbers(s)),
            notes.iter().map(|n| format!("- {n}")).collect::<Vec<_>>().join("\n")
        ),
    )
}

/// The kinds a question or an answer is sorted into (`AnswerKind`).
const KINDS: &str = "The kinds: person; place (a city, a country, a region, a river, a building); organization (a company, a school, a \
government body, a team, a band); date (a year, a day, a period); number (a count, an amount, a measure); other (anything else: a \
title, an object, an idea).";

/// The kind of thing a question asks for.
pub fn question_kind(question: &str) -> ChatRequest {
    ask(&format!("You sort a question by the kind of thing it asks for. {KINDS}"), format!("Question: {question}"))
}

/// The kind of thing an answer gives, sorted without its question.
pub fn answer_kind(answer: &str) -> ChatRequest {
    ask(&format!("You sort an answer by the kind of thing it names. {KINDS}"), format!("Answer: {answer}"))
}

pub fn closed_book(question: &str) -> ChatRequest {
    ask("Answer the question in one or two sentences from what you know. If you do not know, say so.", format!("Question: {question}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{ResearchSettings, SubQueryWork};

    fn passage(n: u32) -> Passage {
        Passage { id: n.to_string(), doc_id: n.to_string(), title: format!("Doc {n}"), text: format!("Text {n}."), start: 0, end: 7 }
    }

    #[test]
    fn every_findings_evidence_is_shown_before_any_second_citation() {
        let mut s = ResearchState::new("q", "c", ResearchSettings::default());
        s.evidence.passages = (1..=12).map(passage).collect();
        let work = |id: &str, citations: Vec<u32>, found: Vec<u32>| SubQueryWork { id: id.into(), citations, found, ..SubQueryWork::default() };
        s.sub_queries = vec![work("q1", vec![1, 2, 3, 4, 5, 6], vec![1, 2, 3, 4, 5, 6]), work("q2", vec![10], vec![10, 11])];
        assert_eq!(answer_numbers(&s), vec![1, 10, 2, 3, 4, 5, 6, 11]);
    }
}

//! The passages a session retrieved, numbered for citation, and what an
//! answer's citations say: which numbers it cites, whether each is one the
//! model was given, the claims it makes, and how well its citations carry
//! them (faithfulness; citation precision and recall as ALCE defines them).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use agentloop_core::JsonSchema;
use agentloop_retrieval::Passage;
use regex::Regex;
use serde::{Deserialize, Serialize};

/// Every passage retrieved, each once; passage n (1-based) is cited `[n]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Evidence {
    pub passages: Vec<Passage>,
}

impl Evidence {
    /// Adds `found`, skipping passages already held; returns the numbers of
    /// all of `found`, new or not.
    pub fn add(&mut self, found: Vec<Passage>) -> Vec<u32> {
        found
            .into_iter()
            .map(|p| match self.passages.iter().position(|q| q.id == p.id) {
                Some(i) => i as u32 + 1,
                None => {
                    self.passages.push(p);
                    self.passages.len() as u32
                }
            })
            .collect()
    }

    pub fn get(&self, number: u32) -> Option<&Passage> {
        self.passages.get((number as usize).checked_sub(1)?)
    }

    pub fn is_empty(&self) -> bool {
        self.passages.is_empty()
    }

    /// The passages among `numbers` that state `answer`: every part of it
    /// (split at commas, semicolons and "and") appears word for word, case
    /// aside, in one of them. Empty when some part appears in none — an
    /// answer the passages do not bear out, or one too long to match.
    pub fn grounding(&self, answer: &str, numbers: &[u32]) -> Vec<u32> {
        let parts: Vec<String> = answer
            .split([',', ';'])
            .flat_map(|p| p.split(" and "))
            .map(|p| p.trim().trim_end_matches('.').trim().to_lowercase())
            .filter(|p| p.chars().count() >= 2)
            .collect();
        let mut found = BTreeSet::new();
        for part in &parts {
            let holding: Vec<u32> = numbers
                .iter()
                .copied()
                .filter(|n| self.get(*n).is_some_and(|p| p.text.to_lowercase().contains(part.as_str()) || p.title.to_lowercase() == *part))
                .collect();
            if holding.is_empty() {
                return Vec::new();
            }
            found.extend(holding);
        }
        found.into_iter().collect()
    }
}

impl Evidence {
    /// Whether `answer` copies out passages among `shown` the way a prompt
    /// lists them (`[n] Title: text`) instead of answering: a small model
    /// shown a list tends to go on with it.
    pub fn copied_out(&self, answer: &str, shown: &[u32]) -> bool {
        answer.lines().map(str::trim).any(|line| shown.iter().any(|n| self.get(*n).is_some_and(|p| line.starts_with(&format!("[{n}] {}:", p.title)))))
    }
}

/// Words that stand for what a question asks about rather than name it
/// ("the person whose…", "how many"), and words that only join or count
/// others ("through", "each"): no source need mention them.
#[rustfmt::skip]
const NOT_ASKED: &[&str] = &[
    "person", "people", "someone", "somebody", "something", "thing", "things", "one", "name", "many", "much", "kind", "type",
    "through", "during", "after", "before", "between", "under", "over", "among", "within", "without", "upon", "via", "per",
    "also", "only", "ever", "both", "each", "all", "any", "other", "same",
];

/// The terms among `held` (a question's search terms the corpus holds)
/// that ask something of an answer's sources: not a lone letter (the s of
/// a possessive) and not a word of `NOT_ASKED`.
pub fn asked_terms(held: Vec<String>) -> Vec<String> {
    let not_asked: BTreeSet<String> = NOT_ASKED.iter().flat_map(|w| agentloop_retrieval::terms(w)).collect();
    held.into_iter().filter(|t| t.chars().count() > 1 && !not_asked.contains(t)).collect()
}

impl Evidence {
    /// The question's words whose search terms are `asked` (`asked_terms`)
    /// but none of `sources` holds, each once, as the question spells them.
    /// Sources that leave out a part of the question the corpus has words
    /// for back an answer to some other question: a chain begun at the
    /// wrong person or thing is true link by link, so each claim passes its
    /// judge, yet it never touches what was asked about. Words the corpus
    /// never uses say nothing either way.
    pub fn unmentioned(&self, question: &str, sources: &BTreeSet<u32>, asked: &[String]) -> Vec<String> {
        let cited = self.terms_of(sources);
        let mut named = BTreeSet::new();
        let mut out = Vec::new();
        for word in question.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            let left_out: Vec<String> = agentloop_retrieval::terms(word).into_iter().filter(|t| asked.contains(t) && !cited.contains(t)).collect();
            if !left_out.is_empty() && left_out.into_iter().any(|t| named.insert(t)) {
                out.push(word.to_string());
            }
        }
        out
    }
}

impl Evidence {
    /// The search terms of the passages numbered `numbers`, titles too.
    fn terms_of<'a>(&self, numbers: impl IntoIterator<Item = &'a u32>) -> BTreeSet<String> {
        numbers.into_iter().filter_map(|n| self.get(*n)).flat_map(|p| agentloop_retrieval::terms(&format!("{} {}", p.title, p.text))).collect()
    }

    /// Whether a judge's `quotes` bear out `claim`, which cites `citations`:
    /// there is a quote, every quote's words are its cited passages' words
    /// (it was copied, not made up), and every word of the claim among
    /// `asked` (`asked_terms`: the question's, as the corpus holds them)
    /// is in a quote. A claim that restates the question's relations ("the
    /// grandson of…") over a sentence stating another ("the son of…") is
    /// not borne out, however its judge voted.
    pub fn quoted(&self, claim: &str, citations: &[u32], quotes: &[String], asked: &[String]) -> bool {
        let terms = agentloop_retrieval::terms;
        let cited = self.terms_of(citations);
        let quotes: Vec<Vec<String>> = quotes.iter().map(|q| terms(q)).filter(|t| !t.is_empty()).collect();
        let said: BTreeSet<&String> = quotes.iter().flatten().collect();
        !quotes.is_empty() && said.iter().all(|t| cited.contains(*t)) && terms(claim).iter().filter(|t| asked.contains(t)).all(|t| said.contains(t))
    }
}

/// The items of a sub-answer the passages bear out, and the passages that
/// state them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stated {
    /// The items kept: those stated word for word, or all of them (each
    /// once) when none is — a paraphrase the check cannot see.
    pub items: Vec<String>,
    /// The passages stating a kept item; empty when none is stated.
    pub passages: BTreeSet<u32>,
}

impl Evidence {
    /// Which of `items`, answering `question`, the passages `shown` state.
    /// A question that names a document's title is about that document's
    /// subject, so when the passages of that document state some items,
    /// only those are kept (an item taken from a neighbour's passage is
    /// about someone else); otherwise the items any shown passage states.
    pub fn stated(&self, question: &str, items: &[String], shown: &[u32]) -> Stated {
        let mut unique: Vec<String> = Vec::new();
        for item in items.iter().map(|i| i.trim().trim_end_matches('.').trim()).filter(|i| !i.is_empty()) {
            if !unique.iter().any(|k| k.eq_ignore_ascii_case(item)) {
                unique.push(item.to_string());
            }
        }
        let question = question.to_lowercase();
        let named: Vec<u32> = shown
            .iter()
            .copied()
            .filter(|n| self.get(*n).is_some_and(|p| p.title.chars().count() >= 4 && question.contains(&p.title.to_lowercase())))
            .collect();
        for among in [&named[..], shown] {
            let grounding: Vec<Vec<u32>> = unique.iter().map(|i| self.grounding(i, among)).collect();
            let kept: Vec<usize> = (0..unique.len()).filter(|i| !grounding[*i].is_empty()).collect();
            if !kept.is_empty() {
                return Stated {
                    items: kept.iter().map(|i| unique[*i].clone()).collect(),
                    passages: kept.iter().flat_map(|i| grounding[*i].iter().copied()).collect(),
                };
            }
        }
        Stated { items: unique, passages: BTreeSet::new() }
    }
}

/// `[3]`, `[1, 4]`, `[2][5]`: the citation markers of a text.
fn markers() -> &'static Regex {
    static MARKERS: LazyLock<Regex> = LazyLock::new(|| {
        #[allow(clippy::unwrap_used)] // a constant pattern
        Regex::new(r"\[(\d+(?:\s*,\s*\d+)*)\]").unwrap()
    });
    &MARKERS
}

/// The numbers cited in `text`, in order of first appearance.
pub fn cited(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for m in markers().captures_iter(text) {
        for n in m[1].split(',').filter_map(|n| n.trim().parse::<u32>().ok()) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// The cited numbers that are not among `allowed`: an answer holding any
/// is refused.
pub fn outside(text: &str, allowed: &BTreeSet<u32>) -> Vec<u32> {
    cited(text).into_iter().filter(|n| !allowed.contains(n)).collect()
}

/// `text` without the markers of `numbers` (a marker listing others keeps
/// them), for an answer that still cites outside its evidence after a
/// repair: the claim stays, uncited, and is judged as such.
pub fn drop_citations(text: &str, numbers: &[u32]) -> String {
    markers()
        .replace_all(text, |c: &regex::Captures| {
            let kept: Vec<&str> = c[1].split(',').map(str::trim).filter(|n| n.parse::<u32>().map_or(true, |n| !numbers.contains(&n))).collect();
            if kept.is_empty() {
                String::new()
            } else {
                format!("[{}]", kept.join(", "))
            }
        })
        .replace(" .", ".")
}

/// One sentence of an answer and the passages it cites.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub text: String,
    pub citations: Vec<u32>,
    /// The judge's verdict: its cited passages together support it.
    pub supported: Option<bool>,
    /// The judge's confidence in that verdict, 0–1.
    pub confidence: Option<f32>,
    /// The citations that support it each on its own.
    #[serde(default)]
    pub supported_by: Vec<u32>,
}

/// The claims of an answer: its sentences (a citation after the full stop
/// belongs to the sentence before), headings and blank lines left out.
pub fn claims(answer: &str) -> Vec<Claim> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = answer.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        current.push(chars[i]);
        // A full stop after a lone capital is an initial ("Charles A. Beard"), not a sentence's end.
        let initial = chars[i] == '.' && i >= 1 && chars[i - 1].is_uppercase() && (i < 2 || !chars[i - 2].is_alphanumeric());
        let ends = matches!(chars[i], '.' | '!' | '?') && !initial && chars.get(i + 1).is_none_or(|c| c.is_whitespace() || *c == '[');
        if ends || chars[i] == '\n' {
            // Take the markers that follow the full stop.
            while let Some(rest) = chars.get(i + 1..) {
                let rest: String = rest.iter().collect();
                let trimmed = rest.trim_start();
                match markers().find(trimmed).filter(|m| m.start() == 0) {
                    Some(m) => {
                        current.push(' ');
                        current.push_str(m.as_str());
                        i += rest.len() - trimmed.len() + m.as_str().chars().count();
                    }
                    None => break,
                }
            }
            push_claim(&mut out, &current);
            current.clear();
        }
        i += 1;
    }
    push_claim(&mut out, &current);
    out
}

fn push_claim(out: &mut Vec<Claim>, sentence: &str) {
    let text = sentence.trim();
    let words = markers().replace_all(text, "");
    if words.trim().trim_start_matches('#').trim().chars().filter(|c| c.is_alphanumeric()).count() < 3 || text.starts_with('#') {
        return;
    }
    out.push(Claim { text: text.to_string(), citations: cited(text), supported: None, confidence: None, supported_by: Vec::new() });
}

/// How well an answer's citations carry its claims.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Scores {
    /// Supported claims ÷ claims; `None` with no claims (nothing to be
    /// faithful about is not perfect faithfulness).
    pub faithfulness: Option<f32>,
    /// ALCE: of all citations, those not irrelevant to a supported claim.
    pub citation_precision: Option<f32>,
    /// ALCE: claims whose citations together support them ÷ claims.
    pub citation_recall: Option<f32>,
    /// Mean of the judge's confidence over supported claims (0 for others).
    pub confidence: Option<f32>,
}

/// Scores from judged claims. A claim with no citation is unsupported. A
/// citation is irrelevant (ALCE) when it does not support its claim on its
/// own while the claim's other citations do; a citation of an unsupported
/// claim counts as imprecise.
pub fn scores(claims: &[Claim]) -> Scores {
    if claims.is_empty() {
        return Scores::default();
    }
    let n = claims.len() as f32;
    let supported = |c: &Claim| c.supported == Some(true) && !c.citations.is_empty();
    let faithful = claims.iter().filter(|c| supported(c)).count() as f32;
    let mut citations = 0;
    let mut precise = 0;
    for c in claims {
        for k in &c.citations {
            citations += 1;
            let alone = c.supported_by.contains(k);
            let others_enough = c.supported_by.iter().any(|o| o != k);
            if supported(c) && (alone || !others_enough) {
                precise += 1;
            }
        }
    }
    let confidence = claims.iter().map(|c| if supported(c) { c.confidence.unwrap_or(0.0).clamp(0.0, 1.0) } else { 0.0 }).sum::<f32>() / n;
    Scores {
        faithfulness: Some(faithful / n),
        citation_precision: (citations > 0).then(|| precise as f32 / citations as f32),
        citation_recall: Some(faithful / n),
        confidence: Some(confidence),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(title: &str, text: &str) -> Passage {
        Passage { id: title.into(), doc_id: title.into(), title: title.into(), text: text.into(), start: 0, end: text.len() }
    }

    #[test]
    fn the_question_words_the_sources_leave_out_are_those_the_corpus_holds() {
        let e = Evidence {
            passages: vec![
                passage("Ada Ro", "The son of Ada Ro is Bo Ro. The hobby of Ada Ro is sailing."),
                passage("Bo Ro", "The friend of Bo Ro is Cy Ng."),
                passage("Dee Wu", "The grandson of Dee Wu is Eve Wu."),
            ],
        };
        let question = "Who is the grandson of the friend of the person whose hobby is sailing?";
        let held = |words: &str| asked_terms(agentloop_retrieval::terms(words));
        let corpus = held("grandson friend person hobby sailing s");
        assert_eq!(corpus, ["grandson", "friend", "hobbi", "sail"], "\"person\" is a placeholder, \"s\" a lone letter");
        assert_eq!(e.unmentioned(question, &BTreeSet::from([1]), &corpus), ["grandson", "friend"], "a son is not a grandson");
        assert_eq!(e.unmentioned(question, &BTreeSet::from([2]), &corpus), ["grandson", "hobby", "sailing"]);
        assert!(e.unmentioned(question, &BTreeSet::from([1, 2, 3]), &corpus).is_empty());
        assert_eq!(
            e.unmentioned(question, &BTreeSet::from([2]), &held("friend")),
            Vec::<String>::new(),
            "words the corpus never uses are not asked of the sources"
        );
        let other = "Is the friend of the friends of Ada Ro sailing?";
        assert_eq!(
            e.unmentioned(other, &BTreeSet::from([3]), &held("friend ada ro sailing")),
            ["friend", "Ada", "Ro", "sailing"],
            "each word once, as the question spells it"
        );
    }

    #[test]
    fn a_verdict_holds_only_when_its_quotes_were_copied_and_carry_the_question_s_words() {
        let e = Evidence { passages: vec![passage("Ada Ro", "The son of Ada Ro is Bo Ro. The hobby of Ada Ro is sailing.")] };
        let asked = agentloop_retrieval::terms("grandson ada ro sailing");
        let quotes = |q: &[&str]| q.iter().map(|q| q.to_string()).collect::<Vec<_>>();
        let son = quotes(&["The son of Ada Ro is Bo Ro."]);
        assert!(e.quoted("Bo Ro is the son of Ada Ro [1].", &[1], &son, &asked));
        assert!(!e.quoted("Bo Ro is the grandson of Ada Ro [1].", &[1], &son, &asked), "the quote states another relation");
        assert!(!e.quoted("Bo Ro is the son of Ada Ro [1].", &[1], &[], &asked), "nothing quoted");
        assert!(!e.quoted("Bo Ro is the son of Ada Ro [1].", &[1], &quotes(&["Bo Ro is the eldest son of Ada Ro."]), &asked), "not in the passage");
        assert!(!e.quoted("Bo Ro is the son of Ada Ro [1].", &[2], &son, &asked), "only the cited passages count");
        let both = quotes(&["The son of Ada Ro is Bo Ro.", "The hobby of Ada Ro is sailing"]);
        assert!(e.quoted("Ada Ro, whose son is Bo Ro, goes sailing [1].", &[1], &both, &asked), "quotes together");
    }

    #[test]
    fn claims_are_sentences_with_the_citations_that_follow_them() {
        let c = claims("# Answer\nAda was born in 1815 [1]. Her father was Lord Byron.[2][3] She wrote notes [1, 4].");
        let got: Vec<(&str, Vec<u32>)> = c.iter().map(|c| (c.text.as_str(), c.citations.clone())).collect();
        assert_eq!(
            got,
            vec![("Ada was born in 1815 [1].", vec![1]), ("Her father was Lord Byron. [2] [3]", vec![2, 3]), ("She wrote notes [1, 4].", vec![1, 4])]
        );
        assert!(claims("").is_empty());
        let c = claims("Mary W. Shelley wrote it [1]. J. R. Tolkien did not [2].");
        assert_eq!(c.len(), 2, "an initial does not end a sentence: {c:?}");
    }

    #[test]
    fn an_answer_is_grounded_when_every_part_of_it_is_in_a_passage() {
        let e = Evidence { passages: vec![passage("Ada", "The friends of Ada are Bo Li, Cy Ng."), passage("Bo Li", "Bo Li was born in 1815.")] };
        assert_eq!(e.grounding("Bo Li and Cy Ng.", &[1, 2]), vec![1, 2]);
        assert_eq!(e.grounding("cy ng", &[1, 2]), vec![1]);
        assert!(e.grounding("Bo Li, Dee Wu", &[1, 2]).is_empty(), "Dee Wu is in no passage");
        assert!(e.grounding("Cy Ng", &[2]).is_empty(), "only the passages given count");
        assert!(e.grounding("", &[1, 2]).is_empty());
    }

    #[test]
    fn the_items_kept_are_those_stated_by_the_named_subjects_own_passages_first() {
        let e = Evidence {
            passages: vec![
                passage("Ada Ro", "The friends of Ada Ro are Bo Li, Cy Ng."),
                passage("Bo Li", "The friends of Bo Li are Ada Ro, Dee Wu."),
                passage("Eve Ko", "Eve Ko is a baker."),
            ],
        };
        let items = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let got = e.stated("Who are the friends of Ada Ro?", &items(&["Dee Wu", "Bo Li", "bo li", "Cy Ng."]), &[1, 2, 3]);
        assert_eq!(got.items, ["Bo Li", "Cy Ng"], "Dee Wu is stated only on a neighbour's page");
        assert_eq!(got.passages, BTreeSet::from([1]));
        let got = e.stated("Who is a friend of someone?", &items(&["Dee Wu", "Zed"]), &[1, 2, 3]);
        assert_eq!(got.items, ["Dee Wu"], "no subject named: what any shown passage states");
        let got = e.stated("Who is a friend of someone?", &items(&["a good friend"]), &[1, 2, 3]);
        assert_eq!(got, Stated { items: items(&["a good friend"]), passages: BTreeSet::new() }, "nothing stated: the items stand, uncited");
    }

    #[test]
    fn an_answer_that_lists_passages_as_the_prompt_showed_them_copies_them_out() {
        let e = Evidence { passages: vec![passage("Ada Ro", "Ada Ro was born in 1815."), passage("Bo Li", "Bo Li is a baker.")] };
        assert!(e.copied_out("[2] Bo Li: Bo Li is a baker.\n[1] Ada Ro: Ada Ro was born in 1815.", &[1, 2]));
        assert!(!e.copied_out("Ada Ro was born in 1815 [1]. Bo Li is a baker [2].", &[1, 2]));
        assert!(!e.copied_out("[2] Bo Li: Bo Li is a baker.", &[1]), "only passages it was shown");
    }

    #[test]
    fn citations_outside_the_evidence_are_found_and_can_be_dropped() {
        let allowed = BTreeSet::from([1, 2]);
        assert_eq!(outside("A [1]. B [2, 7]. C [9].", &allowed), vec![7, 9]);
        assert_eq!(drop_citations("A [1]. B [2, 7]. C [9].", &[7, 9]), "A [1]. B [2]. C.");
    }

    #[test]
    fn faithfulness_and_alce_precision_and_recall() {
        let judged = |citations: Vec<u32>, supported: bool, by: Vec<u32>| Claim {
            text: String::new(),
            citations,
            supported: Some(supported),
            confidence: Some(0.8),
            supported_by: by,
        };
        let s = scores(&[
            judged(vec![1], true, vec![1]),    // precise
            judged(vec![1, 2], true, vec![1]), // [2] irrelevant: [1] alone carries it
            judged(vec![3, 4], true, vec![]),  // both needed together: precise
            judged(vec![5], false, vec![]),    // unsupported: imprecise
            judged(vec![], true, vec![]),      // no citation: unsupported
        ]);
        assert_eq!(s.faithfulness, Some(3.0 / 5.0));
        assert_eq!(s.citation_recall, Some(3.0 / 5.0));
        assert_eq!(s.citation_precision, Some(4.0 / 6.0));
        assert!((s.confidence.unwrap() - 0.8 * 3.0 / 5.0).abs() < 1e-6);
        assert_eq!(scores(&[]).faithfulness, None, "no claims, no score");
    }
}

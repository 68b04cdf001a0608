//! The research agent's nodes: DECOMPOSE, RESEARCH (one phase of the
//! execution plan: search, check coverage, fill gaps, answer), SYNTHESIZE,
//! REFLECT (gaps, self-critique, quality, stop or not) and REFINE.

use std::collections::{BTreeMap, BTreeSet};

use agentloop_core::{JsonSchema, Result, Step};
use agentloop_retrieval::Passage;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::coverage::{self, CoverageAnswer, CoverageReport};
use super::decompose::{self, Decomposition, DecompositionAnswer};
use super::events::ResearchEvent;
use super::evidence::{self, Claim};
use super::prompts;
use super::reflect::{self, AnswerFit, Limits};
use super::search::{TERMS_TOOL, TOOL};
use super::state::{Draft, ResearchState, SubQueryStatus, SubQueryWork};
use super::{DECOMPOSE_ROLE, JUDGE_ROLE, READ_ROLE, WRITE_ROLE};

/// Faithfulness at which an answer counts as checked.
pub const FAITHFUL: f32 = 0.8;
/// Gap-filling searches per sub-question and cycle at most.
const GAP_SEARCHES: usize = 2;
/// Branches of one sub-question at most: the items of its dependencies'
/// answers it is asked about one by one.
pub const BRANCHES: usize = 6;

/// A sub-question's answer as the model writes it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct SubAnswer {
    /// Each name, number, date or short phrase that answers it, one per
    /// item. Required, so that decoding cannot skip it and write only `found`.
    #[schemars(length(max = 8), inner(length(max = 120)))]
    pub answers: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = 8))]
    pub citations: Vec<u32>,
    pub found: bool,
}

/// The judge's verdict on one claim.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimVerdict {
    /// The sentences of the passages that state the claim, copied out;
    /// written before the verdict, so the verdict rests on them and can be
    /// checked against them (`Evidence::quoted`).
    #[serde(default)]
    #[schemars(length(max = 3), inner(length(max = 300)))]
    pub quotes: Vec<String>,
    pub supported: bool,
    pub confidence: f32,
    #[serde(default)]
    #[schemars(length(max = 8))]
    pub supporting_citations: Vec<u32>,
}

pub fn decompose<'a>(s: &'a mut ResearchState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        step.emit(ResearchEvent::DecompositionStarted { question: s.question.clone() });
        if !s.config.closed_book {
            let out = step.tool(TERMS_TOOL, json!({"text": s.question})).await?;
            s.asked_terms = evidence::asked_terms(serde_json::from_value(out["held"].clone())?);
        }
        let (d, error) = if s.config.decomposition && !s.config.closed_book {
            // A decomposition that does not hold together, is not about the
            // question, or whose chain is not written out, is asked for again
            // once, with what is wrong; then the question is asked whole, or
            // a first one that only left a dependency unnamed stands.
            let request = prompts::decompose(&s.question, s.config.max_sub_queries);
            let answer: DecompositionAnswer = step.chat_json_as(DECOMPOSE_ROLE, request.clone()).await?;
            let first = Decomposition::checked(&s.question, answer.clone(), s.config.max_sub_queries);
            let problem = first.as_ref().map_or_else(|e| Some(e.clone()), Decomposition::unnamed_dependency);
            match (first, problem) {
                (Ok(d), None) => (d, None),
                (first, problem) => {
                    let problem = problem.unwrap_or_default();
                    step.reject_answer(DECOMPOSE_ROLE)?;
                    let again: DecompositionAnswer = step.chat_json_as(DECOMPOSE_ROLE, prompts::decompose_again(request, &answer, &problem)).await?;
                    match (Decomposition::checked(&s.question, again, s.config.max_sub_queries), first) {
                        (Ok(d), _) if d.unnamed_dependency().is_none() => (d, None),
                        (_, Ok(d)) | (Ok(d), Err(_)) => (d, None),
                        (Err(e), Err(_)) => (Decomposition::simple(&s.question), Some(e)),
                    }
                }
            }
        } else {
            (Decomposition::simple(&s.question), None)
        };
        if d.complex {
            for q in &d.sub_queries {
                step.emit(ResearchEvent::SubQueryIdentified {
                    id: q.id.clone(),
                    text: q.text.clone(),
                    dependencies: q.dependencies.clone(),
                    kind: q.kind,
                    priority: q.priority,
                    phase: q.order,
                });
            }
        }
        step.emit(ResearchEvent::DecompositionCompleted {
            complex: d.complex,
            sub_queries: d.sub_queries.len(),
            execution_plan: d.execution_plan.clone(),
            error,
        });
        s.sub_queries = d.sub_queries.iter().map(|q| SubQueryWork { id: q.id.clone(), query: q.id.clone(), ..SubQueryWork::default() }).collect();
        s.decomposition = Some(d);
        Ok(())
    })
}

/// Runs the search for `query` unless it ran before; returns the evidence
/// numbers of what it found (new and already held).
async fn search(s: &mut ResearchState, step: &mut Step, query: &str) -> Result<Vec<u32>> {
    if query.trim().is_empty() || coverage::searched(query, &s.searches) {
        return Ok(Vec::new());
    }
    s.searches.push(query.trim().to_string());
    let out = step.tool(TOOL, json!({"query": query, "k": s.config.passages_per_search})).await?;
    let found: Vec<Passage> = serde_json::from_value(out["passages"].clone())?;
    Ok(s.evidence.add(found))
}

fn work<'s>(s: &'s mut ResearchState, id: &str) -> Option<&'s mut SubQueryWork> {
    s.sub_queries.iter_mut().find(|w| w.id == id)
}

/// One phase: its sub-questions are searched, checked for coverage (and
/// searched again for what is missing) and answered — the model calls of
/// the phase's sub-questions asked together.
pub fn research<'a>(s: &'a mut ResearchState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        let Some(d) = s.decomposition.clone() else { return Ok(()) };
        let Some(ids) = d.execution_plan.get(s.phase).cloned() else { return Ok(()) };
        let known = s.answered_items();
        let mut open = Vec::new();
        for id in &ids {
            let Some(sub) = d.get(id) else { continue };
            let texts = decompose::resolved(sub, &known, BRANCHES);
            // A sub-question whose dependency went unanswered cannot be
            // searched for: it would look for "unknown".
            if sub.dependencies.iter().any(|dep| !known.contains_key(dep)) {
                s.branch(id, &texts[..texts.len().min(1)]);
                if let Some(w) = work(s, id) {
                    w.status = SubQueryStatus::Unanswered;
                }
                step.emit(ResearchEvent::SubQueryAnswered { id: id.clone(), answer: String::new(), citations: Vec::new(), answered: false });
                continue;
            }
            for (branch, text) in s.branch(id, &texts).into_iter().zip(texts) {
                open.push(branch.clone());
                step.emit(ResearchEvent::RetrievalCycleStarted { sub_query: branch.clone(), cycle: 0, queries: vec![text.clone()] });
                let before = s.evidence.passages.len();
                let found = search(s, step, &text).await?;
                let new_passages = s.evidence.passages.len() - before;
                if let Some(w) = work(s, &branch) {
                    w.found.extend(&found);
                }
                if !s.config.iterative_retrieval {
                    step.emit(ResearchEvent::RetrievalCycleCompleted {
                        sub_query: branch,
                        cycle: 0,
                        passages_found: found.len(),
                        new_passages,
                        coverage: None,
                        complete: false,
                    });
                }
            }
        }
        if s.config.iterative_retrieval && !open.is_empty() {
            check_coverage(s, step, open.clone()).await?;
        }
        answer(s, step, &open).await?;
        s.phase += 1;
        Ok(())
    })
}

/// Coverage of each open sub-question; those below the threshold with new
/// searches to try get one gap-filling cycle each, while the question's
/// cycles last.
async fn check_coverage(s: &mut ResearchState, step: &mut Step, mut open: Vec<String>) -> Result<()> {
    let mut cycle = 0;
    loop {
        let asked: Vec<String> = open.iter().filter(|id| s.work(id).is_some_and(|w| !w.found.is_empty())).cloned().collect();
        let requests = asked.iter().filter_map(|id| s.work(id)).map(|w| prompts::coverage(&w.resolved, &s.evidence, &w.found)).collect();
        let answers: Vec<CoverageAnswer> = step.chat_json_all_as(agentloop_core::DEFAULT_ROLE, requests).await?;
        let mut by_id: BTreeMap<String, CoverageAnswer> = asked.into_iter().zip(answers).collect();
        let mut next = Vec::new();
        for id in &open {
            let answer = by_id.remove(id).unwrap_or(CoverageAnswer { aspects: Vec::new(), suggested_retrievals: Vec::new() });
            let value = coverage::coverage(&answer.aspects);
            let complete = value >= s.config.coverage_threshold;
            let found = s.work(id).map_or(0, |w| w.found.len());
            step.emit(ResearchEvent::CoverageChecked {
                sub_query: id.clone(),
                cycle,
                coverage: value,
                aspects: answer.aspects.len(),
                answered_aspects: answer.aspects.iter().filter(|a| a.answered).count(),
                suggested_retrievals: answer.suggested_retrievals.clone(),
            });
            step.emit(ResearchEvent::RetrievalCycleCompleted {
                sub_query: id.clone(),
                cycle,
                passages_found: found,
                new_passages: 0,
                coverage: Some(value),
                complete,
            });
            let searches = coverage::new_searches(&answer.suggested_retrievals, &s.searches, GAP_SEARCHES);
            if let Some(w) = work(s, id) {
                w.coverage.push(CoverageReport {
                    sub_query: id.clone(),
                    cycle,
                    coverage: value,
                    complete,
                    aspects: answer.aspects,
                    suggested_retrievals: answer.suggested_retrievals,
                });
            }
            // One gap-filling cycle per sub-question, while the question's last.
            if !complete && cycle == 0 && !searches.is_empty() && s.cycles < s.config.max_cycles {
                s.cycles += 1;
                next.push((id.clone(), searches));
            }
        }
        if next.is_empty() {
            return Ok(());
        }
        cycle += 1;
        open.clear();
        for (id, queries) in next {
            step.emit(ResearchEvent::RetrievalCycleStarted { sub_query: id.clone(), cycle, queries: queries.clone() });
            for q in queries {
                let found = search(s, step, &q).await?;
                if let Some(w) = work(s, &id) {
                    for n in found {
                        if !w.found.contains(&n) {
                            w.found.push(n);
                        }
                    }
                }
            }
            open.push(id);
        }
    }
}

/// Answers the phase's sub-questions from what each found; a citation of a
/// passage the sub-question was not shown is dropped. An answer counts when
/// the model says it found one, or when the passages it was shown state
/// some item word for word (a small model often writes the right name and
/// then `found: false`); its items are those the passages state
/// (`Evidence::stated`). Its citations are the passages that state it: the
/// model's own among them, or all of them when it cited none of those.
async fn answer(s: &mut ResearchState, step: &mut Step, ids: &[String]) -> Result<()> {
    let asked: Vec<String> = ids.iter().filter(|id| s.work(id).is_some_and(|w| !w.found.is_empty())).cloned().collect();
    let requests = asked.iter().filter_map(|id| s.work(id)).map(|w| prompts::sub_answer(&w.resolved, &s.evidence, &w.found)).collect();
    let answers: Vec<SubAnswer> = step.chat_json_all_as(READ_ROLE, requests).await?;
    let mut by_id: BTreeMap<String, SubAnswer> = asked.into_iter().zip(answers).collect();
    for id in ids {
        let a = by_id.remove(id);
        let shown: Vec<u32> = s.work(id).map(|w| w.found.iter().take(prompts::PROMPT_PASSAGES).copied().collect()).unwrap_or_default();
        let question = s.work(id).map(|w| w.resolved.clone()).unwrap_or_default();
        let stated = a.as_ref().map(|a| s.evidence.stated(&question, &a.answers, &shown)).unwrap_or_default();
        let Some(w) = work(s, id) else { continue };
        let answered = !stated.items.is_empty() && (a.as_ref().is_some_and(|a| a.found) || !stated.passages.is_empty());
        w.status = if answered { SubQueryStatus::Answered } else { SubQueryStatus::Unanswered };
        if let Some(a) = a.filter(|_| answered) {
            w.answer = stated.items.join(", ");
            w.items = stated.items;
            let cited: Vec<u32> = a.citations.into_iter().filter(|c| w.found.contains(c)).collect();
            let stating: Vec<u32> = cited.iter().copied().filter(|c| stated.passages.contains(c)).collect();
            w.citations = match (stating.is_empty(), stated.passages.is_empty()) {
                (false, _) => stating,
                (true, false) => stated.passages.into_iter().collect(),
                (true, true) => cited,
            };
        }
        step.emit(ResearchEvent::SubQueryAnswered { id: id.clone(), answer: w.answer.clone(), citations: w.citations.clone(), answered });
    }
    Ok(())
}

/// The first answer: from the model alone (closed book), an abstention
/// when nothing was found, or written from the evidence with citations.
pub fn synthesize<'a>(s: &'a mut ResearchState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        if s.config.closed_book {
            let text = step.chat(prompts::closed_book(&s.question)).await?.content.trim().to_string();
            s.drafts.push(Draft { claims: evidence::claims(&text), answer: text, ..Draft::default() });
            return end(s, step);
        }
        // Nothing retrieved, or nothing retrieved answered any sub-question:
        // say so rather than write an answer the passages do not carry.
        if s.evidence.is_empty() || s.sub_queries.iter().all(|w| w.status != SubQueryStatus::Answered) {
            s.abstained = true;
            let answer = format!("The documents in corpus `{}` hold nothing that answers this question, so I give no answer.", s.corpus);
            s.drafts.push(Draft { answer, ..Draft::default() });
            return end(s, step);
        }
        let draft = write(s, step, prompts::synthesize(s)).await?;
        s.drafts.push(draft);
        s.best = 0;
        if !s.config.reflection {
            return end(s, step);
        }
        Ok(())
    })
}

/// What makes an answer unusable as written, if anything: it copies its
/// passages out instead of answering, or cites none, so none of it can be
/// checked.
fn unusable(s: &ResearchState, text: &str, shown: &[u32]) -> Option<&'static str> {
    if s.evidence.copied_out(text, shown) {
        Some("copies the passages out; it does not answer the question")
    } else if evidence::cited(text).is_empty() {
        Some("cites no passage, so none of it can be checked")
    } else {
        None
    }
}

/// Asks for an answer; refuses one that is unusable (asks again once, then
/// writes the findings out instead) or cites a passage it was not shown
/// (asks again once, then removes what is still outside); judges its
/// claims and whether it gives what the question asks for.
async fn write(s: &ResearchState, step: &mut Step, request: agentloop_core::ChatRequest) -> Result<Draft> {
    let shown = prompts::answer_numbers(s);
    let allowed: BTreeSet<u32> = shown.iter().copied().collect();
    let mut text = step.chat_as(WRITE_ROLE, request.clone()).await?.content.trim().to_string();
    if let Some(problem) = unusable(s, &text, &shown) {
        step.reject_answer(WRITE_ROLE)?;
        text = step.chat_as(WRITE_ROLE, prompts::answer_again(request.clone(), &text, problem)).await?.content.trim().to_string();
        let findings = s.findings_answer();
        if unusable(s, &text, &shown).is_some() && !findings.is_empty() {
            step.reject_answer(WRITE_ROLE)?;
            text = findings;
        }
    }
    let mut refused = evidence::outside(&text, &allowed);
    if !refused.is_empty() {
        step.reject_answer(WRITE_ROLE)?;
        let again = prompts::cite_again(request, &text, &refused, &shown);
        text = step.chat_as(WRITE_ROLE, again).await?.content.trim().to_string();
        let still = evidence::outside(&text, &allowed);
        text = evidence::drop_citations(&text, &still);
        refused.extend(still);
        refused.sort_unstable();
        refused.dedup();
    }
    let claims = judge(s, step, evidence::claims(&text)).await?;
    let scores = evidence::scores(&claims);
    let fit = fit(s, step, &text).await?;
    step.emit(ResearchEvent::Draft {
        version: s.drafts.len(),
        answer: text.clone(),
        claims: claims.len(),
        faithfulness: scores.faithfulness,
        answers_question: fit.answers_it(),
        refused_citations: refused,
    });
    Ok(Draft { answer: text, claims, scores, fit: Some(fit), ..Draft::default() })
}

/// The kind of thing the question asks for and the kind the answer gives,
/// each sorted on its own (shown the question, a small model sorts the
/// answer by the question's kind); the question's kind is sorted once, for
/// the first draft. The answer is the findings it rests on when the last
/// phase found any, else its first sentence.
async fn fit(s: &ResearchState, step: &mut Step, text: &str) -> Result<AnswerFit> {
    let items = s.final_items();
    let answer = if items.is_empty() { evidence::claims(text).first().map_or_else(|| text.to_string(), |c| c.text.clone()) } else { items.join(", ") };
    let answer = evidence::drop_citations(&answer, &evidence::cited(&answer));
    let asked = s.drafts.iter().find_map(|d| d.fit.as_ref()).map(|f| f.asks_for);
    let mut requests = vec![prompts::answer_kind(&answer)];
    requests.extend(asked.is_none().then(|| prompts::question_kind(&s.question)));
    let kinds: Vec<reflect::KindOf> = step.chat_json_all_as(JUDGE_ROLE, requests).await?;
    let kind = |i: usize| kinds.get(i).map(|k| k.kind).unwrap_or_default();
    Ok(AnswerFit { asks_for: asked.unwrap_or_else(|| kind(1)), gives: kind(0) })
}

/// Each cited claim judged against its passages (asked together); a
/// claim with no citation is unsupported without asking, and one the judge
/// passes counts as supported only when the sentences it quotes bear it
/// out (`Evidence::quoted`).
async fn judge(s: &ResearchState, step: &mut Step, mut claims: Vec<Claim>) -> Result<Vec<Claim>> {
    let cited: Vec<usize> = (0..claims.len()).filter(|i| !claims[*i].citations.is_empty()).collect();
    let requests = cited.iter().map(|i| prompts::judge_claim(&claims[*i], &s.evidence)).collect();
    let verdicts: Vec<ClaimVerdict> = step.chat_json_all_as(JUDGE_ROLE, requests).await?;
    for c in claims.iter_mut().filter(|c| c.citations.is_empty()) {
        c.supported = Some(false);
        c.confidence = Some(0.0);
    }
    for (i, v) in cited.into_iter().zip(verdicts) {
        let c = &mut claims[i];
        c.supported = Some(v.supported && s.evidence.quoted(&c.text, &c.citations, &v.quotes, &s.asked_terms));
        c.confidence = Some(v.confidence.clamp(0.0, 1.0));
        c.supported_by = v.supporting_citations.into_iter().filter(|n| c.citations.contains(n)).collect();
    }
    Ok(claims)
}

/// One reflection pass over the latest draft: its gaps, a self-critique,
/// its quality against the best before it, and whether to stop.
pub fn reflect<'a>(s: &'a mut ResearchState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        s.reflections += 1;
        let iteration = s.reflections;
        let Some(latest) = s.drafts.last().cloned() else { return end(s, step) };
        let unanswered: Vec<String> = s.sub_queries.iter().filter(|w| w.status == SubQueryStatus::Unanswered).map(|w| w.resolved.clone()).collect();
        let coverage = if s.config.iterative_retrieval { s.coverage() } else { 1.0 };
        let unmentioned = s.unmentioned(&latest);
        let aim = reflect::Aim { fit: latest.fit.as_ref(), unmentioned: &unmentioned };
        let found = reflect::gaps(&latest.claims, &unanswered, &[], aim, coverage, s.config.coverage_threshold);
        let critique: reflect::SelfCritique = step.chat_json_as(JUDGE_ROLE, prompts::critique(s, &latest.answer, &found)).await?;
        let gaps = reflect::gaps(&latest.claims, &unanswered, &critique.critical_issues, aim, coverage, s.config.coverage_threshold);
        let quality = reflect::quality(&latest.scores, s.answered_share(), &critique, aim);
        step.emit(ResearchEvent::GapDetected { iteration, gaps: gaps.clone() });
        step.emit(ResearchEvent::SelfCritiqueCompleted {
            iteration,
            overall_assessment: critique.overall_assessment.clone(),
            confidence: critique.confidence,
            weaknesses: critique.weaknesses.clone(),
            suggested_improvements: critique.suggested_improvements.clone(),
        });
        if let Some(d) = s.drafts.last_mut() {
            d.critique = Some(critique);
            d.quality = Some(quality);
            d.gaps = gaps.clone();
        }
        let qualities: Vec<f32> = s.drafts.iter().map(|d| d.quality.unwrap_or(0.0)).collect();
        if qualities.len() >= 2 {
            let before = qualities[s.best];
            step.emit(ResearchEvent::RefinementPass { iteration, quality_before: before, quality_after: quality, kept: quality > before });
        }
        s.best = reflect::best(&qualities);
        step.emit(ResearchEvent::ReflectionIteration { iteration, quality, best_quality: qualities[s.best], gaps: gaps.len() });
        let history: Vec<Vec<reflect::Gap>> = s.drafts.iter().map(|d| d.gaps.clone()).collect();
        let limits = Limits { max_iterations: s.config.max_reflections, quality_target: s.config.quality_target, min_improvement: s.config.min_improvement };
        if let Some(reason) = reflect::should_stop(iteration, &qualities, &history, limits) {
            s.stopped = Some(reason);
            step.emit(ResearchEvent::ReflectionCompleted { iterations: iteration, quality: qualities[s.best], reason });
            return end(s, step);
        }
        Ok(())
    })
}

/// A new draft from the latest one, its critique and its gaps; sub-questions
/// still unanswered are searched once more first.
pub fn refine<'a>(s: &'a mut ResearchState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        let Some(latest) = s.drafts.last().cloned() else { return Ok(()) };
        let missing: Vec<String> = latest.gaps.iter().filter(|g| g.kind == reflect::GapKind::MissingInformation).map(|g| g.detail.clone()).collect();
        for q in coverage::new_searches(&missing, &s.searches, GAP_SEARCHES) {
            search(s, step, &q).await?;
        }
        let critique = latest.critique.clone().unwrap_or_default();
        let draft = write(s, step, prompts::refine(s, &latest.answer, &critique, &latest.gaps)).await?;
        s.drafts.push(draft);
        Ok(())
    })
}

/// Ends the session on the answer shown. It counts as checked only when
/// its claims were judged, enough of them are supported, it was judged to
/// give what the question asks for, and its sources mention every word of
/// the question the corpus has (`ResearchState::unmentioned`).
fn end(s: &mut ResearchState, step: &mut Step) -> Result<()> {
    if s.abstained {
        step.finish("abstained");
        return Ok(());
    }
    let faithfulness = s.answer().and_then(|d| d.scores.faithfulness);
    let on_question = s.answer().is_some_and(|d| {
        let unmentioned = s.unmentioned(d);
        d.fit.is_some() && !reflect::Aim { fit: d.fit.as_ref(), unmentioned: &unmentioned }.beside()
    });
    let verified = !s.config.closed_book && on_question && faithfulness.is_some_and(|f| f >= FAITHFUL);
    step.signal(|sig| sig.goal_verified = Some(verified));
    if verified {
        step.signal(|sig| sig.agent_signalled_completion = true);
        step.finish("answered");
    } else {
        step.finish("unverified");
    }
    Ok(())
}

/// Whether the graph goes on after SYNTHESIZE or REFLECT: not once the
/// session has its ending.
pub fn ended(s: &ResearchState) -> bool {
    s.abstained || s.stopped.is_some() || s.config.closed_book || !s.config.reflection
}

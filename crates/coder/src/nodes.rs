//! The coder's nodes. Each reads the state, makes its calls through `Step`
//! (so they are journaled and replayed, never repeated) and writes back.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use agentloop_agent::text::shorten;
use agentloop_codemap::syntax;
use agentloop_core::{ChatRequest, EngineEvent, Error, JsonSchema, Result, SessionStatus, Step, Stop};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::best;
use super::change;
use super::context;
use super::coverage;
use super::events::CoderEvent;
use super::failing_alone;
use super::failures;
use super::focus;
use super::more;
use super::new_files;
use super::prompts;
use super::scratch;
use super::small_edits;
use super::state::{Attempt, CandidateRecord, CoderState, Recommendation, Reflection, RootCause};
use super::CODER_ROLE;
use agentloop_agent::approved;
use agentloop_tools::Workspace;

#[derive(Deserialize, JsonSchema)]
struct PlanOut {
    #[schemars(length(min = 1, max = 8))]
    steps: Vec<more::PlanStep>,
}

#[derive(Deserialize, JsonSchema)]
struct ReviewOut {
    accept: bool,
    /// Empty when accepted.
    #[schemars(length(max = 300))]
    objection: String,
}

pub fn plan<'a>(s: &'a mut CoderState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        phase(step, "plan");
        if s.baseline.is_none() {
            let (passed, shown) = run_tests(s, step).await?;
            s.baseline = Some(shown);
            s.baseline_passed = passed;
        }
        let files = workspace_files(s)?;
        let mut text = shown(s, step, &files, prompts::plan).await;
        if coverage::trace_once(s, step).await? {
            text = shown(s, step, &files, prompts::plan).await;
        }
        look_up(s, step, &text).await?;
        let steps = if !s.in_part {
            let out: PlanOut = step.chat_json_as(CODER_ROLE, prompts::plan(s, &text)).await?;
            out.steps
        } else {
            // Shown as regions, the plan may ask to see more (`more.rs`).
            let out: more::PlanAsking = step.chat_json_as(CODER_ROLE, prompts::plan_asking(s, &text)).await?;
            more::take(s, step, &files, &out);
            out.steps
        };
        s.plan = steps.into_iter().map(|step| step.0).collect();
        Ok(())
    })
}

/// Look-ups a plan may start with, at most.
const LOOKUPS: usize = 3;

/// With MCP servers, the model may first call their tools to look up what
/// the task needs; each call and its result go into every later prompt.
async fn look_up(s: &mut CoderState, step: &mut Step, files: &str) -> Result<()> {
    for text in agentloop_agent::mcp_calls::listings(step, &mut s.mcp, &mut s.mcp_changes).await? {
        step.emit(CoderEvent::Notice { text });
    }
    let tools = agentloop_agent::mcp_calls::specs(&s.mcp);
    if tools.is_empty() || !s.attempts.is_empty() {
        return Ok(());
    }
    for _ in 0..LOOKUPS {
        let mut request = prompts::look_up(s, files);
        request.tools = tools.clone();
        let answer = step.chat_as(CODER_ROLE, request).await?;
        if answer.tool_calls.is_empty() {
            break;
        }
        for call in answer.tool_calls.iter().take(LOOKUPS) {
            let reply = agentloop_agent::mcp_calls::call(step, &mut s.approvals, &s.mcp, call).await?;
            step.emit(CoderEvent::Tool { tool: call.name.clone(), arguments: call.arguments.clone(), result: reply.content.clone() });
            s.lookups.push(format!("{} {} → {}", call.name, call.arguments, reply.content));
        }
    }
    Ok(())
}

pub fn code<'a>(s: &'a mut CoderState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "code");
        let files = workspace_files(s)?;
        if let Some((change, kind)) = small_edits::search(s, step, &files).await? {
            return apply_change(s, step, change, kind).await;
        }
        let new = new_files::wanted(&s.task, prompts::output_now(s), &files);
        let text = shown(s, step, &files, |s, f| prompts::code(s, f, new)).await;
        let request = prompts::code(s, &text, new);
        write_change(s, step, request, &files, new, "plan").await
    })
}

pub fn fix<'a>(s: &'a mut CoderState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        phase(step, "fix");
        s.fixes += 1;
        step.emit(EngineEvent::Fix { fix: s.fixes });
        let mut why = match s.review_objection.take() {
            Some(objection) => format!("a reviewer objected: {objection}"),
            None => s.attempts.last().and_then(|a| a.reflection.as_ref()).map(|r| r.feedback.clone()).unwrap_or_else(|| "make the tests pass".into()),
        };
        let undone = s.attempts.last().is_some_and(|a| a.undone);
        if undone {
            // What was said of the change was said of files no longer there.
            why = format!("your last change passed no more tests than the files before it and was undone: the files below are the best version so far. Of that change it was said: {why}");
        }
        if let Some(best) = s.attempts.last().and_then(|a| a.candidates.iter().find(|c| c.kept).map(|c| (a.candidates.len(), c))) {
            why.push_str(&best_candidate_note(best.0, best.1, undone));
        }
        let files = workspace_files(s)?;
        let new = new_files::wanted(&s.task, prompts::output_now(s), &files);
        let text = shown(s, step, &files, |s, f| prompts::fix(s, f, &why, new)).await;
        let request = prompts::fix(s, &text, &why, new);
        write_change(s, step, request, &files, new, "fix").await
    })
}

/// What FIX is told of the last search: the kept candidate's change and
/// how many tests it passed, and whether its files are the ones shown or
/// it was undone.
fn best_candidate_note(tried: usize, kept: &CandidateRecord, undone: bool) -> String {
    let tests = match kept.score {
        Some((_, ran)) if kept.failing_only => format!("none of the {ran} failing tests passed"),
        Some((p, r)) => format!("{p} of {r} tests passed"),
        None => "the tests did not say how many passed".to_string(),
    };
    let patch: String = kept.patch.chars().take(BEST_PATCH_CHARS).collect();
    let place = if undone { "was undone, so the files below are without it" } else { "is in the files below" };
    format!("\nThe best of the {tried} changes tried last ({tests}) {place}; it changed:\n```diff\n{}\n```", patch.trim_end())
}

/// How much of the kept candidate's diff FIX is shown.
const BEST_PATCH_CHARS: usize = 1500;

/// After CODE or FIX: test the change, unless it repeats an earlier one or
/// could not be written.
pub fn after_change(s: &CoderState) -> String {
    match s.attempts.last() {
        Some(a) if a.repeated || !a.test_output.is_empty() => "reflect".into(),
        _ => "test".into(),
    }
}

pub fn test<'a>(s: &'a mut CoderState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "test");
        let (passed, shown) = run_tests(s, step).await?;
        // Passing tests are not yet completion (the engine's detector would
        // end the session on them): REVIEW signals that.
        if !passed {
            step.signal(|sig| sig.tests_passing = Some(false));
            // A change the tests refuse is a miss for the model that wrote it.
            step.reject_answer(CODER_ROLE)?;
        }
        if let Some(a) = s.attempts.last_mut() {
            a.passed = passed;
            a.test_output = shown;
        }
        best::undo_if_worse(s, step).await
    })
}

/// Runs the test command: whether it passed, and what it printed.
async fn run_tests(s: &mut CoderState, step: &mut Step) -> Result<(bool, String)> {
    let out = approved::call(step, &mut s.approvals, "run_command", json!({"command": s.test_command})).await?;
    Ok(match out.get("denied").and_then(Value::as_str) {
        Some(why) => (false, format!("the tests were not run: {why}")),
        None => {
            s.last_test_ms = out["durationMs"].as_u64();
            let shown = out["shown"].as_str().unwrap_or_default().to_string();
            let shown = if shown.trim().is_empty() { format!("`{}` exited with {}", s.test_command, out["exitCode"]) } else { shown };
            (out["exitCode"] == 0, shown)
        }
    })
}

pub fn reflect<'a>(s: &'a mut CoderState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "reflect");
        let r = match s.attempts.last().and_then(|a| a.unapplied.clone()) {
            // Nothing was tried, so there is nothing to diagnose: ask again.
            Some(why) => Reflection {
                diagnosis: format!("The answer was not applied: {why}"),
                root_cause: RootCause::Code,
                recommendation: Recommendation::Fix,
                feedback: why,
                confidence: 1.0,
            },
            None => {
                let files = workspace_files(s)?;
                let text = shown(s, step, &files, prompts::reflect).await;
                let r = second_opinion_if_doubtful(s, step, prompts::reflect(s, &text), &files).await?;
                keep_an_improving_approach(s, step, r)
            }
        };
        step.emit(CoderEvent::Reflection {
            diagnosis: r.diagnosis.clone(),
            root_cause: r.root_cause,
            recommendation: r.recommendation,
            confidence: r.confidence,
        });
        let stop = |reason: &str, message: String| Error::Stopped(Stop { status: SessionStatus::Error, finish_reason: reason.into(), message, ask: false });
        if r.confidence < s.config.confidence_threshold {
            return Err(stop(
                "low_confidence",
                format!("stopped: the reflection's confidence {:.2} is below {:.2} ({})", r.confidence, s.config.confidence_threshold, r.diagnosis),
            ));
        }
        match r.recommendation {
            Recommendation::Abort => return Err(stop("aborted", format!("the agent gave up: {}", r.diagnosis))),
            Recommendation::Replan if s.replans >= s.config.max_replans => {
                return Err(stop("max_replans", format!("max replans exceeded ({} allowed): {}", s.config.max_replans, r.diagnosis)))
            }
            Recommendation::Replan => {
                s.replans += 1;
                step.emit(EngineEvent::Replan { reason: r.diagnosis.clone() });
            }
            Recommendation::Fix => {}
        }
        if let Some(a) = s.attempts.last_mut() {
            a.reflection = Some(r);
        }
        Ok(())
    })
}

pub fn review<'a>(s: &'a mut CoderState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        phase(step, "review");
        let out: ReviewOut = step.chat_json(prompts::review(s, &diff(s))).await?;
        s.reviews += 1;
        // One objection per session: a second would only go round in circles.
        if !out.accept && s.reviews == 1 && !out.objection.trim().is_empty() {
            s.review_objection = Some(out.objection);
        } else {
            s.review_objection = None;
            step.signal(|sig| {
                sig.tests_passing = Some(true);
                sig.agent_signalled_completion = true;
            });
            step.finish("tests_passed");
        }
        Ok(())
    })
}

/// A small model's confidence is poorly calibrated, and a single low reading
/// would end the whole session; a small model also copies its instructions
/// into the diagnosis, which then tells later prompts nothing. Either is a
/// miss for the model that wrote it (a chain may move on to its stronger
/// model), and the reflection is asked once more, freshly sampled; the
/// second answer stands.
async fn second_opinion_if_doubtful(s: &CoderState, step: &mut Step, request: ChatRequest, files: &[(String, String)]) -> Result<Reflection> {
    let first: Reflection = step.chat_json_as(CODER_ROLE, request.clone()).await?;
    if repeats_a_diagnosis(s, &first) {
        step.emit(CoderEvent::ReflectionRepeated { diagnosis: first.diagnosis.clone() });
        step.reject_answer(CODER_ROLE)?;
        return Ok(observed_failures(s));
    }
    if first.confidence >= s.config.confidence_threshold && !prompts::echoes_instructions(&first.diagnosis) && !prompts::copies_prose(&first.diagnosis, files) {
        return Ok(first);
    }
    step.emit(CoderEvent::Reflection {
        diagnosis: first.diagnosis.clone(),
        root_cause: first.root_cause,
        recommendation: first.recommendation,
        confidence: first.confidence,
    });
    step.reject_answer(CODER_ROLE)?;
    let mut again = request;
    again.temperature = Some(RETRY_TEMPERATURE);
    step.chat_json_as(CODER_ROLE, again).await
}

/// A fix whose diagnosis an earlier reflection already gave, word for
/// word: it adds nothing, and asking again would spend a model call for
/// more of the same. (A repeated replan or abort still carries a decision.)
fn repeats_a_diagnosis(s: &CoderState, r: &Reflection) -> bool {
    r.recommendation == Recommendation::Fix
        && s.attempts.iter().filter_map(|a| a.reflection.as_ref()).any(|earlier| earlier.diagnosis.trim() == r.diagnosis.trim())
}

/// A reflection made of what the last test run observed, in place of a
/// repeated one: the failing tests by name and what they expected. It is a
/// fix: the next change (or search) works from the facts.
fn observed_failures(s: &CoderState) -> Reflection {
    let output = s.attempts.last().map(|a| a.test_output.as_str()).unwrap_or_default();
    let names = failures::names(output);
    let expected = failures::assertions(output, 5);
    let failing = if names.is_empty() { "the tests".to_string() } else { names.join(", ") };
    let feedback = if expected.is_empty() { format!("make {failing} pass") } else { format!("make {failing} pass: {}", expected.join("; ")) };
    Reflection { diagnosis: format!("failing: {failing}"), root_cause: RootCause::Code, recommendation: Recommendation::Fix, feedback, confidence: 1.0 }
}

/// A replan throws the approach away; when the last attempt failed fewer
/// tests than the one before, the approach is working and is kept (a small
/// model recommends replanning far too readily).
fn keep_an_improving_approach(s: &CoderState, step: &mut Step, mut r: Reflection) -> Reflection {
    if r.recommendation != Recommendation::Replan {
        return r;
    }
    let mut tested = s.attempts.iter().rev().filter(|a| a.unapplied.is_none() && !a.repeated).map(|a| failures::count(&a.test_output));
    if let (Some(Some(now)), Some(Some(before))) = (tested.next(), tested.next()) {
        if now < before {
            step.emit(CoderEvent::KeepApproach { failing_before: before, failing_now: now });
            r.recommendation = Recommendation::Fix;
            r.root_cause = RootCause::Code;
        }
    }
    r
}

/// Tells watchers which phase the coder is in.
fn phase(step: &mut Step, name: &str) {
    step.emit(CoderEvent::Phase { phase: name.to_string() });
}

/// Temperature for every change after the first: a small model asked again
/// greedily repeats itself, while a fresh sample often lands a fix (on
/// HumanEval, fresh samples fixed failures that greedy repair never did).
const RETRY_TEMPERATURE: f32 = 0.8;

/// Asks for a change, held to the change format (`change::grammar`: every
/// block names a file it may change or, where `new_files`, a declared new
/// one under the root),
/// reads its files out of the answer and writes them. An answer that cannot
/// be applied — no file path, no code, nothing changed,
/// or the same change as an attempt that already failed — is refused within
/// this step and asked for once more, with the reason; only a second
/// unusable answer becomes a failed attempt for REFLECT.
///
/// The second asking is the first prompt with the reason added and a fresh
/// sample, not a conversation holding the refused answer: a small model
/// shown its own answer copies it back, refused or not.
async fn write_change(s: &mut CoderState, step: &mut Step, mut request: ChatRequest, files: &[(String, String)], new_files: bool, kind: &str) -> Result<()> {
    if !s.attempts.is_empty() {
        request.temperature = Some(RETRY_TEMPERATURE);
    }
    let editable = context::editable(files, s.regions());
    let context = change_context(s);
    let writable: Vec<(&str, &str)> = editable
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .filter(|(p, _)| (s.config.edit_tests || !change::is_test_file(p)) && (!change::is_document(p) || new_files::named(p, &context)))
        .collect();
    let taken: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    let new_files = if new_files { change::NewFiles::Except(&taken) } else { change::NewFiles::Never };
    request.grammar = Some(change::grammar(&writable, s.edit_format(), new_files));
    let wanted = usize::try_from(s.config.candidates.max(1)).unwrap_or(1);
    let budget = wanted * ANSWERS_PER_CHANGE;
    let mut tried: Vec<Candidate> = Vec::new();
    let mut why = String::new();
    // Why each answer of the last round was refused: the round after asks
    // again for each, telling it what was wrong.
    let mut refused: Vec<String> = Vec::new();
    let mut asked = 0;
    // The candidates still wanted are asked for together, so the model
    // decodes them side by side, and tried in order until one passes. Each
    // may be refused once and asked for again, as one change is.
    while asked < budget && tried.len() < wanted && !tried.last().is_some_and(|c| c.passed) {
        let mut round = candidate_requests(&request, tried.len(), (wanted - tried.len()).min(budget - asked), &refused);
        if wanted > 1 {
            for (i, asked) in round.iter_mut().enumerate() {
                if let Some(region) = focus::region_of(tried.len() + i, s.regions()) {
                    focus::hold(asked, region, files, s.edit_format());
                }
            }
        }
        asked += round.len();
        refused.clear();
        for answer in step.chat_all_as(CODER_ROLE, round).await? {
            if tried.last().is_some_and(|c| c.passed) {
                break;
            }
            match usable(s, &answer.content, files).and_then(|c| new_among(c, &tried)) {
                Ok(change) if wanted == 1 => return apply_change(s, step, change, kind).await,
                Ok(change) => match try_candidate(s, step, change, tried.len() + 1, wanted).await? {
                    Ok(candidate) => tried.push(candidate),
                    // Trying was declined: the change is written and tested as one change is.
                    Err(declined) => return apply_change(s, step, declined, kind).await,
                },
                Err(reason) => {
                    step.reject_answer(CODER_ROLE)?;
                    step.emit(CoderEvent::Refused { reason: reason.clone(), asking_again: asked < budget });
                    refused.push(reason.clone());
                    why = reason;
                }
            }
        }
    }
    if let Some(best) = best_candidate(&tried) {
        step.emit(CoderEvent::CandidateKept { number: best + 1, tried: tried.len() });
        let records: Vec<CandidateRecord> = tried
            .iter()
            .enumerate()
            .map(|(i, c)| CandidateRecord {
                patch: best::patch(&files_before(s, &c.change), &c.change),
                passed: c.passed,
                score: c.score,
                kept: i == best,
                failing_only: c.failing_only,
            })
            .collect();
        let kept = tried.swap_remove(best);
        apply_change(s, step, kept.change, kind).await?;
        if let Some(a) = s.attempts.last_mut() {
            a.candidates = records;
        }
        return Ok(());
    }
    let attempt = Attempt {
        iteration: step.progress().iterations,
        kind: kind.into(),
        change_hash: 0,
        files: Vec::new(),
        test_output: format!("the answer was not applied: {why}"),
        passed: false,
        repeated: false,
        unapplied: Some(why),
        ..Attempt::default()
    };
    s.attempts.push(attempt);
    Ok(())
}

/// Temperatures of the candidates after the first: spread, so that the
/// samples differ from one another as well as from the greedy answer.
const CANDIDATE_TEMPERATURES: [f32; 4] = [0.8, 1.0, 0.6, 1.2];

/// The requests of one round of the search: `count` candidates from number
/// `first` on, the first of all at the request's own
/// temperature and the others spread. Those that replace refused answers
/// say why the answer was refused and are asked at the retry temperature.
fn candidate_requests(request: &ChatRequest, first: usize, count: usize, refused: &[String]) -> Vec<ChatRequest> {
    (0..count)
        .map(|i| {
            let mut asked = request.clone();
            if let Some(reason) = refused.get(i) {
                if let Some(last) = asked.messages.last_mut() {
                    last.content.push_str(&format!("\n\n{REFUSED_BEFORE}{reason}. Answer with the whole change."));
                }
                asked.temperature = Some(RETRY_TEMPERATURE);
            } else if first + i > 0 {
                asked.temperature = Some(CANDIDATE_TEMPERATURES[(first + i) % CANDIDATE_TEMPERATURES.len()]);
            }
            asked
        })
        .collect()
}

/// A change tried against the tests in a scratch copy.
struct Candidate {
    change: change::Files,
    passed: bool,
    score: Option<(u32, u32)>,
    /// Judged on the failing tests alone (it passed none): `score` counts
    /// those tests only.
    failing_only: bool,
}

/// A change the search already tried is not tried again.
fn new_among(change: change::Files, tried: &[Candidate]) -> std::result::Result<change::Files, String> {
    match tried.iter().position(|c| fingerprint(&c.change) == fingerprint(&change)) {
        Some(i) => Err(format!("it is the same change as candidate {}: write a different one", i + 1)),
        None => Ok(change),
    }
}

/// Tries `change` against the tests in a scratch copy (through the
/// approval policy, as the test command): on the failing tests alone
/// first where they can be run alone, and on the whole suite unless it
/// passed none of them (it then passes no more than the original files,
/// and cannot be the change kept). The change back when trying was
/// declined. A failing candidate is a miss for the model that wrote it, so
/// a chain moves on to its stronger model as it would after a failed test.
async fn try_candidate(
    s: &mut CoderState,
    step: &mut Step,
    change: change::Files,
    number: usize,
    of: usize,
) -> Result<std::result::Result<Candidate, change::Files>> {
    let alone = match failing_alone::judge(s, step, None).await? {
        failing_alone::Judge::Alone(run) => Some(run),
        _ => None,
    };
    // One that passes none of the failing tests cannot beat the original files.
    let none_passed = |t: &scratch::Tried| !t.passed && t.score.is_none_or(|(passing, _)| passing == 0);
    let Some((tried, failing_only)) = failing_alone::try_change(s, step, &change, alone.as_ref(), &scratch::TryRun::default(), none_passed).await? else {
        return Ok(Err(change));
    };
    let (passed, score) = (tried.passed, tried.score);
    step.emit(CoderEvent::Candidate { number, of, passing: score.map(|s| s.0), ran: score.map(|s| s.1), passed, failing_only });
    if !passed {
        step.reject_answer(CODER_ROLE)?;
    }
    Ok(Ok(Candidate { change, passed, score, failing_only }))
}

/// What the files a change touches hold before it: the change being worked
/// on, else the original (`None`: the file does not exist yet).
fn files_before(s: &CoderState, change: &change::Files) -> std::collections::BTreeMap<String, Option<String>> {
    let ws = Workspace::new(&s.workspace).ok();
    change
        .iter()
        .map(|(path, _)| {
            let now = s.files.get(path).cloned().or_else(|| s.originals.get(path).cloned().flatten()).or_else(|| ws.as_ref().and_then(|w| read(w, path)));
            (path.clone(), now)
        })
        .collect()
}

/// The index of the best candidate: one that passes, else the most tests
/// passing (then run); the earliest among equals.
fn best_candidate(tried: &[Candidate]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, c) in tried.iter().enumerate() {
        if best.is_none_or(|b| (c.passed, c.score) > (tried[b].passed, tried[b].score)) {
            best = Some(i);
        }
    }
    best
}

/// What the second asking for a change adds to the prompt, before the reason.
const REFUSED_BEFORE: &str = "An earlier answer to this could not be applied: ";

/// Answers asked for one change at most (the first and one more).
const ANSWERS_PER_CHANGE: usize = 2;

/// The change an answer makes, or why it cannot be applied.
fn usable(s: &CoderState, answer: &str, files: &[(String, String)]) -> std::result::Result<change::Files, String> {
    let mut change = change::read(answer, files, s.regions())?;
    change.sort();
    for (path, after) in &change {
        let before = files.iter().find(|(p, _)| p == path).map(|(_, c)| c.as_str());
        if let Some(why) = before.and_then(|before| context::outside_shown(path, before, after, s.regions())) {
            return Err(why);
        }
    }
    // Checked before "does it change anything": a change already tried is
    // what the files hold now, so it would read as no change at all.
    if let Some(i) = s.attempts.iter().position(|a| a.change_hash == fingerprint(&change)) {
        return Err(format!("it is the same change as attempt {}, which failed: change something else", i + 1));
    }
    let change = applicable(change, files, s.config.edit_tests, &change_context(s))?;
    match unparsable(&change, files) {
        Some(why) => Err(why),
        None => Ok(change),
    }
}

/// Why a change cannot be run: it breaks a file's syntax where it parsed
/// before (or a new file's), so no test could pass with it. Asked again
/// with the line, the model can mend what it would otherwise learn from a
/// failed import.
fn unparsable(change: &change::Files, files: &[(String, String)]) -> Option<String> {
    change.iter().find_map(|(path, after)| {
        let before = files.iter().find(|(p, _)| p == path).map(|(_, c)| c.as_str()).unwrap_or_default();
        let (line, text) = syntax::first_new_error(path, before, after)?;
        Some(format!(
            "it leaves {path} unparsable at line {line} (`{}`): write code as the file's own, with no line numbers or edit markers in it",
            shorten(&text, 80)
        ))
    })
}

/// What a change answers to: the task and the test output, before any
/// change and after the last.
fn change_context(s: &CoderState) -> String {
    format!("{}\n{}\n{}", s.task, s.baseline.as_deref().unwrap_or_default(), s.attempts.last().map(|a| a.test_output.as_str()).unwrap_or_default())
}

/// The part of a change worth writing: files it leaves as they are are
/// dropped, and so are test files — rewritten or new — unless allowed: the
/// tests are the specification, and a test file of the model's own makes
/// no failing test pass. So are documents `context` does not name
/// (`change::is_document`), and new files nothing uses (`new_files`);
/// `context` is the task and the test output.
fn applicable(change: change::Files, files: &[(String, String)], edit_tests: bool, context: &str) -> std::result::Result<change::Files, String> {
    let current = |path: &str| files.iter().find(|(p, _)| p == path).map(|(_, c)| c.trim_end());
    let mut tests = Vec::new();
    let mut documents = Vec::new();
    let mut kept = Vec::new();
    for (path, content) in change {
        match current(&path) {
            Some(old) if old == content.trim_end() => {}
            _ if !edit_tests && change::is_test_file(&path) => tests.push(path),
            _ if change::is_document(&path) && !new_files::named(&path, context) => documents.push(path),
            _ => kept.push((path, content)),
        }
    }
    let after: Vec<(&str, &str)> =
        files.iter().filter(|(p, _)| !kept.iter().any(|(k, _)| k == p)).chain(kept.iter()).map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let unused: Vec<String> = kept.iter().filter(|(p, _)| current(p).is_none() && !new_files::used(p, context, &after)).map(|(p, _)| p.clone()).collect();
    kept.retain(|(p, _)| !unused.contains(p));
    if kept.is_empty() {
        return Err(if !unused.is_empty() {
            format!("it only added files nothing uses ({}): change the code the failing tests run", unused.join(", "))
        } else if !documents.is_empty() && tests.is_empty() {
            format!("it only changed documents ({}), which no test runs: change the code the failing tests run", documents.join(", "))
        } else if tests.is_empty() {
            "it left every file as it was: change the code so that the failing tests pass".into()
        } else {
            format!("it only wrote tests ({}), which are the specification: change the code they test instead", tests.join(", "))
        });
    }
    Ok(kept)
}

/// Writes a change through the jail and the approval policy and records it
/// as an attempt (`usable` already refused a change identical to an earlier
/// one, so every change here is new).
async fn apply_change(s: &mut CoderState, step: &mut Step, mut files: change::Files, kind: &str) -> Result<()> {
    let iteration = step.progress().iterations;
    files.sort();
    let change_hash = fingerprint(&files);
    let names: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
    let mut attempt = Attempt { iteration, kind: kind.into(), change_hash, files: names, ..Attempt::default() };
    let before = files_before(s, &files);
    for (path, content) in &files {
        if !s.originals.contains_key(path) {
            let original = Workspace::new(&s.workspace).ok().and_then(|ws| read(&ws, path));
            s.originals.insert(path.clone(), original);
        }
        let out = approved::call(step, &mut s.approvals, "write_file", json!({"path": path, "content": content})).await;
        match out {
            Ok(v) if v.get("denied").is_some() => attempt.test_output = format!("writing {path} was not allowed: {}", v["denied"]),
            Ok(_) => {
                s.files.insert(path.clone(), content.clone());
            }
            // A refused path or a failed write is the attempt's failure, for REFLECT to see.
            Err(e) if !e.is_control_flow() => attempt.test_output = format!("writing {path} failed: {e}"),
            Err(e) => return Err(e),
        }
    }
    attempt.patch = best::patch(&before, &files);
    attempt.after = s.files.clone();
    s.attempts.push(attempt);
    Ok(())
}

fn fingerprint(files: &[(String, String)]) -> u64 {
    let mut h = DefaultHasher::new();
    files.hash(&mut h);
    h.finish()
}

/// The workspace's text files (path, content), sorted by path.
/// Read from disk through the jail rather than as tool calls: gathering
/// context is not an action, and re-reading the same files every phase
/// would look like a loop to the repetition detector.
fn workspace_files(s: &CoderState) -> Result<Vec<(String, String)>> {
    workspace_text_files(&Workspace::new(&s.workspace)?)
}

/// The text files of `ws` the coder reads (path, content), sorted by path.
pub fn workspace_text_files(ws: &Workspace) -> Result<Vec<(String, String)>> {
    let mut paths: Vec<String> = ws.entries(usize::MAX).into_iter().filter(|e| !e.is_dir).map(|e| e.path).collect();
    paths.sort();
    Ok(paths.into_iter().filter_map(|path| read(ws, &path).map(|content| (path, content))).collect())
}

/// The files as `prompt` shows them, sized to the model's context
/// (`context.rs`); what was shown as regions is remembered, for the
/// answer's grammar and to refuse a change outside it.
async fn shown(s: &mut CoderState, step: &Step, files: &[(String, String)], prompt: impl Fn(&CoderState, &str) -> ChatRequest) -> String {
    let now: &CoderState = s;
    let (text, regions) = context::files_text(now, step, files, |f| prompt(now, f)).await;
    s.in_part = regions.is_some();
    s.shown = regions.unwrap_or_default();
    text
}

/// A text file of the workspace, if it exists and the jail allows it (one
/// holding a NUL byte is binary, and no prompt can hold it).
fn read(ws: &Workspace, path: &str) -> Option<String> {
    agentloop_tools::read_text(ws, "read_file", path).ok()
}

/// Each changed file before and after, for REVIEW.
fn diff(s: &CoderState) -> String {
    let after: Vec<(String, String)> = s.files.iter().map(|(p, c)| (p.clone(), c.clone())).collect();
    fit_diff(&best::patch(&s.originals, &after))
}

/// Characters of a change REVIEW is shown at most: about a third of the
/// default model's context, so the question always fits.
const REVIEW_DIFF_CHARS: usize = 9_000;

/// The change as REVIEW reads it: a unified diff with three lines of
/// context (never whole files: on a real project one file can be larger
/// than the model's context), cut with a note when even that is long.
fn fit_diff(patch: &str) -> String {
    if patch.len() <= REVIEW_DIFF_CHARS {
        return patch.to_string();
    }
    let head = agentloop_agent::text::head_within(patch, REVIEW_DIFF_CHARS);
    let kept = head.rfind('\n').map_or(head, |i| &head[..=i]);
    let left = patch[kept.len()..].lines().count();
    format!("{kept}… ({left} more line(s) of the diff not shown)\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fix_is_told_whether_the_best_candidate_is_in_its_files_or_was_undone() {
        let kept = CandidateRecord { patch: "-    return a\n+    return b\n".into(), passed: false, score: Some((0, 15)), kept: true, failing_only: true };
        let note = best_candidate_note(3, &kept, false);
        assert!(note.contains("The best of the 3 changes tried last (none of the 15 failing tests passed) is in the files below"), "{note}");
        let note = best_candidate_note(3, &kept, true);
        assert!(note.contains("was undone, so the files below are without it; it changed:") && note.contains("+    return b"), "{note}");
    }

    #[test]
    fn review_is_shown_a_diff_with_context_never_whole_files_and_never_past_its_share() {
        let before: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line 1000\n", "line one thousand\n");
        let s = CoderState {
            files: [("big.py".to_string(), after)].into_iter().collect(),
            originals: [("big.py".to_string(), Some(before))].into_iter().collect(),
            ..CoderState::default()
        };
        let shown = diff(&s);
        assert!(shown.contains("-line 1000\n+line one thousand\n") && shown.contains(" line 997\n") && !shown.contains("line 1500"), "{shown}");
        let long: String = (0..2000).map(|i| format!("+added line {i}\n")).collect();
        let cut = fit_diff(&long);
        assert!(cut.len() < REVIEW_DIFF_CHARS + 100 && cut.ends_with("more line(s) of the diff not shown)\n"), "{}", &cut[cut.len() - 80..]);
    }
}

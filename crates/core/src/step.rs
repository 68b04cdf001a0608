//! `Step`: the one door through which a node calls models and tools, emits
//! events, marks iterations and asks humans. Every call is journaled under
//! (session, step, call index); when a step re-runs after a crash, a pause or
//! an interrupt, recorded results are returned instead of calling again.

use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::{broadcast, watch, Notify};

use crate::event::{self, EngineEvent, Event, EventDraft, EventKind, IterationOutcome};
use crate::journal::{CallKind, CallRecord, CallStatus, InterruptRecord, StepRecords, Write};
use crate::model::{ChatRequest, ChatResponse};
use crate::models::{Models, DEFAULT_ROLE};
use crate::progress::{Progress, Signals};
use crate::session::millis_between;
use crate::steering::Command;
use crate::store::Store;
use crate::termination::{Termination, Verdict};
use crate::tool::{Effect, Tools};
use crate::{Error, Result};

/// What a session's steps share.
pub(crate) struct Env {
    pub session_id: String,
    pub store: Arc<dyn Store>,
    pub models: Models,
    pub tools: Tools,
    pub termination: Termination,
    pub control: watch::Receiver<Command>,
    pub events: broadcast::Sender<Event>,
    pub answered: Arc<Notify>,
    /// Last event sequence number persisted.
    pub seq: AtomicU64,
    /// This run's spans, when telemetry is on.
    pub trace: Option<crate::telemetry::RunTrace>,
    /// The session's workspace, checkpointed after steps that may change it.
    pub files: Option<Arc<dyn crate::workspace_files::WorkspaceFiles>>,
}

/// Runs under way in this process.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Counts a run as under way while it lives.
pub(crate) struct Running;

impl Running {
    pub(crate) fn new() -> Self {
        RUNNING.fetch_add(1, Ordering::Relaxed);
        Self
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether another run is under way in this process, on a runtime whose
/// other threads can go on while this one waits for the disk.
fn others_running() -> bool {
    RUNNING.load(Ordering::Relaxed) > 1 && tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Something a step will write at its next flush or commit.
pub(crate) enum Pending {
    Write(Write),
    Event(EventDraft),
}

impl Env {
    /// Writes a batch, numbering its events, then broadcasts them. Events get
    /// their sequence numbers only here, so numbers stay contiguous even when
    /// a step is discarded.
    pub fn commit(&self, step: u64, batch: Vec<Pending>, flush: bool) -> Result<()> {
        let (writes, events, seq) = self.number(step, batch);
        let write = || self.store.write(&self.session_id, &writes, flush);
        if others_running() {
            // Other sessions of this process may be committing too: wait
            // for the disk off the async thread, so their commits can join
            // this one (the store groups them into one sync).
            tokio::task::block_in_place(write)?;
        } else {
            write()?;
        }
        self.publish(seq, events);
        Ok(())
    }

    /// `commit` for the end of a step. While other sessions run in this
    /// process, the write waits for the disk on a blocking thread and this
    /// task yields: the async threads go on running the other sessions'
    /// steps, whose commits queue behind this one and share its sync.
    pub async fn commit_step(&self, step: u64, batch: Vec<Pending>) -> Result<()> {
        if !others_running() {
            return self.commit(step, batch, false);
        }
        let (writes, events, seq) = self.number(step, batch);
        let (store, id) = (self.store.clone(), self.session_id.clone());
        tokio::task::spawn_blocking(move || store.write(&id, &writes, false))
            .await
            .map_err(|e| Error::Store(format!("the thread writing a step of session `{}` stopped ({e}): resume the session", self.session_id)))??;
        self.publish(seq, events);
        Ok(())
    }

    /// The batch's writes, its events numbered from the last one persisted,
    /// and the last number given.
    fn number(&self, step: u64, batch: Vec<Pending>) -> (Vec<Write>, Vec<Event>, u64) {
        let mut seq = self.seq.load(Ordering::Relaxed);
        let mut events = Vec::new();
        let writes: Vec<Write> = batch
            .into_iter()
            .map(|p| match p {
                Pending::Write(w) => w,
                Pending::Event(d) => {
                    seq += 1;
                    let e = Event { session_id: self.session_id.clone(), seq, name: d.name, payload: d.payload, timestamp: Utc::now(), step };
                    events.push(e.clone());
                    Write::Event(e)
                }
            })
            .collect();
        (writes, events, seq)
    }

    /// Once written: the events go to the trace and to whoever follows.
    fn publish(&self, seq: u64, events: Vec<Event>) {
        self.seq.store(seq, Ordering::Relaxed);
        for e in events {
            if let Some(trace) = &self.trace {
                trace.on_event(&e);
            }
            // Nobody listening is fine: the store has them.
            let _ = self.events.send(e);
        }
    }
}

pub struct Step {
    pub(crate) env: Arc<Env>,
    number: u64,
    node: String,
    calls: u32,
    emits: u32,
    replay: StepRecords,
    pub(crate) pending: Vec<Pending>,
    pub(crate) progress: Progress,
    pub(crate) started: Instant,
    /// The runner opened an iteration for a retry; the node's own
    /// `begin_iteration` then reuses it instead of opening an empty one.
    pub(crate) retry_iteration: bool,
    pub(crate) iteration_clock: IterationClock,
    /// A tool that may change the workspace was called (or replayed).
    pub(crate) touched: bool,
}

/// When the open iteration began, shared with the runner while a node runs:
/// the runner cancels a node whose iteration runs past the per-iteration
/// limit, and a node that opens a new iteration restarts the clock.
#[derive(Clone, Debug, Default)]
pub(crate) struct IterationClock(Arc<AtomicI64>);

impl IterationClock {
    /// Milliseconds since the epoch; 0 while no iteration is open.
    fn set(&self, started: Option<DateTime<Utc>>) {
        self.0.store(started.map_or(0, |t| t.timestamp_millis()), Ordering::Relaxed);
    }

    /// What is left of `limit` for the open iteration: all of it when none is open.
    pub(crate) fn left(&self, limit: Duration) -> Duration {
        let started = self.0.load(Ordering::Relaxed);
        if started == 0 {
            return limit;
        }
        let spent = u64::try_from(Utc::now().timestamp_millis() - started).unwrap_or(0);
        limit.saturating_sub(Duration::from_millis(spent))
    }
}

/// Ends the open iteration, if any, as completed or failed, and keeps the
/// count of failed iterations in a row.
pub(crate) fn close_iteration(progress: &mut Progress, pending: &mut Vec<Pending>) {
    let Some(started) = progress.iteration_started_at.take() else { return };
    let now = Utc::now();
    let failed = progress.iteration_failed;
    progress.consecutive_failures = if failed { progress.consecutive_failures + 1 } else { 0 };
    let event = EngineEvent::IterationComplete {
        iteration: progress.iterations,
        duration: millis_between(started, now),
        status: if failed { IterationOutcome::Failed } else { IterationOutcome::Completed },
        error: progress.iteration_error.clone(),
        completed_at: now,
    };
    pending.push(Pending::Event(event.draft()));
}

impl Step {
    pub(crate) fn new(env: Arc<Env>, number: u64, node: &str, replay: StepRecords, progress: Progress) -> Self {
        let iteration_clock = IterationClock::default();
        iteration_clock.set(progress.iteration_started_at);
        Self {
            env,
            number,
            node: node.to_string(),
            calls: 0,
            emits: 0,
            replay,
            pending: Vec::new(),
            progress,
            started: Instant::now(),
            retry_iteration: false,
            iteration_clock,
            touched: false,
        }
    }

    pub fn session_id(&self) -> &str {
        &self.env.session_id
    }

    /// The journal step number (1-based).
    pub fn number(&self) -> u64 {
        self.number
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    /// The current iteration (0 before the first `begin_iteration`).
    pub fn iteration(&self) -> u32 {
        self.progress.iterations
    }

    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    pub fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    /// Closes the current iteration and opens the next. Fails with
    /// `Error::Stopped` when the session may not start another one.
    pub fn begin_iteration(&mut self) -> Result<u32> {
        if std::mem::take(&mut self.retry_iteration) && self.calls == 0 {
            return Ok(self.progress.iterations);
        }
        if let Verdict::Stop(stop) = self.env.termination.check_new_iteration(&self.progress) {
            return Err(Error::Stopped(stop));
        }
        self.close_iteration();
        let now = Utc::now();
        let n = self.progress.iterations + 1;
        self.progress.iterations = n;
        self.progress.iteration_started_at = Some(now);
        self.iteration_clock.set(Some(now));
        self.progress.iteration_failed = false;
        self.progress.iteration_error = None;
        self.progress.signals.agent_admits_failure = false;
        let limit = self.env.termination.max_iterations_limit();
        self.emit(EngineEvent::IterationStart { iteration: n, max_iterations: limit, timestamp: now });
        Ok(n)
    }

    /// Ends the open iteration, if any, as completed or failed.
    pub(crate) fn close_iteration(&mut self) {
        let mut out = Vec::new();
        close_iteration(&mut self.progress, &mut out);
        for p in out {
            match p {
                Pending::Event(draft) => self.emit_draft(draft),
                write => self.pending.push(write),
            }
        }
    }

    /// Marks the current iteration failed (a detector counts failures in a row).
    pub fn fail_iteration(&mut self, error: impl Into<String>) {
        self.progress.iteration_failed = true;
        self.progress.iteration_error = Some(error.into());
    }

    /// Emits an event (persisted with the step, then broadcast).
    pub fn emit(&mut self, event: impl EventKind) {
        self.emit_draft(event.draft());
    }

    fn emit_draft(&mut self, draft: EventDraft) {
        if draft.name == event::REPLAN {
            self.progress.replans += 1;
        }
        if draft.name == event::FIX {
            self.progress.fixes += 1;
        }
        self.emits += 1;
        if self.emits > self.replay.events {
            self.pending.push(Pending::Event(draft));
        }
    }

    /// The agent's own verdict on why it is done (see `until_finish_reason`).
    pub fn finish(&mut self, reason: impl Into<String>) {
        self.progress.finish_reason = Some(reason.into());
    }

    /// Reports completion and failure indicators for the detectors.
    pub fn signal(&mut self, f: impl FnOnce(&mut Signals)) {
        f(&mut self.progress.signals);
    }

    /// Asks the default model.
    pub async fn chat(&mut self, request: ChatRequest) -> Result<ChatResponse> {
        self.chat_as(DEFAULT_ROLE, request).await
    }

    /// Counts the answer for the model that gave it, and tells watchers when
    /// a role's answers start coming from another model.
    fn note_model(&mut self, role: &str, model: &str) {
        if model.is_empty() {
            return;
        }
        *self.progress.served.entry(model.to_string()).or_default() += 1;
        let before = self.progress.role_models.insert(role.to_string(), model.to_string());
        if let Some(from) = before.filter(|b| b != model) {
            self.emit(EngineEvent::ModelSwitched { role: role.to_string(), from, to: model.to_string() });
        }
    }

    /// The context of the model for `role`, in tokens, and `request`'s
    /// prompt in its tokens, each when the model can say. Not a call: it
    /// is not journaled, and a replay measures again (the count depends on
    /// the model alone).
    pub async fn measure_as(&self, role: &str, request: &ChatRequest) -> (Option<usize>, Option<usize>) {
        match self.env.models.get(role) {
            Ok(model) => (model.context_tokens(), model.prompt_tokens(request).await),
            Err(_) => (None, None),
        }
    }

    /// Asks the model configured for `role`.
    pub async fn chat_as(&mut self, role: &str, request: ChatRequest) -> Result<ChatResponse> {
        let mut answers = self.chat_all_as(role, vec![request]).await?;
        answers.pop().ok_or_else(|| Error::State("a model call gave no answer".into()))
    }

    /// Asks the model for `role` several independent questions at once
    /// (`ChatModel::chat_many`): the embedded model decodes them in one
    /// batch, an endpoint serves them in parallel. Each is journaled under its own
    /// call index, in order, so a replay returns the same answers without
    /// asking again. The first failure is returned once all are recorded.
    pub async fn chat_all_as(&mut self, role: &str, mut requests: Vec<ChatRequest>) -> Result<Vec<ChatResponse>> {
        let first = self.calls;
        self.calls += requests.len() as u32;
        let recorded: Vec<Option<CallRecord>> = (0..requests.len() as u32).map(|i| self.recorded(first + i)).collect();
        let mut fresh = Vec::new();
        // The model asked, kept for the calls' spans when tracing.
        let mut traced = None;
        // Asked together, the fresh calls share their start.
        let started_at = Utc::now();
        let t = Instant::now();
        if recorded.iter().any(Option::is_none) {
            let model = self.env.models.get(role)?.clone();
            traced = self.env.trace.is_some().then(|| model.clone());
            // Let watchers see what is happening before slow calls start.
            self.flush(false)?;
            // A hint goes with the first fresh call, and is journaled with it.
            if let Some(hint) = self.progress.hint.take() {
                requests.iter_mut().zip(&recorded).filter(|(_, rec)| rec.is_none()).for_each(|(request, _)| with_hint(request, &hint));
            }
            let asked: Vec<ChatRequest> = requests.iter().zip(&recorded).filter(|(_, rec)| rec.is_none()).map(|(request, _)| request.clone()).collect();
            let answers = self.cancellable(async { Ok(model.chat_many(&asked).await) }).await?;
            if answers.iter().any(|r| matches!(r, Err(Error::Cancelled))) {
                return Err(Error::Cancelled);
            }
            fresh = answers
                .into_iter()
                .map(|result| {
                    let name = match &result {
                        Ok(r) if !r.model.is_empty() => r.model.clone(),
                        _ => model.name().to_string(),
                    };
                    (result, name)
                })
                .collect();
        }
        let mut fresh = fresh.into_iter();
        let mut answers = Vec::with_capacity(requests.len());
        let mut failure = None;
        // Answers asked together share their start and their wall time,
        // which counts once, on a replay as when they were asked.
        let mut batch_start = None;
        let mut wall_once = |started_at: DateTime<Utc>, ms: Option<u64>| if batch_start.replace(started_at) == Some(started_at) { 0 } else { ms.unwrap_or(0) };
        for (i, (request, rec)) in requests.iter().zip(recorded).enumerate() {
            let (result, took_ms) = match rec {
                Some(rec) => (replayed(&rec, serde_json::from_value::<ChatResponse>), wall_once(rec.started_at, rec.duration_ms)),
                None => {
                    let Some((result, name)) = fresh.next() else { break };
                    let input = json!({
                        "node": self.node,
                        "role": role,
                        "messages": request.messages.len(),
                        "last": request.messages.last(),
                        "jsonSchema": request.json_schema.is_some(),
                    });
                    if let (Some(trace), Some(model)) = (&self.env.trace, &traced) {
                        trace.chat(model.provider(), model.name(), started_at, &result);
                    }
                    let record = self.call_record(first + i as u32, CallKind::Model, name, input, started_at, &result, t);
                    let took_ms = wall_once(record.started_at, record.duration_ms);
                    self.pending.push(Pending::Write(Write::Call(record)));
                    (result, took_ms)
                }
            };
            match result {
                Ok(response) => {
                    self.account(role, &response, took_ms);
                    answers.push(response);
                }
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        self.flush(false)?;
        match failure {
            Some(e) => Err(e),
            None => Ok(answers),
        }
    }

    /// Counts an answer's calls, time and tokens.
    fn account(&mut self, role: &str, response: &ChatResponse, took_ms: u64) {
        self.progress.model_calls += 1;
        self.note_model(role, &response.model);
        self.progress.model_ms += took_ms;
        self.progress.prompt_tokens += response.usage.prompt_tokens;
        self.progress.completion_tokens += response.usage.completion_tokens;
        self.progress.last_finish_reason = serde_json::to_value(response.finish_reason).ok().and_then(|v| v.as_str().map(String::from));
    }

    /// Asks the default model for JSON shaped like `T` (its JSON schema goes
    /// with the request: the embedded model is held to it token by token,
    /// endpoints get their native JSON mode) and parses the answer; one
    /// repair pass re-asks with the parse error before giving up. A
    /// `<json>...</json>` wrapper or a code fence around the object is fine.
    pub async fn chat_json<T: DeserializeOwned + JsonSchema>(&mut self, request: ChatRequest) -> Result<T> {
        self.chat_json_as(DEFAULT_ROLE, request).await
    }

    /// `chat_json` with the model configured for `role`. Each unusable answer
    /// is reported to the model (`ChatModel::reject`), so a fallback chain
    /// can move on.
    pub async fn chat_json_as<T: DeserializeOwned + JsonSchema>(&mut self, role: &str, request: ChatRequest) -> Result<T> {
        let mut answers = self.chat_json_all_as(role, vec![request]).await?;
        answers.pop().ok_or_else(|| Error::State("a model call gave no answer".into()))
    }

    /// `chat_all_as` for answers shaped like `T`: asked together, and each
    /// answer that does not parse repaired on its own (one re-ask with the
    /// parse error), in order.
    pub async fn chat_json_all_as<T: DeserializeOwned + JsonSchema>(&mut self, role: &str, mut requests: Vec<ChatRequest>) -> Result<Vec<T>> {
        for r in &mut requests {
            r.json_schema = Some(json_schema_of::<T>());
        }
        let firsts = self.chat_all_as(role, requests.clone()).await?;
        let mut out = Vec::with_capacity(firsts.len());
        for (mut request, first) in requests.into_iter().zip(firsts) {
            match parse_json::<T>(&first.content) {
                Ok(v) => out.push(v),
                Err(why) => {
                    self.env.models.get(role)?.reject();
                    request.messages.push(crate::model::Message::assistant(first.content));
                    request.messages.push(crate::model::Message::user(format!("That was not valid: {why}. Answer again with only the JSON object.")));
                    let second = self.chat_as(role, request).await?;
                    out.push(parse_json::<T>(&second.content).map_err(|why| {
                        if let Ok(m) = self.env.models.get(role) {
                            m.reject();
                        }
                        Error::Model { model: second.model, message: format!("the answer was not the JSON asked for, even after one repair ({why})") }
                    })?);
                }
            }
        }
        Ok(out)
    }

    /// Tells the model for `role` that its last answer was unusable (it broke
    /// a rule the caller checks), so a fallback chain can count it and move on.
    pub fn reject_answer(&self, role: &str) -> Result<()> {
        self.env.models.get(role)?.reject();
        Ok(())
    }

    /// Whether the session has a tool called `name` (sources not asked).
    pub fn has_tool(&self, name: &str) -> bool {
        self.env.tools.get(name).is_some()
    }

    /// Calls a tool. Side-effecting tools record their intent durably first.
    pub async fn tool(&mut self, name: &str, input: Value) -> Result<Value> {
        let index = self.next_index();
        let iteration = self.progress.iterations;
        self.progress.tool_calls += 1;
        self.progress.record_tool_signature(signature(name, &input));
        let recorded = self.recorded(index);
        // A recorded result needs no tool (one from a source need not be reached).
        if let Some(rec) = recorded.as_ref().filter(|r| r.status != CallStatus::Pending) {
            self.touched = true;
            return self.tool_result(name, replayed(rec, Ok));
        }
        let tool = self.env.tools.find(name).await?.ok_or_else(|| Error::NotFound(format!("no tool named `{name}` is available")))?;
        if tool.effect() == Effect::SideEffect {
            let skip = match recorded {
                Some(rec) => self.resolve_intent(&rec).await?,
                None => self.progress.skipped_calls.contains(&signature(name, &input)),
            };
            if skip {
                return self.skipped(index, name, input);
            }
        }
        let started_at = Utc::now();
        self.emit(EngineEvent::ToolCalled { tool_name: name.to_string(), iteration });
        if tool.effect() != Effect::ReadOnly {
            self.touched = true;
            let intent = CallRecord {
                step: self.number,
                index,
                iteration,
                kind: CallKind::Tool,
                name: name.to_string(),
                input: input.clone(),
                output: None,
                status: CallStatus::Pending,
                error: None,
                started_at,
                duration_ms: None,
            };
            self.pending.push(Pending::Write(Write::Call(intent)));
            self.flush(true)?;
        } else {
            self.flush(false)?;
        }
        let t = Instant::now();
        let result = self.cancellable(tool.call(input.clone())).await;
        if matches!(result, Err(Error::Cancelled)) {
            return Err(Error::Cancelled);
        }
        if let Some(trace) = &self.env.trace {
            trace.tool(name, started_at, result.as_ref().err().map(ToString::to_string));
        }
        let record = self.call_record(index, CallKind::Tool, name.to_string(), input, started_at, &result, t);
        let duration = record.duration_ms.unwrap_or(0);
        self.pending.push(Pending::Write(Write::Call(record)));
        self.emit(EngineEvent::ToolComplete { tool_name: name.to_string(), iteration, duration });
        self.flush(false)?;
        self.tool_result(name, result)
    }

    fn tool_result(&mut self, name: &str, result: Result<Value>) -> Result<Value> {
        if let Err(e) = &result {
            if !matches!(e, Error::PermissionDenied(_)) {
                self.fail_iteration(format!("tool `{name}`: {e}"));
            }
        }
        result
    }

    /// A side-effecting call started before a crash and has no result: ask
    /// whether to run it again; `true` means the user skips it.
    async fn resolve_intent(&mut self, rec: &CallRecord) -> Result<bool> {
        let id = format!("{}.{}.intent", self.number, rec.index);
        let question = json!({
            "kind": "unresolved_intent",
            "tool": rec.name,
            "input": rec.input,
            "message": format!("`{}` started before the agent stopped and may or may not have run. Run it again (retry) or skip it (skip)?", rec.name),
        });
        let reply = self.ask(id, question).await?;
        Ok(!reply_is(&reply, "retry"))
    }

    /// Answers a call the user skipped with an error the agent sees, journals
    /// it in place of the call, and remembers it, so the same call is not
    /// made when the node runs again.
    fn skipped(&mut self, index: u32, name: &str, input: Value) -> Result<Value> {
        let sig = signature(name, &input);
        if !self.progress.skipped_calls.contains(&sig) {
            self.progress.skipped_calls.push(sig);
        }
        let result = Err(Error::Tool { tool: name.to_string(), message: "skipped by the user after an unfinished earlier run".into() });
        let record = self.call_record(index, CallKind::Tool, name.to_string(), input, Utc::now(), &result, Instant::now());
        self.pending.push(Pending::Write(Write::Call(record)));
        self.flush(false)?;
        self.tool_result(name, result)
    }

    /// Asks a human. The session pauses (across restarts if need be) until
    /// the interrupt is answered; the step then re-runs and gets the reply.
    pub async fn interrupt(&mut self, request: Value) -> Result<Value> {
        let index = self.next_index();
        self.ask(format!("{}.{}", self.number, index), request).await
    }

    async fn ask(&mut self, id: String, request: Value) -> Result<Value> {
        if let Some(rec) = self.replay.interrupts.iter().find(|i| i.id == id) {
            return match &rec.reply {
                Some(reply) => Ok(reply.clone()),
                None => Err(Error::Interrupted(id)),
            };
        }
        let record = InterruptRecord { id: id.clone(), step: self.number, request, reply: None, created_at: Utc::now() };
        self.pending.push(Pending::Write(Write::Interrupt(record)));
        self.flush(true)?;
        Err(Error::Interrupted(id))
    }

    /// Writes what is pending now (so calls survive a crash mid-step).
    fn flush(&mut self, to_disk: bool) -> Result<()> {
        if self.pending.is_empty() && !to_disk {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.pending);
        self.env.commit(self.number, batch, to_disk)
    }

    fn next_index(&mut self) -> u32 {
        let i = self.calls;
        self.calls += 1;
        i
    }

    fn recorded(&self, index: u32) -> Option<CallRecord> {
        self.replay.calls.iter().find(|c| c.index == index).cloned()
    }

    /// Runs `fut` unless the user pauses or terminates first.
    async fn cancellable<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        let mut control = self.env.control.clone();
        if *control.borrow() != Command::Run {
            return Err(Error::Cancelled);
        }
        let stopped = async move {
            if control.wait_for(|c| *c != Command::Run).await.is_err() {
                // The handle is gone: nobody can pause us any more.
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            r = fut => r,
            () = stopped => Err(Error::Cancelled),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn call_record<T: Serialize>(
        &self,
        index: u32,
        kind: CallKind,
        name: String,
        input: Value,
        started_at: DateTime<Utc>,
        result: &Result<T>,
        t: Instant,
    ) -> CallRecord {
        let (output, status, error) = match result {
            Ok(v) => (serde_json::to_value(v).ok(), CallStatus::Success, None),
            Err(e) => (None, CallStatus::Error, Some(e.to_string())),
        };
        CallRecord {
            step: self.number,
            index,
            iteration: self.progress.iterations,
            kind,
            name,
            input,
            output,
            status,
            error,
            started_at,
            duration_ms: Some(u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

/// The recorded outcome of a call, as the live call returned it.
fn replayed<T>(rec: &CallRecord, decode: impl FnOnce(Value) -> std::result::Result<T, serde_json::Error>) -> Result<T> {
    match (&rec.status, &rec.output) {
        (CallStatus::Success, Some(v)) => {
            decode(v.clone()).map_err(|e| Error::State(format!("the recorded result of call {} does not decode ({e})", rec.id())))
        }
        _ => {
            let message = rec.error.clone().unwrap_or_else(|| "failed".into());
            Err(match rec.kind {
                CallKind::Model => Error::Model { model: rec.name.clone(), message },
                CallKind::Tool => Error::Tool { tool: rec.name.clone(), message },
            })
        }
    }
}

/// True when a human reply means `word` (a string, or `{"choice": word}`).
pub fn reply_is(reply: &Value, word: &str) -> bool {
    let text = reply.as_str().or_else(|| reply.get("choice").and_then(Value::as_str)).unwrap_or("");
    text.trim().eq_ignore_ascii_case(word)
}

fn signature(name: &str, input: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    input.to_string().hash(&mut h);
    h.finish()
}

/// Parses JSON from a model answer, tolerating a `<json>` wrapper or a code fence.
/// The JSON schema of `T`, as sent to models. Objects are closed
/// (`additionalProperties: false`) unless they say otherwise: serde would
/// ignore extra keys anyway, and leaving them open lets a constrained model
/// invent keys forever and lets strict endpoint modes refuse the schema.
pub fn json_schema_of<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    close_objects(&mut schema);
    schema
}

fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let is_object = map.get("type").and_then(Value::as_str) == Some("object");
            if is_object && map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

pub fn parse_json<T: DeserializeOwned>(text: &str) -> std::result::Result<T, String> {
    let mut body = text.trim();
    if let (Some(a), Some(b)) = (body.find("<json>"), body.rfind("</json>")) {
        if a < b {
            body = &body[a + 6..b];
        }
    }
    let body = body.trim().trim_start_matches("```json").trim_start_matches("```").trim_end_matches("```").trim();
    serde_json::from_str(body).map_err(|e| e.to_string())
}

/// The user's hint added to a request's last message (its own words are
/// the prompt a node wrote; the hint comes after them, said as the user's).
fn with_hint(request: &mut ChatRequest, hint: &str) {
    let note = format!("\n\nA note from the user, who went back to this point to try again: {hint}");
    match request.messages.last_mut() {
        Some(last) => last.content.push_str(&note),
        None => request.messages.push(crate::model::Message::user(note.trim_start().to_string())),
    }
}

//! The runner: one node per step, a termination check after every step, and
//! one journal commit per step. Pause, terminate, interrupts and the failure
//! rules are handled here, so no agent has to.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::{json, Value};
use tokio::sync::{broadcast, watch, Notify};

use crate::checkpoint_chain::Keeper;
use crate::control::{Controller, Outcome, SessionHandle};
use crate::detectors::{self, FailureVerdict};
use crate::event::{EngineEvent, EventDraft, EventKind};
use crate::graph::CompiledGraph;
use crate::journal::{snapshot_due, InterruptRecord, SessionMeta, StepRecords, Write};
use crate::models::Models;
use crate::progress::Progress;
use crate::state::{Marks, State};
use crate::status::SessionStatus;
use crate::steering::{Command, Ending};
use crate::step::{close_iteration, reply_is, Env, IterationClock, Pending, Running, Step};
use crate::store::Store;
use crate::telemetry::RunTrace;
use crate::termination::{Stop, Termination, Verdict};
use crate::tool::Tools;
use crate::workspace_files::WorkspaceFiles;
use crate::{Error, Result};

/// How often a session waiting on a question re-reads the store, so that an
/// answer given by another process (CLI, server) is seen.
const ANSWER_POLL: Duration = Duration::from_millis(250);
/// Event capacity of the live channel; a slower subscriber reads history from the store.
const EVENT_BUFFER: usize = 1024;
/// Steps after which the session row is rewritten even if only its running
/// time changed (a crash loses at most this many steps of running time).
const META_EVERY: u64 = 64;

pub struct StartOptions {
    /// A chosen id; a random one otherwise.
    pub session_id: Option<String>,
    pub termination: Termination,
    /// Agent parameters saved with the session.
    pub input: Value,
    /// Return when the session pauses instead of waiting in process for
    /// `resume`, `terminate` or an answer.
    pub exit_when_paused: bool,
}

impl StartOptions {
    pub fn new(termination: Termination) -> Self {
        Self { session_id: None, termination, input: Value::Null, exit_when_paused: false }
    }
}

/// Runs sessions of one graph.
pub struct Runner<S: State> {
    graph: Arc<CompiledGraph<S>>,
    store: Arc<dyn Store>,
    models: Models,
    tools: Tools,
    files: Option<Arc<dyn WorkspaceFiles>>,
}

impl<S: State> Runner<S> {
    pub fn new(graph: CompiledGraph<S>, store: Arc<dyn Store>) -> Self {
        Self { graph: Arc::new(graph), store, models: Models::none(), tools: Tools::new(), files: None }
    }

    /// The session's workspace: checkpointed with the state at the start
    /// and after every step, so the session can be rewound or forked there
    /// (`checkpoint`).
    pub fn workspace_files(mut self, files: Arc<dyn WorkspaceFiles>) -> Self {
        self.files = Some(files);
        self
    }

    pub fn models(mut self, models: Models) -> Self {
        self.models = models;
        self
    }

    pub fn tools(mut self, tools: Tools) -> Self {
        self.tools = tools;
        self
    }

    /// Starts a new session from `state`. Must be called inside a Tokio runtime.
    pub fn start(&self, state: S, options: StartOptions) -> Result<SessionHandle> {
        let exit_when_paused = options.exit_when_paused;
        let (mut meta, snapshot) = self.new_session(&state, options)?;
        let id = meta.id.clone();
        self.store.acquire(&id)?;
        let trace = RunTrace::start(self.graph.name(), &id, None).map(|(trace, traceparent)| {
            meta.traceparent = Some(traceparent);
            trace
        });
        // A new session has no steering requests yet.
        let (handle, env) = self.handle(&id, &meta.termination, (0, 0), trace);
        let mut batch = first_batch(&meta, snapshot.clone());
        let mut keeper = Keeper::default();
        if let Some(files) = &self.files {
            let whole = || Ok(snapshot.clone());
            batch.extend(keeper.pending(files.as_ref(), &*self.store, true, (0, meta.next_node.clone()), (None, whole), &meta.progress)?);
        }
        let mut machine = env
            .commit(0, batch, false)
            .and_then(|()| Machine::new(env, self.graph.clone(), meta, state, snapshot.len(), 0, exit_when_paused))
            .inspect_err(|_| {
                let _ = self.store.release(&id);
            })?;
        machine.checkpoints = keeper;
        Ok(handle.spawn(machine))
    }

    fn new_session(&self, state: &S, options: StartOptions) -> Result<(SessionMeta, String)> {
        new_session(&*self.store, self.graph.name(), Some(self.graph.entry()), state, options)
    }

    /// Continues a stored session where its journal ends. One runner per
    /// session: a second one is refused (naming the first) before it writes
    /// anything, and the journal is read only once the session is ours.
    pub fn resume(&self, id: &str, exit_when_paused: bool) -> Result<SessionHandle> {
        self.store.acquire(id)?;
        self.resume_held(id, exit_when_paused).inspect_err(|_| {
            let _ = self.store.release(id);
        })
    }

    fn resume_held(&self, id: &str, exit_when_paused: bool) -> Result<SessionHandle> {
        let loaded = self.store.load(id)?;
        let mut meta = loaded.meta;
        if meta.agent != self.graph.name() {
            return Err(Error::Other(format!("session `{id}` belongs to agent `{}`, not `{}`", meta.agent, self.graph.name())));
        }
        if meta.status.is_final() {
            return Err(Error::Other(format!(
                "session `{id}` already ended ({}{}); there is nothing to resume",
                meta.status.as_str(),
                meta.finish_reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
            )));
        }
        let state: S = serde_json::from_value(loaded.state).map_err(|e| Error::State(format!("session `{id}` does not fit agent `{}` ({e})", meta.agent)))?;
        let was_paused = meta.status == SessionStatus::Paused;
        if meta.status == SessionStatus::Idle && meta.step == 0 {
            // Created to be run later: its first run starts at the entry.
            meta.next_node = Some(self.graph.entry().to_string());
        }
        meta.status = SessionStatus::Running;
        // The run continues the session's trace (or starts one, for a
        // session stored while telemetry was off).
        let trace = RunTrace::start(self.graph.name(), id, meta.traceparent.as_deref()).map(|(trace, traceparent)| {
            meta.traceparent = Some(traceparent);
            trace
        });
        // Requests from before this run are not applied to it.
        let steered = self.store.steering(id, 0)?.map_or(0, |(seq, _)| seq);
        let (handle, env) = self.handle(id, &meta.termination, (loaded.last_event_seq, steered), trace);
        env.commit(0, vec![Pending::Write(Write::Meta(Box::new(meta.clone()))), Pending::Event(resumed(id))], false)?;
        let mut machine = Machine::new(
            env,
            self.graph.clone(),
            meta,
            state,
            usize::try_from(loaded.snapshot_bytes).unwrap_or(usize::MAX),
            loaded.patch_bytes_since_snapshot,
            exit_when_paused,
        )?;
        machine.replay_next = true;
        machine.resumed_from_pause = was_paused;
        Ok(handle.spawn(machine))
    }

    /// `after`: the last event and steering request already stored.
    fn handle(&self, id: &str, termination: &Termination, (seq, steered): (u64, u64), trace: Option<RunTrace>) -> (HandleParts, Arc<Env>) {
        let (control_tx, control_rx) = watch::channel(Command::Run);
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let answered = Arc::new(Notify::new());
        let env = Arc::new(Env {
            session_id: id.to_string(),
            store: self.store.clone(),
            // Each session escalates on its own misses only.
            models: self.models.for_session(),
            tools: self.tools.clone(),
            termination: termination.clone(),
            control: control_rx,
            events: events.clone(),
            answered: answered.clone(),
            seq: AtomicU64::new(seq),
            trace,
            files: self.files.clone(),
        });
        (HandleParts { id: id.to_string(), control_tx, events, answered, store: self.store.clone(), steered }, env)
    }
}

/// The row and the first snapshot of a session not stored yet: running
/// from `entry`, or idle (not started) without one.
fn new_session<S: State>(store: &dyn Store, agent: &str, entry: Option<&str>, state: &S, options: StartOptions) -> Result<(SessionMeta, String)> {
    let id = options.session_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if store.load(&id).is_ok() {
        return Err(Error::Other(format!("a session with id `{id}` already exists: pick another id or resume it")));
    }
    let meta = SessionMeta {
        id,
        agent: agent.to_string(),
        status: if entry.is_some() { SessionStatus::Running } else { SessionStatus::Idle },
        current_iteration: 0,
        max_iterations: options.termination.max_iterations_limit(),
        finish_reason: None,
        started_at: Utc::now(),
        completed_at: None,
        step: 0,
        next_node: entry.map(str::to_string),
        progress: Progress::default(),
        termination: options.termination,
        input: options.input,
        traceparent: None,
        forked_from: None,
    };
    let snapshot = serde_json::to_string(state)?;
    Ok((meta, snapshot))
}

/// Stores a new session of `agent` from `state` without running it: idle,
/// at no node yet (its first run starts at its graph's entry), for a worker
/// to take up once it is queued. Its id.
pub fn create_session<S: State>(store: &dyn Store, agent: &str, state: &S, options: StartOptions) -> Result<String> {
    let (meta, snapshot) = new_session(store, agent, None, state, options)?;
    let start = session_start(&meta);
    let event = crate::event::Event { session_id: meta.id.clone(), seq: 1, name: start.name, payload: start.payload, timestamp: Utc::now(), step: 0 };
    store.write(&meta.id, &[Write::Meta(Box::new(meta.clone())), Write::Snapshot { step: 0, state: snapshot }, Write::Event(event)], true)?;
    Ok(meta.id)
}

/// A new session's first commit: its row, its state and its start event.
fn first_batch(meta: &SessionMeta, snapshot: String) -> Vec<Pending> {
    vec![Pending::Write(Write::Meta(Box::new(meta.clone()))), Pending::Write(Write::Snapshot { step: 0, state: snapshot }), Pending::Event(session_start(meta))]
}

fn session_start(meta: &SessionMeta) -> crate::event::EventDraft {
    EngineEvent::SessionStart { session_id: meta.id.clone(), max_iterations: meta.max_iterations }.draft()
}

struct HandleParts {
    id: String,
    control_tx: watch::Sender<Command>,
    events: broadcast::Sender<crate::event::Event>,
    answered: Arc<Notify>,
    store: Arc<dyn Store>,
    /// The newest steering request stored before this run.
    steered: u64,
}

impl HandleParts {
    fn spawn<S: State>(self, machine: Machine<S>) -> SessionHandle {
        let task = tokio::spawn(machine.run());
        let control = Arc::new(self.control_tx);
        crate::control::follow_steering(self.store.clone(), self.id.clone(), self.steered, control.clone());
        let controller = Controller { id: self.id, control, answered: self.answered, events: self.events, store: self.store };
        SessionHandle { controller, task }
    }
}

/// How a step ended.
enum StepEnd {
    Committed,
    /// Cancelled by pause or terminate: nothing committed, the step re-runs.
    Discarded,
    Interrupted(String),
    Stopped(Stop),
}

/// What to do after handling something: go on, or return this outcome.
type Flow = Option<Outcome>;

struct Machine<S: State> {
    env: Arc<Env>,
    graph: Arc<CompiledGraph<S>>,
    meta: SessionMeta,
    state: S,
    marks: Marks,
    snapshot_bytes: u64,
    patch_bytes_since: u64,
    /// The next step may have records from an earlier attempt.
    replay_next: bool,
    resumed_from_pause: bool,
    exit_when_paused: bool,
    permission_denied: Option<String>,
    message: Option<String>,
    /// The step the session row was last written at, and the progress last
    /// saved (in that row, or since in a step entry).
    meta_written: (u64, Progress),
    /// When the run last let other tasks on its thread go first.
    last_yield: std::time::Instant,
    /// This run's checkpoints of the workspace, when it has one.
    checkpoints: Keeper,
}

/// How long a run keeps its thread before the tasks its commits woke (the
/// followers of its events) get a turn: their latency is bounded by it,
/// and a yield this rare costs the loop nothing measurable.
const YIELD_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

impl<S: State> Machine<S> {
    fn new(
        env: Arc<Env>,
        graph: Arc<CompiledGraph<S>>,
        meta: SessionMeta,
        state: S,
        snapshot_bytes: usize,
        patch_bytes_since: u64,
        exit_when_paused: bool,
    ) -> Result<Self> {
        let marks = Marks::of(&state)?;
        let meta_written = (meta.step, meta.progress.clone());
        Ok(Self {
            env,
            graph,
            meta,
            state,
            marks,
            snapshot_bytes: u64::try_from(snapshot_bytes).unwrap_or(u64::MAX),
            patch_bytes_since,
            replay_next: false,
            resumed_from_pause: false,
            exit_when_paused,
            permission_denied: None,
            message: None,
            meta_written,
            last_yield: std::time::Instant::now(),
            checkpoints: Keeper::default(),
        })
    }

    async fn run(mut self) -> Result<Outcome> {
        let _running = Running::new();
        let result = match self.drive().await {
            Ok(outcome) => Ok(outcome),
            // The store failed (out of reach, or the session taken over by
            // another process): nothing more is written, and the session
            // stays as its journal has it, to be resumed or taken up again
            // rather than marked failed for a fault that was not its own.
            Err(e @ Error::Store(_)) => Err(e),
            Err(e) => {
                // Record why the session ended; the original error wins if that fails too.
                let _ = self.finish(SessionStatus::Error, "error", Some(e.to_string()));
                Err(e)
            }
        };
        if let Some(trace) = &self.env.trace {
            trace.end(result.as_ref().err().map(ToString::to_string));
        }
        // Whoever resumes it next may take it; a failure here only leaves a
        // lease that dies with this process.
        let _ = self.env.store.release(&self.env.session_id);
        result
    }

    async fn drive(&mut self) -> Result<Outcome> {
        if self.resumed_from_pause {
            if let Some(outcome) = self.settle_earlier_question().await? {
                return Ok(outcome);
            }
        }
        loop {
            let command = self.env.control.borrow().clone();
            match command {
                Command::Terminate(ending, reason) => return self.end(ending, &reason),
                Command::Pause => {
                    if let Some(outcome) = self.pause().await? {
                        return Ok(outcome);
                    }
                    continue;
                }
                Command::Run => {}
            }
            let Some(node) = self.meta.next_node.clone() else {
                let reason = self.meta.progress.finish_reason.clone().unwrap_or_else(|| "end".into());
                return self.finish(SessionStatus::Completed, &reason, None);
            };
            let flow = match self.run_step(&node).await? {
                StepEnd::Committed => {
                    // A task the commit woke may be queued behind this one on
                    // its thread (where no other thread takes it), so while
                    // someone follows the events a step boundary now and then
                    // lets it run, whether or not the nodes ever await.
                    if self.env.events.receiver_count() > 0 && self.last_yield.elapsed() >= YIELD_EVERY {
                        tokio::task::yield_now().await;
                        self.last_yield = std::time::Instant::now();
                    }
                    self.after_step().await?
                }
                StepEnd::Discarded => None,
                StepEnd::Interrupted(id) => self.wait_for_answer(&id).await?,
                StepEnd::Stopped(stop) => self.apply_stop(stop).await?,
            };
            if let Some(outcome) = flow {
                return Ok(outcome);
            }
        }
    }

    async fn run_step(&mut self, node: &str) -> Result<StepEnd> {
        let number = self.meta.step + 1;
        let replay = if std::mem::take(&mut self.replay_next) { self.env.store.step_records(&self.env.session_id, number)? } else { StepRecords::default() };
        let mut step = Step::new(self.env.clone(), number, node, replay, self.meta.progress.clone());
        let f = self.graph.node(node)?.clone();
        let result = {
            // A retry after a failed iteration runs in an iteration of its own.
            let retry = step.progress.iterations > 0 && step.progress.iteration_started_at.is_none();
            let opened = if retry { step.begin_iteration().map(|_| step.retry_iteration = true) } else { Ok(()) };
            match opened {
                Err(e) => Err(e),
                Ok(()) => match self.meta.termination.per_iteration_timeout() {
                    Some(limit) => {
                        let clock = step.iteration_clock.clone();
                        match within_iteration_limit(limit, &clock, f(&mut self.state, &mut step)).await {
                            Some(r) => r,
                            None => Err(Error::Timeout(format!("iteration {} ran past its time limit and was cancelled", step.progress.iterations))),
                        }
                    }
                    None => f(&mut self.state, &mut step).await,
                },
            }
        };
        match result {
            Ok(()) => self.commit_step(step, node).await,
            Err(Error::Cancelled) => self.discard().map(|_| StepEnd::Discarded),
            Err(Error::Interrupted(id)) => self.discard().map(|_| StepEnd::Interrupted(id)),
            Err(Error::Stopped(stop)) => self.discard().map(|_| StepEnd::Stopped(stop)),
            Err(e) => self.commit_failed(step, e).await,
        }
    }

    async fn commit_step(&mut self, mut step: Step, node: &str) -> Result<StepEnd> {
        let next = match self.graph.next_after(node, &self.state) {
            Ok(next) => next,
            Err(e) => return self.commit_failed(step, e).await,
        };
        let patch = match self.marks.patch(&self.state) {
            Ok(p) => p,
            Err(e) => return self.commit_failed(step, e).await,
        };
        let number = step.number();
        let mut batch = std::mem::take(&mut step.pending);
        let mut patch = patch;
        if let Some(text) = &patch {
            self.patch_bytes_since += text.len() as u64;
            if snapshot_due(self.snapshot_bytes, self.patch_bytes_since) {
                let full = serde_json::to_string(&self.state)?;
                self.snapshot_bytes = full.len() as u64;
                self.patch_bytes_since = 0;
                batch.push(Pending::Write(Write::Snapshot { step: number, state: full }));
                patch = None;
            }
        }
        let mut progress = step.progress;
        progress.consecutive_timeouts = 0;
        self.advance(number, next, patch, progress, (step.started.elapsed(), step.touched), batch).await?;
        Ok(StepEnd::Committed)
    }

    /// A node failed: its state changes are dropped, its iteration is marked
    /// failed, and the same node runs again in the next step (the detectors
    /// and termination decide whether it may).
    async fn commit_failed(&mut self, mut step: Step, error: Error) -> Result<StepEnd> {
        self.reload_state()?;
        let message = error.to_string();
        match &error {
            Error::PermissionDenied(what) => self.permission_denied = Some(what.clone()),
            Error::Timeout(_) => step.progress.consecutive_timeouts += 1,
            _ => step.progress.consecutive_timeouts = 0,
        }
        step.fail_iteration(message.clone());
        if step.progress.iteration_started_at.is_some() {
            step.close_iteration();
        } else {
            step.progress.consecutive_failures += 1;
        }
        let node = step.node().to_string();
        step.emit(EngineEvent::StepError { node, error: message });
        let number = step.number();
        let batch = std::mem::take(&mut step.pending);
        let next = self.meta.next_node.clone();
        self.advance(number, next, None, step.progress, (step.started.elapsed(), step.touched), batch).await?;
        Ok(StepEnd::Committed)
    }

    async fn advance(
        &mut self,
        number: u64,
        next: Option<String>,
        patch: Option<String>,
        mut progress: Progress,
        (took, touched): (Duration, bool),
        mut batch: Vec<Pending>,
    ) -> Result<()> {
        progress.steps += 1;
        progress.active_us += u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.meta.step = number;
        self.meta.next_node = next.clone();
        self.meta.current_iteration = progress.iterations;
        self.meta.progress = progress;
        // A snapshot in the batch replaces the step's patch and holds the state whole.
        let snapshot = batch.iter().find_map(|p| match p {
            Pending::Write(Write::Snapshot { state, .. }) => Some(state.clone()),
            _ => None,
        });
        if let Some(files) = self.env.files.clone() {
            let journal_patch = snapshot.is_none().then_some(patch.as_deref());
            let state = &self.state;
            let whole = || match &snapshot {
                Some(text) => Ok(text.clone()),
                None => Ok(serde_json::to_string(state)?),
            };
            batch.extend(self.checkpoints.pending(
                files.as_ref(),
                &*self.env.store,
                touched,
                (number, next.clone()),
                (journal_patch, whole),
                &self.meta.progress,
            )?);
        }
        // The step entry says where the session is, and holds the counters
        // when they changed: the session row (another page to write) is
        // rewritten only now and then, to keep its running time roughly
        // current, and with each snapshot, which deletes the step entries
        // before it.
        let mut saved_progress = None;
        if snapshot.is_some() || number >= self.meta_written.0 + META_EVERY {
            batch.push(self.meta_write());
        } else if !self.meta.progress.same_apart_from_time(&self.meta_written.1) {
            self.meta_written.1 = self.meta.progress.clone();
            saved_progress = Some(Box::new(self.meta.progress.clone()));
        }
        batch.push(Pending::Write(Write::Step { step: number, next, patch, progress: saved_progress }));
        self.env.commit_step(number, batch).await
    }

    /// The session row as it is now, remembered as written.
    fn meta_write(&mut self) -> Pending {
        self.meta_written = (self.meta.step, self.meta.progress.clone());
        Pending::Write(Write::Meta(Box::new(self.meta.clone())))
    }

    /// Drops the uncommitted changes of a step: the state goes back to what
    /// the journal holds. Only on pause, interrupts and failures.
    fn discard(&mut self) -> Result<()> {
        self.reload_state()?;
        self.replay_next = true;
        Ok(())
    }

    fn reload_state(&mut self) -> Result<()> {
        let loaded = self.env.store.load(&self.env.session_id)?;
        self.state = serde_json::from_value(loaded.state)?;
        self.marks = Marks::of(&self.state)?;
        Ok(())
    }

    async fn after_step(&mut self) -> Result<Flow> {
        if let Some(what) = self.permission_denied.take() {
            if let FailureVerdict::Stop(message) = detectors::failure(&self.meta.progress, Some(&what)) {
                return self.finish(SessionStatus::Error, "permission_denied", Some(message)).map(Some);
            }
        }
        if let Some(held) = detectors::completion(&self.meta.progress) {
            let reason = self.meta.progress.finish_reason.clone().unwrap_or_else(|| "complete".into());
            return self.finish(SessionStatus::Completed, &reason, Some(format!("Complete: {}.", held.join(", ")))).map(Some);
        }
        if let Verdict::Stop(stop) = self.meta.termination.check(&self.meta.progress) {
            return self.apply_stop(stop).await;
        }
        match detectors::failure(&self.meta.progress, None) {
            FailureVerdict::Pause(message) => self.ask_to_continue("failure", &message).await,
            FailureVerdict::Stop(message) => self.finish(SessionStatus::Error, "error", Some(message)).map(Some),
            FailureVerdict::Retry(_) | FailureVerdict::Continue => Ok(None),
        }
    }

    async fn apply_stop(&mut self, stop: Stop) -> Result<Flow> {
        if stop.ask {
            self.ask_to_continue(&stop.finish_reason, &stop.message).await
        } else {
            self.finish(stop.status, &stop.finish_reason, Some(stop.message)).map(Some)
        }
    }

    /// Stuck, repetition and admitted failure: pause and ask the user.
    async fn ask_to_continue(&mut self, reason: &str, message: &str) -> Result<Flow> {
        let record = InterruptRecord {
            id: format!("{}.ask", self.meta.step),
            step: self.meta.step,
            request: json!({"kind": "continue_or_terminate", "reason": reason, "message": message, "choices": ["continue", "terminate"]}),
            reply: None,
            created_at: Utc::now(),
        };
        let id = record.id.clone();
        self.env.commit(0, vec![Pending::Write(Write::Interrupt(record))], true)?;
        self.message = Some(message.to_string());
        self.wait_for_answer(&id).await
    }

    /// A resumed session that was paused on the runner's own question.
    async fn settle_earlier_question(&mut self) -> Result<Flow> {
        let id = format!("{}.ask", self.meta.step);
        let records = self.env.store.step_records(&self.env.session_id, self.meta.step)?;
        match records.interrupts.into_iter().find(|i| i.id == id) {
            Some(rec) if rec.reply.is_some() => self.apply_answer(&id, rec.reply.unwrap_or(Value::Null)),
            Some(_) => self.wait_for_answer(&id).await,
            None => Ok(None),
        }
    }

    /// Pauses until interrupt `id` is answered (here or by another process),
    /// or the user terminates.
    async fn wait_for_answer(&mut self, id: &str) -> Result<Flow> {
        let request = self.interrupt(id)?.map(|r| r.request).unwrap_or(Value::Null);
        self.set_status(SessionStatus::Paused, vec![EngineEvent::Interrupt { interrupt_id: id.to_string(), request }.draft()])?;
        if self.exit_when_paused {
            return Ok(Some(self.outcome()?));
        }
        let mut control = self.env.control.clone();
        let reply = loop {
            if let Some(reply) = self.interrupt(id)?.and_then(|r| r.reply) {
                break reply;
            }
            let command = control.borrow_and_update().clone();
            match command {
                Command::Terminate(ending, reason) => return self.end(ending, &reason).map(Some),
                Command::Run | Command::Pause => {}
            }
            tokio::select! {
                () = self.env.answered.notified() => {}
                () = tokio::time::sleep(ANSWER_POLL) => {}
                changed = control.changed() => if changed.is_err() { return Ok(Some(self.outcome()?)) },
            }
        };
        self.set_status(SessionStatus::Running, vec![resumed(&self.env.session_id)])?;
        self.apply_answer(id, reply)
    }

    fn apply_answer(&mut self, id: &str, reply: Value) -> Result<Flow> {
        if !id.ends_with(".ask") {
            self.replay_next = true;
            return Ok(None);
        }
        if reply_is(&reply, "continue") {
            let p = &mut self.meta.progress;
            p.consecutive_failures = 0;
            p.consecutive_timeouts = 0;
            p.recent_calls.clear();
            p.signals.agent_admits_failure = false;
            self.message = None;
            self.set_status(SessionStatus::Running, Vec::new())?;
            Ok(None)
        } else {
            self.terminate("the user chose to terminate").map(Some)
        }
    }

    fn interrupt(&self, id: &str) -> Result<Option<InterruptRecord>> {
        let step = id.split('.').next().and_then(|s| s.parse::<u64>().ok()).unwrap_or(self.meta.step);
        Ok(self.env.store.step_records(&self.env.session_id, step)?.interrupts.into_iter().find(|i| i.id == id))
    }

    async fn pause(&mut self) -> Result<Flow> {
        self.set_status(SessionStatus::Paused, vec![EngineEvent::SessionPause { session_id: self.env.session_id.clone() }.draft()])?;
        if self.exit_when_paused {
            return Ok(Some(self.outcome()?));
        }
        let mut control = self.env.control.clone();
        loop {
            let command = control.borrow_and_update().clone();
            match command {
                Command::Run => break,
                Command::Terminate(ending, reason) => return self.end(ending, &reason).map(Some),
                Command::Pause => {}
            }
            if control.changed().await.is_err() {
                return Ok(Some(self.outcome()?));
            }
        }
        self.set_status(SessionStatus::Running, vec![resumed(&self.env.session_id)])?;
        Ok(None)
    }

    fn set_status(&mut self, status: SessionStatus, events: Vec<EventDraft>) -> Result<()> {
        self.meta.status = status;
        let mut batch = vec![self.meta_write()];
        batch.extend(events.into_iter().map(Pending::Event));
        self.env.commit(0, batch, false)
    }

    fn terminate(&mut self, reason: &str) -> Result<Outcome> {
        self.end(Ending::Terminated, reason)
    }

    /// Ends the session as the user chose; a confirmed completion is the
    /// `user_confirmed` completion indicator.
    fn end(&mut self, ending: Ending, reason: &str) -> Result<Outcome> {
        if ending == Ending::Completed {
            self.meta.progress.signals.user_confirmed = Some(true);
        }
        let (status, finish_reason) = ending.outcome();
        self.finish(status, finish_reason, Some(reason.to_string()))
    }

    fn finish(&mut self, status: SessionStatus, reason: &str, message: Option<String>) -> Result<Outcome> {
        let mut batch = Vec::new();
        close_iteration(&mut self.meta.progress, &mut batch);
        let now = Utc::now();
        self.meta.status = status;
        self.meta.finish_reason = Some(reason.to_string());
        self.meta.completed_at = Some(now);
        self.message = message;
        let id = self.env.session_id.clone();
        let duration = crate::session::millis_between(self.meta.started_at, now);
        let draft = match status {
            SessionStatus::Terminated => EngineEvent::SessionTerminate { session_id: id, reason: self.message.clone().unwrap_or_else(|| reason.to_string()) },
            SessionStatus::Error => EngineEvent::SessionError { session_id: id, error: self.message.clone().unwrap_or_else(|| reason.to_string()) },
            _ => EngineEvent::SessionComplete { session_id: id, finish_reason: reason.to_string(), duration },
        };
        batch.push(self.meta_write());
        batch.push(Pending::Event(draft.draft()));
        self.env.commit(0, batch, false)?;
        self.outcome()
    }

    fn outcome(&self) -> Result<Outcome> {
        Ok(Outcome {
            session_id: self.env.session_id.clone(),
            status: self.meta.status,
            finish_reason: self.meta.finish_reason.clone(),
            message: self.message.clone(),
            progress: self.meta.progress.clone(),
            pending: self.env.store.pending_interrupt(&self.env.session_id)?,
        })
    }
}

fn resumed(session_id: &str) -> EventDraft {
    EngineEvent::SessionResume { session_id: session_id.to_string() }.draft()
}

/// Time left in the current iteration under a per-iteration timeout.
/// Runs a node until it ends (`Some`) or its open iteration has run past
/// `limit` (`None`). The time left is read again whenever it runs out, since
/// a node that opens a new iteration gets the whole limit for it; the node
/// is polled at least once, so it can open one.
async fn within_iteration_limit<T>(limit: Duration, clock: &IterationClock, node: impl std::future::Future<Output = T>) -> Option<T> {
    const AT_LEAST: Duration = Duration::from_millis(1);
    tokio::pin!(node);
    loop {
        match tokio::time::timeout(clock.left(limit).max(AT_LEAST), &mut node).await {
            Ok(out) => return Some(out),
            Err(_) if clock.left(limit).is_zero() => return None,
            Err(_) => {}
        }
    }
}

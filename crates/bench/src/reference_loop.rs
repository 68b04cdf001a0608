//! The reference loop the engine benchmark runs — the same loop as
//! ../shared/bench/langgraph_loop.py: plan → act → reflect → back to plan,
//! every node appending one 400-character message, ending after N iterations.
//!
//! With `calls` on, plan asks a (scripted) model and act runs a
//! side-effecting tool; both append a line to a log file per real execution,
//! which lets the crash test prove that no recorded call runs twice.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_core::{
    ChatRequest, ChatResponse, CompiledGraph, Effect, Error, Fields, Graph, Message, Models, Result, Runner, State, Step, Store, Termination, Tool, Tools, END,
};
use agentloop_llm::ScriptedModel;
use async_trait::async_trait;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use agentloop_agent::registry::env::AgentEnv;
use agentloop_agent::registry::settings::NoSettings;
use agentloop_agent::registry::spec::AgentSpec;
use agentloop_agent::registry::summary::Summary;

pub const AGENT: &str = "bench-engine";
pub const MESSAGE_BYTES: usize = 400;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Msg {
    pub role: String,
    pub node: String,
    pub content: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopState {
    pub messages: Vec<Msg>,
    pub iteration: u32,
    pub limit: u32,
    /// Plan and act make real (journaled) calls.
    pub calls: bool,
}

impl State for LoopState {
    fn fields(&self, f: &mut Fields<'_>) {
        f.log("messages", &self.messages);
        f.value("iteration", &self.iteration);
        f.value("limit", &self.limit);
        f.value("calls", &self.calls);
    }
}

/// What the session was started with (saved, so `sessions resume` can rebuild it).
#[derive(Clone, Debug, Default, Serialize, Deserialize, agentloop_core::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    pub iterations: u32,
    pub calls: bool,
    pub call_log: Option<PathBuf>,
    /// How long each model call takes, as a slow model would.
    #[serde(default)]
    pub model_latency_ms: Option<u64>,
}

fn message(role: &str, node: &str, content: String) -> Msg {
    Msg { role: role.into(), node: node.into(), content }
}

fn filler() -> String {
    "x".repeat(MESSAGE_BYTES)
}

fn plan<'a>(s: &'a mut LoopState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let n = step.begin_iteration()?;
        let content = if s.calls {
            let answer = step.chat(ChatRequest::new(vec![Message::user(format!("plan iteration {n}"))])).await?;
            pad(answer.content)
        } else {
            filler()
        };
        s.messages.push(message("assistant", "plan", content));
        Ok(())
    })
}

fn act<'a>(s: &'a mut LoopState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let content = if s.calls {
            let out = step.tool("append_line", json!({"line": format!("tool iteration {}", s.iteration + 1)})).await?;
            pad(out.to_string())
        } else {
            filler()
        };
        s.messages.push(message("tool", "act", content));
        Ok(())
    })
}

fn reflect<'a>(s: &'a mut LoopState, _step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        s.messages.push(message("assistant", "reflect", filler()));
        s.iteration += 1;
        Ok(())
    })
}

fn pad(mut s: String) -> String {
    s.truncate(MESSAGE_BYTES);
    while s.len() < MESSAGE_BYTES {
        s.push('.');
    }
    s
}

pub fn graph() -> Result<CompiledGraph<LoopState>> {
    Graph::new(AGENT)
        .node("plan", plan)
        .node("act", act)
        .node("reflect", reflect)
        .entry("plan")
        .edge("plan", "act")
        .edge("act", "reflect")
        .route("reflect", &["plan", END], |s: &LoopState| if s.iteration >= s.limit { END.into() } else { "plan".into() })
        .compile()
}

pub fn initial_state(input: &Input) -> LoopState {
    LoopState { messages: Vec::new(), iteration: 0, limit: input.iterations, calls: input.calls }
}

/// A runner with the models and tools the input asks for.
pub fn runner(store: Arc<dyn Store>, input: &Input) -> Result<Runner<LoopState>> {
    let mut runner = Runner::new(graph()?, store);
    if input.calls {
        let log = input.call_log.clone().ok_or_else(|| Error::other("--calls needs --call-log FILE"))?;
        let model_log = log.clone();
        let model = ScriptedModel::with(move |req| {
            let prompt = req.messages.last().map(|m| m.content.clone()).unwrap_or_default();
            append(&model_log, &format!("model {prompt}"))?;
            Ok(ChatResponse::text(format!("planned: {prompt}")))
        })
        .named("echo")
        .delay(std::time::Duration::from_millis(input.model_latency_ms.unwrap_or(0)));
        runner = runner.models(Models::new(Arc::new(model))).tools(Tools::new().with(AppendLine { log }));
    }
    Ok(runner)
}

fn append(path: &Path, line: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::other(format!("cannot open the call log {} ({e})", path.display())))?;
    // One write: `writeln!` on a File writes the text and the newline
    // separately, and a process killed between the two would leave a line
    // that the next append continues.
    f.write_all(format!("{line}\n").as_bytes()).map_err(|e| Error::other(format!("cannot append to {} ({e})", path.display())))?;
    f.sync_data().map_err(|e| Error::other(format!("cannot flush {} ({e})", path.display())))
}

/// Appends `input.line` to the call log: a side effect that must not repeat unasked.
struct AppendLine {
    log: PathBuf,
}

#[async_trait]
impl Tool for AppendLine {
    fn name(&self) -> &str {
        "append_line"
    }
    fn description(&self) -> &str {
        "Appends one line to the call log."
    }
    fn effect(&self) -> Effect {
        Effect::SideEffect
    }
    async fn call(&self, input: Value) -> Result<Value> {
        let line = input.get("line").and_then(Value::as_str).unwrap_or("");
        append(&self.log, line)?;
        Ok(json!({"appended": line}))
    }
}

/// The reference loop emits no events of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, agentloop_core::JsonSchema)]
#[serde(tag = "name", content = "payload")]
pub enum NoEvent {}

impl agentloop_core::EventKind for NoEvent {}

pub struct ReferenceLoop;

/// `agentloop run bench-engine`: the reference loop by itself.
#[derive(clap::Args, Debug)]
pub struct ReferenceFlags {
    #[arg(long, default_value_t = 500)]
    pub iterations: u32,
    /// Make plan call a (scripted) model and act call a side-effecting tool,
    /// each logged to --call-log, to measure call journaling.
    #[arg(long)]
    pub calls: bool,
    /// File the --calls model and tool append one line to per real execution.
    #[arg(long, requires = "calls")]
    pub call_log: Option<PathBuf>,
    /// With --calls: each model call takes this long, as a real model's would.
    #[arg(long, requires = "calls")]
    pub model_latency_ms: Option<u64>,
}

impl AgentSpec for ReferenceLoop {
    const NAME: &'static str = AGENT;
    const USES_MODELS: bool = false;
    const ABOUT: &'static str = "The engine benchmark's reference loop: plan → act → reflect, N iterations, a 400-character message per node.";
    type Input = Input;
    type Flags = ReferenceFlags;
    type Settings = NoSettings;
    type State = LoopState;
    type Event = NoEvent;

    fn input(flags: ReferenceFlags, _settings: NoSettings, _data_dir: &Path) -> Result<Input> {
        Ok(Input { iterations: flags.iterations, calls: flags.calls, call_log: flags.call_log, model_latency_ms: flags.model_latency_ms })
    }

    fn settings(_input: &Input) -> &NoSettings {
        &NoSettings {}
    }

    /// An input sent whole (the server's API) may not name the call log:
    /// a file agentloop itself appends to, outside any sandbox, is chosen
    /// only on the command line.
    fn prepare(input: Input, _data_dir: &Path) -> Result<Input> {
        if input.call_log.is_some() {
            return Err(Error::other("`callLog` is set only by `agentloop run bench-engine --call-log FILE`, never through the API"));
        }
        Ok(input)
    }

    fn runner(env: &AgentEnv, input: &Input) -> Result<Runner<LoopState>> {
        runner(env.store.clone(), input)
    }

    fn initial(input: &Input) -> Result<(LoopState, Termination)> {
        Ok((initial_state(input), Termination::defaults(input.iterations.max(1))))
    }

    fn summarize(state: &LoopState, summary: &mut Summary) {
        summary.notes.push(format!("{} messages", state.messages.len()));
    }

    fn line(event: &NoEvent) -> String {
        match *event {}
    }
}

//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "agentloop", version, about = "Agentic loops you can trust on your own machine: plan, act, test, reflect, repeat.")]
pub struct Cli {
    /// Config file (default: ./agentloop.toml if present; env AGENTLOOP_CONFIG).
    #[arg(long, global = true, env = "AGENTLOOP_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where sessions are stored (env AGENTLOOP_DATA_DIR).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// fsync: every step flushed to disk (survives power loss); process: committed, survives a killed process.
    #[arg(long, global = true, value_parser = ["fsync", "process"])]
    pub durability: Option<String>,
    /// The default model: a name from `agentloop models list` or a path to any GGUF file (env AGENTLOOP_MODEL).
    #[arg(long, global = true, env = "AGENTLOOP_MODEL")]
    pub model: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List, inspect, follow, export, resume and delete sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Metrics across all sessions: iterations per success, replan rate, tokens.
    Stats(JsonFlag),
    /// Benchmarks that print one JSON object as their last line.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// The models installed under the data dir and the roles configured.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Run an agent on a task.
    #[command(subcommand)]
    Run(RunCommand),
    /// Ask questions at a prompt; the repl answers each by writing and running
    /// Python in one session that keeps its variables.
    Repl(ReplArgs),
}

#[derive(Subcommand, Debug)]
pub enum RunCommand {
    /// Plan, code, test, reflect, fix or replan, review — until the tests pass.
    Coder(CoderArgs),
    /// Restate a goal, write a validated plan of file and shell actions, run
    /// it with your approval, and replan from failures and feedback.
    Planner(PlannerArgs),
    /// Answer one question by writing Python and running it in a persistent
    /// session, until a reflection judges the answer complete.
    Repl(RunReplArgs),
}

#[derive(Args, Debug)]
pub struct RunReplArgs {
    /// The question, in plain words.
    #[arg(long)]
    pub prompt: String,
    #[command(flatten)]
    pub session: ReplArgs,
    /// Print the outcome and the answer as JSON instead of the live view.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ReplArgs {
    /// Turns (generate → run → reflect) at most per question.
    #[arg(long, default_value_t = 5)]
    pub max_turns: u32,
    /// Answer in one turn without judging the result.
    #[arg(long)]
    pub no_reflect: bool,
    /// Seconds one code block may run before it is interrupted.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// The Python session's folder (default: a new one under <data dir>/repl).
    #[arg(long)]
    pub folder: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PlannerArgs {
    /// The folder the plan works in; no path outside it is accepted.
    #[arg(long)]
    pub root: PathBuf,
    /// What you want done, in plain words.
    #[arg(long)]
    pub goal: String,
    /// all = run every step, step = ask before each, ask = show the plan and choose.
    #[arg(long, default_value = "ask", value_parser = ["all", "step", "ask"])]
    pub approve: String,
    /// Plans proposed at most (default 8, or `[planner] max_iterations`).
    #[arg(long)]
    pub max_iterations: Option<u32>,
    /// The shell RUN_COMMAND uses: sh or powershell (default sh, or `[planner] shell`).
    #[arg(long, value_parser = ["sh", "powershell"])]
    pub shell: Option<String>,
    /// Skip the fast model's one-line summary before each step.
    #[arg(long)]
    pub no_precheck: bool,
    /// Seconds a RUN_COMMAND may run before it is killed.
    #[arg(long, default_value_t = 60)]
    pub command_timeout: u64,
    /// Print the outcome as JSON instead of the live view.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CoderArgs {
    /// The folder to work in; nothing outside it is read or written.
    #[arg(long)]
    pub workspace: PathBuf,
    /// What to do, in plain words.
    #[arg(long)]
    pub task: String,
    /// The command that tests the work (default: detected from the workspace).
    #[arg(long)]
    pub test_cmd: Option<String>,
    #[arg(long, default_value_t = 5)]
    pub max_iterations: u32,
    #[arg(long, default_value_t = 2)]
    pub max_replans: u32,
    /// Abort when a reflection is less confident than this (0 to 1).
    #[arg(long, default_value_t = 0.3)]
    pub confidence_threshold: f64,
    /// Let the agent rewrite existing test files (by default it may only
    /// change the code the tests check).
    #[arg(long)]
    pub edit_tests: bool,
    /// Ask before tools that write or execute: never, on-write, always.
    #[arg(long, default_value = "on-write")]
    pub approval: String,
    /// Seconds a command (the tests included) may run before it is killed.
    #[arg(long, default_value_t = 300)]
    pub command_timeout: u64,
    /// Print the outcome as JSON instead of the live view.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum ModelsCommand {
    /// Installed models (known and other GGUF files) and each role's model.
    List(JsonFlag),
}

#[derive(Args, Debug)]
pub struct JsonFlag {
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum SessionsCommand {
    /// All sessions, newest first.
    List(JsonFlag),
    /// One session: status, timings, iterations, tool calls, messages.
    Show {
        id: String,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// A session's events, oldest first.
    Events {
        id: String,
        /// Only events with a sequence number above N.
        #[arg(long, default_value_t = 0)]
        after: u64,
        /// Keep printing new events until the session ends.
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// The session as a trajectory: one JSON object per line.
    Export {
        id: String,
        /// Write to this file instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Continue a paused or interrupted session where its journal ends.
    Resume {
        id: String,
        /// Reply to the question the session waits on, without prompting.
        #[arg(long)]
        answer: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Delete a session and its journal.
    Delete { id: String },
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// The reference loop (plan → act → reflect, N iterations) with durable steps.
    Engine(EngineBench),
    /// The embedded model: prompt and generation speed, constrained
    /// generation, cold and shared-prefix prefill (default model unless --model).
    Model(ModelBench),
    /// HumanEval's 164 problems: single-shot and/or the test-and-retry loop
    /// (default model unless --model), scored by the package's own tests.
    Humaneval(HumanEvalBench),
    /// The planner on the shipped goals (files, folders, loops, commands):
    /// valid plans first try and within 3, goals done, actions from invalid plans.
    Planner(PlannerBench),
    /// The repl on the shipped questions, with reflection and in one turn.
    Repl(ReplBench),
}

#[derive(Args, Debug)]
pub struct ReplBench {
    /// Only the first N questions.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Turns at most with reflection.
    #[arg(long, default_value_t = 5)]
    pub max_turns: u32,
    /// Per-question results, one JSON object per line (default: <data dir>/benchmarks/repl-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PlannerBench {
    /// Only the first N goals.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only the goals whose text holds this (case-insensitive); may be given
    /// more than once, to rerun the goals a full run missed.
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// Plans proposed at most per goal.
    #[arg(long, default_value_t = 4)]
    pub max_iterations: u32,
    /// Per-goal results, one JSON object per line (default: <data dir>/benchmarks/planner-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct HumanEvalBench {
    /// Only the first N problems.
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long, default_value = "both", value_parser = ["single", "loop", "both"])]
    pub mode: String,
    /// Answers the loop may try per problem.
    #[arg(long, default_value_t = 6)]
    pub attempts: u32,
    /// Per-problem results, one JSON object per line (default: <data dir>/benchmarks/humaneval-results.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ModelBench {
    /// CPU threads (default: all cores).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Tokens to generate per measurement.
    #[arg(long, default_value_t = 128)]
    pub tokens: u32,
    /// Measurements of each kind; the report gives medians.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
}

#[derive(Args, Debug)]
pub struct EngineBench {
    #[arg(long, default_value_t = 500)]
    pub iterations: u32,
    /// Database file (default: a fresh file in a temporary directory).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Session id to use (default: random).
    #[arg(long)]
    pub session_id: Option<String>,
    /// Make plan call a (scripted) model and act call a side-effecting tool,
    /// each logged to --call-log, to measure call journaling.
    #[arg(long)]
    pub calls: bool,
    /// File the --calls model and tool append one line to per real execution.
    #[arg(long, requires = "calls")]
    pub call_log: Option<PathBuf>,
}

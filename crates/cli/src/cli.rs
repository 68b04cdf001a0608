//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "agentloop", version, about = "Agentic loops you can trust on your own machine: plan, act, test, reflect, repeat.")]
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The options every command takes, wherever it is placed on the line:
/// where the configuration comes from and what it is overridden with.
#[derive(Args, Debug, Clone)]
pub struct Globals {
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
}

/// The commands that are the same whatever agents this build has. `run
/// AGENT` and the conversation commands are added from the agent registry
/// (`commands::run`).
#[derive(Subcommand, Debug)]
pub enum Command {
    /// List, inspect, follow, export, resume and delete sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Metrics across all sessions: iterations per success, replan rate, tokens.
    Stats(JsonFlag),
    /// The models installed under the data dir and the roles configured.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Serve the web UI and the HTTP API: watch, steer and start sessions in a browser.
    Serve(ServeArgs),
    /// Local document collections the research agent retrieves from.
    #[command(subcommand)]
    Corpus(CorpusCommand),
    /// Run a command under exactly the sandbox an agent's commands get, to see what it allows.
    Sandbox(SandboxArgs),
    /// Run queued sessions (`run AGENT --detach`, or the API's `"queue": true`), up to N at once, until stopped.
    Worker(WorkerArgs),
    /// Serve the agents over MCP on standard input and output, for an MCP client to start and steer sessions.
    #[command(after_help = "Tools: list_agents, run_agent, session_status, answer, pause, resume, terminate. `agentloop serve` offers the same at /mcp.")]
    Mcp,
}

#[derive(Args, Debug)]
#[command(after_help = "With [store] url (or AGENTLOOP_STORE_URL) set to a Postgres database, workers on many machines share one queue.")]
pub struct WorkerArgs {
    /// Sessions run at once.
    #[arg(long, default_value_t = 4)]
    pub slots: usize,
    /// Exit once the queue is empty and this worker's sessions have ended.
    #[arg(long)]
    pub drain: bool,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exits with the command's status: 127 when it cannot be started, 1 when the sandbox cannot be set up.\nExample: agentloop sandbox -- python3 -c \"open('/etc/x', 'w')\""
)]
pub struct SandboxArgs {
    /// The workspace: the only folder (with a private temp folder) the command may write in.
    #[arg(long, default_value = ".")]
    pub workspace: std::path::PathBuf,
    /// Let the command use the network (as `[sandbox] network = "on"` does).
    #[arg(long)]
    pub network: bool,
    /// Print the policy and exit instead of running a command.
    #[arg(long)]
    pub policy: bool,
    /// The command and its arguments (after `--`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required_unless_present = "policy")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Subcommand, Debug)]
pub enum CorpusCommand {
    /// Index Markdown, text, HTML, JSON and JSON-lines files into corpus NAME (made if new; a file added again replaces itself).
    Add {
        name: String,
        #[arg(required = true)]
        paths: Vec<std::path::PathBuf>,
        /// The field of a JSON record that holds its title.
        #[arg(long, default_value = "title")]
        title_field: String,
        /// The field of a JSON record that holds its text (default: the first of text, article, extract, content).
        #[arg(long)]
        text_field: Option<String>,
    },
    /// The corpora and how many passages each holds.
    List(JsonFlag),
    /// Delete corpus NAME and its index.
    Remove { name: String },
    /// What retrieval returns for QUERY from corpus NAME.
    Search {
        name: String,
        query: String,
        /// Passages to show.
        #[arg(short, long, default_value_t = 5)]
        k: usize,
        #[command(flatten)]
        json: JsonFlag,
    },
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub addr: std::net::SocketAddr,
    /// Serve without a token: any program or web page that can reach the
    /// address may then start commands as you. Loopback only.
    #[arg(long)]
    pub no_token: bool,
    /// A host name (besides IP addresses and localhost) the server answers
    /// to, e.g. the machine's name on your network. Repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
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
        /// Queue it for a worker (`agentloop worker`) instead of running it here.
        #[arg(long)]
        queue: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// The changes a session's attempts made, as unified diffs to review
    /// or apply with `git apply` / `patch -p1`.
    Diff {
        id: String,
        /// Only attempt N (from 1); default: every attempt, labelled.
        #[arg(long)]
        attempt: Option<usize>,
        /// With --attempt: only candidate K (from 1) of that attempt's search.
        #[arg(long, requires = "attempt")]
        candidate: Option<usize>,
    },
    /// Pause a session wherever it runs (this machine or another sharing the store).
    Pause { id: String },
    /// End a session wherever it runs, at its next step boundary.
    Terminate {
        id: String,
        /// Why, recorded with the session.
        #[arg(long, default_value = "terminated by the user")]
        reason: String,
        /// How it ended: completed (the goal is met), failed, terminated or stuck.
        #[arg(long = "as", default_value = "terminated", value_parser = ["completed", "failed", "terminated", "stuck"])]
        ending: String,
    },
    /// Put a session's workspace back as it was after step STEP (a
    /// checkpoint): shows what will change, then changes it. The session
    /// itself is not changed.
    Rewind {
        id: String,
        /// The step whose checkpoint to restore (`sessions show ID` lists them).
        #[arg(long)]
        to: u64,
        /// Do not ask before changing the files.
        #[arg(long, short)]
        yes: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// A new session from step STEP of another: its journal up to there,
    /// its files as they were there, then it runs on. The original is
    /// not changed.
    Fork {
        id: String,
        /// The step whose checkpoint to start from (`sessions show ID` lists them).
        #[arg(long)]
        at: u64,
        /// Your words for its next model call: what to do differently.
        #[arg(long)]
        hint: Option<String>,
        /// Put the files in this new or empty folder and work there,
        /// instead of rewinding the original workspace.
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Do not ask before changing the original workspace's files.
        #[arg(long, short)]
        yes: bool,
        /// Store the fork without running it (run it with `sessions resume`).
        #[arg(long)]
        no_run: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Delete a session and its journal.
    Delete { id: String },
}

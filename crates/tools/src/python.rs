//! A persistent Python session: one long-lived `python3` child speaking
//! line-delimited JSON (`python_driver.py`), whose variables live on between
//! executions. A runaway execution is interrupted by a timer inside Python
//! and the session goes on; one that ignores it is killed after a grace
//! period and the session restarts, saying that its variables were lost.
//! The working directory is the session folder, and the driver refuses
//! writes outside it and starting other programs.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_core::{Effect, Error, Result, Tool};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use crate::sandbox::Sandbox;

const DRIVER: &str = include_str!("python_driver.py");

/// Time a stuck interpreter gets past its timeout before it is killed.
const GRACE: Duration = Duration::from_secs(2);

/// What one execution produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    pub stdout: String,
    pub stderr: String,
    /// `repr` of the final expression's value, if the code ended with one.
    pub value: Option<String>,
    pub error: Option<PyError>,
    pub timed_out: bool,
    /// Characters of output dropped past the cap.
    pub truncated: u64,
    /// The interpreter had to be restarted: earlier variables are gone.
    #[serde(default)]
    pub restarted: bool,
    #[serde(default)]
    pub duration_ms: u64,
}

impl Execution {
    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PyError {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    pub traceback: String,
}

/// A running interpreter.
struct Process {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

pub struct PythonSession {
    folder: PathBuf,
    sandbox: Sandbox,
    process: Option<Process>,
    next_id: u64,
}

impl PythonSession {
    /// Starts `python3` in the sandbox's workspace, confined by it.
    pub async fn start(sandbox: &Sandbox) -> Result<Self> {
        let folder = sandbox.policy().workspace.clone();
        let mut session = Self { folder, sandbox: sandbox.clone(), process: None, next_id: 0 };
        session.process = Some(session.spawn().await?);
        Ok(session)
    }

    pub fn folder(&self) -> &Path {
        &self.folder
    }

    async fn spawn(&self) -> Result<Process> {
        let driver = self.folder.join(".agentloop-python-driver.py");
        std::fs::write(&driver, DRIVER).map_err(|e| Error::other(format!("cannot write {} ({e})", driver.display())))?;
        let mut cmd = Command::new("python3");
        cmd.arg("-u").arg("-B").arg(&driver).current_dir(&self.folder).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        self.sandbox.confine(cmd.as_std_mut());
        cmd.kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| Error::other(format!("cannot start python3 ({e}): install Python 3")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::other("python3's pipes could not be opened"));
        };
        let mut lines = BufReader::new(stdout).lines();
        let hello = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .map_err(|_| Error::other("python3 did not start within 20 s"))?
            .map_err(|e| Error::other(format!("python3 did not start ({e})")))?;
        match hello.as_deref().map(serde_json::from_str::<Value>) {
            Some(Ok(v)) if v["ready"] == true => Ok(Process { child, stdin, lines }),
            _ => Err(Error::other("python3 started but did not speak the session protocol")),
        }
    }

    /// Runs `code` in the session's namespace, interrupted after `timeout`.
    pub async fn execute(&mut self, code: &str, timeout: Duration) -> Result<Execution> {
        let started = Instant::now();
        let mut restarted = false;
        if self.process.is_none() {
            self.process = Some(self.spawn().await?);
            restarted = true;
        }
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"id": id, "code": code, "timeout": timeout.as_secs_f64()});
        let reply = self.exchange(&request.to_string(), timeout + GRACE).await;
        let mut execution = match reply {
            Ok(e) => e,
            Err(why) => {
                // Killed or crashed: start over, and say the variables are gone.
                if let Some(mut p) = self.process.take() {
                    let _ = p.child.kill().await;
                }
                self.process = Some(self.spawn().await?);
                restarted = true;
                Execution {
                    error: Some(PyError {
                        kind: "SessionRestarted".into(),
                        message: format!("{why}; the Python session was restarted and its variables are gone"),
                        traceback: String::new(),
                    }),
                    timed_out: why.contains("limit"),
                    ..Execution::default()
                }
            }
        };
        execution.restarted = restarted;
        // What the code planted where git or agentloop would run it goes,
        // and the code's output says so.
        for said in self.sandbox.undo_protected() {
            execution.stderr = format!("{said}\n{}", execution.stderr);
        }
        execution.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(execution)
    }

    async fn exchange(&mut self, line: &str, limit: Duration) -> std::result::Result<Execution, String> {
        let Some(p) = self.process.as_mut() else { return Err("no interpreter".into()) };
        p.stdin.write_all(format!("{line}\n").as_bytes()).await.map_err(|e| format!("the interpreter stopped listening ({e})"))?;
        p.stdin.flush().await.map_err(|e| format!("the interpreter stopped listening ({e})"))?;
        let next = tokio::time::timeout(limit, p.lines.next_line())
            .await
            .map_err(|_| format!("the code ignored its time limit of {}s", limit.saturating_sub(GRACE).as_secs()))?;
        match next {
            Ok(Some(text)) => serde_json::from_str(&text).map_err(|e| format!("the interpreter answered something unreadable ({e})")),
            Ok(None) => Err("the interpreter exited (the code may have called os._exit or crashed it)".into()),
            Err(e) => Err(format!("the interpreter's output could not be read ({e})")),
        }
    }
}

/// The session as a tool (`python`), so executions are journaled through
/// `Step` like any other call. It starts the interpreter on first use.
pub struct Python {
    sandbox: Sandbox,
    timeout: Duration,
    session: Arc<Mutex<Option<PythonSession>>>,
}

impl Python {
    /// A session in the sandbox's workspace, started on first use.
    pub fn new(sandbox: Sandbox, timeout: Duration) -> Self {
        Self { sandbox, timeout, session: Arc::new(Mutex::new(None)) }
    }

    /// What the session's code is confined by.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }
}

#[derive(Deserialize)]
struct PythonInput {
    code: String,
    timeout_secs: Option<f64>,
    /// Code that ran cleanly in an earlier life of the session: replayed,
    /// silently, when this call has to start a new interpreter.
    #[serde(default)]
    restore: Vec<String>,
}

#[async_trait]
impl Tool for Python {
    fn name(&self) -> &str {
        "python"
    }
    fn description(&self) -> &str {
        "Run Python code in a persistent session; variables are kept between calls. Returns stdout, stderr, the final expression's value and any error."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"code": {"type": "string"}, "timeout_secs": {"type": "number"}}, "required": ["code"]})
    }
    fn effect(&self) -> Effect {
        Effect::SideEffect
    }
    async fn call(&self, input: Value) -> Result<Value> {
        let PythonInput { code, timeout_secs, restore } =
            serde_json::from_value(input).map_err(|e| Error::Tool { tool: self.name().into(), message: format!("the input needs a `code` string ({e})") })?;
        let timeout = timeout_secs.filter(|t| t.is_finite() && *t > 0.0).map(Duration::from_secs_f64).unwrap_or(self.timeout);
        let mut guard = self.session.lock().await;
        if guard.is_none() {
            let mut fresh = PythonSession::start(&self.sandbox).await?;
            for earlier in &restore {
                fresh.execute(earlier, timeout).await?;
            }
            *guard = Some(fresh);
        }
        let Some(session) = guard.as_mut() else { return Err(Error::other("the Python session could not be started")) };
        let mut execution = session.execute(&code, timeout).await?;
        if let Some(error) = execution.error.as_mut() {
            let refused = self.sandbox.explain(&format!("{}\n{}", error.message, error.traceback));
            if !refused.is_empty() {
                error.message = format!("{} ({})", error.message, refused.join("; "));
            }
        }
        serde_json::to_value(execution).map_err(|e| Error::other(format!("cannot encode the execution ({e})")))
    }
}

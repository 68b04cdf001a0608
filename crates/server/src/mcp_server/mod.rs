//! agentloop as an MCP server: other agents list our agents, start a
//! session, follow it, answer its questions and steer it, over stdio
//! (`agentloop mcp`) or streamable HTTP (`/mcp` on `agentloop serve`,
//! behind the same token and Origin rules as the API). Each tool is the
//! REST route of the same name in MCP's clothes, so both faces behave alike.
//! A client that can ask its user is asked a session's questions itself
//! (`ask`).

mod ask;

use std::sync::Arc;
use std::time::Duration;

use agentloop_core::Ending;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::checkpoints::{fork_session, ForkRequest, Forked};
use crate::control::{self, AnswerRequest};
use crate::error::ApiResult;
use crate::sessions::{self, StartRequest};
use crate::state::{changed_within, AppState};

/// The longest `session_status` waits for a change.
const MAX_WAIT: u64 = 50;

#[derive(Clone)]
pub struct AgentloopMcp {
    app: Arc<AppState>,
}

impl AgentloopMcp {
    pub fn new(app: Arc<AppState>) -> Self {
        Self { app }
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct RunAgent {
    /// The agent's name, as `list_agents` gives it.
    agent: String,
    /// The session's input, as the agent's input schema describes it.
    #[serde(default)]
    input: Value,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    session_id: String,
    /// Seconds to wait for the session to change (move on, end, or ask
    /// something) before answering; at most 50, 0 answers at once.
    #[serde(default, rename = "wait_s")]
    wait_s: u64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    session_id: String,
    /// The id of the question the session waits on (`session_status` gives it).
    interrupt_id: String,
    /// The reply: one of the question's choices, or what it asks for.
    reply: Value,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef {
    session_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Terminate {
    session_id: String,
    /// Why, in a few words (kept with the session).
    #[serde(default)]
    reason: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkSession {
    session_id: String,
    /// The step to go back to: one of the session's checkpoints (`session_status` lists them).
    step: u64,
    /// What to do differently, said to the fork's next model call.
    #[serde(default)]
    hint: Option<String>,
    /// A new or empty folder for the fork's files. Without it the fork
    /// works in the session's own folder, which is changed only with `confirm`.
    #[serde(default)]
    workspace: Option<std::path::PathBuf>,
    /// Change the session's own folder to the step's files.
    #[serde(default)]
    confirm: bool,
}

#[tool_router]
impl AgentloopMcp {
    /// The agents this agentloop runs, each with what it does and the JSON schema of its input.
    #[tool(annotations(read_only_hint = true))]
    async fn list_agents(&self) -> CallToolResult {
        structured(sessions::agent_list(&self.app))
    }

    /// Starts a session of an agent and returns its `sessionId` at once; follow it with `session_status`.
    #[tool]
    async fn run_agent(&self, Parameters(p): Parameters<RunAgent>) -> CallToolResult {
        answer(sessions::launch(&self.app, StartRequest { agent: p.agent, input: p.input, queue: false }).await)
    }

    /// A session's status, progress, the question it waits on (if any) and its summary; waits up to `wait_s` seconds for a change first. A client that supports elicitation is asked the question itself, and the reply answers it.
    #[tool]
    async fn session_status(
        &self,
        Parameters(p): Parameters<SessionStatus>,
        ctx: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> CallToolResponse {
        let wait = Duration::from_secs(p.wait_s.min(MAX_WAIT));
        let asking = ask::Asking::of(&ctx);
        // The reply to the question the last round asked, if any: a decline
        // leaves the question for `answer`, and is not asked again here.
        let mut ask_again = true;
        if let Some((interrupt_id, reply)) = ask::from_round(state.as_deref(), responses.as_ref()) {
            match reply {
                Some(reply) => {
                    if let Err(e) = control::answer_session(&self.app, &p.session_id, AnswerRequest { interrupt_id, reply }) {
                        return answer(Err(e)).into();
                    }
                }
                None => ask_again = false,
            }
        }
        let mut report = match self.status(&p.session_id, wait).await {
            Ok(report) => report,
            Err(e) => return answer(Err(e)).into(),
        };
        while let Some((interrupt_id, params)) = ask::question(&report).filter(|_| ask_again) {
            match asking {
                ask::Asking::No => break,
                ask::Asking::InRounds => return ask::round(interrupt_id, params).into(),
                ask::Asking::InCall => {
                    let Ok(result) = ctx.peer.create_elicitation(params).await else { break };
                    let Some(reply) = ask::accepted(&result.action, result.content.as_ref()) else { break };
                    if let Err(e) = control::answer_session(&self.app, &p.session_id, AnswerRequest { interrupt_id, reply }) {
                        return answer(Err(e)).into();
                    }
                    report = match self.status(&p.session_id, wait).await {
                        Ok(report) => report,
                        Err(e) => return answer(Err(e)).into(),
                    };
                }
            }
        }
        structured(report).into()
    }

    /// Answers the question a session waits on (an approval: yes, no or always).
    #[tool]
    async fn answer(&self, Parameters(p): Parameters<Answer>) -> CallToolResult {
        let done = control::answer_session(&self.app, &p.session_id, AnswerRequest { interrupt_id: p.interrupt_id, reply: p.reply });
        answer(done.map(|()| json!({"sessionId": p.session_id, "answered": true})))
    }

    /// Pauses a running session before its next step.
    #[tool]
    async fn pause(&self, Parameters(p): Parameters<SessionRef>) -> CallToolResult {
        answer(control::pause_session(&self.app, &p.session_id).map(|()| json!({"sessionId": p.session_id, "asked": "pause"})))
    }

    /// Resumes a paused or interrupted session.
    #[tool]
    async fn resume(&self, Parameters(p): Parameters<SessionRef>) -> CallToolResult {
        answer(control::resume_session(&self.app, &p.session_id).await.map(|()| json!({"sessionId": p.session_id, "asked": "resume"})))
    }

    /// A new session from a step of another: its journal up to that step,
    /// its files as they were there, and a hint for what to do differently;
    /// it starts at once. The original session is not changed.
    #[tool]
    async fn fork_session(&self, Parameters(p): Parameters<ForkSession>) -> CallToolResult {
        let req = ForkRequest { step: p.step, hint: p.hint, workspace: p.workspace, confirm: p.confirm };
        answer(fork_session(&self.app, &p.session_id, req).await.map(|forked| match forked {
            Forked::Started(v) | Forked::Asked(v) => v,
        }))
    }

    /// Ends a session for good.
    #[tool(annotations(destructive_hint = true))]
    async fn terminate(&self, Parameters(p): Parameters<Terminate>) -> CallToolResult {
        let ended = control::end(&self.app, &p.session_id, Ending::Terminated, p.reason).await;
        answer(ended.map(|_| json!({"sessionId": p.session_id, "asked": "terminate"})))
    }
}

impl AgentloopMcp {
    /// The session as `session_status` reports it, once it differs from
    /// how it was when asked, or after `wait`.
    async fn status(&self, id: &str, wait: Duration) -> ApiResult<Value> {
        let mut changed = self.app.changed.subscribe();
        let first = report(id, &sessions::view(&self.app, id)?);
        let until = tokio::time::Instant::now() + wait;
        let mut now = first.clone();
        while now == first && tokio::time::Instant::now() < until && !is_settled(&now) {
            // Woken by this session alone: reading a whole session is not cheap.
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            changed_within(&mut changed, id, self.app.recheck_after().min(left)).await;
            now = report(id, &sessions::view(&self.app, id)?);
        }
        Ok(now)
    }
}

/// What `session_status` tells: enough to follow a session and act on it.
fn report(id: &str, view: &Value) -> Value {
    let pending = &view["pending"];
    json!({
        "sessionId": id,
        "agent": view["agent"],
        "status": view["status"],
        "progress": view["progress"],
        "pendingQuestion": if pending.is_null() { Value::Null } else {
            json!({"interruptId": pending["id"], "question": pending["question"], "choices": pending["request"]["choices"], "request": pending["request"]})
        },
        "summary": view["summary"],
        "checkpoints": view["checkpoints"],
        "forkedFrom": view["forkedFrom"],
    })
}

/// Nothing will change without the caller: the session ended, or waits on a question.
fn is_settled(report: &Value) -> bool {
    !report["pendingQuestion"].is_null() || matches!(report["status"].as_str(), Some("completed" | "error" | "terminated"))
}

fn structured(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
}

/// A route's answer as a tool result: its JSON, or its sentence as an error.
fn answer(result: ApiResult<Value>) -> CallToolResult {
    match result {
        Ok(value) => structured(value),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.message)]),
    }
}

#[tool_handler]
impl ServerHandler for AgentloopMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agentloop", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Run agentloop's agents: list_agents, then run_agent, then session_status until the session ends or asks a question (answer it with answer).",
            )
    }
}

/// `/mcp`: one MCP service per client session, on this server's state.
/// The guard in front of it checks the host, the token and the origin as
/// for the API, so the SDK's own host check is left off.
pub fn http_service(app: Arc<AppState>) -> StreamableHttpService<AgentloopMcp, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts().with_max_request_body_bytes(crate::BODY_LIMIT);
    StreamableHttpService::new(move || Ok(AgentloopMcp::new(app.clone())), Arc::new(LocalSessionManager::default()), config)
}

/// Serves one client on standard input and output until it goes away.
pub async fn serve_stdio(app: Arc<AppState>) -> std::io::Result<()> {
    let running = AgentloopMcp::new(app).serve(rmcp::transport::stdio()).await.map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

//! What the repl remembers, as its users specified it: the messages, the
//! system prompt (built once), the original prompt, the current response,
//! the code blocks, the execution results as (output, is_error) pairs and
//! the turn count. The Python session itself is the `python` tool; the
//! state keeps its folder.

use agentloop_core::{Fields, JsonSchema, Message, Role, State, ToolCall};
use agentloop_tools::mcp_client::Listing;
use agentloop_tools::Approvals;

use super::extract::code_blocks;
use serde::{Deserialize, Serialize};

use agentloop_agent::registry::settings::declare_settings;

declare_settings! {
    /// The repl's settings: flags of `run repl` and `repl`, keys of `[repl]`
    /// in agentloop.toml, fields of its JSON input.
    pub struct ReplSettings {
        /// Turns (generate → run → reflect) at most per question.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        pub max_turns: u32 = 5,
        /// Seconds one code block may run before it is interrupted.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        #[serde(alias = "timeoutSecs")]
        pub timeout: u64 = 30,
        /// Judge each turn's result (`--no-reflect`: answer in one turn without judging).
        #[arg(long = "no-reflect", action = clap::ArgAction::SetFalse)]
        pub reflect: bool = true,
        /// Programs that vote on the answer, the turn's and independent
        /// samples (1: a judge instead of a vote; `agree.rs`).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        pub candidates: u32 = 1,
    }
}

/// REFLECT's verdict on a turn.
///
/// `reasoning` comes first on purpose: the schema keeps declaration order
/// and the model writes the keys in that order, so a judge that decides
/// `is_complete` first only rationalises the guess afterwards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// What the question asks for and whether the code does exactly that.
    #[schemars(length(max = 400))]
    pub reasoning: String,
    /// True when the code ran without errors and its output answers the
    /// original question completely.
    pub is_complete: bool,
    /// If not complete: the one thing to do next (fix an error, finish a
    /// missing part, print the result). Empty when complete.
    #[schemars(length(max = 300))]
    pub next_action: String,
}

/// One value the candidates printed, and how many printed it (`agree.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Vote {
    pub value: String,
    pub votes: u32,
}

/// One block's run: what it printed (and its value or error) and whether it failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult(pub String, pub bool);

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplState {
    pub messages: Vec<Message>,
    pub system_prompt: String,
    pub original_prompt: String,
    pub current_response: String,
    /// The current turn's blocks.
    pub code_blocks: Vec<String>,
    /// Every block's result, all turns, in order.
    pub execution_results: Vec<ExecutionResult>,
    pub turn_count: u32,
    pub config: ReplSettings,
    /// The Python session's folder.
    pub folder: String,
    pub verdicts: Vec<Verdict>,
    /// Blocks that ran without error, oldest first: replayed into a fresh
    /// interpreter after a restart so the namespace is what it was.
    pub history: Vec<String>,
    /// The value the candidates agreed on.
    #[serde(default)]
    pub agreed: Option<String>,
    /// The last vote, most votes first.
    #[serde(default)]
    pub votes: Vec<Vote>,
    /// The MCP servers' tools as the session first listed them.
    #[serde(default)]
    pub mcp: Vec<Listing>,
    /// Changes to those servers already told (each once).
    #[serde(default)]
    pub mcp_changes: Vec<String>,
    /// The MCP calls the last answer asked for, to run next.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// What the user approved for the session ("always").
    #[serde(default)]
    pub approvals: Approvals,
}

impl State for ReplState {
    fn fields(&self, f: &mut Fields<'_>) {
        f.log("messages", &self.messages);
        f.value("systemPrompt", &self.system_prompt);
        f.value("originalPrompt", &self.original_prompt);
        f.value("currentResponse", &self.current_response);
        f.value("codeBlocks", &self.code_blocks);
        f.log("executionResults", &self.execution_results);
        f.value("turnCount", &self.turn_count);
        f.value("config", &self.config);
        f.value("folder", &self.folder);
        f.log("verdicts", &self.verdicts);
        f.log("history", &self.history);
        f.value("agreed", &self.agreed);
        f.value("votes", &self.votes);
        f.value("mcp", &self.mcp);
        f.value("mcpChanges", &self.mcp_changes);
        f.value("toolCalls", &self.tool_calls);
        f.value("approvals", &self.approvals);
    }
}

impl ReplState {
    pub fn new(prompt: impl Into<String>, folder: impl Into<String>, config: ReplSettings) -> Self {
        Self { original_prompt: prompt.into(), folder: folder.into(), config, ..Self::default() }
    }

    pub fn last_verdict(&self) -> Option<&Verdict> {
        self.verdicts.last()
    }

    /// The results of the current turn's blocks.
    pub fn turn_results(&self) -> &[ExecutionResult] {
        &self.execution_results[self.execution_results.len().saturating_sub(self.code_blocks.len())..]
    }

    /// An earlier turn than the current one wrote exactly `code`.
    pub fn written_before(&self, code: &str) -> bool {
        let assistant: Vec<&Message> = self.messages.iter().filter(|m| m.role == Role::Assistant).collect();
        let earlier = &assistant[..assistant.len().saturating_sub(1)];
        earlier.iter().any(|m| code_blocks(&m.content).iter().any(|c| c == code))
    }

    /// The answer to show the user: the value the candidates agreed on (or
    /// the one value printed, when only one program ran to an answer); when
    /// they disagreed, the alternatives; else the last output if code ran,
    /// or the text.
    pub fn answer(&self) -> String {
        if let Some(value) = &self.agreed {
            return value.clone();
        }
        if let [only] = self.votes.as_slice() {
            return only.value.clone();
        }
        if !self.votes.is_empty() {
            let shown = self.votes.iter().map(|v| format!("{} ({} of the programs)", v.value, v.votes)).collect::<Vec<_>>().join("; ");
            return format!("The programs disagree, so no answer is given: {shown}");
        }
        match self.execution_results.last() {
            Some(ExecutionResult(output, _)) if !self.code_blocks.is_empty() => output.trim().to_string(),
            _ => self.current_response.trim().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_judge_reasons_before_it_decides() {
        let schema = agentloop_core::json_schema_of::<Verdict>();
        let keys: Vec<&str> = schema["properties"].as_object().map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(keys, ["reasoning", "is_complete", "next_action"]);
    }
}

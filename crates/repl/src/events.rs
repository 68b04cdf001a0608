//! The repl's events and how the live view shows them.

use agentloop_core::{EventKind, JsonSchema};
use serde::{Deserialize, Serialize};

use super::state::Vote;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "name", content = "payload", rename_all_fields = "camelCase")]
pub enum ReplEvent {
    /// The model's text for a turn (also streamed token by token to the sink).
    #[serde(rename = "repl:response")]
    Response { turn: u32, text: String },
    /// The code blocks taken from the turn's text.
    #[serde(rename = "repl:code")]
    Code { turn: u32, blocks: Vec<String> },
    /// One block's run.
    #[serde(rename = "repl:output")]
    Output { turn: u32, block: usize, output: String, is_error: bool },
    /// REFLECT's verdict on the turn.
    #[serde(rename = "repl:verdict")]
    Verdict { turn: u32, is_complete: bool, reasoning: String, next_action: String },
    /// REFLECT's cross-check: an independent program's answer against the turn's.
    #[serde(rename = "repl:check")]
    Check { turn: u32, answer: String, check: String, failed: bool, agrees: bool },
    /// AGREE's vote: each value printed with its votes, and the value chosen
    /// (none: the programs disagree, and the repl says so).
    #[serde(rename = "repl:agreement")]
    Agreement { turn: u32, votes: Vec<Vote>, chosen: Option<String> },
    /// An MCP tool call the model asked for, with what came back.
    #[serde(rename = "repl:tool")]
    Tool { turn: u32, tool: String, arguments: serde_json::Value, result: String },
    /// Something the user should know that changes nothing by itself (an
    /// MCP server whose tools changed since the session started).
    #[serde(rename = "repl:notice")]
    Notice { text: String },
}

impl EventKind for ReplEvent {}

impl ReplEvent {
    /// The live line. The model's text was streamed as it came, so its
    /// event only ends the line.
    pub fn line(&self) -> String {
        let indent = |t: &str| t.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n");
        match self {
            Self::Response { .. } => String::new(),
            Self::Code { blocks, .. } if blocks.is_empty() => "  (no code: the answer is the text)".into(),
            Self::Code { blocks, .. } => {
                blocks.iter().enumerate().map(|(i, b)| format!("  code block {}:\n{}", i + 1, indent(b))).collect::<Vec<_>>().join("\n")
            }
            Self::Output { block, output, is_error, .. } => format!("  {} block {block}:\n{}", if *is_error { "✗" } else { "✓" }, indent(output)),
            Self::Check { check, failed, agrees, .. } => {
                format!(
                    "  cross-check: {} ({check})",
                    if *agrees {
                        "agrees"
                    } else if *failed {
                        "its program failed"
                    } else {
                        "DISAGREES"
                    }
                )
            }
            Self::Agreement { votes, chosen, .. } => {
                let shown = votes.iter().map(|v| format!("{} ×{}", v.value, v.votes)).collect::<Vec<_>>().join(" · ");
                match chosen {
                    Some(value) => format!("  agreed: {value} ({shown})"),
                    None => format!("  no agreement, so no answer is chosen: {shown}"),
                }
            }
            Self::Tool { tool, arguments, result, .. } => format!("  ⚙ {tool} {arguments}\n{}", indent(result)),
            Self::Notice { text } => format!("  note: {text}"),
            Self::Verdict { is_complete, reasoning, next_action, .. } => format!(
                "  verdict: {} — {reasoning}{}",
                if *is_complete { "complete" } else { "not complete" },
                Some(next_action).filter(|a| !a.is_empty()).map(|a| format!(" → next: {a}")).unwrap_or_default()
            ),
        }
    }
}

//! What a finished (or paused) session came to, the same for every agent:
//! the engine's figures, and what the agent did — files changed, a plan, an
//! answer — each where it applies.

use agentloop_core::journal::SessionMeta;
use agentloop_core::{metrics, JsonSchema, SessionStatus};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub session_id: String,
    pub agent: String,
    pub status: SessionStatus,
    pub finish_reason: Option<String>,
    /// Completed for a reason other than a limit.
    pub reached_goal: bool,
    /// How it ended, in words (`metrics::ending`): never "completed" for a
    /// session short of its goal.
    #[serde(default)]
    pub ending: String,
    /// Where the work stands when the goal was not reached: what the files
    /// hold (the agent's own words; none when it has nothing to add).
    #[serde(default)]
    pub standing: Option<String>,
    pub iterations: u32,
    pub tokens: u64,
    /// Running time, paused time excluded.
    pub active_ms: u64,
    /// Files the session changed, with line counts against the originals.
    pub changed_files: Vec<FileChange>,
    /// The plan that ran (or the last one proposed), one action per line.
    pub plan: Vec<String>,
    pub answer: Option<String>,
    /// What else the agent reports, one sentence each.
    pub notes: Vec<String>,
    /// Each attempt's change, as a unified diff (`sessions diff`).
    #[serde(default)]
    pub patches: Vec<Patch>,
    /// The passages the answer cites, by the numbers it cites them with.
    #[serde(default)]
    pub citations: Vec<Citation>,
    /// How sure the agent is of its answer, 0–1 (the research agent: the
    /// judge's mean confidence over supported claims).
    #[serde(default)]
    pub confidence: Option<f32>,
    /// Share of the answer's claims its citations support.
    #[serde(default)]
    pub faithfulness: Option<f32>,
}

/// A passage an answer cites.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    /// As the answer writes it: `[number]`.
    pub number: u32,
    pub passage_id: String,
    /// The document's title.
    pub title: String,
    /// Character range of the passage in its document.
    pub start: usize,
    pub end: usize,
    /// The passage's sentence that carries the claim.
    pub sentence: String,
}

/// One attempt's change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Patch {
    /// Which attempt and how it went, in words.
    pub label: String,
    pub diff: String,
    /// The candidates tried before this change was kept, each its own
    /// labelled patch (empty without a search).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Patch>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    pub path: String,
    pub added: usize,
    pub removed: usize,
}

impl Summary {
    /// The engine's part, before the agent adds its own.
    pub fn of(meta: &SessionMeta) -> Self {
        Self {
            session_id: meta.id.clone(),
            agent: meta.agent.clone(),
            status: meta.status,
            finish_reason: meta.finish_reason.clone(),
            reached_goal: metrics::reached_goal(meta.status, meta.finish_reason.as_deref()),
            ending: metrics::ending(meta.status, meta.finish_reason.as_deref()),
            standing: None,
            iterations: meta.progress.iterations,
            tokens: meta.progress.tokens(),
            active_ms: meta.progress.active_ms(),
            changed_files: Vec::new(),
            plan: Vec::new(),
            answer: None,
            notes: Vec::new(),
            patches: Vec::new(),
            citations: Vec::new(),
            confidence: None,
            faithfulness: None,
        }
    }

    /// The agent's part, for people: one line per item.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.standing.iter().cloned().collect();
        if !self.changed_files.is_empty() {
            let added: usize = self.changed_files.iter().map(|f| f.added).sum();
            let removed: usize = self.changed_files.iter().map(|f| f.removed).sum();
            out.push(format!("changed {} file(s), +{added} -{removed} lines", self.changed_files.len()));
        }
        out.extend(self.notes.iter().cloned());
        if let Some(answer) = &self.answer {
            out.push(format!("answer: {answer}"));
        }
        for c in &self.citations {
            out.push(format!("  [{}] {}: \"{}\"", c.number, c.title, c.sentence));
        }
        let percent = |x: f32| format!("{:.0}%", x * 100.0);
        match (self.faithfulness, self.confidence) {
            (Some(f), Some(c)) => out.push(format!("faithfulness {} (claims their citations support), confidence {}", percent(f), percent(c))),
            (Some(f), None) => out.push(format!("faithfulness {}", percent(f))),
            _ => {}
        }
        out
    }
}

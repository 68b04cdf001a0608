//! The `Tool` port. A tool declares its effect so the runner knows whether it
//! must record an intent before running it, and what to do with an intent that
//! has no result after a crash.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::ToolSpec;
use crate::Result;

/// What running a tool does to the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads only: no intent is recorded, re-running is harmless.
    ReadOnly,
    /// Changes the world, but running it twice equals running it once:
    /// an unresolved intent is retried on resume.
    Idempotent,
    /// Changes the world and must not run twice unasked: an unresolved intent
    /// pauses the session and asks the user whether to retry.
    SideEffect,
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the input.
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn effect(&self) -> Effect {
        Effect::SideEffect
    }
    /// Runs the tool. An `Err` is recorded as a failed call.
    async fn call(&self, input: Value) -> Result<Value>;
}

/// Tools a session knows by name only once something is reached (the
/// servers of a session, started on first use): asked for a name that
/// `Tools` does not hold and that starts with the source's prefix.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The tool called `name`, when this source has one.
    async fn find(&self, name: &str) -> Result<Option<Arc<dyn Tool>>>;
}

/// The tools a session may call, by name.
#[derive(Clone, Default)]
pub struct Tools {
    by_name: BTreeMap<String, Arc<dyn Tool>>,
    /// Sources by the prefix of the names they answer for.
    sources: Vec<(String, Arc<dyn ToolSource>)>,
}

impl Tools {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        self.add(Arc::new(tool));
        self
    }

    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.by_name.insert(tool.name().to_string(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name)
    }

    /// Names starting with `prefix` that no tool here has are looked up in `source`.
    pub fn add_source(&mut self, prefix: &str, source: Arc<dyn ToolSource>) {
        self.sources.push((prefix.to_string(), source));
    }

    /// The tool called `name`, here or in a source.
    pub async fn find(&self, name: &str) -> Result<Option<Arc<dyn Tool>>> {
        if let Some(tool) = self.by_name.get(name) {
            return Ok(Some(tool.clone()));
        }
        for (prefix, source) in &self.sources {
            if name.starts_with(prefix.as_str()) {
                return source.find(name).await;
            }
        }
        Ok(None)
    }

    /// Specs for a model request, in name order (a source's tools are
    /// offered by the agent that knows them).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.by_name.values().map(|t| ToolSpec { name: t.name().to_string(), description: t.description().to_string(), parameters: t.parameters() }).collect()
    }
}

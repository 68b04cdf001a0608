//! What a server offers a session: its tools with their schemas, and a
//! hash of them. The listing is journaled when a session starts, so a
//! session resumed later, here or on another machine, sees the tools it
//! planned with, and a server whose tools changed meanwhile is noticed.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::approval::ApprovalPolicy;

/// One tool as the model and the approval policy see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `readOnlyHint`: the call changes nothing, so it counts as a read.
    pub read_only: bool,
    /// `idempotentHint`: calling it twice equals once, so a call cut short
    /// by a crash may simply run again.
    pub idempotent: bool,
}

impl From<rmcp::model::Tool> for ListedTool {
    fn from(t: rmcp::model::Tool) -> Self {
        let hint = |f: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| t.annotations.as_ref().and_then(f).unwrap_or(false);
        Self {
            read_only: hint(|a| a.read_only_hint),
            idempotent: hint(|a| a.idempotent_hint),
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or_default().to_string(),
            input_schema: Value::Object((*t.input_schema).clone()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    pub server: String,
    pub tools: Vec<ListedTool>,
    /// SHA-256 of the tools in name order, hex.
    pub hash: String,
    /// Which of its calls need a person's yes (`approval` in its table).
    #[serde(default)]
    pub approval: ApprovalPolicy,
    /// False when its table says `sandbox = "off"`, which the live view shows.
    #[serde(default = "confined")]
    pub sandboxed: bool,
}

fn confined() -> bool {
    true
}

impl Listing {
    pub fn new(server: &str, mut tools: Vec<ListedTool>) -> Self {
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let hash = Sha256::digest(serde_json::to_vec(&tools).unwrap_or_default()).iter().map(|b| format!("{b:02x}")).collect();
        Self { server: server.to_string(), tools, hash, approval: ApprovalPolicy::default(), sandboxed: true }
    }

    /// The listed tool called `name` (the server's own name for it).
    pub fn tool(&self, name: &str) -> Option<&ListedTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// One sentence when the server's tools differ from those `journaled`
    /// when the session started; `None` when they are the same.
    pub fn changed_since(&self, journaled: &Listing) -> Option<String> {
        if self.hash == journaled.hash {
            return None;
        }
        let names = |l: &Listing| l.tools.iter().map(|t| t.name.clone()).collect::<std::collections::BTreeSet<_>>();
        let (then, now) = (names(journaled), names(self));
        let added: Vec<_> = now.difference(&then).cloned().collect();
        let gone: Vec<_> = then.difference(&now).cloned().collect();
        let what = match (added.is_empty(), gone.is_empty()) {
            (true, true) => "changed the schemas of its tools".to_string(),
            (false, true) => format!("added {}", added.join(", ")),
            (true, false) => format!("no longer offers {}", gone.join(", ")),
            (false, false) => format!("added {} and no longer offers {}", added.join(", "), gone.join(", ")),
        };
        Some(format!("MCP server `{}` {what} since this session started; the session goes on with the tools it has now", self.server))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: Value) -> ListedTool {
        ListedTool { name: name.into(), description: String::new(), input_schema: schema, read_only: false, idempotent: false }
    }

    #[test]
    fn the_hash_follows_the_schemas_not_the_order_and_a_change_is_one_sentence() {
        let a = Listing::new("s", vec![tool("x", json!({})), tool("y", json!({}))]);
        assert_eq!(a.hash, Listing::new("s", vec![tool("y", json!({})), tool("x", json!({}))]).hash);
        let schema = Listing::new("s", vec![tool("x", json!({"type": "object"})), tool("y", json!({}))]);
        assert_eq!(
            schema.changed_since(&a).unwrap(),
            "MCP server `s` changed the schemas of its tools since this session started; the session goes on with the tools it has now"
        );
        let swapped = Listing::new("s", vec![tool("x", json!({})), tool("z", json!({}))]);
        assert!(swapped.changed_since(&a).unwrap().contains("added z and no longer offers y"));
        assert_eq!(a.changed_since(&a), None);
    }
}

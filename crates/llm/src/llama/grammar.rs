//! Constrained decoding: a JSON schema or a Lark grammar becomes an
//! llguidance matcher that masks, token by token, everything that could not
//! continue a matching document — so the answer always parses.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::{json, Value};

/// Built once per model: indexing the vocabulary takes a noticeable moment.
pub struct Grammars {
    factory: ParserFactory,
}

impl Grammars {
    pub fn new(model: &LlamaModel) -> Result<Self, String> {
        let env = LlamaSampler::llguidance_tok_env(model);
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| format!("the grammar engine could not index the vocabulary ({e})"))?;
        factory.quiet();
        Ok(Self { factory })
    }

    /// A sampler that only lets through tokens continuing a JSON document
    /// valid against `schema`.
    pub fn json_sampler(&self, schema: &Value) -> Result<LlamaSampler, String> {
        self.sampler(TopLevelGrammar::from_json_schema(compact(schema)), "the JSON schema cannot be turned into a grammar")
    }

    /// A sampler that only lets through tokens continuing a text that
    /// `lark` (llguidance's Lark dialect) accepts.
    pub fn lark_sampler(&self, lark: &str) -> Result<LlamaSampler, String> {
        self.sampler(TopLevelGrammar::from_lark(lark.to_string()), "the grammar is not valid Lark")
    }

    fn sampler(&self, grammar: TopLevelGrammar, invalid: &str) -> Result<LlamaSampler, String> {
        let matcher = Matcher::new(self.factory.create_parser(grammar));
        if let Some(why) = matcher.get_error() {
            return Err(format!("{invalid} ({why})"));
        }
        Ok(LlamaSampler::from(matcher))
    }
}

/// Compact output (no free whitespace: a small model would otherwise pad
/// with newlines), and unknown schema keywords tolerated rather than fatal,
/// since generated schemas carry `format`s and titles a grammar cannot use.
pub(super) fn compact(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(map) = schema.as_object_mut() {
        map.entry("x-guidance").or_insert_with(|| json!({"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": ", "lenient": true}));
    }
    schema
}

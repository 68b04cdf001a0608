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
    /// valid against `schema`, and its witness.
    pub fn json_sampler(&self, schema: &Value) -> Result<(LlamaSampler, Witness), String> {
        self.sampler(TopLevelGrammar::from_json_schema(compact(schema)), "the JSON schema cannot be turned into a grammar")
    }

    /// A sampler that only lets through tokens continuing a text that
    /// `lark` (llguidance's Lark dialect) accepts, and its witness.
    pub fn lark_sampler(&self, lark: &str) -> Result<(LlamaSampler, Witness), String> {
        self.sampler(TopLevelGrammar::from_lark(lark.to_string()), "the grammar is not valid Lark")
    }

    fn sampler(&self, grammar: TopLevelGrammar, invalid: &str) -> Result<(LlamaSampler, Witness), String> {
        let matcher = Matcher::new(self.factory.create_parser(grammar));
        if let Some(why) = matcher.get_error() {
            return Err(format!("{invalid} ({why})"));
        }
        let witness = Witness(matcher.deep_clone());
        Ok((LlamaSampler::from(matcher), witness))
    }
}

/// A model's vocabulary and grammar engine, loaded once, for following
/// answers through a grammar as decoding does. For tests of the grammars
/// agents write: with a real vocabulary a grammar can be too complex for
/// the engine (too many lexer states), which then stops masking — an
/// answer is no longer held — where a check against a toy vocabulary
/// passes.
pub struct GrammarProbe {
    model: LlamaModel,
    grammars: Grammars,
}

impl GrammarProbe {
    /// The vocabulary of the GGUF model at `path` (its weights are not read).
    pub fn load(path: &std::path::Path) -> Result<Self, String> {
        use llama_cpp_2::model::params::LlamaModelParams;
        let backend = super::engine::backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default().with_vocab_only(true))
            .map_err(|e| format!("could not read the model's vocabulary ({e})"))?;
        let grammars = Grammars::new(&model)?;
        Ok(Self { model, grammars })
    }

    /// Follows `text` through `lark`: at each token the mask is computed,
    /// then the token taken. `Err` says where the grammar engine gave up or
    /// the text left the grammar.
    pub fn follow(&self, lark: &str, text: &str) -> Result<(), String> {
        self.follow_grammar(TopLevelGrammar::from_lark(lark.to_string()), text)
    }

    /// Follows `text` through the JSON `schema` as an answer held to it is
    /// (compact, as `json_sampler` writes it).
    pub fn follow_schema(&self, schema: &Value, text: &str) -> Result<(), String> {
        self.follow_grammar(TopLevelGrammar::from_json_schema(compact(schema)), text)
    }

    fn follow_grammar(&self, grammar: TopLevelGrammar, text: &str) -> Result<(), String> {
        let mut matcher = Matcher::new(self.grammars.factory.create_parser(grammar));
        if let Some(why) = matcher.get_error() {
            return Err(format!("the grammar is not valid ({why})"));
        }
        let vocab = self.model.vocab();
        for (at, token) in vocab.tokenize(text.as_bytes(), false, false).iter().enumerate() {
            let piece = String::from_utf8_lossy(&vocab.token_to_piece(*token, false, None)).into_owned();
            matcher.compute_mask().map_err(|e| format!("the grammar engine gave up before token {at} ({piece:?}): {e}"))?;
            matcher.consume_token(token.0.cast_unsigned()).map_err(|e| format!("token {at} ({piece:?}) is not allowed: {e}"))?;
        }
        match matcher.is_accepting() {
            Ok(true) => Ok(()),
            Ok(false) => Err("the text is cut short: the grammar wants more".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A second matcher that follows the tokens a held sampler picked. The
/// sampler masks nothing once its matcher fails (out of lexer states or
/// fuel on a large grammar): the answer then runs on unheld, to the token
/// limit, and is refused after minutes of decoding. The witness sees that
/// at the first token the grammar does not allow, so the answer can end
/// there.
pub struct Witness(Matcher);

impl Witness {
    /// Follows `token`; `Err` with the grammar engine's reason when the
    /// grammar does not allow it.
    pub fn follow(&mut self, token: u32) -> Result<(), String> {
        if self.0.is_stopped() {
            return Ok(());
        }
        self.0.consume_token(token).map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use llama_cpp_2::model::params::LlamaModelParams;

    #[test]
    fn a_witness_follows_what_the_grammar_allows_and_refuses_what_it_does_not() {
        let path = crate::catalog::DEFAULT_MODEL.path(&crate::catalog::default_data_dir());
        assert!(path.is_file(), "the default model is missing at {}: run `bash scripts/fetch-models.sh`", path.display());
        let backend = super::super::engine::backend().unwrap();
        let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default().with_vocab_only(true)).unwrap();
        let grammars = Grammars::new(&model).unwrap();
        let tokens = |text: &str| model.vocab().tokenize(text.as_bytes(), false, false);
        let (_, mut held) = grammars.lark_sampler("start: \"yes, \" NAME\nNAME: /[a-z]+/").unwrap();
        assert!(tokens("yes, alice").into_iter().all(|t| held.follow(t.0.cast_unsigned()).is_ok()));
        let (_, mut strayed) = grammars.lark_sampler("start: \"yes, \" NAME\nNAME: /[a-z]+/").unwrap();
        let followed: Vec<bool> = tokens("no, Bob").into_iter().map(|t| strayed.follow(t.0.cast_unsigned()).is_ok()).collect();
        assert!(!followed[0], "the first token already leaves the grammar: {followed:?}");
    }
}

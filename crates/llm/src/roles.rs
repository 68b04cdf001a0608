//! Named model roles from `agentloop.toml`, built into the `Models` a
//! session calls. Switching from the embedded model to an endpoint is one
//! table:
//!
//! ```toml
//! [models.default]
//! provider = "llama"              # the embedded model (the default)
//! model = "qwen2.5-coder-0.5b"    # a known name or a path to any GGUF
//!
//! [models.strong]
//! provider = "openai"
//! base_url = "http://127.0.0.1:11434/v1"
//! model = "qwen2.5-coder:7b"
//! api_key_env = "OPENAI_API_KEY"  # the variable's name; the key is never logged
//!
//! [models.planner]
//! provider = "chain"              # try these roles in order
//! models = ["default", "strong"]
//! switch_after = 2                # failed or rejected answers before moving on
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentloop_core::{ChatModel, Error, Models, Result, DEFAULT_ROLE};
use serde::{Deserialize, Serialize};

use crate::catalog::{KnownModel, DEFAULT_MODEL, STRONG_MODEL};
use crate::{AnthropicConfig, AnthropicModel, DebugLog, FallbackChain, LazyModel, OpenAiConfig, OpenAiModel, RetryPolicy};

/// The role of the stronger model the default chains escalate to.
pub const STRONG_ROLE: &str = "strong";

/// A model role an agent uses, and the model it gets when `agentloop.toml`
/// does not name one and the default model is ours. Agents declare their
/// roles (`AgentSpec::ROLES`); this crate resolves them and knows no agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Role {
    pub name: &'static str,
    pub default: RoleDefault,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleDefault {
    /// The default model: a role whose answers are cheap to get wrong.
    Default,
    /// The strong model directly: a judge whose verdict is not itself
    /// checked, or a writer whose miss is known only much later.
    Strong,
    /// A chain from the default model to the strong one: a writer whose
    /// answers are checked, so a miss is counted before it costs more
    /// than a retry.
    Escalating,
}

impl Role {
    pub const fn new(name: &'static str, default: RoleDefault) -> Self {
        Self { name, default }
    }
}

/// Misses (refused, failed or unverified answers) before a default chain
/// moves to the strong model.
pub const DEFAULT_SWITCH_AFTER: u32 = 2;

/// One role's model, as written in the config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "lowercase", deny_unknown_fields)]
pub enum ModelSpec {
    Llama {
        /// A known model's name or a GGUF path; the default model when absent.
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        threads: Option<u32>,
        #[serde(default)]
        context: Option<u32>,
        #[serde(default)]
        max_tokens: Option<u32>,
        /// What drafts tokens ahead: a smaller model of the same tokenizer
        /// (a known model's name or a GGUF path), or `"prompt"` for the
        /// prompt and the answer so far; every token is still the model's
        /// own pick.
        #[serde(default)]
        draft: Option<String>,
    },
    Openai {
        base_url: String,
        model: String,
        #[serde(default)]
        api_key_env: Option<String>,
        #[serde(default)]
        stream: bool,
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    Anthropic {
        #[serde(default = "anthropic_url")]
        base_url: String,
        model: String,
        #[serde(default = "anthropic_key")]
        api_key_env: String,
        #[serde(default)]
        stream: bool,
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    Chain {
        models: Vec<String>,
        #[serde(default = "switch_after")]
        switch_after: u32,
    },
}

fn anthropic_url() -> String {
    "https://api.anthropic.com".into()
}

fn anthropic_key() -> String {
    "ANTHROPIC_API_KEY".into()
}

fn switch_after() -> u32 {
    2
}

impl ModelSpec {
    /// The embedded default model.
    pub fn embedded_default() -> Self {
        ModelSpec::Llama { model: None, threads: None, context: None, max_tokens: None, draft: None }
    }

    /// A one-line description for `agentloop models list`.
    pub fn describe(&self) -> String {
        match self {
            ModelSpec::Llama { model, draft, .. } => match draft {
                Some(d) => format!("llama {} drafted by {d}", model.as_deref().unwrap_or(DEFAULT_MODEL.name)),
                None => format!("llama {}", model.as_deref().unwrap_or(DEFAULT_MODEL.name)),
            },
            ModelSpec::Openai { base_url, model, .. } => format!("openai {model} at {base_url}"),
            ModelSpec::Anthropic { model, .. } => format!("anthropic {model}"),
            ModelSpec::Chain { models, switch_after } => format!("chain {} (switch after {switch_after})", models.join(" → ")),
        }
    }
}

/// The roles a session gets: the configured ones, `default` the embedded
/// model unless configured, and — when `default` is left to us and the
/// stronger embedded model is installed — `strong` for it and each of the
/// agents' declared `roles` what its `RoleDefault` says. A user who names
/// their own default model (a flag, a table, an endpoint) gets exactly what
/// they configured.
pub fn with_defaults(specs: &BTreeMap<String, ModelSpec>, data_dir: &Path, roles: &[Role]) -> BTreeMap<String, ModelSpec> {
    let mut specs = specs.clone();
    let ours = !specs.contains_key(DEFAULT_ROLE);
    specs.entry(DEFAULT_ROLE.to_string()).or_insert_with(ModelSpec::embedded_default);
    if ours && STRONG_MODEL.path(data_dir).is_file() {
        // Roles naming the same file share one loaded model.
        let strong = ModelSpec::Llama { model: Some(STRONG_MODEL.name.to_string()), threads: None, context: None, max_tokens: None, draft: None };
        specs.entry(STRONG_ROLE.to_string()).or_insert_with(|| strong.clone());
        for role in roles {
            let spec = match role.default {
                RoleDefault::Default => continue,
                RoleDefault::Strong => strong.clone(),
                RoleDefault::Escalating => {
                    ModelSpec::Chain { models: vec![DEFAULT_ROLE.to_string(), STRONG_ROLE.to_string()], switch_after: DEFAULT_SWITCH_AFTER }
                }
            };
            specs.entry(role.name.to_string()).or_insert(spec);
        }
    }
    specs
}

/// Builds every role of `with_defaults`; `debug_log`, when set, records
/// every call.
pub fn build_models(specs: &BTreeMap<String, ModelSpec>, data_dir: &Path, debug_log: Option<&Path>, roles: &[Role]) -> Result<Models> {
    let specs = with_defaults(specs, data_dir, roles);
    let log = debug_log.map(DebugLog::open).transpose()?;
    let mut built: BTreeMap<String, Arc<dyn ChatModel>> = BTreeMap::new();
    let mut loaded: BTreeMap<PathBuf, Arc<dyn ChatModel>> = BTreeMap::new();
    let mut secrets = Vec::new();
    for (role, spec) in specs.iter().filter(|(_, s)| !matches!(s, ModelSpec::Chain { .. })) {
        let model = build_one(role, spec, data_dir, &mut loaded)?;
        if let ModelSpec::Openai { api_key_env: Some(var), .. } | ModelSpec::Anthropic { api_key_env: var, .. } = spec {
            secrets.extend(std::env::var(var).ok());
        }
        built.insert(role.clone(), model);
    }
    for (role, spec) in &specs {
        if let ModelSpec::Chain { models, switch_after } = spec {
            let members = models
                .iter()
                .map(|m| {
                    built.get(m).cloned().ok_or_else(|| {
                        Error::NotFound(format!("the chain `{role}` names `{m}`, which is not a model role in agentloop.toml (chains cannot contain chains)"))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            built.insert(role.clone(), Arc::new(FallbackChain::new(role.clone(), members, *switch_after)?));
        }
    }
    let mut models = Models::none();
    for (role, model) in built {
        let model = match &log {
            Some(file) => Arc::new(DebugLog::wrap(model, file.clone(), secrets.clone())) as Arc<dyn ChatModel>,
            None => model,
        };
        models = models.with_role(&role, model);
    }
    Ok(models)
}

/// What a `draft` key names: a model file, or the prompt itself.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Drafting {
    Model(PathBuf),
    Prompt,
}

impl Drafting {
    /// `"prompt"`, else a known model's name or a GGUF path.
    pub fn named(name: &str, data_dir: &Path) -> Self {
        if name == "prompt" {
            Drafting::Prompt
        } else {
            Drafting::Model(KnownModel::resolve(name, data_dir))
        }
    }
}

fn build_one(role: &str, spec: &ModelSpec, data_dir: &Path, loaded: &mut BTreeMap<PathBuf, Arc<dyn ChatModel>>) -> Result<Arc<dyn ChatModel>> {
    let retry =
        |timeout: &Option<u64>| RetryPolicy { timeout: timeout.map(Duration::from_secs).unwrap_or(RetryPolicy::default().timeout), ..RetryPolicy::default() };
    match spec {
        ModelSpec::Llama { model, threads, context, max_tokens, draft } => {
            let path = KnownModel::resolve(model.as_deref().unwrap_or(DEFAULT_MODEL.name), data_dir);
            let draft = draft.as_deref().map(|d| Drafting::named(d, data_dir));
            // Roles sharing a file share one loaded model (and its cache).
            if let Some(same) = loaded.get(&path) {
                return Ok(same.clone());
            }
            // The default model is loaded now, so a missing file is said at
            // once; any other is loaded on its first call (a chain's strong
            // model may never be needed).
            let model: Arc<dyn ChatModel> = if role == DEFAULT_ROLE {
                load_llama(role, &path, *threads, *context, *max_tokens, draft)?
            } else {
                let (role, file, threads, context, max_tokens) = (role.to_string(), path.clone(), *threads, *context, *max_tokens);
                let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| role.clone());
                let window = context.unwrap_or(crate::DEFAULT_CONTEXT) as usize;
                Arc::new(LazyModel::new(name, move || load_llama(&role, &file, threads, context, max_tokens, draft.clone())).with_context(window))
            };
            loaded.insert(path, model.clone());
            Ok(model)
        }
        ModelSpec::Openai { base_url, model, api_key_env, stream, timeout_secs } => {
            let config = OpenAiConfig {
                base_url: base_url.clone(),
                model: model.clone(),
                api_key_env: api_key_env.clone(),
                stream: *stream,
                retry: retry(timeout_secs),
            };
            Ok(Arc::new(OpenAiModel::new(config)?))
        }
        ModelSpec::Anthropic { base_url, model, api_key_env, stream, timeout_secs } => {
            let config = AnthropicConfig {
                base_url: base_url.clone(),
                model: model.clone(),
                api_key_env: api_key_env.clone(),
                stream: *stream,
                retry: retry(timeout_secs),
            };
            Ok(Arc::new(AnthropicModel::new(config)?))
        }
        ModelSpec::Chain { .. } => Err(Error::other(format!("`{role}` is a chain, not a model"))),
    }
}

#[cfg(feature = "llama")]
fn load_llama(
    _role: &str,
    path: &Path,
    threads: Option<u32>,
    context: Option<u32>,
    max_tokens: Option<u32>,
    draft: Option<Drafting>,
) -> Result<Arc<dyn ChatModel>> {
    let mut config = crate::LlamaConfig::new(path);
    config.threads = threads;
    config.draft = draft;
    if let Some(c) = context {
        config.context = c;
    }
    if let Some(m) = max_tokens {
        config.max_tokens = m;
    }
    Ok(Arc::new(crate::LlamaModel::load(config)?))
}

#[cfg(not(feature = "llama"))]
fn load_llama(
    role: &str,
    _path: &Path,
    _threads: Option<u32>,
    _context: Option<u32>,
    _max_tokens: Option<u32>,
    _draft: Option<Drafting>,
) -> Result<Arc<dyn ChatModel>> {
    Err(Error::other(format!(
        "the role `{role}` asks for the embedded model, but this agentloop was built without it: rebuild with the default features or configure an endpoint"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_config_parses() {
        let text = r#"
            [default]
            provider = "llama"
            model = "qwen2.5-coder-0.5b"
            [strong]
            provider = "openai"
            base_url = "http://127.0.0.1:11434/v1"
            model = "qwen2.5-coder:7b"
            [planner]
            provider = "chain"
            models = ["default", "strong"]
        "#;
        let specs: BTreeMap<String, ModelSpec> = toml::from_str(text).unwrap();
        assert_eq!(specs["planner"], ModelSpec::Chain { models: vec!["default".into(), "strong".into()], switch_after: 2 });
        assert_eq!(specs["strong"].describe(), "openai qwen2.5-coder:7b at http://127.0.0.1:11434/v1");
    }

    #[test]
    fn a_chain_naming_an_unknown_role_is_refused_with_the_names() {
        let mut specs = BTreeMap::new();
        specs.insert(
            "default".to_string(),
            ModelSpec::Openai { base_url: "http://127.0.0.1:9/v1".into(), model: "m".into(), api_key_env: None, stream: false, timeout_secs: None },
        );
        specs.insert("planner".to_string(), ModelSpec::Chain { models: vec!["default".into(), "strong".into()], switch_after: 1 });
        let err = build_models(&specs, Path::new("/tmp"), None, &[]).err().unwrap().to_string();
        assert!(err.contains("`planner`") && err.contains("`strong`"), "{err}");
    }

    #[test]
    fn declared_roles_get_their_default_models_only_when_the_default_is_ours() {
        let dir = tempfile::tempdir().unwrap();
        let roles = [
            Role::new("coder", RoleDefault::Escalating),
            Role::new("writer", RoleDefault::Escalating),
            Role::new("verifier", RoleDefault::Strong),
            Role::new("planner", RoleDefault::Strong),
            Role::new("fast", RoleDefault::Strong),
            Role::new("plain", RoleDefault::Default),
        ];
        let with_defaults = |specs: &BTreeMap<String, ModelSpec>, dir: &Path| with_defaults(specs, dir, &roles);
        let chain = |specs: &BTreeMap<String, ModelSpec>| with_defaults(specs, dir.path()).get("coder").map(ModelSpec::describe);
        assert_eq!(chain(&BTreeMap::new()), None, "no chain without the strong model installed");
        std::fs::create_dir_all(dir.path().join("models")).unwrap();
        std::fs::write(STRONG_MODEL.path(dir.path()), b"gguf").unwrap();
        assert_eq!(chain(&BTreeMap::new()).as_deref(), Some("chain default → strong (switch after 2)"));
        assert_eq!(with_defaults(&BTreeMap::new(), dir.path())["writer"].describe(), "chain default → strong (switch after 2)", "the research writer too");
        assert_eq!(with_defaults(&BTreeMap::new(), dir.path())["strong"].describe(), "llama qwen2.5-coder-1.5b");
        assert_eq!(with_defaults(&BTreeMap::new(), dir.path())["verifier"].describe(), "llama qwen2.5-coder-1.5b", "the judge is the strong model");
        for role in ["planner", "fast"] {
            assert_eq!(with_defaults(&BTreeMap::new(), dir.path())[role].describe(), "llama qwen2.5-coder-1.5b", "the planner's {role} is the strong model");
        }
        assert!(!with_defaults(&BTreeMap::new(), dir.path()).contains_key("plain"), "a default role is the default model");
        let mut mine = BTreeMap::new();
        mine.insert(
            "default".to_string(),
            ModelSpec::Llama { model: Some("qwen2.5-coder-1.5b".into()), threads: None, context: None, max_tokens: None, draft: None },
        );
        assert_eq!(chain(&mine), None, "a default the user names is used alone");
    }

    #[test]
    fn a_draft_named_prompt_drafts_from_the_prompt_and_any_other_names_a_model() {
        let data = Path::new("/data");
        assert_eq!(Drafting::named("prompt", data), Drafting::Prompt);
        assert_eq!(Drafting::named("qwen2.5-coder-0.5b", data), Drafting::Model(KnownModel::resolve("qwen2.5-coder-0.5b", data)));
        assert_eq!(Drafting::named("/models/small.gguf", data), Drafting::Model(PathBuf::from("/models/small.gguf")));
    }

    #[test]
    fn an_unknown_provider_is_a_parse_error() {
        let err = toml::from_str::<BTreeMap<String, ModelSpec>>("[default]\nprovider = \"gpt\"\n").unwrap_err().to_string();
        assert!(err.contains("unknown variant"), "{err}");
        let err = toml::from_str::<BTreeMap<String, ModelSpec>>("[default]\nprovider = \"llama\"\ntemprature = 0.1\n").unwrap_err().to_string();
        assert!(err.contains("temprature"), "a misspelt key is named: {err}");
    }
}

//! The models a session may call, by role (`default`, `fast`, `strong`, ...).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::ChatModel;
use crate::{Error, Result};

pub const DEFAULT_ROLE: &str = "default";

#[derive(Clone, Default)]
pub struct Models {
    roles: BTreeMap<String, Arc<dyn ChatModel>>,
}

impl Models {
    /// No models: a graph that never calls one (the engine benchmark).
    pub fn none() -> Self {
        Self::default()
    }

    pub fn new(default: Arc<dyn ChatModel>) -> Self {
        Self::default().with_role(DEFAULT_ROLE, default)
    }

    pub fn with_role(mut self, role: &str, model: Arc<dyn ChatModel>) -> Self {
        self.roles.insert(role.to_string(), model);
        self
    }

    /// The models for one session: each model that keeps per-session state
    /// (`ChatModel::for_session`) fresh, the rest shared.
    pub fn for_session(&self) -> Self {
        let roles = self.roles.iter().map(|(role, model)| (role.clone(), model.for_session().unwrap_or_else(|| model.clone()))).collect();
        Self { roles }
    }

    /// The model for `role`, falling back to the default one.
    pub fn get(&self, role: &str) -> Result<&Arc<dyn ChatModel>> {
        self.roles
            .get(role)
            .or_else(|| self.roles.get(DEFAULT_ROLE))
            .ok_or_else(|| Error::NotFound(format!("no model is configured for role `{role}`: set one in agentloop.toml or pass --model")))
    }
}

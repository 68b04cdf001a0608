//! The models `scripts/fetch-models.sh` installs, and where they live.

use std::path::{Path, PathBuf};

/// A model the set-up installs under `<data dir>/models`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownModel {
    /// What `--model` and config accept instead of a path.
    pub name: &'static str,
    pub file: &'static str,
    pub purpose: &'static str,
}

/// The default model, used when nothing else is configured.
pub const DEFAULT_MODEL: KnownModel =
    KnownModel { name: "qwen2.5-coder-0.5b", file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", purpose: "default (Qwen2.5-Coder-0.5B-Instruct Q4_K_M)" };

/// The stronger model the default chains escalate to (about 3× slower).
pub const STRONG_MODEL: KnownModel = KnownModel {
    name: "qwen2.5-coder-1.5b",
    file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    purpose: "stronger, for escalation (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)",
};

/// The small model tests run on.
pub const SMALL_MODEL: KnownModel =
    KnownModel { name: "smollm2-135m", file: "smollm2-135m-instruct-q4_1.gguf", purpose: "small, for tests (SmolLM2-135M-Instruct Q4_1)" };

pub const KNOWN_MODELS: [KnownModel; 3] = [DEFAULT_MODEL, STRONG_MODEL, SMALL_MODEL];

/// The command that installs the known models.
pub const FETCH_COMMAND: &str = "bash scripts/fetch-models.sh";

/// `$AGENTLOOP_DATA_DIR`, else `$XDG_DATA_HOME/agentloop`, else
/// `~/.local/share/agentloop`, else `./.agentloop`.
pub fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTLOOP_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("agentloop");
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/agentloop"),
        None => PathBuf::from(".agentloop"),
    }
}

pub fn models_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("models")
}

impl KnownModel {
    pub fn path(&self, data_dir: &Path) -> PathBuf {
        models_dir(data_dir).join(self.file)
    }

    /// A known model's name, or else a path to a GGUF file.
    pub fn resolve(name_or_path: &str, data_dir: &Path) -> PathBuf {
        match KNOWN_MODELS.iter().find(|m| m.name == name_or_path) {
            Some(known) => known.path(data_dir),
            None => PathBuf::from(name_or_path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_the_data_dir_and_paths_stay_paths() {
        let dir = Path::new("/data");
        assert_eq!(KnownModel::resolve("smollm2-135m", dir), PathBuf::from("/data/models/smollm2-135m-instruct-q4_1.gguf"));
        assert_eq!(KnownModel::resolve("./my.gguf", dir), PathBuf::from("./my.gguf"));
    }
}

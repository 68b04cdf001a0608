//! Configuration: `agentloop.toml`, then `AGENTLOOP_*` environment variables,
//! then command-line flags. With no file at all the defaults work.

use std::path::{Path, PathBuf};

use agentloop_store::Durability;
use anyhow::{Context, Result};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    data_dir: Option<PathBuf>,
    durability: Option<Durability>,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub durability: Durability,
}

impl Config {
    pub fn load(file: Option<&Path>, data_dir: Option<PathBuf>, durability: Option<&str>) -> Result<Self> {
        let from_file = match file {
            Some(path) => read(path)?,
            None if Path::new("agentloop.toml").exists() => read(Path::new("agentloop.toml"))?,
            None => File::default(),
        };
        let env_dir = std::env::var_os("AGENTLOOP_DATA_DIR").map(PathBuf::from);
        let env_durability = std::env::var("AGENTLOOP_DURABILITY").ok();
        let durability = match durability.map(str::to_string).or(env_durability) {
            Some(s) => s.parse::<Durability>().map_err(anyhow::Error::msg)?,
            None => from_file.durability.unwrap_or_default(),
        };
        let data_dir = data_dir.or(env_dir).or(from_file.data_dir).unwrap_or_else(default_data_dir);
        Ok(Self { data_dir, durability })
    }

    pub fn db_path(&self) -> PathBuf {
        agentloop_store::default_path(&self.data_dir)
    }
}

fn read(path: &Path) -> Result<File> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("the config file {} is not valid", path.display()))
}

/// `$XDG_DATA_HOME/agentloop`, else `~/.local/share/agentloop`, else `./.agentloop`.
fn default_data_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("agentloop");
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/agentloop"),
        None => PathBuf::from(".agentloop"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_the_file_and_bad_values_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agentloop.toml");
        std::fs::write(&file, "data_dir = \"/from/file\"\ndurability = \"process\"\n").unwrap();
        let c = Config::load(Some(&file), None, None).unwrap();
        assert_eq!(c.durability, Durability::Process);
        let c = Config::load(Some(&file), Some("/flag".into()), Some("fsync")).unwrap();
        assert_eq!((c.data_dir, c.durability), (PathBuf::from("/flag"), Durability::Fsync));
        std::fs::write(&file, "durability = \"sometimes\"\n").unwrap();
        let e = format!("{:#}", Config::load(Some(&file), None, None).unwrap_err());
        assert!(e.contains("not valid") && e.contains("sometimes"), "{e}");
    }
}

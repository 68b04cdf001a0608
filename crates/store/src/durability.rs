//! How hard each committed step is pushed to disk.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Each step is flushed to disk before the next starts: survives power loss.
    #[default]
    Fsync,
    /// Each step is committed and survives a killed process; the OS flushes
    /// later. Side-effect intents are still flushed before the effect runs.
    Process,
}

impl Durability {
    /// The SQLite `synchronous` setting (in WAL mode) that gives this guarantee.
    pub(crate) fn synchronous(self) -> &'static str {
        match self {
            Self::Fsync => "FULL",
            Self::Process => "NORMAL",
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Fsync => "fsync",
            Self::Process => "process",
        })
    }
}

impl FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fsync" => Ok(Self::Fsync),
            "process" => Ok(Self::Process),
            other => Err(format!("unknown durability `{other}`: use `fsync` or `process`")),
        }
    }
}

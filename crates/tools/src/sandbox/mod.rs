//! The OS sandbox every command an agent runs goes through: it may write
//! only in its workspace and a private temp folder, read the system but not
//! the user's secrets, and — unless the network is switched on — open no
//! socket but a local Unix one. Linux enforces it (Landlock for files,
//! seccomp for sockets), so nothing the command starts can step out either.
//! A kernel without Landlock is refused with one clear sentence, never run
//! unconfined behind the user's back: `mode = "off"` is the only way out.

mod grants;
mod landlock;
mod refusal;
mod seccomp;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_core::{Error, Result};
use serde::{Deserialize, Serialize};

pub use landlock::abi as landlock_abi;

/// Under the user's home: what commands never get to read.
pub const HOME_SECRETS: [&str; 10] = [".ssh", ".gnupg", ".aws", ".config/gh", ".config/gcloud", ".azure", ".docker", ".kube", ".netrc", ".git-credentials"];

/// Devices every program expects to open.
const DEVICES: [&str; 6] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// `[sandbox]` in `agentloop.toml`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub mode: Mode,
    pub network: Network,
    /// More paths commands may not read (`~/` is the home folder).
    pub deny_read: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Commands are confined; a kernel that cannot confine them is an error.
    #[default]
    On,
    /// Commands run with all the user's rights.
    Off,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    #[default]
    Off,
    On,
}

/// What a confined command may touch, as paths (all canonical).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub workspace: PathBuf,
    /// The command's private temp folder (its `TMPDIR`).
    pub temp: PathBuf,
    /// Existing paths no command may read.
    pub deny_read: Vec<PathBuf>,
    pub network: bool,
    /// False for a command that may only look: the workspace is then read,
    /// never written (the temp folder stays writable).
    pub workspace_writable: bool,
}

impl Policy {
    /// The command's own folders: the workspace and its temp folder.
    fn roots(&self) -> [&Path; 2] {
        [&self.workspace, &self.temp]
    }

    /// How a command may use `root`, one of `roots`.
    fn access(&self, root: &Path) -> landlock::Access {
        if root == self.workspace && !self.workspace_writable {
            landlock::Access::Read
        } else {
            landlock::Access::Write
        }
    }

    /// The denied path `path` lies under, if any. A denial that encloses
    /// the workspace (the data dir holding a session's folder) does not
    /// reach into it.
    pub fn secret(&self, path: &Path) -> Option<&Path> {
        let root = self.roots().into_iter().find(|r| path.starts_with(r));
        self.deny_read.iter().find(|d| path.starts_with(d) && root.is_none_or(|r| d.starts_with(r))).map(PathBuf::as_path)
    }

    pub fn writable(&self, path: &Path) -> bool {
        self.roots().iter().any(|r| path.starts_with(r) && self.access(r) == landlock::Access::Write) && self.secret(path).is_none()
    }

    fn grants(&self) -> Vec<(PathBuf, landlock::Access)> {
        let mut out: Vec<(PathBuf, landlock::Access)> =
            grants::around(Path::new("/"), &self.deny_read).into_iter().map(|p| (p, landlock::Access::Read)).collect();
        for root in self.roots() {
            let inside: Vec<PathBuf> = self.deny_read.iter().filter(|d| d.starts_with(root)).cloned().collect();
            out.extend(grants::around(root, &inside).into_iter().map(|p| (p, self.access(root))));
        }
        out.extend(DEVICES.iter().map(|d| (PathBuf::from(d), landlock::Access::Device)));
        out
    }
}

/// A policy made enforceable: built once per session, applied to every
/// command it starts. Cheap to clone.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    policy: Policy,
    /// `None` when the user switched the sandbox off.
    enforced: Option<Enforced>,
    _temp: tempfile::TempDir,
}

struct Enforced {
    abi: u32,
    ruleset: landlock::Ruleset,
    filter: Option<seccomp::Filter>,
}

impl Sandbox {
    /// The policy for commands run in `workspace`: `home` names whose
    /// secrets to keep out of reach, `data_dir` is agentloop's own store
    /// (kept out too: it holds every session and the debug log).
    pub fn new(workspace: &Path, config: &SandboxConfig, home: Option<&Path>, data_dir: Option<&Path>) -> Result<Self> {
        let workspace =
            workspace.canonicalize().map_err(|e| Error::other(format!("the sandbox's workspace {} cannot be opened ({e})", workspace.display())))?;
        let (temp, temp_path) = private_temp()?;
        let mut denied: Vec<PathBuf> = Vec::new();
        if let Some(home) = home {
            denied.extend(HOME_SECRETS.iter().map(|s| home.join(s)));
        }
        denied.extend(data_dir.map(Path::to_path_buf));
        denied.extend(config.deny_read.iter().map(|p| match (p.strip_prefix("~"), home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => p.clone(),
        }));
        let mut deny_read: Vec<PathBuf> = denied.iter().filter_map(|p| p.canonicalize().ok()).collect();
        deny_read.sort();
        deny_read.dedup();
        let policy = Policy { workspace, temp: temp_path, deny_read, network: config.network == Network::On, workspace_writable: true };
        Self::build(policy, temp, config.mode)
    }

    /// The same sandbox for commands that may only look: they read the
    /// workspace but cannot change it (a check run on the agent's work must
    /// not become more of that work). They get a temp folder of their own.
    pub fn read_only(&self) -> Result<Self> {
        let (temp, temp_path) = private_temp()?;
        let policy = Policy { temp: temp_path, workspace_writable: false, ..self.inner.policy.clone() };
        Self::build(policy, temp, if self.confines() { Mode::On } else { Mode::Off })
    }

    fn build(policy: Policy, temp: tempfile::TempDir, mode: Mode) -> Result<Self> {
        if mode == Mode::Off {
            return Ok(Self { inner: Arc::new(Inner { policy, enforced: None, _temp: temp }) });
        }
        let abi = landlock::abi().map_err(|e| {
            Error::other(format!(
                "commands cannot be confined: this kernel has no Landlock ({e}); use Linux 5.13 or later with Landlock enabled, or set `mode = \"off\"` under [sandbox] in agentloop.toml to run commands with all your rights"
            ))
        })?;
        let ruleset = landlock::Ruleset::new(abi, &policy.grants(), !policy.network)
            .map_err(|e| Error::other(format!("cannot build the sandbox's Landlock rules ({e})")))?;
        let filter = (!policy.network).then(seccomp::Filter::no_network);
        Ok(Self { inner: Arc::new(Inner { policy, enforced: Some(Enforced { abi, ruleset, filter }), _temp: temp }) })
    }

    /// [`Sandbox::new`] for the person running agentloop: their `$HOME`.
    pub fn for_user(workspace: &Path, config: &SandboxConfig, data_dir: Option<&Path>) -> Result<Self> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::new(workspace, config, home.as_deref(), data_dir)
    }

    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// False when the user switched the sandbox off.
    pub fn confines(&self) -> bool {
        self.inner.enforced.is_some()
    }

    /// Prepares `cmd` to run confined: an environment without secrets and
    /// with the private temp folder, and the restrictions applied in the
    /// child just before it becomes the command.
    pub fn confine(&self, cmd: &mut std::process::Command) {
        cmd.env_clear().envs(std::env::vars().filter(|(name, _)| !looks_secret(name)));
        if self.inner.enforced.is_none() {
            return;
        }
        for var in ["TMPDIR", "TMP", "TEMP"] {
            cmd.env(var, &self.inner.policy.temp);
        }
        let inner = Arc::clone(&self.inner);
        // SAFETY: the closure makes system calls only (no allocation, no
        // locks), as code between fork and exec must.
        unsafe {
            cmd.pre_exec(move || {
                let Some(enforced) = &inner.enforced else { return Ok(()) };
                landlock::restrict_self(enforced.ruleset.raw_fd())?;
                if let Some(filter) = &enforced.filter {
                    filter.apply()?;
                }
                Ok(())
            });
        }
    }

    /// What the sandbox refused, in sentences, judged from a command's
    /// output; empty when it refused nothing (or is off).
    pub fn explain(&self, output: &str) -> Vec<String> {
        if !self.confines() {
            return Vec::new();
        }
        refusal::explain(&self.inner.policy, output)
    }

    /// The policy for a person: one line per rule.
    pub fn describe(&self) -> Vec<String> {
        let p = &self.inner.policy;
        let Some(abi) = self.inner.enforced.as_ref().map(|e| e.abi) else {
            return vec!["the sandbox is off ([sandbox] mode = \"off\"): commands run with all your rights".into()];
        };
        let writes = if p.workspace_writable { format!("{} and the temp folder", p.workspace.display()) } else { "only the temp folder".to_string() };
        let mut lines = vec![format!("writes: {writes} {} (TMPDIR)", p.temp.display()), "reads: the whole system except the paths below".into()];
        lines.extend(p.deny_read.iter().map(|d| format!("  denied: {}", d.display())));
        lines.push(if p.network { "network: on".into() } else { "network: off (local Unix sockets only)".into() });
        lines.push(format!("enforced by Landlock ABI {abi} and seccomp; children inherit it"));
        lines
    }
}

/// A fresh temp folder for a sandbox's commands, and its canonical path.
fn private_temp() -> Result<(tempfile::TempDir, PathBuf)> {
    let temp =
        tempfile::Builder::new().prefix("agentloop-sandbox-").tempdir().map_err(|e| Error::other(format!("cannot create the sandbox's temp folder ({e})")))?;
    let path = temp.path().canonicalize().map_err(|e| Error::other(format!("cannot open the sandbox's temp folder ({e})")))?;
    Ok((temp, path))
}

/// Variables whose names suggest credentials stay out of a command's
/// environment.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE", "SESSION", "AUTH"].iter().any(|w| upper.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names_are_dropped() {
        assert!(looks_secret("OPENAI_API_KEY") && looks_secret("github_token") && looks_secret("AWS_SECRET_ACCESS_KEY"));
        assert!(!looks_secret("PATH") && !looks_secret("HOME") && !looks_secret("CARGO_HOME"));
    }

    #[test]
    fn the_config_reads_from_toml_and_names_a_bad_key() {
        let c: SandboxConfig = toml::from_str("network = \"on\"\ndeny_read = [\"~/private\"]").unwrap();
        assert_eq!((c.mode, c.network, c.deny_read.len()), (Mode::On, Network::On, 1));
        let e = toml::from_str::<SandboxConfig>("netwrok = \"on\"").unwrap_err().to_string();
        assert!(e.contains("netwrok"), "{e}");
    }
}

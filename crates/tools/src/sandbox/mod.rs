//! The OS sandbox every command an agent runs goes through: it may write
//! only in its workspace and a private temp folder, read the system but not
//! the user's secrets, and — unless the network is switched on — open no
//! socket but a local Unix one. It runs in a session of its own with no
//! controlling terminal and no capabilities. Linux enforces it (Landlock
//! for files, seccomp for sockets and terminal requests, an emptied
//! capability bounding set), so nothing the command starts can step out
//! either.
//! A kernel without Landlock is refused with one clear sentence, never run
//! unconfined behind the user's back: `mode = "off"` is the only way out.

mod cgroup;
mod grants;
mod landlock;
mod namespace;
mod privileges;
mod refusal;
mod seccomp;
mod temp;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_core::redact::{is_jwt, TOKEN_PREFIXES};
use agentloop_core::{Error, Result};
use serde::{Deserialize, Serialize};
use temp::PrivateTemp;

pub use landlock::abi as landlock_abi;

/// Under the user's home: what commands never get to read, even inside a
/// dot-folder they may read.
pub const HOME_SECRETS: [&str; 11] =
    [".ssh", ".gnupg", ".aws", ".config/gh", ".config/gcloud", ".azure", ".docker", ".kube", ".netrc", ".git-credentials", ".local/share/keyrings"];

/// The home's dot-entries commands may read by default: toolchains and the
/// shell's own settings. Every other dot-entry of the home — one created
/// during a session too — stays unreadable unless `[sandbox] read_home`
/// names it.
pub const HOME_TOOLCHAINS: [&str; 22] = [
    ".cargo",
    ".rustup",
    ".local",
    ".cache",
    ".npm",
    ".nvm",
    ".pyenv",
    ".rbenv",
    ".gem",
    ".m2",
    ".gradle",
    ".sdkman",
    ".deno",
    ".bun",
    ".dotnet",
    ".conda",
    ".condarc",
    ".profile",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".gitconfig",
];

/// Devices every program expects to open.
/// Where POSIX shared memory and semaphores live.
const SHM: &str = "/dev/shm";
const DEVICES: [&str; 6] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// What git and agentloop read and run from a workspace: no command may
/// change or make them there (a hook, a git config, an agentloop config
/// would act outside the sandbox on the user's next `git` or `agentloop`).
pub const PROTECTED: [&str; 3] = [".git", "agentloop.toml", ".agentloop"];

/// Files readable only by root that commands never read, whoever runs them.
const ROOT_SECRETS: [&str; 6] = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d"];

/// `[sandbox]` in `agentloop.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub mode: Mode,
    pub network: Network,
    /// More paths commands may not read (`~/` is the home folder).
    pub deny_read: Vec<PathBuf>,
    /// Dot-entries of the home commands may read besides [`HOME_TOOLCHAINS`]
    /// (`".m2"`, `".config"`); secrets inside them stay out.
    pub read_home: Vec<String>,
    /// When not empty, the only environment variables commands get (besides
    /// their temp folder's): the user's choice wins over the secret filter.
    pub env_allow: Vec<String>,
    /// Variables commands never get, besides those that look secret.
    pub env_deny: Vec<String>,
    /// Pathname Unix sockets outside the workspace commands may connect to
    /// (every other one listening when a command starts is covered).
    pub unix_sockets: Vec<PathBuf>,
    /// `"off"`: no user, mount and PID namespace per command (for systems
    /// that forbid them); metadata outside the workspace, outside sockets
    /// and processes a command leaves behind are then not confined.
    pub namespaces: Mode,
    /// Processes and threads a command may have at once (0: no bound).
    pub max_processes: u64,
    /// Address space each process of a command may map, in MiB (0: no bound).
    pub max_memory_mb: u64,
    /// The largest file a command may write, in MiB (0: no bound).
    pub max_file_mb: u64,
}

impl Default for SandboxConfig {
    /// Bounds that a normal test suite never meets, and that stop a fork
    /// loop or a runaway allocation a model wrote by mistake.
    fn default() -> Self {
        Self {
            mode: Mode::On,
            network: Network::Off,
            deny_read: Vec::new(),
            read_home: Vec::new(),
            env_allow: Vec::new(),
            env_deny: Vec::new(),
            unix_sockets: Vec::new(),
            namespaces: Mode::On,
            max_processes: 1024,
            max_memory_mb: 16 * 1024,
            max_file_mb: 4 * 1024,
        }
    }
}

impl SandboxConfig {
    /// How this configuration weakens the sandbox, in words; empty when it
    /// does not. Said first wherever a session shows its start.
    pub fn weakened(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.mode == Mode::Off {
            out.push("the sandbox is off ([sandbox] mode = \"off\"): commands run with all your rights".to_string());
            return out;
        }
        if self.network == Network::On {
            out.push("the network is on for commands ([sandbox] network = \"on\")".into());
        }
        if self.namespaces == Mode::Off {
            out.push(
                "commands run without namespaces ([sandbox] namespaces = \"off\"): processes they leave behind, setuid files and git hooks are not confined"
                    .into(),
            );
        }
        out
    }
}

/// The resource bounds each command runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub processes: u64,
    pub memory_mb: u64,
    pub file_mb: u64,
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
    /// Folders granted entry by entry (the home): what is created in them
    /// later is not readable.
    pub enumerated: Vec<PathBuf>,
    /// The entries of `enumerated` folders granted when the policy was built.
    pub enumerated_grants: Vec<PathBuf>,
    pub network: bool,
    /// False for a command that may only look: the workspace is then read,
    /// never written (the temp folder stays writable).
    pub workspace_writable: bool,
    /// Outside sockets commands may still reach.
    pub unix_sockets: Vec<PathBuf>,
    /// The [`PROTECTED`] paths that exist in the workspace: read-only to commands.
    pub protected: Vec<PathBuf>,
    /// Those that do not: removed when a command makes them.
    pub unmade: Vec<PathBuf>,
    pub limits: Limits,
    /// Commands see a folder of the sandbox's own (`<temp>/shm`) as
    /// `/dev/shm`, in their own IPC namespace, and may write there: POSIX
    /// semaphores and shared memory (Python's multiprocessing locks) live
    /// in it.
    pub private_shm: bool,
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

    /// The folder granted entry by entry that `path` lies under, when its
    /// entry there was not granted (hidden, or made after the policy).
    pub fn ungranted(&self, path: &Path) -> Option<&Path> {
        if self.roots().iter().any(|r| path.starts_with(r)) {
            return None;
        }
        let folder = self.enumerated.iter().find(|e| path.starts_with(e) && path != e.as_path())?;
        (!self.enumerated_grants.iter().any(|g| path.starts_with(g))).then_some(folder.as_path())
    }

    /// The folder commands see as `/dev/shm`.
    fn shm(&self) -> PathBuf {
        self.temp.join("shm")
    }

    pub fn writable(&self, path: &Path) -> bool {
        self.roots().iter().any(|r| path.starts_with(r) && self.access(r) == landlock::Access::Write) && self.secret(path).is_none()
    }

    fn grants(&self) -> Vec<(PathBuf, landlock::Access)> {
        let mut out: Vec<(PathBuf, landlock::Access)> =
            grants::around(Path::new("/"), &self.deny_read, &self.enumerated).into_iter().map(|p| (p, landlock::Access::Read)).collect();
        for root in self.roots() {
            let inside: Vec<PathBuf> = self.deny_read.iter().filter(|d| d.starts_with(root)).cloned().collect();
            out.extend(grants::around(root, &inside, &[]).into_iter().map(|p| (p, self.access(root))));
        }
        out.extend(DEVICES.iter().map(|d| (PathBuf::from(d), landlock::Access::Device)));
        if self.private_shm {
            out.push((self.shm(), landlock::Access::Write));
        }
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
    env: EnvFilter,
    /// `None` when the user switched the sandbox off.
    enforced: Option<Enforced>,
    _temp: PrivateTemp,
}

struct Enforced {
    abi: u32,
    ruleset: landlock::Ruleset,
    filter: seccomp::Filter,
    /// agentloop runs as root: the command's capabilities must be dropped.
    root: bool,
    /// The namespaces each command gets, unless switched off.
    namespace: Option<namespace::Plan>,
    /// The resource bounds, set in the command's process.
    rlimits: Vec<(libc::__rlimit_resource_t, libc::rlimit)>,
    /// Root's bound on processes, removed with the sandbox.
    cgroup: Option<cgroup::Cgroup>,
}

impl Sandbox {
    /// The policy for commands run in `workspace`: `home` names whose
    /// secrets to keep out of reach, `data_dir` is agentloop's own store
    /// (kept out too: it holds every session and the debug log).
    pub fn new(workspace: &Path, config: &SandboxConfig, home: Option<&Path>, data_dir: Option<&Path>) -> Result<Self> {
        let workspace =
            workspace.canonicalize().map_err(|e| Error::other(format!("the sandbox's workspace {} cannot be opened ({e})", workspace.display())))?;
        let temp = PrivateTemp::new()?;
        let temp_path = temp.path.clone();
        let mut denied: Vec<PathBuf> = Vec::new();
        let home = home.and_then(|h| h.canonicalize().ok());
        let home = home.as_deref();
        // The home's entries now: its hidden ones are denied unless allowed,
        // and the rest are granted one by one (what comes later is not).
        let home_entries = home.map(entries_of).unwrap_or_default();
        if let Some(home) = home {
            denied.extend(HOME_SECRETS.iter().map(|s| home.join(s)));
            denied.extend(
                home_entries
                    .iter()
                    .filter(|entry| {
                        let name = entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                        name.starts_with('.') && !HOME_TOOLCHAINS.contains(&name.as_str()) && !config.read_home.contains(&name)
                    })
                    .cloned(),
            );
        }
        denied.extend(data_dir.map(Path::to_path_buf));
        denied.extend(config.deny_read.iter().map(|p| match (p.strip_prefix("~"), home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => p.clone(),
        }));
        // SAFETY: geteuid only reads the caller's id.
        if unsafe { libc::geteuid() } == 0 {
            denied.extend(ROOT_SECRETS.iter().map(PathBuf::from));
        }
        // A denied path that does not exist yet (a debug log not yet
        // written) is denied where it will be.
        let mut deny_read: Vec<PathBuf> =
            denied.iter().filter_map(|p| p.canonicalize().ok().or_else(|| Some(p.parent()?.canonicalize().ok()?.join(p.file_name()?)))).collect();
        deny_read.sort();
        deny_read.dedup();
        refuse_unconfinable(&workspace, home, data_dir, &deny_read)?;
        let enumerated: Vec<PathBuf> = home.map(Path::to_path_buf).into_iter().collect();
        let enumerated_grants = home_entries.into_iter().filter(|p| !deny_read.iter().any(|d| p.starts_with(d))).collect();
        let policy = Policy {
            workspace,
            temp: temp_path,
            deny_read,
            enumerated,
            enumerated_grants,
            network: config.network == Network::On,
            workspace_writable: true,
            unix_sockets: config.unix_sockets.clone(),
            protected: Vec::new(),
            unmade: Vec::new(),
            limits: Limits { processes: config.max_processes, memory_mb: config.max_memory_mb, file_mb: config.max_file_mb },
            private_shm: false,
        };
        let env = EnvFilter { allow: config.env_allow.clone(), deny: config.env_deny.clone() };
        Self::build(policy, env, temp, config.mode, config.namespaces)
    }

    /// The same sandbox for commands that may only look: they read the
    /// workspace but cannot change it (a check run on the agent's work must
    /// not become more of that work). They get a temp folder of their own.
    pub fn read_only(&self) -> Result<Self> {
        self.rebuilt(|temp| Policy { temp, workspace_writable: false, ..self.inner.policy.clone() })
    }

    /// The same policy for commands in another folder (a scratch copy of
    /// the workspace): written there and in a temp folder of their own.
    pub fn elsewhere(&self, workspace: &Path) -> Result<Self> {
        self.moved(workspace, self.inner.policy.network)
    }

    /// `elsewhere`, with no network whatever the configuration says: a
    /// trial's effects must stay in its copy, and a request sent over the
    /// network cannot be taken back.
    pub fn elsewhere_offline(&self, workspace: &Path) -> Result<Self> {
        self.moved(workspace, false)
    }

    /// Whether commands may use the network.
    pub fn network(&self) -> bool {
        self.inner.policy.network
    }

    fn moved(&self, workspace: &Path, network: bool) -> Result<Self> {
        let workspace =
            workspace.canonicalize().map_err(|e| Error::other(format!("the sandbox's workspace {} cannot be opened ({e})", workspace.display())))?;
        self.rebuilt(|temp| Policy { workspace, temp, network, ..self.inner.policy.clone() })
    }

    /// A sandbox like this one (same modes and environment) for the policy
    /// `policy` makes around a fresh temp folder.
    fn rebuilt(&self, policy: impl FnOnce(PathBuf) -> Policy) -> Result<Self> {
        let temp = PrivateTemp::new()?;
        let temp_path = temp.path.clone();
        let on = |yes: bool| if yes { Mode::On } else { Mode::Off };
        let namespaces = on(self.ends_what_commands_start());
        Self::build(policy(temp_path), self.inner.env.clone(), temp, on(self.confines()), namespaces)
    }

    fn build(mut policy: Policy, env: EnvFilter, temp: PrivateTemp, mode: Mode, namespaces: Mode) -> Result<Self> {
        // A protected path that is a link leads out of the workspace, where
        // writes are refused anyway.
        let (protected, unmade): (Vec<PathBuf>, Vec<PathBuf>) =
            PROTECTED.iter().map(|name| policy.workspace.join(name)).partition(|p| std::fs::symlink_metadata(p).is_ok());
        policy.protected = protected.into_iter().filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.file_type().is_symlink())).collect();
        policy.unmade = unmade;
        if mode == Mode::Off {
            return Ok(Self { inner: Arc::new(Inner { policy, env, enforced: None, _temp: temp }) });
        }
        let abi = landlock::abi().map_err(|e| {
            Error::other(format!(
                "commands cannot be confined: this kernel has no Landlock ({e}); use Linux 5.13 or later with Landlock enabled, or set `mode = \"off\"` under [sandbox] in agentloop.toml to run commands with all your rights"
            ))
        })?;
        policy.private_shm = namespaces == Mode::On && namespace::available() && Path::new(SHM).is_dir() && std::fs::create_dir_all(policy.shm()).is_ok();
        let ruleset = landlock::Ruleset::new(abi, &policy.grants(), !policy.network)
            .map_err(|e| Error::other(format!("cannot build the sandbox's Landlock rules ({e})")))?;
        let filter = seccomp::Filter::new(policy.network);
        // SAFETY: geteuid only reads the caller's id.
        let root = unsafe { libc::geteuid() } == 0;
        // Root is exempt from the process limit, so its commands are bounded
        // by a pids cgroup where one can be made.
        let cgroup = (root && namespaces == Mode::On && policy.limits.processes > 0).then(|| cgroup::Cgroup::new(policy.limits.processes)).flatten();
        let namespace = match namespaces {
            Mode::Off => None,
            Mode::On if !namespace::available() => {
                return Err(Error::other(
                    "commands cannot be confined: this system does not let agentloop make user namespaces (a sysctl such as kernel.unprivileged_userns_clone or an AppArmor rule forbids them); allow them, or set `namespaces = \"off\"` under [sandbox] in agentloop.toml to confine commands without them",
                ))
            }
            Mode::On => {
                let writable: Vec<&Path> = policy.roots().into_iter().filter(|r| policy.access(r) == landlock::Access::Write).collect();
                Some(
                    namespace::Plan::new(&writable, &policy.protected, cgroup.as_ref().map(|c| c.procs.as_path()), policy.private_shm.then(|| policy.shm()).as_deref())
                        .map_err(|e| Error::other(format!("cannot plan the commands' namespaces ({e})")))?,
                )
            }
        };
        let rlimits = rlimits(&policy.limits, namespace.is_some());
        let enforced = Enforced { abi, ruleset, filter, root, namespace, rlimits, cgroup };
        Ok(Self { inner: Arc::new(Inner { policy, env, enforced: Some(enforced), _temp: temp }) })
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

    /// Whether each command gets a PID namespace of its own, so that
    /// whatever it starts dies with it.
    pub fn ends_what_commands_start(&self) -> bool {
        self.inner.enforced.as_ref().is_some_and(|e| e.namespace.is_some())
    }

    /// Prepares `cmd` to run confined: an environment without secrets and
    /// with the private temp folder, and the restrictions applied in the
    /// child just before it becomes the command. Whatever the mode, the
    /// command starts a session of its own with no controlling terminal,
    /// so it cannot type into the user's (its process group is the
    /// session: kill `-pid` reaches all it started there).
    pub fn confine(&self, cmd: &mut std::process::Command) {
        cmd.env_clear().envs(std::env::vars().filter(|(name, value)| self.inner.env.passes(name, value)));
        if self.inner.enforced.is_some() {
            for var in ["TMPDIR", "TMP", "TEMP"] {
                cmd.env(var, &self.inner.policy.temp);
            }
        }
        let inner = Arc::clone(&self.inner);
        let policy = &self.inner.policy;
        // Sockets listening now, each covered in the command's view.
        let sockets = match self.inner.enforced.as_ref().and_then(|e| e.namespace.as_ref()) {
            Some(_) => namespace::foreign_sockets(&policy.roots(), &policy.unix_sockets),
            None => Vec::new(),
        };
        // What the process between agentloop and the command keeps open:
        // the lifeline (it reads as closed once agentloop is gone), then the
        // temp folder's lock, held while any command of the sandbox lives.
        let keep: Vec<libc::c_int> = namespace::lifeline().into_iter().chain(self.inner._temp.lock_fd()).collect();
        // SAFETY: the closure makes system calls only (no allocation, no
        // locks), as code between fork and exec must.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let Some(enforced) = &inner.enforced else { return Ok(()) };
                if let Some(plan) = &enforced.namespace {
                    plan.enter(&sockets, &keep)?;
                }
                for (resource, limit) in &enforced.rlimits {
                    if libc::setrlimit(*resource, limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                // Inside its own user namespace the command holds every
                // capability there, so they are dropped whoever runs it.
                privileges::drop_all(enforced.root || enforced.namespace.is_some())?;
                landlock::restrict_self(enforced.ruleset.raw_fd())?;
                enforced.filter.apply()
            });
        }
    }

    /// Removes what a command made of the [`PROTECTED`] paths that did not
    /// exist when the sandbox was built (those that did are read-only to
    /// commands), and says so: a planted `.git` or `agentloop.toml` would
    /// run outside the sandbox on the user's next `git` or `agentloop`.
    /// Called after each command.
    pub fn undo_protected(&self) -> Vec<String> {
        let p = &self.inner.policy;
        if !self.confines() || !p.workspace_writable {
            return Vec::new();
        }
        let mut said = Vec::new();
        for path in &p.unmade {
            let Ok(meta) = std::fs::symlink_metadata(path) else { continue };
            let removed = if meta.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            said.push(match removed {
                Ok(()) => format!(
                    "the sandbox removed `{name}`, which the command made in the workspace: commands may not make or change {} (git or agentloop would run what they hold outside the sandbox)",
                    PROTECTED.join(", ")
                ),
                Err(e) => format!("the command made `{name}` in the workspace and the sandbox could not remove it ({e}): remove it before you run git or agentloop there"),
            });
        }
        said
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
        lines.extend(p.enumerated.iter().map(|e| format!("  denied: whatever is made in {} from now on", e.display())));
        lines.push(if p.network { "network: on".into() } else { "network: off (local Unix sockets only)".into() });
        lines.push(format!("protected: {} in the workspace (read-only to commands; made by one, removed)", PROTECTED.join(", ")));
        let bound = |n: u64, unit: &str| if n == 0 { "no bound".to_string() } else { format!("{n}{unit}") };
        let processes = match self.inner.enforced.as_ref() {
            Some(e) if e.root && e.cgroup.is_none() && p.limits.processes > 0 => {
                "not bounded (root is exempt from RLIMIT_NPROC and no pids cgroup could be made)".to_string()
            }
            _ => bound(p.limits.processes, ""),
        };
        lines.push(format!(
            "limits: processes {processes} (max_processes), memory {} a process (max_memory_mb), files {} (max_file_mb)",
            bound(p.limits.memory_mb, " MiB"),
            bound(p.limits.file_mb, " MiB")
        ));
        lines.push("terminal: none (a session of its own; TIOCSTI and TIOCLINUX refused)".into());
        lines.push("capabilities: none (the bounding set is emptied when agentloop runs as root)".into());
        if self.ends_what_commands_start() {
            lines.push("namespaces: its own user, mount, PID and IPC namespace: every mount but the writable folders read-only, the writable ones nosuid, outside Unix sockets covered, a private /dev/shm, its processes killed when it ends or agentloop does".into());
            lines.extend(p.unix_sockets.iter().map(|s| format!("  socket allowed: {}", s.display())));
        } else {
            lines.push("namespaces: off (metadata outside the workspace, outside Unix sockets and processes left behind are not confined)".into());
        }
        lines.push("files: no setuid or setgid bit may be set; keyrings and io_uring refused".into());
        lines.push(format!("enforced by Landlock ABI {abi} and seccomp; children inherit it"));
        lines
    }
}

/// A workspace no sandbox can confine is refused: commands may write
/// everywhere in it, so it must not hold the whole system, the home with
/// its secrets, agentloop's own data or a path commands may not read.
fn refuse_unconfinable(workspace: &Path, home: Option<&Path>, data_dir: Option<&Path>, deny_read: &[PathBuf]) -> Result<()> {
    let why = if workspace == Path::new("/") {
        Some("it is the whole file system".to_string())
    } else if home == Some(workspace) {
        Some("it is your home folder, with your settings and secrets".to_string())
    } else if let Some(data) = data_dir.and_then(|d| d.canonicalize().ok()).filter(|d| d.starts_with(workspace)) {
        Some(format!("it contains agentloop's data dir {}, which holds every session", data.display()))
    } else {
        deny_read.iter().find(|d| d.starts_with(workspace)).map(|d| format!("it contains {}, which commands may not read", d.display()))
    };
    match why {
        Some(why) => Err(Error::other(format!(
            "the workspace {} cannot be confined: {why}, and commands may write anywhere in their workspace; pass a project folder instead",
            workspace.display()
        ))),
        None => Ok(()),
    }
}

/// The `setrlimit` calls that bound a command. The process bound counts
/// per user, so it is set only inside a user namespace of the command's
/// own, where it counts the command's processes alone.
fn rlimits(limits: &Limits, own_namespace: bool) -> Vec<(libc::__rlimit_resource_t, libc::rlimit)> {
    let mib = |n: u64| n.saturating_mul(1024 * 1024);
    let mut out = Vec::new();
    let mut set = |resource, value: u64| {
        if value > 0 {
            out.push((resource, libc::rlimit { rlim_cur: value, rlim_max: value }));
        }
    };
    if own_namespace {
        set(libc::RLIMIT_NPROC, limits.processes);
    }
    set(libc::RLIMIT_AS, mib(limits.memory_mb));
    set(libc::RLIMIT_FSIZE, mib(limits.file_mb));
    out
}

/// The paths of the entries directly in `folder`.
fn entries_of(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    entries.filter_map(|e| e.ok()).map(|e| e.path()).collect()
}

/// Which of agentloop's environment variables a command gets.
#[derive(Clone, Debug, Default)]
struct EnvFilter {
    allow: Vec<String>,
    deny: Vec<String>,
}

impl EnvFilter {
    fn passes(&self, name: &str, value: &str) -> bool {
        if !self.allow.is_empty() {
            return self.allow.iter().any(|a| a == name);
        }
        !self.deny.iter().any(|d| d == name) && !looks_secret(name, value)
    }
}

/// Words that, anywhere in a variable's name, say it holds a credential.
const SECRET_NAME_PARTS: [&str; 8] = ["KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL", "COOKIE", "SESSION", "AUTH"];
/// Words that say so only as a whole `_`-separated part (`GITHUB_PAT`, not `PATH`).
const SECRET_NAME_WORDS: [&str; 4] = ["PAT", "DSN", "PRIVATE", "CERT"];

/// A variable that holds, or by its name probably holds, a credential:
/// its name says so, or its value is a URL with a user in it
/// (`postgres://user:pass@host`) or starts like a well-known token.
pub fn looks_secret(name: &str, value: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let named = SECRET_NAME_PARTS.iter().any(|w| upper.contains(w)) || upper.split('_').any(|part| SECRET_NAME_WORDS.contains(&part));
    named || url_with_credentials(value) || TOKEN_PREFIXES.iter().any(|p| value.trim_start().starts_with(p)) || is_jwt(value)
}

/// `scheme://user[:password]@host…` anywhere in `value` (a list of URLs too).
fn url_with_credentials(value: &str) -> bool {
    value.match_indices("://").any(|(i, _)| {
        let authority = value[i + 3..].split(['/', '?', '#', ' ', ',', ';']).next().unwrap_or_default();
        authority.contains('@')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_known_by_name_or_by_value() {
        for name in ["OPENAI_API_KEY", "github_token", "AWS_SECRET_ACCESS_KEY", "PGPASS", "DB_PASS", "GITHUB_PAT", "SENTRY_DSN", "TLS_PRIVATE"] {
            assert!(looks_secret(name, "x"), "{name}");
        }
        for value in [
            "postgres://user:pass@db:5432/app",
            "https://token@github.com/x.git",
            "sk-abc",
            "ghp_123",
            "github_pat_1",
            "xoxb-1",
            "AKIAIOSFODNN7",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
        ] {
            assert!(looks_secret("SOMETHING", value), "{value}");
        }
        for (name, value) in [("PATH", "/usr/bin:/bin"), ("HOME", "/root"), ("CARGO_HOME", "/c"), ("PWD", "/w"), ("URL", "https://example.com/a@b")] {
            assert!(!looks_secret(name, value), "{name}={value}");
        }
    }

    #[test]
    fn the_allow_list_is_all_that_passes_and_the_deny_list_drops_more() {
        let allow = EnvFilter { allow: vec!["PATH".into(), "DATABASE_URL".into()], deny: vec![] };
        assert!(allow.passes("PATH", "/bin") && allow.passes("DATABASE_URL", "postgres://u:p@h/db") && !allow.passes("HOME", "/root"));
        let deny = EnvFilter { allow: vec![], deny: vec!["INTERNAL_HOST".into()] };
        assert!(!deny.passes("INTERNAL_HOST", "10.0.0.1") && deny.passes("HOME", "/root") && !deny.passes("API_KEY", "x"));
    }

    #[test]
    fn the_config_reads_from_toml_and_names_a_bad_key() {
        let c: SandboxConfig = toml::from_str("network = \"on\"\ndeny_read = [\"~/private\"]").unwrap();
        assert_eq!((c.mode, c.network, c.deny_read.len()), (Mode::On, Network::On, 1));
        let e = toml::from_str::<SandboxConfig>("netwrok = \"on\"").unwrap_err().to_string();
        assert!(e.contains("netwrok"), "{e}");
    }
}

//! Turning a bare EACCES or EPERM in a confined command's output into the
//! sentence that says what the sandbox refused and why, so the model (and
//! the person reading the record) learns the rule rather than retrying.

use std::path::{Path, PathBuf};

use super::{Limits, Policy};

/// Sentences about what the sandbox refused, judged from `output`; empty
/// when nothing in it looks like a refusal.
pub fn explain(policy: &Policy, output: &str) -> Vec<String> {
    let mut sentences: Vec<String> = Vec::new();
    for line in output.lines() {
        if let Some(sentence) = limit_hit(&policy.limits, line) {
            push(&mut sentences, sentence);
            continue;
        }
        // Outside the writable folders the mounts are read-only in a
        // command's view, so a write there fails as on a read-only disk.
        let denied = ["Permission denied", "[Errno 13]", "Read-only file system", "[Errno 30]"].iter().any(|w| line.contains(w));
        let not_permitted = line.contains("Operation not permitted") || line.contains("[Errno 1]");
        if !denied && !not_permitted {
            continue;
        }
        let paths = paths_in(line, &policy.workspace);
        let mut said = false;
        for path in &paths {
            if let Some(secret) = policy.deny_read.iter().find(|d| path.starts_with(d)) {
                push(&mut sentences, format!("the sandbox refused access to {}: {} is kept from commands as secret", path.display(), secret.display()));
                said = true;
            } else if let Some(home) = policy.ungranted(path) {
                push(
                    &mut sentences,
                    format!(
                        "the sandbox refused access to {}: of {} commands read only what was there when the session started, and of its hidden entries only toolchains and those `read_home` under [sandbox] names",
                        path.display(),
                        home.display()
                    ),
                );
                said = true;
            } else if denied && !policy.workspace_writable && path.starts_with(&policy.workspace) {
                push(&mut sentences, format!("the sandbox refused a write to {}: this command may only look at the workspace, not change it", path.display()));
                said = true;
            } else if denied && !policy.writable(path) {
                push(
                    &mut sentences,
                    format!(
                        "the sandbox refused a write to {}: outside the workspace (commands may write only under {} and their temp folder)",
                        path.display(),
                        policy.workspace.display()
                    ),
                );
                said = true;
            }
        }
        let networky = ["socket", "connect", "network", "Errno 1]", "urlopen"].iter().any(|w| line.contains(w));
        let signal = ["kill", "signal", "ptrace"].iter().any(|w| line.contains(w));
        if !said && not_permitted && signal {
            push(&mut sentences, "the sandbox refused to let the command signal or trace a process it did not start".into());
        } else if !said && not_permitted && !policy.network && networky {
            push(&mut sentences, "the sandbox refused a network connection: the network is off for commands (set `network = \"on\"` under [sandbox] in agentloop.toml to allow it)".into());
        }
    }
    sentences
}

/// The sentence for a line that says a command ran into one of its bounds.
fn limit_hit(limits: &Limits, line: &str) -> Option<String> {
    let has = |words: &[&str]| words.iter().any(|w| line.contains(w));
    let (bound, key, what) = if has(&["Resource temporarily unavailable", "[Errno 11]", "Cannot fork", "can't fork"])
        && has(&["fork", "thread", "spawn", "Cannot", "[Errno 11]", "BlockingIOError"])
    {
        (limits.processes, "max_processes", "processes at once")
    } else if has(&["Cannot allocate memory", "MemoryError", "memory allocation of", "std::bad_alloc", "[Errno 12]"]) {
        (limits.memory_mb, "max_memory_mb", "MiB of memory a process")
    } else if has(&["File size limit exceeded", "File too large", "[Errno 27]"]) {
        (limits.file_mb, "max_file_mb", "MiB a file")
    } else {
        return None;
    };
    (bound > 0).then(|| format!("the command hit the sandbox's limit of {bound} {what} (`{key}` under [sandbox] in agentloop.toml raises it; 0 lifts it)"))
}

fn push(sentences: &mut Vec<String>, sentence: String) {
    if !sentences.contains(&sentence) && sentences.len() < 5 {
        sentences.push(sentence);
    }
}

/// The phrases with which a refused access ends, as `strerror` words them.
const REFUSED: [&str; 3] = [": Permission denied", ": Read-only file system", ": Operation not permitted"];

/// The paths (words with a slash, quoted names) that a line of error output
/// names (`touch: cannot touch '/x': …`, `PermissionError: … '/x'`,
/// `sh: 1: cannot create /x: …`), and the name right before the error
/// itself, which is a path whatever it looks like (`cannot create a.txt:
/// …`, `cannot create directory ‘made’: …`).
fn paths_in(line: &str, workspace: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for phrase in REFUSED {
        if let Some(before) = line.find(phrase).map(|at| &line[..at]) {
            let name = before.rsplit(char::is_whitespace).next().unwrap_or_default();
            let name = name.trim_matches(|c: char| matches!(c, ':' | '\'' | '"' | '‘' | '’' | '`'));
            if !name.is_empty() && !name.ends_with(']') {
                found.push(name.to_string());
            }
        }
    }
    for quote in ['\'', '"', '‘', '’', '`'] {
        for (i, part) in line.split(quote).enumerate() {
            if i % 2 == 1 && !part.is_empty() && !part.contains(' ') && (part.starts_with('/') || part.contains('/') || part.contains('.')) {
                found.push(part.to_string());
            }
        }
    }
    for word in line.split_whitespace() {
        let word = word.trim_matches(|c: char| matches!(c, ':' | ',' | ';' | '\'' | '"' | '(' | ')' | '‘' | '’' | '`'));
        if word.contains('/') && word.len() > 1 {
            found.push(word.to_string());
        }
    }
    let mut paths: Vec<PathBuf> = Vec::new();
    for text in found {
        let path = workspace.join(&text);
        let path = normalize(&path);
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// `..` and `.` removed without touching the disk (the path may not exist),
/// as the kernel resolves them: `/..` is `/` (the jail's own `normalize`
/// refuses such a path instead, which is not what happened here).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            workspace: PathBuf::from("/w"),
            temp: PathBuf::from("/tmp/sb"),
            deny_read: vec![PathBuf::from("/home/me/.ssh")],
            enumerated: vec![PathBuf::from("/home/me")],
            enumerated_grants: vec![PathBuf::from("/home/me/code")],
            network: false,
            workspace_writable: true,
            unix_sockets: vec![],
            protected: vec![],
            unmade: vec![],
            limits: Limits { processes: 64, memory_mb: 512, file_mb: 1 },
            private_shm: false,
        }
    }

    #[test]
    fn refusals_are_named_with_their_rule() {
        let p = policy();
        let out = "touch: cannot touch '/etc/x': Permission denied\nPermissionError: [Errno 13] Permission denied: '/home/me/.ssh/id_rsa'\n";
        let said = explain(&p, out);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].starts_with("the sandbox refused a write to /etc/x: outside the workspace"), "{said:?}");
        assert!(said[1].contains("/home/me/.ssh is kept from commands as secret"), "{said:?}");
        let ro = explain(&p, "touch: cannot touch '/etc/x': Read-only file system");
        assert!(ro[0].starts_with("the sandbox refused a write to /etc/x: outside the workspace"), "{ro:?}");
        let net = explain(&p, "PermissionError: [Errno 1] Operation not permitted");
        assert_eq!(net.len(), 1);
        assert!(net[0].starts_with("the sandbox refused a network connection"));
        // Inside the workspace a denial is the file's own permissions, not the sandbox.
        assert!(explain(&p, "sh: 1: cannot create /w/ro.txt: Permission denied").is_empty());
        assert!(explain(&p, "cannot create ../../etc/y: Permission denied")[0].contains("/etc/y"));
        assert!(explain(&Policy { network: true, ..policy() }, "PermissionError: [Errno 1] Operation not permitted").is_empty());
        // A read of a home entry made after the start is not called a write,
        // and a refused signal is not called the network.
        let late = explain(&p, "cat: /home/me/.ssh2/id: Permission denied");
        assert!(late[0].starts_with("the sandbox refused access to /home/me/.ssh2/id: of /home/me"), "{late:?}");
        assert!(explain(&p, "cat: /home/me/code/x: Permission denied")[0].contains("a write"), "a granted entry's denial is a write");
        let kill = explain(&p, "sh: 1: kill: Operation not permitted");
        assert_eq!(kill, ["the sandbox refused to let the command signal or trace a process it did not start"]);
    }

    #[test]
    fn a_limit_that_was_hit_is_named_with_its_key() {
        let p = policy();
        let fork = explain(&p, "sh: 1: Cannot fork");
        assert!(fork[0].contains("limit of 64 processes") && fork[0].contains("max_processes"), "{fork:?}");
        let bash = explain(&p, "bash: fork: retry: Resource temporarily unavailable");
        assert!(bash[0].contains("max_processes"), "{bash:?}");
        assert!(explain(&p, "MemoryError")[0].contains("max_memory_mb"));
        assert!(explain(&p, "sh: line 1:   12 File size limit exceeded dd if=/dev/zero of=big")[0].contains("max_file_mb"));
        let unbounded = Policy { limits: Limits { processes: 0, memory_mb: 0, file_mb: 0 }, ..policy() };
        assert!(explain(&unbounded, "MemoryError").is_empty(), "no bound, no sentence");
    }
}

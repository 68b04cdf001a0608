//! Who runs a session. One process at a time holds a session's lease: a
//! second `resume` is refused with a sentence naming the holder, a held
//! session cannot be deleted, and a session whose holder died is known to
//! be interrupted rather than running. On one machine a holder is alive as
//! long as its process is (same pid, same start time); a holder on another
//! host is alive until its lease runs out unrenewed.

use chrono::{DateTime, Utc};

/// How long a lease lasts past its last renewal, for holders on other hosts.
pub const TTL_MS: i64 = 30_000;

/// A step commit renews the lease when the last renewal is this old (a
/// quarter of the lease); the others only check it, which writes nothing.
pub const RENEW_EVERY: std::time::Duration = std::time::Duration::from_millis(TTL_MS as u64 / 4);

/// The SQL condition (on a `status` column) of a session that may still
/// run. A claim skips the rest: a session that ended stays queued for the
/// moment between its run releasing the lease and its worker taking it
/// out of the queue, and must not be claimed in that moment.
pub fn may_run_sql() -> String {
    let ended: Vec<String> = agentloop_core::SessionStatus::FINAL.iter().map(|s| format!("'{}'", s.as_str())).collect();
    format!("status NOT IN ({})", ended.join(", "))
}

/// A process that may hold leases: this one, or one read from the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub host: String,
    pub pid: i64,
    /// Clock ticks after boot at which the process started.
    pub started: i64,
}

impl Holder {
    /// The calling process.
    pub fn me() -> Self {
        let pid = i64::from(std::process::id());
        Self { host: host_name(), pid, started: start_time(pid).unwrap_or(0) }
    }

    /// Whether the holder still runs: checked directly on this host, by
    /// the lease's expiry elsewhere.
    pub fn alive(&self, until_ms: i64) -> bool {
        if self.host == host_name() {
            start_time(self.pid).is_some_and(|t| t == self.started)
        } else {
            until_ms > Utc::now().timestamp_millis()
        }
    }

    /// Whether the holder of a lease still current on the shared store's
    /// clock still runs: on this host its process must run too, so a
    /// crashed worker's sessions need not wait for the lease to pass.
    pub fn alive_while(&self, current: bool) -> bool {
        current && (self.host != host_name() || start_time(self.pid).is_some_and(|t| t == self.started))
    }

    /// "process 4242 on box (since 12:03:05)" for a refusal.
    pub fn describe(&self, since: &str) -> String {
        let since = DateTime::parse_from_rfc3339(since).map(|t| format!(" since {}", t.with_timezone(&Utc).format("%H:%M:%S UTC"))).unwrap_or_default();
        format!("process {} on {}{since}", self.pid, self.host)
    }
}

/// Why a second run of a session is refused: `holder` runs it.
pub(crate) fn busy(session_id: &str, holder: &str) -> agentloop_core::Error {
    agentloop_core::Error::Other(format!(
        "session `{session_id}` is being run by {holder}: wait for it to end, or pause or terminate it there, then resume it here"
    ))
}

/// Why a held session is not deleted.
pub(crate) fn busy_for_delete(session_id: &str, holder: &str) -> agentloop_core::Error {
    agentloop_core::Error::Other(format!("session `{session_id}` is being run by {holder}: pause or terminate it first, then delete it"))
}

/// Why a holder that lost its session stops writing to it.
pub(crate) fn taken_over(session_id: &str) -> agentloop_core::Error {
    agentloop_core::Error::Store(format!(
        "session `{session_id}` was taken over by another process, so this one stops without writing to it; follow it with `agentloop sessions show {session_id}`"
    ))
}

pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "this machine".into())
}

/// Field 22 of `/proc/PID/stat`: when the process started. `None` when no
/// such process exists.
fn start_time(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; fields after it do not.
    let after_name = stat.rsplit_once(')')?.1;
    after_name.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_finished_one_is_not() {
        let me = Holder::me();
        assert!(me.started > 0 && me.alive(0));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = Holder { pid: i64::from(child.id()), ..me.clone() };
        child.wait().unwrap();
        assert!(!gone.alive(i64::MAX));
        let elsewhere = Holder { host: "another-host".into(), ..me };
        assert!(elsewhere.alive(Utc::now().timestamp_millis() + 10_000) && !elsewhere.alive(0));
    }
}

//! A throwaway Postgres for tests: the first call in a process makes a
//! cluster in a temporary folder and starts its server on a loopback port;
//! each call then creates a new, empty database on it. Nothing is left
//! running: the server is killed when the test process ends, and a later
//! process removes the folders of clusters whose process is gone.
//!
//! `AGENTLOOP_TEST_PG_URL` (a `postgres://` URL whose user may create
//! databases) points the tests at a server of your own instead.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use agentloop_core::{Error, Result};

const PREFIX: &str = "agentloop-pg-";

/// The URL of a new, empty database on the process's throwaway server.
pub fn database() -> Result<String> {
    static SERVER: OnceLock<std::result::Result<Cluster, String>> = OnceLock::new();
    let server = SERVER.get_or_init(|| match std::env::var("AGENTLOOP_TEST_PG_URL") {
        Ok(url) => Ok(Cluster { url, keeper: None }),
        Err(_) => Cluster::start().map_err(|e| e.to_string()),
    });
    server.as_ref().map_err(|e| Error::Store(e.clone()))?.database()
}

/// A throwaway server of one's own, for a test that stops or restarts it.
pub struct Cluster {
    /// The admin URL (database `postgres`).
    url: String,
    /// Starts and stops the server (none for a server given by URL).
    keeper: Option<std::sync::mpsc::Sender<Order>>,
}

enum Order {
    /// Stop the server (fast: open transactions are cut) and start it again.
    Restart(std::sync::mpsc::Sender<Result<()>>),
}

impl Cluster {
    /// Makes a cluster in a temporary folder and starts its server.
    pub fn start() -> Result<Self> {
        let bin = binaries()?;
        remove_stale_clusters();
        let dir = std::env::temp_dir().join(format!("{PREFIX}{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).map_err(|e| Error::Store(format!("cannot make {} ({e})", dir.display())))?;
        // initdb refuses to run as root: the cluster then belongs to `postgres`.
        let owner = if unsafe { libc::geteuid() } == 0 { Some(postgres_user()?) } else { None };
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| Error::Store(format!("cannot give {} to postgres ({e})", dir.display())))?;
        }
        let data = dir.join("data");
        let mut initdb = Command::new(bin.join("initdb"));
        initdb.args(["-D"]).arg(&data).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]).stdout(Stdio::null()).stderr(Stdio::piped());
        as_owner(&mut initdb, owner);
        let out = initdb.output().map_err(|e| Error::Store(format!("cannot run initdb ({e})")))?;
        if !out.status.success() {
            return Err(Error::Store(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
        }
        let port = free_port()?;
        let folder = dir.clone();
        let server = move || {
            let mut c = Command::new(bin.join("postgres"));
            c.arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string(), "-k"])
                .arg(&dir)
                .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300"])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            as_owner(&mut c, owner);
            // The server dies with the test process (SIGQUIT: an immediate
            // stop). The signal follows the thread that started it, so the
            // keeper thread, which lives as long as the process, starts it.
            unsafe {
                c.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT);
                    Ok(())
                });
            }
            c
        };
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        let (orders, inbox) = std::sync::mpsc::channel::<Order>();
        let (started_tx, started) = std::sync::mpsc::channel();
        let admin = url.clone();
        std::thread::spawn(move || {
            let mut running = server().spawn();
            let ok = running.is_ok();
            let _ = started_tx.send(running.as_ref().map(|_| ()).map_err(|e| Error::Store(format!("cannot start the Postgres server ({e})"))));
            if !ok {
                return;
            }
            for order in inbox {
                match order {
                    Order::Restart(done) => {
                        if let Ok(child) = running.as_mut() {
                            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
                            let _ = child.wait();
                        }
                        running = server().spawn();
                        let up = running.as_ref().map_err(|e| Error::Store(format!("cannot start the Postgres server again ({e})"))).map(|_| ());
                        let _ = done.send(up.and_then(|()| wait_until_up(&admin)));
                    }
                }
            }
            // The cluster was dropped: its server and folder go with it.
            if let Ok(child) = running.as_mut() {
                unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) };
                let _ = child.wait();
            }
            let _ = std::fs::remove_dir_all(&folder);
        });
        started.recv().map_err(|_| Error::Store("the thread starting Postgres ended".into()))??;
        wait_until_up(&url)?;
        Ok(Self { url, keeper: Some(orders) })
    }

    /// A new, empty database on this server; its URL.
    pub fn database(&self) -> Result<String> {
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let (admin, created) = (self.url.clone(), name.clone());
        // The client blocks on a runtime of its own: keep it off the caller's.
        std::thread::spawn(move || -> std::result::Result<(), postgres::Error> {
            let mut client = postgres::Client::connect(&admin, postgres::NoTls)?;
            client.batch_execute(&format!("CREATE DATABASE {created}"))
        })
        .join()
        .map_err(|_| Error::Store("creating a test database panicked".into()))?
        .map_err(|e| Error::Store(format!("cannot create a test database on {}: {e}", self.url)))?;
        Ok(with_database(&self.url, &name))
    }

    /// Stops the server, cutting every connection, and starts it again on
    /// the same port with the same data; returns once it answers.
    pub fn restart(&self) -> Result<()> {
        let keeper = self.keeper.as_ref().ok_or_else(|| Error::Store("a server given by AGENTLOOP_TEST_PG_URL is not restarted by the tests".into()))?;
        let (done, wait) = std::sync::mpsc::channel();
        keeper.send(Order::Restart(done)).map_err(|_| Error::Store("the throwaway server's keeper has ended".into()))?;
        wait.recv().map_err(|_| Error::Store("the throwaway server's keeper has ended".into()))?
    }
}

/// `url` with its database replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(slash) => &base[..after_scheme + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

fn wait_until_up(url: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let try_url = url.to_string();
        let up = std::thread::spawn(move || postgres::Client::connect(&try_url, postgres::NoTls).is_ok()).join().unwrap_or(false);
        if up {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Store(format!("the throwaway Postgres at {url} did not come up within a minute")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
}

/// The newest installed Postgres's programs (Debian keeps them per version).
fn binaries() -> Result<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let newest = std::fs::read_dir(root)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|v| v.parse::<u32>().ok()))
        .max();
    match newest {
        Some(v) if root.join(v.to_string()).join("bin/initdb").exists() => Ok(root.join(v.to_string()).join("bin")),
        _ => Err(Error::Store("Postgres is not installed (no /usr/lib/postgresql/*/bin/initdb): run scripts/setup.sh, or set AGENTLOOP_TEST_PG_URL".into())),
    }
}

/// The `postgres` account's user and group ids, from /etc/passwd.
fn postgres_user() -> Result<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&"postgres") && fields.len() > 3).then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?))).flatten()
        })
        .ok_or_else(|| Error::Store("there is no `postgres` user to run the throwaway cluster as: run scripts/setup.sh".into()))
}

fn free_port() -> Result<u16> {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| Error::Store(format!("cannot find a free port ({e})")))?;
    socket.local_addr().map(|a| a.port()).map_err(|e| Error::Store(format!("cannot find a free port ({e})")))
}

/// Removes the folders of throwaway clusters whose test process is gone.
fn remove_stale_clusters() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)).and_then(|rest| rest.split('-').next()).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_of_a_url_is_replaced() {
        assert_eq!(with_database("postgres://u@h:5/postgres", "t_1"), "postgres://u@h:5/t_1");
        assert_eq!(with_database("postgres://u@h:5", "t_1"), "postgres://u@h:5/t_1");
        assert_eq!(with_database("postgres://u:p@h/db?sslmode=disable", "t_1"), "postgres://u:p@h/t_1?sslmode=disable");
    }
}

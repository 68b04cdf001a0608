//! One Postgres connection, owned by a thread of its own.
//!
//! The `postgres` client blocks on a private Tokio runtime, which panics
//! when called from inside another runtime — and the engine calls its store
//! from async tasks. So the client lives on a plain OS thread, and callers
//! hand it closures over a channel and wait for the answer, as they would
//! wait for SQLite. A lost connection is opened again on the next call.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use agentloop_core::{Error, Result};
use postgres::{Client, NoTls, Statement};

/// The connection and the statements prepared on it.
pub(crate) struct Session {
    pub client: Client,
    prepared: HashMap<&'static str, Statement>,
}

impl Session {
    /// `sql` prepared once per connection: a step commit runs the same few
    /// statements, and parsing them again each time doubles its round trips.
    pub fn prepared(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }
}

type Job = Box<dyn FnOnce(&mut Option<Session>) + Send>;

/// A handle on the connection's thread. Dropping it ends the thread, which
/// closes the connection.
pub(crate) struct Link {
    jobs: mpsc::Sender<Job>,
}

/// Why a call failed: the server said no, it could not be reached, or
/// what it holds stops us (a sentence already made).
pub(crate) enum Failure {
    Sql(postgres::Error),
    Gone(String),
    Said(Error),
}

impl Failure {
    /// Whether the connection was lost (or the server is shutting down),
    /// rather than the server refusing what was asked.
    pub fn lost_connection(&self) -> bool {
        match self {
            Failure::Sql(e) => match e.as_db_error() {
                None => true,
                // Class 08: connection exception; 57: operator intervention
                // (a server shutting down or restarting).
                Some(db) => db.code().code().starts_with("08") || db.code().code().starts_with("57"),
            },
            Failure::Gone(_) => true,
            Failure::Said(_) => false,
        }
    }

    /// One sentence: what could not be done in `what`, and why.
    pub fn into_error(self, what: &str, doing: &str) -> Error {
        match self {
            Failure::Sql(e) if e.is_closed() || e.as_db_error().is_none() => {
                Error::Store(format!("cannot {doing} in {what}: the connection failed ({}); agentloop connects again on the next try", reason(&e)))
            }
            Failure::Sql(e) => Error::Store(format!("cannot {doing} in {what}: {}", reason(&e))),
            Failure::Gone(why) => Error::Store(format!("cannot {doing} in {what}: {why}; agentloop connects again on the next try")),
            Failure::Said(e) => e,
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Said(e)
    }
}

impl Link {
    /// Connects once before returning, so a wrong URL is one sentence now
    /// rather than on the first step. `setup` runs on every new connection.
    pub fn open(url: &str, what: &str, setup: &str) -> Result<Self> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (url, setup) = (url.to_string(), setup.to_string());
        let (ready_tx, ready) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("agentloop-postgres".into())
            .spawn(move || {
                let mut session = None;
                let _ = ready_tx.send(connect(&url, &setup).map(|s| session = Some(s)));
                for job in inbox {
                    if session.as_ref().is_none_or(|s| s.client.is_closed()) {
                        session = connect(&url, &setup).ok();
                    }
                    job(&mut session);
                }
                // The client is dropped here, on its own thread: dropping it
                // inside an async task would panic like calling it does.
            })
            .map_err(|e| Error::Store(format!("cannot start a thread for {what} ({e})")))?;
        match ready.recv() {
            Ok(Ok(())) => Ok(Self { jobs }),
            Ok(Err(e)) => Err(Error::Store(format!(
                "cannot connect to {what} ({}): check that the server runs and that [store] url (or AGENTLOOP_STORE_URL) is right",
                reason(&e)
            ))),
            Err(_) => Err(Error::Store(format!("the connection thread for {what} ended before connecting"))),
        }
    }

    /// Runs `f` on the connection and waits for its answer.
    pub fn call<T: Send + 'static>(&self, f: impl FnOnce(&mut Session) -> Result<T, Failure> + Send + 'static) -> Result<T, Failure> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |session| {
            let out = match session {
                Some(s) => f(s),
                None => Err(Failure::Gone("the server cannot be reached".into())),
            };
            let _ = tx.send(out);
        });
        self.jobs.send(job).map_err(|_| Failure::Gone("its connection thread has ended".into()))?;
        rx.recv().map_err(|_| Failure::Gone("its connection thread has ended".into()))?
    }
}

impl From<postgres::Error> for Failure {
    fn from(e: postgres::Error) -> Self {
        Failure::Sql(e)
    }
}

fn connect(url: &str, setup: &str) -> Result<Session, postgres::Error> {
    let mut config: postgres::Config = url.parse()?;
    config.connect_timeout(Duration::from_secs(5));
    config.application_name("agentloop");
    let mut client = config.connect(NoTls)?;
    client.batch_execute(setup)?;
    Ok(Session { client, prepared: HashMap::new() })
}

/// The server's own words when it gave any, else the client's.
pub(crate) fn reason(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => {
            let text = e.to_string();
            match std::error::Error::source(e) {
                Some(source) => format!("{text}: {source}"),
                None => text,
            }
        }
    }
}

/// The URL without its password, for sentences and logs.
pub(crate) fn describe(url: &str) -> String {
    match url.parse::<postgres::Config>() {
        Ok(c) => {
            let host = c
                .get_hosts()
                .first()
                .map(|h| match h {
                    postgres::config::Host::Tcp(name) => name.clone(),
                    postgres::config::Host::Unix(path) => path.display().to_string(),
                })
                .unwrap_or_else(|| "localhost".into());
            let port = c.get_ports().first().copied().unwrap_or(5432);
            let db = c.get_dbname().or(c.get_user()).unwrap_or("postgres");
            format!("the Postgres database `{db}` at {host}:{port}")
        }
        Err(_) => "the Postgres database".into(),
    }
}

//! Steering a running session from outside: pause, resume, terminate, answer
//! interrupts, watch events. Pause and terminate take effect at the next step
//! boundary and cancel an in-flight model or tool call.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{broadcast, watch, Notify};
use tokio::task::JoinHandle;

use crate::event::Event;
use crate::journal::InterruptRecord;
use crate::progress::Progress;
use crate::status::SessionStatus;
use crate::steering::{Command, Ending};
use crate::store::Store;
use crate::{Error, Result};

/// How a run ended (or why it returned while paused).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub session_id: String,
    pub status: SessionStatus,
    pub finish_reason: Option<String>,
    /// One sentence about why it ended.
    pub message: Option<String>,
    pub progress: Progress,
    /// The question the session waits on, when paused for one.
    pub pending: Option<InterruptRecord>,
}

/// Steers a session; cheap to clone and hand to other tasks (a terminal
/// prompt, a Ctrl-C handler, an HTTP request).
#[derive(Clone)]
pub struct Controller {
    pub(crate) id: String,
    pub(crate) control: Arc<watch::Sender<Command>>,
    pub(crate) answered: Arc<Notify>,
    pub(crate) events: broadcast::Sender<Event>,
    pub(crate) store: Arc<dyn Store>,
}

impl Controller {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn pause(&self) {
        self.control.send_replace(Command::Pause);
    }

    pub fn resume(&self) {
        self.control.send_replace(Command::Run);
    }

    pub fn terminate(&self, reason: impl Into<String>) {
        self.end(Ending::Terminated, reason);
    }

    /// Ends the session at the next step boundary (cancelling an in-flight
    /// call) the way `ending` says: `Ending::Completed` is the user's
    /// confirmation that the goal is met.
    pub fn end(&self, ending: Ending, reason: impl Into<String>) {
        self.control.send_replace(Command::Terminate(ending, reason.into()));
    }

    /// Answers an interrupt; the session continues with the reply.
    pub fn answer(&self, interrupt_id: &str, reply: Value) -> Result<()> {
        self.store.answer(&self.id, interrupt_id, &reply)?;
        self.answered.notify_one();
        Ok(())
    }

    /// Live events from now on; use `Store::events` for history.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// The question the session waits on, if any.
    pub fn pending(&self) -> Result<Option<InterruptRecord>> {
        self.store.pending_interrupt(&self.id)
    }
}

/// How often a running session looks in the store for requests sent from
/// elsewhere: the bound on how long a pause from another machine takes.
const STEERING_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Feeds the requests sent to the session through the store (by another
/// process, on this machine or another) into its control channel, the same
/// door a local pause goes through, so an in-flight call is cancelled the
/// same way. Requests numbered up to `seen` came before this run and are
/// not applied to it. Ends when the run does.
pub(crate) fn follow_steering(store: Arc<dyn Store>, id: String, mut seen: u64, control: Arc<watch::Sender<Command>>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(STEERING_POLL).await;
            if control.is_closed() {
                return;
            }
            if let Ok(Some((seq, request))) = store.steering(&id, seen) {
                seen = seq;
                control.send_replace(request);
            }
        }
    });
}

/// A running session: its controller (through `Deref`) and its task.
pub struct SessionHandle {
    pub(crate) controller: Controller,
    pub(crate) task: JoinHandle<Result<Outcome>>,
}

impl std::ops::Deref for SessionHandle {
    type Target = Controller;
    fn deref(&self) -> &Controller {
        &self.controller
    }
}

impl SessionHandle {
    pub fn controller(&self) -> Controller {
        self.controller.clone()
    }

    /// Waits for the run to end (or to return while paused, when asked to).
    pub async fn wait(self) -> Result<Outcome> {
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(Error::Other(format!("the session task failed: {e}"))),
        }
    }

    /// Stops the task where it is, as a killed process would (for tests and shutdown).
    pub fn abort(&self) {
        self.task.abort();
    }
}

//! The port through which the runner reads a session's workspace for its
//! checkpoints; the `tools` crate scans a folder through it.

use crate::checkpoint::Manifest;
use crate::store::Store;
use crate::Result;

/// A session's workspace as checkpoints read it: the files as they are
/// now, with the contents the store does not hold yet put in it first.
pub trait WorkspaceFiles: Send + Sync {
    fn capture(&self, store: &dyn Store) -> Result<Manifest>;
}

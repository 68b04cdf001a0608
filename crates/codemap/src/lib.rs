//! What a coding agent shows a model of a repository, when the repository
//! is larger than the model's context.
//!
//! Files in path order fill a prompt with licences and manifests before the
//! code a task is about. Instead, the tests say what fails and where
//! (`evidence`), each source file is read into its definitions
//! (`symbols`), the definitions are ranked for the task by the failing
//! tests' stack frames, their line coverage (`coverage`) and the task's
//! words (`rank`), and the best of them are shown whole, with a map of the
//! rest, within a budget counted by the caller in the model's own tokens
//! (`view`).

pub mod coverage;
pub mod evidence;
pub mod failing_only;
pub mod open;
pub mod python_run;
pub mod rank;
pub mod small_edits;
pub mod symbols;
pub mod syntax;
pub mod test_files;
pub mod view;

pub use coverage::Spectrum;
pub use evidence::{Evidence, FailingTest, Frame};
pub use rank::{rank, Ranked, Signals};
pub use small_edits::SmallEdit;
pub use symbols::{definitions, Definition, Kind};
pub use view::{Region, View, ViewOptions};

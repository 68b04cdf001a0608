//! agentloop-agents: graphs built from the engine, the tools and the models.
//! `coder` plans, codes, tests, reflects and fixes or replans until the
//! tests pass, then reviews its own diff. `planner` turns a goal into a
//! validated plan of file and shell actions and runs it with the user's
//! approval. `repl` answers questions by writing Python and running it in
//! a persistent session until a reflection judges the answer complete.
//! `research` answers multi-part questions from a local document
//! collection with cited, judged claims. The [`registry`] describes each
//! of them once, for every surface.

mod approved;
pub mod coder;
mod commands;
pub mod fence;
mod mcp;
pub mod planner;
pub mod registry;
pub mod repl;
pub mod research;
pub mod test_command;
mod text;

//! agentloop-agents: graphs built from the engine, the tools and the models.
//! `coder` plans, codes, tests, reflects and fixes or replans until the
//! tests pass, then reviews its own diff. `planner` turns a goal into a
//! validated plan of file and shell actions and runs it with the user's
//! approval. `repl` answers questions by writing Python and running it in
//! a persistent session until a reflection judges the answer complete.

pub mod coder;
pub mod planner;
pub mod repl;
mod approved;
mod commands;
mod fence;
pub mod test_command;

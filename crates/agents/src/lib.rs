//! agentloop-agents: graphs built from the engine, the tools and the models.
//! `coder` plans, codes, tests, reflects and fixes or replans until the
//! tests pass, then reviews its own diff.

pub mod coder;
mod approved;
pub mod test_command;

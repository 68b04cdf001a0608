//! What the tests of agentloop's binaries share, kept out of the shipped
//! crates: a dev-dependency only.

pub mod fake_openai;

//! What agentloop's tests share, kept out of the shipped crates (a
//! dev-dependency, and the benchmarks' dependency): a throwaway Postgres
//! (`throwaway`), the answers of a fake OpenAI-compatible endpoint
//! (`fake_openai`), and an MCP server to call (the `mcp-fixture` binary).

pub mod fake_openai;
pub mod throwaway;

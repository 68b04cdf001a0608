pub mod bench;
pub mod humaneval;
#[cfg(feature = "llama")]
pub mod model_bench;
pub mod models;
pub mod planner;
pub mod planner_bench;
pub mod repl;
pub mod repl_bench;
pub mod run;
pub mod sessions;
pub mod stats;

/// A fresh scratch folder for a benchmark run, under the system's temp dir.
pub fn scratch_dir(name: &str) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    let dir = std::env::temp_dir().join(format!("agentloop-{name}-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

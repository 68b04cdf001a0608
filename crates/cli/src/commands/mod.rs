pub mod bench;
pub mod humaneval;
#[cfg(feature = "llama")]
pub mod model_bench;
pub mod models;
pub mod run;
pub mod sessions;
pub mod stats;

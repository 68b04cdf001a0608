pub mod bench;
#[cfg(feature = "llama")]
pub mod model_bench;
pub mod models;
pub mod run;
pub mod sessions;
pub mod stats;

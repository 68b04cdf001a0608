pub mod bench;
pub mod models;
pub mod run;
pub mod serve;
pub mod sessions;
pub mod stats;

pub mod bench;
pub mod sessions;
pub mod stats;

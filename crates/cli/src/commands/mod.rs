pub mod corpus;
pub mod models;
pub mod run;
pub mod sandbox;
pub mod serve;
pub mod sessions;
pub mod stats;
pub mod worker;

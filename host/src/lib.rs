//! Weft: a cluster resource manager in the mould of YARN's ResourceManager,
//! whose policies — scheduling, reservation sharing, pricing — are WebAssembly
//! components loaded and hot-swapped at runtime.
//!
//! Data flow: `api` (HTTP, node heartbeats) → the event loop in `rm` →
//! `scheduler` / `quota` → `policy` → `store`. See docs/ARCHITECTURE.md.

// Every public item says what it is (as wasmtime and axum do).
#![warn(missing_docs)]

pub mod accounting;
pub mod agent;
pub mod api;
pub mod cli;
pub mod client;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod ha;
pub mod limits;
pub mod metrics;
pub mod policy;
pub mod private_files;
pub mod protocol;
pub mod queues;
pub mod quota;
pub mod refusal;
pub mod reservation;
pub mod resources;
pub mod rm;
pub mod scheduler;
pub mod security;
pub mod sim;
pub mod store;
pub mod yarn_rpc;

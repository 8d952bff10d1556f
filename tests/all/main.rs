//! Weft's integration tests, one binary with a module per area. They drive
//! the real `weft` binary and HTTP API, and the policy runtime with real
//! WebAssembly guests (good ones and deliberately bad ones from tests/guests).

mod admin;
mod agent;
mod agent_faults;
mod api;
mod bounds;
mod budgets;
mod cli_tables;
mod compat;
mod constraints;
mod failover;
mod failover_clients;
mod fault_run;
mod first_hour;
mod gangs;
mod guest_output;
mod hostile_tenant;
mod labels;
mod layering;
mod lifetimes;
mod locality;
mod opportunistic;
mod policy_cache;
mod policy_new;
mod policy_runtime;
mod policy_test;
mod queues;
mod racks;
mod replay;
mod reservations;
mod restart;
mod scheduler_conf;
mod security;
mod seed_001;
mod seed_004;
mod serve;
mod shadow;
mod simulate;
mod spark;
mod store_postgres;
mod support;
mod usage;
mod web_ui;
mod yarn_client;
mod yarn_rpc;

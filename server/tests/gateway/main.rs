//! Integration tests of `kip-server` against a real database: see
//! `support.rs` for the harness and scripts/gateway_test.sh for the runner.

mod auth;
mod http;
mod load;
mod mcp;
mod requests;
mod resilience;
mod support;
mod timeouts;

//! AST → SQL. Everything here produces SQL text that depends only on the
//! command's shape, plus a list of bind parameters for every value.

pub(crate) mod anchors;
pub mod element;
pub mod export;
pub mod bound;
pub(crate) mod distinct;
pub mod env;
pub mod ids;
pub mod kml_bulk;
pub mod kml_match;
pub mod kml_update;

pub use crate::params::{Params, SqlParam};
pub mod filter;
pub mod find;
pub mod hops;
pub mod pattern;
pub mod projection;
pub mod recheck;
pub mod template;

#[cfg(test)]
mod tests;

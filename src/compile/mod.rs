//! AST → SQL. Everything here produces SQL text that depends only on the
//! command's shape, plus a list of bind parameters for every value.

pub mod element;
pub mod export;
pub mod kml_args;
pub mod kml_ids;
pub mod kml_store;
pub mod kml_match;
pub mod kml_update;

pub use crate::params::{Params, SqlParam};
pub mod filter;
pub mod find;
pub mod hops;
pub mod pattern;
pub mod projection;

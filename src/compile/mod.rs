//! AST → SQL. Everything here produces SQL text that depends only on the
//! command's shape, plus a list of bind parameters for every value.

pub mod element;
pub mod params;

pub use params::Params;

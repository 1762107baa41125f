//! Execution against Postgres: SPI with bind parameters, subtransactions, and
//! the mapping of Postgres errors to KIP errors.

pub mod budget;
pub mod context;
pub mod element_json;
pub mod jsonb;
pub mod known;
pub mod pg_error;
pub mod spi;
pub mod subxact;
pub mod cursor;
pub mod extensions;

pub use context::{Ctx, Mode, Origin};
pub use spi::{Access, SqlParam};

//! Execution against Postgres: SPI with bind parameters, subtransactions, and
//! the mapping of Postgres errors to KIP errors.

pub mod budget;
pub mod context;
pub mod element_json;
pub mod element_size;
pub mod jsonb;
pub mod known;
pub mod owner;
pub mod pg_error;
pub mod spi;
pub mod subxact;
pub mod touch;
pub(crate) mod trigger;
pub mod cursor;
pub mod extensions;
mod fixed_values;

pub use context::{Ctx, Mode, Origin};
pub use spi::{Access, SqlParam};

/// `pg_finfo_<name>` records for C functions written by hand (trigger
/// functions and the element builders): Postgres calls them to learn that
/// `<name>` follows the version-1 calling convention.
macro_rules! v1_function_info {
    ($($name:ident),* $(,)?) => {$(
        #[no_mangle]
        pub extern "C" fn $name() -> &'static pgrx::pg_sys::Pg_finfo_record {
            const V1: pgrx::pg_sys::Pg_finfo_record = pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
            &V1
        }
    )*};
}
pub(crate) use v1_function_info;

pub(crate) use trigger::{invalidate_trigger_table, trigger_data};

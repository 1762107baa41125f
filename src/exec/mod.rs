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
pub mod touch;
pub mod cursor;
pub mod extensions;

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

/// The trigger data of a C trigger function's call; an error when the
/// function `name` was called some other way.
pub(crate) unsafe fn trigger_data(fcinfo: pgrx::pg_sys::FunctionCallInfo, name: &str) -> *const pgrx::pg_sys::TriggerData {
    let trigger = (*fcinfo).context as *const pgrx::pg_sys::TriggerData;
    if trigger.is_null() || (*trigger).type_ != pgrx::pg_sys::NodeTag::T_TriggerData {
        pgrx::error!("{name}() must be called as a trigger");
    }
    trigger
}

/// The body of a statement trigger that tells every backend its table
/// changed: a relcache invalidation of the trigger's table, which backends
/// that remember something read from it watch (`known`, the grants of
/// `governance::privileges`).
pub(crate) unsafe fn invalidate_trigger_table(fcinfo: pgrx::pg_sys::FunctionCallInfo, name: &str) -> pgrx::pg_sys::Datum {
    let trigger = trigger_data(fcinfo, name);
    pgrx::pg_sys::CacheInvalidateRelcacheByRelid((*(*trigger).tg_relation).rd_id);
    pgrx::pg_sys::Datum::from(0usize)
}

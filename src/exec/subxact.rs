//! Running one KIP command inside its own subtransaction.
//!
//! A command either applies completely or leaves no trace: any KIP error it
//! returns, and any Postgres error raised while it runs, rolls the
//! subtransaction back. Postgres errors become KIP errors (see `pg_error`),
//! except a user's cancel request, which propagates.

use super::pg_error::{classify, Caught};
use kip_lang::KipError;
use pgrx::pg_sys;
use pgrx::PgTryBuilder;

pub fn run_isolated<T>(body: impl FnOnce() -> Result<T, KipError>) -> Result<T, KipError> {
    let (outer_context, outer_owner) = unsafe { (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner) };
    unsafe {
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(outer_context);
    }
    let result = PgTryBuilder::new(std::panic::AssertUnwindSafe(|| body().map_err(Caught::Kip)))
        .catch_others(|caught| Err(classify(caught)))
        .execute();
    unsafe {
        if result.is_ok() {
            pg_sys::ReleaseCurrentSubTransaction();
        } else {
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
        }
        pg_sys::MemoryContextSwitchTo(outer_context);
        pg_sys::CurrentResourceOwner = outer_owner;
    }
    match result {
        Ok(v) => Ok(v),
        Err(Caught::Kip(e)) => Err(e),
        Err(Caught::Rethrow(caught)) => caught.rethrow(),
    }
}

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

/// The `search_path` kip's statements run under. kip's SQL names its own
/// objects and those of the extensions it requires with their schemas
/// (`exec::extensions`); what it leaves unqualified (`jsonb_build_object`,
/// `count`, `||`) must be Postgres's own. Under the caller's path a
/// function of the same name in a schema the caller can be made to search,
/// such as `public` where others may create objects, would match a variadic
/// or polymorphic built-in better (a `public.concat_ws(text, text, text)`
/// beats `pg_catalog.concat_ws(text, VARIADIC "any")`) and run with the
/// caller's privileges. (Triggers that users add to kip's tables run under
/// it too when a KIP command fires them: they name their objects with
/// schemas, or carry a `SET search_path` of their own, which applies.)
///
/// It is the setting, not an override of the namespace search
/// (`PushOverrideSearchPath`, 1–2 µs cheaper a call): under an override a
/// function's own `SET search_path` is ignored, the flaw behind
/// CVE-2023-2454, and a user's trigger with its own path failed.
const PINNED_SEARCH_PATH: &std::ffi::CStr = c"pg_catalog, pg_temp";

/// Set `search_path` to [`PINNED_SEARCH_PATH`] for the current
/// subtransaction: Postgres puts the caller's back when it ends, released
/// or rolled back (`GUC_ACTION_SAVE` at the subtransaction's nesting
/// level). Nothing is set when it already is (a nested subtransaction).
unsafe fn pin_search_path() {
    let current = pg_sys::namespace_search_path;
    if !current.is_null() && std::ffi::CStr::from_ptr(current) == PINNED_SEARCH_PATH {
        return;
    }
    set_saved(c"search_path", PINNED_SEARCH_PATH);
}

/// Run `body` (SQL of kip's outside a KIP command's subtransaction: the
/// administration and embedding functions) with `search_path` pinned as
/// in [`run_isolated`], and the settings of `extra` (name, value) too, in
/// a GUC nesting level of its own, the way Postgres applies a function's
/// `SET` clauses: the caller's values come back when it ends, and an error
/// unwinding past it has the transaction's abort put them back.
pub fn with_pinned_settings<T>(extra: &[(&std::ffi::CStr, &std::ffi::CStr)], body: impl FnOnce() -> T) -> T {
    let current = super::known::schema_is_current();
    if !current && extra.is_empty() {
        return body();
    }
    // SAFETY: a GUC nesting level of this backend, closed below; settings
    // of this backend only.
    let level = unsafe { pg_sys::NewGUCNestLevel() };
    unsafe {
        if current {
            pin_search_path();
        }
        for (name, value) in extra {
            set_saved(name, value);
        }
    }
    let result = body();
    // SAFETY: closes the level opened above, restoring the caller's values.
    unsafe { pg_sys::AtEOXact_GUC(true, level) };
    result
}

/// Set `name` to `value` for the current GUC nesting level.
unsafe fn set_saved(name: &std::ffi::CStr, value: &std::ffi::CStr) {
    pg_sys::set_config_option(
        name.as_ptr(),
        value.as_ptr(),
        pg_sys::GucContext::PGC_USERSET,
        pg_sys::GucSource::PGC_S_SESSION,
        pg_sys::GucAction::GUC_ACTION_SAVE,
        true,
        0,
        false,
    );
}

pub fn run_isolated<T>(body: impl FnOnce() -> Result<T, KipError>) -> Result<T, KipError> {
    let (outer_context, outer_owner) = unsafe { (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner) };
    unsafe {
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(outer_context);
    }
    let result = PgTryBuilder::new(std::panic::AssertUnwindSafe(|| {
        if super::known::schema_is_current() {
            // SAFETY: a setting of this backend, for this subtransaction.
            unsafe { pin_search_path() };
        }
        body().map_err(Caught::Kip)
    }))
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

/// How many times a body that hit a deadlock or serialization failure is
/// run before the conflict is reported.
const CONFLICT_ATTEMPTS: u32 = 5;

/// [`run_isolated`], again when the body hit a deadlock or serialization
/// failure that rolling it back resolved: a KIP command, or an
/// administration function's statement (`kip_drop_space`).
///
/// Running it again can succeed only when rolling it back released every
/// row lock of the cycle: when the transaction had written nothing before
/// (one that had keeps those rows locked, and the same cycle would form
/// again, a deadlock check later). Nor under REPEATABLE READ or
/// SERIALIZABLE, whose snapshot, taken at the transaction's first
/// statement, would show every attempt the same conflict.
pub fn run_retrying<T>(body: impl Fn() -> Result<T, KipError>) -> Result<T, KipError> {
    // SAFETY: reads this backend's transaction state.
    let may_retry = unsafe { pg_sys::GetTopTransactionIdIfAny() } == pg_sys::TransactionId::INVALID
        && !super::pg_error::uses_transaction_snapshot();
    let mut attempt = 1;
    loop {
        match run_isolated(&body) {
            Err(e) if may_retry && super::pg_error::is_conflict(&e) && attempt < CONFLICT_ATTEMPTS => {
                pause_before_retry(attempt);
                attempt += 1;
            }
            outcome => return outcome,
        }
    }
}

/// The pause before running a conflicted body again: 2 ms doubling with
/// each attempt, plus up to as much again at random. A deadlock's victim
/// that retried at once could meet the writers of the same cycle, retrying
/// too, in the same order; under a load of 16 writers on a hundred
/// concepts, three immediate attempts in a row now and then all deadlocked.
fn pause_before_retry(attempt: u32) {
    let base_us = 2_000u64 << (attempt.saturating_sub(1)).min(4);
    // SAFETY: Postgres's per-backend generator, then a plain sleep of this
    // backend; the next attempt's subtransaction handles any interrupt
    // that arrives meanwhile.
    unsafe {
        let pause = pg_sys::pg_prng_uint64_range(&raw mut pg_sys::pg_global_prng_state, base_us, 2 * base_us - 1);
        pg_sys::pg_usleep(pause as std::ffi::c_long);
    }
}

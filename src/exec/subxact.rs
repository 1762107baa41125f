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

/// The search path kip's statements run under: `pg_catalog` alone. kip's
/// SQL names its own objects and those of the extensions it requires with
/// their schemas (`exec::extensions`); what it leaves unqualified
/// (`jsonb_build_object`, `count`, `||`) must be Postgres's own. Under the
/// caller's path a function of the same name in a schema the caller can be
/// made to search, such as `public` where others may create objects, would
/// match a variadic or polymorphic built-in better (a `public.concat_ws(text,
/// text, text)` beats `pg_catalog.concat_ws(text, VARIADIC "any")`) and run
/// with the caller's privileges. (Triggers that users add to kip's tables
/// run under it too when a KIP command fires them: they name their objects
/// with schemas, or carry a `SET search_path` of their own.)
///
/// Set as an override of the namespace search (what `CREATE SCHEMA`'s
/// elements run under), not through the `search_path` setting: setting and
/// restoring the setting cost 1–2 µs a call, most of a small read's fixed
/// cost, and invalidated the caller's path each time. Postgres pops the
/// override itself when the subtransaction rolls back.
#[cfg(any(feature = "pg15", feature = "pg16"))]
unsafe fn pin_search_path() -> bool {
    let mut path = pg_sys::OverrideSearchPath { schemas: std::ptr::null_mut(), addCatalog: true, addTemp: false, generation: 0 };
    pg_sys::PushOverrideSearchPath(&mut path);
    true
}

#[cfg(any(feature = "pg15", feature = "pg16"))]
unsafe fn unpin_search_path(pinned: bool) {
    if pinned {
        pg_sys::PopOverrideSearchPath();
    }
}

/// Postgres 17 has no override of the namespace search: the setting, for
/// the subtransaction (`GUC_ACTION_SAVE`, restored when it ends).
#[cfg(not(any(feature = "pg15", feature = "pg16")))]
unsafe fn pin_search_path() -> bool {
    pg_sys::set_config_option(
        c"search_path".as_ptr(),
        c"pg_catalog".as_ptr(),
        pg_sys::GucContext::PGC_USERSET,
        pg_sys::GucSource::PGC_S_SESSION,
        pg_sys::GucAction::GUC_ACTION_SAVE,
        true,
        0,
        false,
    );
    false
}

#[cfg(not(any(feature = "pg15", feature = "pg16")))]
unsafe fn unpin_search_path(_pinned: bool) {}

pub fn run_isolated<T>(body: impl FnOnce() -> Result<T, KipError>) -> Result<T, KipError> {
    let (outer_context, outer_owner) = unsafe { (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner) };
    unsafe {
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(outer_context);
    }
    let pinned = std::cell::Cell::new(false);
    let result = PgTryBuilder::new(std::panic::AssertUnwindSafe(|| {
        if super::known::schema_is_current() {
            // SAFETY: the search path of this backend, for this subtransaction.
            pinned.set(unsafe { pin_search_path() });
        }
        body().map_err(Caught::Kip)
    }))
        .catch_others(|caught| Err(classify(caught)))
        .execute();
    unsafe {
        if result.is_ok() {
            unpin_search_path(pinned.get());
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

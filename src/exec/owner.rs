//! Running one of kip's own read statements as the owner of kip's tables,
//! out of the way of row-level security.
//!
//! Under row-level security Postgres lets an index serve a condition ahead
//! of a table's policy only if the condition's operator is leakproof, which
//! the ones keyword SEARCH looks words, aliases and similar names up with
//! are not (`@>` on arrays and jsonb, pg_trgm's `%`): for a role held to
//! its grants each of them became a scan of the whole table, a search of
//! 100,000 concepts 0.7 ms for a superuser and 670 ms for a `kip_reader`.
//!
//! kip checks that the caller may read the space before a command runs
//! (`api::prepare`), and every source of the statements run here is
//! confined to that space, which the policies show whole or not at all, so
//! they find the rows row-level security would have let through, and use
//! the indexes. What decides their scores and stays with the caller's role
//! is read before, as the caller (`search::word_stats`: table statistics
//! describe every space).

use super::spi::{self, Access};
use kip_lang::KipError;
use pgrx::pg_sys;
use pgrx::PgTryBuilder;

/// Run `body` as the owner of kip's tables, in a security-restricted
/// context under the pinned `search_path`; the caller's role comes back
/// when it ends, or fails. It runs as the caller, row-level security and
/// all, unless the SQL objects are this library's (an older schema keeps
/// the caller's `search_path`, where a function planted in a schema on it
/// would run as the owner) and one superuser owns both `kip.concepts` and
/// `kip.propositions` (another owner may lack what the statement uses, or
/// own one table only).
pub fn as_tables_owner<T>(body: impl FnOnce() -> Result<T, KipError>) -> Result<T, KipError> {
    if !super::known::schema_is_current() {
        return body();
    }
    let rows = spi::lookup(
        "SELECT min(c.relowner::pg_catalog.int8), max(c.relowner::pg_catalog.int8) FROM pg_catalog.pg_class c
         WHERE c.oid IN ('kip.concepts'::pg_catalog.regclass, 'kip.propositions'::pg_catalog.regclass)",
        &[],
        Access::ReadOnly,
    )?;
    let owners: Vec<u64> = rows.first().map(|r| r.iter().filter_map(|v| v.as_u64()).collect()).unwrap_or_default();
    let owner = match owners.as_slice() {
        [a, b] if a == b => pg_sys::Oid::from(*a as u32),
        _ => return body(),
    };
    // SAFETY: a catalog lookup of a role by oid.
    if !unsafe { pg_sys::superuser_arg(owner) } {
        return body();
    }
    super::subxact::with_pinned_settings(&[], || {
        let (mut caller, mut context) = (pg_sys::InvalidOid, 0);
        // SAFETY: this backend's current user and security context, set
        // back below (or by the subtransaction's abort, which restores both).
        unsafe {
            pg_sys::GetUserIdAndSecContext(&mut caller, &mut context);
            pg_sys::SetUserIdAndSecContext(
                owner,
                context | (pg_sys::SECURITY_LOCAL_USERID_CHANGE | pg_sys::SECURITY_RESTRICTED_OPERATION) as i32,
            );
        }
        PgTryBuilder::new(std::panic::AssertUnwindSafe(body))
            .finally(|| unsafe { pg_sys::SetUserIdAndSecContext(caller, context) })
            .execute()
    })
}

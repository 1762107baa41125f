//! Small SQL functions around spaces and the language front end.

use crate::exec::{subxact, Access, SqlParam};
use crate::space;
use pgrx::prelude::*;
use pgrx::JsonB;
use crate::exec::pg_error::raise;


/// Create (and bootstrap) a memory space; returns false if it existed.
#[pg_extern(volatile)]
fn kip_create_space(name: &str) -> bool {
    crate::exec::pg_error::refuse_writes_here();
    let space = space::validate(name).unwrap_or_else(|e| raise(e));
    crate::governance::access::require(&space, crate::governance::access::Privilege::Write).unwrap_or_else(|e| raise(e));
    // kip's SQL under the pinned search path (`subxact`), the look first
    // included.
    // Whether this call created it is the insert's to say: two sessions
    // creating one space both find it missing, and the second one's insert
    // waits for the first and does nothing.
    subxact::with_pinned_settings(&[], || subxact::run_isolated(|| crate::bootstrap::spaces::ensure(&space)))
        .unwrap_or_else(|e| raise(e))
}

/// Drop a memory space and everything in it; returns false if it did not exist.
#[pg_extern(volatile)]
fn kip_drop_space(name: &str) -> bool {
    crate::exec::pg_error::refuse_writes_here();
    let space = space::validate(name).unwrap_or_else(|e| raise(e));
    crate::governance::access::require(&space, crate::governance::access::Privilege::Admin).unwrap_or_else(|e| raise(e));
    // The delete locks the space's row, then each element's as it cascades;
    // a writer locks its elements first, and the space's row when it
    // inserts: a deadlock's victim here is run again, as a KIP command is.
    subxact::with_pinned_settings(&[], || {
        subxact::run_retrying(|| {
            crate::exec::spi::execute("DELETE FROM kip.spaces WHERE name = $1", &[SqlParam::Text(space.name().into())], Access::ReadWrite)
        })
    })
    .unwrap_or_else(|e| raise(e))
        > 0
}

/// The AST of a KIP command as JSON (for debugging), or the KIP error.
#[pg_extern(immutable, parallel_safe)]
fn kip_parse(command: &str) -> JsonB {
    JsonB(match kip_lang::parse(command) {
        Ok(script) => serde_json::to_value(&script).unwrap_or(serde_json::Value::Null),
        Err(e) => serde_json::json!({ "error": e.to_json() }),
    })
}

/// The canonical KIP text of a command; raises on a syntax error.
#[pg_extern(immutable, parallel_safe)]
fn kip_format(command: &str) -> String {
    match kip_lang::parse(command) {
        Ok(script) => kip_lang::print(&script),
        Err(e) => raise(e),
    }
}

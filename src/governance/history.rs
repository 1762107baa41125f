//! The history's hooks in the library: the KIP command hash the history
//! triggers record, and the switch they consult.
//!
//! The triggers themselves are `history_trigger.rs`, declared in
//! `sql/governance.sql`: statement-level, with transition tables, one
//! `INSERT … SELECT` into `kip.history` per statement, whoever wrote (KIP,
//! plain SQL, maintenance, cascades).

use pgrx::prelude::*;

/// Whether changes are recorded (`kip.history`). Called by the triggers; a
/// C function, so calling it loads kip and a non-superuser's attempt to
/// switch the superuser setting off is refused even in a session that never
/// called kip before.
#[pg_extern(stable, parallel_safe)]
fn kip_history_enabled() -> bool {
    super::settings::HISTORY.get()
}

/// Tag the changes of the KIP command about to run with its hash (sha256 of
/// the command text, hex), or clear the tag (`None`) once it finished. The
/// setting is transaction-local, as `set_config(…, true)` makes it; cleared
/// after each command, so plain SQL later in the same transaction is not
/// attributed to it. Set through the GUC machinery directly: as two SQL
/// statements per KML command it cost a write about 0.05 ms.
pub fn tag_command(command: Option<&str>) {
    let value = command.map(command_hash).unwrap_or_default();
    let Ok(value) = std::ffi::CString::new(value) else { return };
    // The same call as SQL's set_config(name, value, true) for a user
    // setting; it raises an ERROR only where set_config would (e.g. inside
    // a parallel worker, where kip never writes).
    unsafe {
        pg_sys::set_config_option(
            c"kip.command_hash".as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_LOCAL,
            true,
            0,
            false,
        );
    }
}

/// sha256 of the command text, lowercase hex: what
/// `encode(sha256(convert_to(command, 'UTF8')), 'hex')` gives.
fn command_hash(command: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(command.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_hash_is_sha256_hex() {
        assert_eq!(super::command_hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(super::command_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}

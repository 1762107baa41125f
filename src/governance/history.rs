//! The history's hooks in the library: the KIP command hash the history
//! triggers record, and the switch they consult.
//!
//! The triggers themselves are SQL (`sql/governance.sql`): statement-level,
//! with transition tables, one `INSERT … SELECT` into `kip.history` per
//! statement, whoever wrote (KIP, plain SQL, maintenance, cascades).

use crate::exec::{spi, Access, SqlParam};
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
/// setting is transaction-local; cleared after each command, so plain SQL
/// later in the same transaction is not attributed to it.
pub fn tag_command(command: Option<&str>) {
    let result = match command {
        Some(text) => spi::execute(
            "SELECT set_config('kip.command_hash', encode(sha256(convert_to($1, 'UTF8')), 'hex'), true)",
            &[SqlParam::Text(text.to_string())],
            Access::ReadWrite,
        ),
        None => spi::execute("SELECT set_config('kip.command_hash', '', true)", &[], Access::ReadWrite),
    };
    if let Err(e) = result {
        warning!("kip: could not tag the command for the history: {e}");
    }
}

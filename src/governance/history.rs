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

thread_local! {
    /// The hash of the KIP command running, and the (local) transaction it
    /// runs in.
    static COMMAND: std::cell::RefCell<Option<(String, u32)>> = const { std::cell::RefCell::new(None) };
}

/// Tag the changes of the KIP command about to run with its hash (sha256 of
/// the command text, hex), or clear the tag (`None`) once it finished, so
/// plain SQL later in the same transaction is not attributed to it. Kept in
/// the backend's memory, not in a setting: a setting is the session's to
/// change, and plain SQL could then pass its changes off as a KIP
/// command's. The tag holds only in the transaction that set it.
pub fn tag_command(command: Option<&str>) -> CommandTag {
    let tag = command.map(|c| (command_hash(c), crate::exec::element_size::local_transaction()));
    CommandTag(COMMAND.with(|slot| std::mem::replace(&mut *slot.borrow_mut(), tag)))
}

/// A command tag as [`tag_command`] found it, to put back with
/// [`restore_tag`]: a KIP command run by a trigger that another KIP
/// command fired must leave the outer command's tag in place.
pub struct CommandTag(Option<(String, u32)>);

pub fn restore_tag(tag: CommandTag) {
    COMMAND.with(|slot| *slot.borrow_mut() = tag.0);
}

/// The hash of the KIP command whose changes are being recorded, if one is
/// running in this transaction.
pub(super) fn running_command_hash() -> Option<String> {
    COMMAND.with(|slot| match &*slot.borrow() {
        Some((hash, transaction)) if *transaction == crate::exec::element_size::local_transaction() => Some(hash.clone()),
        _ => None,
    })
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

//! Bootstrapping a memory space with the Genesis and core capsules, and
//! bringing older spaces up to the current capsule level.
//!
//! The capsules are the `.kip` files in `capsules/`, compiled into the
//! extension here — this list is the one place that names them, in load
//! order: the Genesis first (meta-types, `Domain`, `belongs_to_domain`, the
//! core domains), then the `Person` type before the `$self` / `$system`
//! persons, then the other core types, and last the shared predicates, which
//! name those types.
//!
//! A new space runs every capsule through the engine's own UPSERT, exactly as
//! an agent's capsule would: nothing here writes SQL to the graph. The Genesis
//! can run on an empty space because `{type: "$ConceptType", name:
//! "$ConceptType"}` is allowed to define itself (see `engine::upsert`
//! preflight). Re-running the bootstrap is harmless: every statement is an
//! idempotent UPSERT, and unchanged elements keep their `_version`.
//!
//! Each capsule carries the capsule level that last changed it. A space
//! records the level it is at (`kip.spaces.capsule_level`); a space at an
//! older level gets the capsules changed since, merged without loss
//! (`upgrade`).

mod capsules;
mod merge;
mod upgrade;

use crate::engine;
use crate::exec::{Ctx, Origin};
use crate::exec::Access;
use crate::space::Space;
use kip_lang::{ErrorCode, KipError};

use capsules::CAPSULES;
pub use upgrade::upgrade;

pub mod spaces;

/// Load every capsule into `space`. Runs inside the caller's subtransaction
/// (`spaces::ensure`), so a failure leaves the space unbootstrapped.
pub fn run(space: &Space) -> Result<(), KipError> {
    let ctx = Ctx { space: space.clone(), access: Access::ReadWrite, origin: Origin::Bootstrap, text: None };
    for capsule in &CAPSULES {
        let failed = |e: KipError| {
            KipError::new(ErrorCode::InternalError, format!("bootstrap capsule {} failed: {e}", capsule.file))
                .with_hint("The extension's capsules/ files are broken; reinstall the extension.")
        };
        let script = kip_lang::parse(capsule.text).map_err(failed)?;
        for command in &script.commands {
            engine::execute(command, &ctx).map_err(failed)?;
        }
    }
    Ok(())
}

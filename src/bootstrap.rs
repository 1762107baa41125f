//! Bootstrapping a new memory space with the Genesis and core capsules.
//!
//! The capsules are the `.kip` files in `capsules/`, compiled into the
//! extension here — this list is the one place that names them, in load
//! order: the Genesis first (meta-types, `Domain`, `belongs_to_domain`, the
//! core domains), then the `Person` type before the `$self` / `$system`
//! persons, then the other core types with their predicates.
//!
//! They run through the engine's own UPSERT, exactly as an agent's capsule
//! would: nothing here writes SQL. The Genesis can run on an empty space
//! because `{type: "$ConceptType", name: "$ConceptType"}` is allowed to define
//! itself (see `engine::upsert` preflight). Re-running the bootstrap is
//! harmless: every statement is an idempotent UPSERT, and unchanged elements
//! keep their `_version`.

use crate::engine::{self, Ctx, Origin};
use crate::exec::Access;
use crate::space::Space;
use kip_lang::{ErrorCode, KipError};

/// (file name, capsule text), in load order.
pub const CAPSULES: [(&str, &str); 9] = [
    ("Genesis.kip", include_str!("../capsules/Genesis.kip")),
    ("Person.kip", include_str!("../capsules/Person.kip")),
    ("persons/self.kip", include_str!("../capsules/persons/self.kip")),
    ("persons/system.kip", include_str!("../capsules/persons/system.kip")),
    ("Event.kip", include_str!("../capsules/Event.kip")),
    ("Preference.kip", include_str!("../capsules/Preference.kip")),
    ("Insight.kip", include_str!("../capsules/Insight.kip")),
    ("Commitment.kip", include_str!("../capsules/Commitment.kip")),
    ("SleepTask.kip", include_str!("../capsules/SleepTask.kip")),
];

/// Load every capsule into `space`. Runs inside the caller's subtransaction
/// (`space::ensure`), so a failure leaves the space unbootstrapped.
pub fn run(space: &Space) -> Result<(), KipError> {
    let ctx = Ctx { space: space.clone(), access: Access::ReadWrite, origin: Origin::Bootstrap };
    for (file, text) in CAPSULES {
        let failed = |e: KipError| {
            KipError::new(ErrorCode::InternalError, format!("bootstrap capsule {file} failed: {e}"))
                .with_hint("The extension's capsules/ files are broken; reinstall the extension.")
        };
        let script = kip_lang::parse(text).map_err(failed)?;
        for command in &script.commands {
            engine::execute(command, &ctx).map_err(failed)?;
        }
    }
    Ok(())
}

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

mod merge;
mod upgrade;

use crate::engine;
use crate::exec::{Ctx, Origin};
use crate::exec::Access;
use crate::space::Space;
use kip_lang::{ErrorCode, KipError};

pub use upgrade::upgrade;

pub mod spaces;

/// The capsule level of this release. Level 1 is the KIP v1.0-RC10 capsule
/// set (extension 0.1.0); level 2 is RC11 (Experience, ExperienceStep, Skill,
/// the shared predicate capsules).
pub const LEVEL: i32 = 2;

/// One bootstrap capsule.
pub struct Capsule {
    pub file: &'static str,
    pub text: &'static str,
    /// The capsule level that last changed this file.
    pub changed_in: i32,
}

const fn capsule(file: &'static str, text: &'static str, changed_in: i32) -> Capsule {
    Capsule { file, text, changed_in }
}

/// Every capsule, in load order.
pub const CAPSULES: [Capsule; 20] = [
    capsule("Genesis.kip", include_str!("../../capsules/Genesis.kip"), 2),
    capsule("Person.kip", include_str!("../../capsules/Person.kip"), 1),
    capsule("persons/self.kip", include_str!("../../capsules/persons/self.kip"), 1),
    capsule("persons/system.kip", include_str!("../../capsules/persons/system.kip"), 1),
    capsule("Event.kip", include_str!("../../capsules/Event.kip"), 2),
    capsule("Preference.kip", include_str!("../../capsules/Preference.kip"), 2),
    capsule("Insight.kip", include_str!("../../capsules/Insight.kip"), 2),
    capsule("Commitment.kip", include_str!("../../capsules/Commitment.kip"), 1),
    capsule("SleepTask.kip", include_str!("../../capsules/SleepTask.kip"), 2),
    capsule("Experience.kip", include_str!("../../capsules/Experience.kip"), 2),
    capsule("ExperienceStep.kip", include_str!("../../capsules/ExperienceStep.kip"), 2),
    capsule("Skill.kip", include_str!("../../capsules/Skill.kip"), 2),
    capsule("caused_by.kip", include_str!("../../capsules/caused_by.kip"), 2),
    capsule("compiled_to.kip", include_str!("../../capsules/compiled_to.kip"), 2),
    capsule("consolidated_to.kip", include_str!("../../capsules/consolidated_to.kip"), 2),
    capsule("derived_from.kip", include_str!("../../capsules/derived_from.kip"), 2),
    capsule("derived_insight.kip", include_str!("../../capsules/derived_insight.kip"), 2),
    capsule("has_step.kip", include_str!("../../capsules/has_step.kip"), 2),
    capsule("involves.kip", include_str!("../../capsules/involves.kip"), 2),
    capsule("mentions.kip", include_str!("../../capsules/mentions.kip"), 2),
];

/// Load every capsule into `space`. Runs inside the caller's subtransaction
/// (`spaces::ensure`), so a failure leaves the space unbootstrapped.
pub fn run(space: &Space) -> Result<(), KipError> {
    let ctx = Ctx { space: space.clone(), access: Access::ReadWrite, origin: Origin::Bootstrap };
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

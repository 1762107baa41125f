//! The capsules compiled into the extension, in load order, with the
//! capsule level that last changed each.

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

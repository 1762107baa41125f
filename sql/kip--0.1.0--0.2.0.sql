-- kip 0.1.0 -> 0.2.0: KIP v1.0-RC11.
--
-- Spaces record the capsule level they were bootstrapped with. Every space
-- that exists now holds the RC10 capsules (level 1); each gets the RC11 ones
-- (Experience, ExperienceStep, Skill and the shared predicate capsules)
-- merged in without loss on its next use or maintenance cycle
-- (src/bootstrap/upgrade.rs). No element, version or timestamp changes here.
--
-- Memory-strength decay replaces confidence decay in the maintenance cycle;
-- that is library code and its setting (kip.memory_strength_decay), no SQL.

ALTER TABLE kip.spaces ADD COLUMN capsule_level integer NOT NULL DEFAULT 1;
COMMENT ON COLUMN kip.spaces.capsule_level IS 'Capsule level of the space; older spaces are upgraded on their next use';

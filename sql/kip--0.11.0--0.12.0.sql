-- kip 0.11.0 -> 0.12.0.

-- How many links of each predicate each space holds, as for the types of
-- concepts (kip.concepts_space_type): without it the planner multiplies the
-- share of the space by the share of the predicate in the whole table, and
-- a predicate common in one space looks common in every space. It is filled
-- by the next ANALYZE of kip.propositions (autovacuum's or an explicit one).
CREATE STATISTICS kip.propositions_space_predicate (mcv) ON space, predicate FROM kip.propositions;

-- A space rename checks the links' endpoint keys at the end of its transaction
-- (see sql/schema.sql): a link about a link, with a concept endpoint too,
-- could be moved from its concept before the link it names, and the rename
-- failed on its key. The keys become DEFERRABLE, initially immediate.
ALTER TABLE kip.propositions ALTER CONSTRAINT proposition_subject_concept_fk DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE kip.propositions ALTER CONSTRAINT proposition_object_concept_fk DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE kip.propositions ALTER CONSTRAINT proposition_subject_link_fk DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE kip.propositions ALTER CONSTRAINT proposition_object_link_fk DEFERRABLE INITIALLY IMMEDIATE;
CREATE FUNCTION kip.defer_endpoint_checks() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    SET CONSTRAINTS kip.proposition_subject_concept_fk, kip.proposition_object_concept_fk,
                    kip.proposition_subject_link_fk, kip.proposition_object_link_fk DEFERRED;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION kip.defer_endpoint_checks() IS 'Checks the links'' endpoint keys at the end of the transaction of a space rename (kip internal)';
CREATE TRIGGER spaces_rename_defers_endpoint_checks BEFORE UPDATE OF name ON kip.spaces
    FOR EACH STATEMENT EXECUTE FUNCTION kip.defer_endpoint_checks();

-- The predicate index carries both endpoints (see sql/schema.sql), so that a
-- scan of a predicate's links reads no heap and is not made along the
-- (space, subject, predicate, object) key instead. Rebuilt: it reads every
-- link once.
DROP INDEX kip.propositions_predicate_idx;
CREATE INDEX propositions_predicate_idx ON kip.propositions (space, predicate) INCLUDE (subject, object);

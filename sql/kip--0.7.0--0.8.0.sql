-- kip 0.7.0 -> 0.8.0.

-- issue 11: performance (the write path)
--
-- The version triggers in C (src/exec/touch.rs) instead of PL/pgSQL: every
-- capsule updates the concepts it names, and each such row ran the PL/pgSQL
-- interpreter. Same rule: content compared with each type's equality, the
-- version bumped and updated_at stamped only on a real change, version and
-- created_at never set by a writer. CREATE OR REPLACE keeps the functions'
-- identity, so the triggers that call them are untouched.
CREATE OR REPLACE FUNCTION kip.touch_concept() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_touch_concept';
CREATE OR REPLACE FUNCTION kip.touch_proposition() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_touch_proposition';

-- A proposition's own foreign key to kip.spaces goes: its subject's
-- composite key (space, subject_*) already ties it to an element of the same
-- space, and through it to a concept, whose key to kip.spaces cascades a
-- drop or a rename of the space. One check (a query) fewer per link written.
ALTER TABLE kip.propositions DROP CONSTRAINT propositions_space_fkey;

-- kip.history's CHECKs on kind and operation go: both are constants of the
-- history triggers' statements, the table's only writer, and Postgres reads
-- a CHECK back from the catalog and plans it for every statement that
-- inserts, i.e. with every write statement.
ALTER TABLE kip.history DROP CONSTRAINT history_kind, DROP CONSTRAINT history_operation;
COMMENT ON COLUMN kip.history.kind IS 'concept or proposition';
COMMENT ON COLUMN kip.history.operation IS 'insert, update or delete';

-- A proposition's vector survives an update that leaves its text alone. The
-- staleness function read the generated subject and object from NEW, which a
-- BEFORE trigger sees before they are computed: every update of a link's
-- attributes (a re-asserted link included) discarded its vector, and the
-- worker embedded the same text again. It reads the endpoint columns now.
CREATE OR REPLACE FUNCTION kip.proposition_embedding_stale() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The endpoints from their own columns: in a BEFORE trigger the
    -- generated subject and object are not computed yet (NULL in NEW).
    IF NEW.embedding IS NOT NULL
       AND NEW.embedding::text IS NOT DISTINCT FROM OLD.embedding::text
       AND kip.proposition_grounding_text(NEW.space, coalesce(NEW.subject_concept, NEW.subject_link), NEW.predicate,
                                          coalesce(NEW.object_concept, NEW.object_link), NEW.attributes)
           IS DISTINCT FROM
           kip.proposition_grounding_text(OLD.space, coalesce(OLD.subject_concept, OLD.subject_link), OLD.predicate,
                                          coalesce(OLD.object_concept, OLD.object_link), OLD.attributes) THEN
        NEW.embedding := NULL;
    END IF;
    RETURN NEW;
END;
$$;

-- The staleness triggers run their function only for a row that has a
-- vector and whose grounding columns changed (WHEN): a capsule's statements
-- rewrite the attributes of the concepts they name, mostly to the same
-- value, and each such row ran the function, which printed both vectors as
-- text (about 40 µs a row).
DROP TRIGGER concepts_embedding_stale ON kip.concepts;
DROP TRIGGER propositions_embedding_stale ON kip.propositions;
CREATE TRIGGER concepts_embedding_stale BEFORE UPDATE OF type, name, attributes ON kip.concepts
    FOR EACH ROW
    WHEN (NEW.embedding IS NOT NULL
          AND (NEW.type, NEW.name, NEW.attributes) IS DISTINCT FROM (OLD.type, OLD.name, OLD.attributes))
    EXECUTE FUNCTION kip.concept_embedding_stale();
CREATE TRIGGER propositions_embedding_stale
    BEFORE UPDATE OF predicate, subject_concept, subject_link, object_concept, object_link, attributes
    ON kip.propositions
    FOR EACH ROW
    WHEN (NEW.embedding IS NOT NULL
          AND (NEW.space, NEW.subject_concept, NEW.subject_link, NEW.predicate, NEW.object_concept, NEW.object_link,
               NEW.attributes)
              IS DISTINCT FROM
              (OLD.space, OLD.subject_concept, OLD.subject_link, OLD.predicate, OLD.object_concept, OLD.object_link,
               OLD.attributes))
    EXECUTE FUNCTION kip.proposition_embedding_stale();

-- Each backend remembers kip.granted_spaces' answers (the spaces a role was
-- granted, which every row-level security policy asks once per statement:
-- a fifth of a capsule's time for a role that is not a superuser) and
-- forgets them when kip.space_grants changes, through this trigger's
-- relcache invalidation (src/governance/privileges.rs).
CREATE FUNCTION kip.grants_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_grants_changed';
COMMENT ON FUNCTION kip.grants_changed() IS 'Tells every backend that kip.space_grants changed (kip internal)';
CREATE TRIGGER space_grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON kip.space_grants
    FOR EACH STATEMENT EXECUTE FUNCTION kip.grants_changed();
ALTER TABLE kip.space_grants ENABLE ALWAYS TRIGGER space_grants_changed;

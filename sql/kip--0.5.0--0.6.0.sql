-- kip 0.5.0 -> 0.6.0.

-- issue 11: performance
--
-- metadata.expires_at as generated columns, and the TTL sweep's partial
-- indexes on them instead of on `metadata`: with `metadata` in no index, an
-- update that changes only metadata (a Formation capsule re-asserting its
-- Domain and Person blocks) can be HOT instead of writing an entry into each
-- of the table's indexes. Adding a stored generated column rewrites each
-- table once, under an ACCESS EXCLUSIVE lock; no trigger fires, so no
-- element, version or timestamp changes.
ALTER TABLE kip.concepts ADD COLUMN expires_at text GENERATED ALWAYS AS (metadata ->> 'expires_at') STORED;
ALTER TABLE kip.propositions ADD COLUMN expires_at text GENERATED ALWAYS AS (metadata ->> 'expires_at') STORED;
DROP INDEX kip.concepts_expiring_idx;
DROP INDEX kip.propositions_expiring_idx;
CREATE INDEX concepts_expiring_idx ON kip.concepts (space) WHERE expires_at IS NOT NULL;
CREATE INDEX propositions_expiring_idx ON kip.propositions (space) WHERE expires_at IS NOT NULL;

-- issue 11: performance (the space check of every call)
--
-- Each backend remembers which spaces are ready, so a call no longer reads
-- kip.spaces; this trigger makes every backend forget them when the table
-- changes. Until it exists, the library remembers nothing.
-- Each backend remembers which spaces are ready (src/exec/known.rs)
-- and forgets them when this table changes: the trigger registers a relcache
-- invalidation of the table, delivered to every backend.
CREATE FUNCTION kip.spaces_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_spaces_changed';
COMMENT ON FUNCTION kip.spaces_changed() IS 'Tells every backend that kip.spaces changed (kip internal)';
CREATE TRIGGER spaces_changed AFTER UPDATE OR DELETE OR TRUNCATE ON kip.spaces
    FOR EACH STATEMENT EXECUTE FUNCTION kip.spaces_changed();
-- Also where session_replication_role = replica (a logical replication
-- subscriber applying a dropped space).
ALTER TABLE kip.spaces ENABLE ALWAYS TRIGGER spaces_changed;

-- issue 11: performance (element objects)
--
-- The element object of a stored row in one C function call instead of
-- three jsonb_build_object, two || and two to_char per element; the
-- compiled SQL of this version calls them.
-- The KIP element object of a stored row, built in one call
-- (src/exec/element_json.rs; the compiler's SQL calls them).
CREATE FUNCTION kip.concept_json(id bigint, type text, name text, attributes jsonb, metadata jsonb,
                                 version integer, created_at timestamptz, updated_at timestamptz) RETURNS jsonb
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_concept_json';
COMMENT ON FUNCTION kip.concept_json(bigint, text, text, jsonb, jsonb, integer, timestamptz, timestamptz) IS 'A concept row as a KIP ConceptNode object (kip internal)';
CREATE FUNCTION kip.proposition_json(id bigint, predicate text, subject text, object text, attributes jsonb, metadata jsonb,
                                     version integer, created_at timestamptz, updated_at timestamptz) RETURNS jsonb
    LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_proposition_json';
COMMENT ON FUNCTION kip.proposition_json(bigint, text, text, text, jsonb, jsonb, integer, timestamptz, timestamptz) IS 'A proposition row as a KIP PropositionLink object (kip internal)';
CREATE FUNCTION kip.metadata_json(metadata jsonb, version integer, created_at timestamptz, updated_at timestamptz) RETURNS jsonb
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_metadata_json';
COMMENT ON FUNCTION kip.metadata_json(jsonb, integer, timestamptz, timestamptz) IS 'Stored metadata with the engine''s _version, _created_at and _updated_at (kip internal)';

-- issue 11: performance (history triggers)
--
-- The history trigger functions in C instead of PL/pgSQL: the empty half of
-- every INSERT ... ON CONFLICT (which fires both the INSERT and the UPDATE
-- trigger) costs a look at the transition table's count instead of an
-- interpreter call and a query. They record the same rows.
CREATE OR REPLACE FUNCTION kip.concepts_history() RETURNS trigger
LANGUAGE c SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'kip_concepts_history';
CREATE OR REPLACE FUNCTION kip.propositions_history() RETURNS trigger
LANGUAGE c SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'kip_propositions_history';

-- issue 11: performance (the registry check of every UPSERT)
-- Each backend remembers the registered types and predicates of a space
-- (src/exec/known.rs) and forgets them when a definition row is deleted,
-- renamed or moved, or the table truncated: these triggers register a
-- relcache invalidation of kip.spaces, which every backend watches.
CREATE FUNCTION kip.registry_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_registry_changed';
COMMENT ON FUNCTION kip.registry_changed() IS 'Tells every backend that a type or predicate definition changed (kip internal)';
CREATE TRIGGER registry_changed AFTER UPDATE OF space, type, name OR DELETE ON kip.concepts
    FOR EACH ROW WHEN (OLD.type IN ('$ConceptType', '$PropositionType')) EXECUTE FUNCTION kip.registry_changed();
CREATE TRIGGER registry_truncated AFTER TRUNCATE ON kip.concepts
    FOR EACH STATEMENT EXECUTE FUNCTION kip.registry_changed();
ALTER TABLE kip.concepts ENABLE ALWAYS TRIGGER registry_changed;
ALTER TABLE kip.concepts ENABLE ALWAYS TRIGGER registry_truncated;

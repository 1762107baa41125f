-- kip storage schema.
--
-- The graph lives in two tables, kip.concepts and kip.propositions, in schema
-- `kip`. Every invariant the KIP model relies on is enforced here by the
-- database itself, so SQL written by other tools cannot corrupt the graph:
--
--   * (space, type, name) is unique for concepts;
--   * (space, subject, predicate, object) is unique for propositions;
--   * a proposition's endpoints exist, in the same space; an endpoint is a
--     concept or another proposition (higher-order), and deleting an element
--     deletes every link that references it, transitively, through plain
--     foreign keys with ON DELETE CASCADE;
--   * version and updated_at are maintained by triggers.
--
-- Concepts and propositions draw their ids from one sequence, so a bare number
-- identifies an element whatever its kind. External ids are `C:<id>` for
-- concepts and `P:<id>:<predicate>` for propositions.

-- kip keeps text as UTF-8 (KIP is JSON, and the library reads text as
-- Rust strings): in a database of another encoding, a name outside ASCII
-- failed with an SQL error or was stored garbled, the Genesis capsule's
-- own text included. Refused before anything is created.
DO $$
BEGIN
    IF pg_catalog.getdatabaseencoding() OPERATOR(pg_catalog.<>) 'UTF8' THEN
        RAISE EXCEPTION 'kip needs a UTF8 database; this one is %', pg_catalog.getdatabaseencoding()
            USING HINT = 'Create the database with ENCODING ''UTF8'' (CREATE DATABASE ... ENCODING ''UTF8'' TEMPLATE template0) and install kip there.';
    END IF;
END
$$;

CREATE SCHEMA IF NOT EXISTS kip;
COMMENT ON SCHEMA kip IS 'KIP memory storage: concepts, propositions and memory spaces';

-- Memory spaces: independent memories inside one database.
CREATE TABLE kip.spaces (
    name            text PRIMARY KEY
                    CONSTRAINT space_name_format CHECK (name ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    bootstrapped_at timestamptz,
    -- The capsule level the space was bootstrapped with or last upgraded to
    -- (src/bootstrap): 1 = KIP v1.0-RC10 capsules, 2 = RC11.
    capsule_level   integer NOT NULL DEFAULT 1
);
COMMENT ON TABLE kip.spaces IS 'Memory spaces; select one with SET kip.space';
COMMENT ON COLUMN kip.spaces.capsule_level IS 'Capsule level of the space; older spaces are upgraded on their next use';

-- Each backend remembers which spaces are ready (src/exec/known.rs)
-- and forgets them when this table changes: the trigger registers a relcache
-- invalidation of the table, delivered to every backend. A row trigger, as
-- well as one for TRUNCATE: a logical replication subscriber's apply fires
-- row triggers (and TRUNCATE's), never a statement's.
CREATE FUNCTION kip.spaces_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_spaces_changed';
COMMENT ON FUNCTION kip.spaces_changed() IS 'Tells every backend that kip.spaces changed (kip internal)';
CREATE TRIGGER spaces_changed AFTER UPDATE OR DELETE ON kip.spaces
    FOR EACH ROW EXECUTE FUNCTION kip.spaces_changed();
CREATE TRIGGER spaces_truncated AFTER TRUNCATE ON kip.spaces
    FOR EACH STATEMENT EXECUTE FUNCTION kip.spaces_changed();
-- Also where session_replication_role = replica (a logical replication
-- subscriber applying a dropped space).
ALTER TABLE kip.spaces ENABLE ALWAYS TRIGGER spaces_changed;
ALTER TABLE kip.spaces ENABLE ALWAYS TRIGGER spaces_truncated;

CREATE SEQUENCE kip.element_id_seq AS bigint;
COMMENT ON SEQUENCE kip.element_id_seq IS 'Shared id sequence of concepts and propositions';
-- Element ids are kip's to issue (src/governance/element_ids.rs): the ids'
-- default is nextval of that sequence, remembered by the backend, and the
-- element_id triggers below refuse a row inserted with an id its writer
-- chose, unless it restores an element deleted from the same space.
CREATE FUNCTION kip.issue_element_id() RETURNS bigint
    LANGUAGE c VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'kip_issue_element_id';
COMMENT ON FUNCTION kip.issue_element_id() IS 'A new element id from kip.element_id_seq (kip internal: the default of the element ids)';

CREATE TABLE kip.concepts (
    id          bigint PRIMARY KEY DEFAULT kip.issue_element_id(),
    space       text NOT NULL REFERENCES kip.spaces(name) ON DELETE CASCADE ON UPDATE CASCADE,
    type        text NOT NULL CONSTRAINT concept_type_nonempty CHECK (type <> ''),
    name        text NOT NULL,
    attributes  jsonb NOT NULL DEFAULT '{}' CONSTRAINT concept_attributes_object CHECK (jsonb_typeof(attributes) = 'object'),
    metadata    jsonb NOT NULL DEFAULT '{}' CONSTRAINT concept_metadata_object CHECK (jsonb_typeof(metadata) = 'object'),
    version     integer NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- Keyword search: the name, aliases and description, tokenized without
    -- language-specific stemming so names in any language match as written.
    search_text tsvector GENERATED ALWAYS AS (
        to_tsvector('simple'::regconfig,
            name || ' ' || coalesce(attributes ->> 'description', '') || ' '
                 || coalesce(attributes ->> 'aliases', ''))
    ) STORED,
    embedding   vector(384),
    -- metadata.expires_at as written, for the TTL sweep's partial index
    -- (sql/maintenance.sql). An index that mentions `metadata` itself would
    -- make every metadata change a non-HOT update, rewriting an entry in each
    -- of the table's indexes; this column changes only with expires_at.
    expires_at  text GENERATED ALWAYS AS (metadata ->> 'expires_at') STORED,
    CONSTRAINT concepts_space_type_name_key UNIQUE (space, type, name),
    -- Target of the propositions' composite foreign keys (same-space endpoints).
    CONSTRAINT concepts_space_id_key UNIQUE (space, id)
);
COMMENT ON TABLE kip.concepts IS 'KIP concept nodes; external id C:<id>';

CREATE TABLE kip.propositions (
    id              bigint PRIMARY KEY DEFAULT kip.issue_element_id(),
    -- No foreign key of its own to kip.spaces: the subject's composite key
    -- below ties a link to an element of its space, and through it to a
    -- concept, whose key to kip.spaces cascades a drop or a rename to it.
    -- One check fewer per link written (docs/DESIGN.md §2).
    space           text NOT NULL,
    -- An endpoint is exactly one of a concept or a proposition; the pair of
    -- nullable columns lets each side carry a real, cascading foreign key.
    subject_concept bigint,
    subject_link    bigint,
    predicate       text NOT NULL CONSTRAINT proposition_predicate_nonempty CHECK (predicate <> ''),
    object_concept  bigint,
    object_link     bigint,
    subject         bigint GENERATED ALWAYS AS (coalesce(subject_concept, subject_link)) STORED,
    object          bigint GENERATED ALWAYS AS (coalesce(object_concept, object_link)) STORED,
    attributes      jsonb NOT NULL DEFAULT '{}' CONSTRAINT proposition_attributes_object CHECK (jsonb_typeof(attributes) = 'object'),
    metadata        jsonb NOT NULL DEFAULT '{}' CONSTRAINT proposition_metadata_object CHECK (jsonb_typeof(metadata) = 'object'),
    version         integer NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    search_text     tsvector GENERATED ALWAYS AS (
        to_tsvector('simple'::regconfig,
            replace(predicate, '_', ' ') || ' ' || coalesce(attributes ->> 'description', ''))
    ) STORED,
    embedding       vector(384),
    -- As for concepts: metadata.expires_at, for the TTL sweep's index.
    expires_at      text GENERATED ALWAYS AS (metadata ->> 'expires_at') STORED,
    CONSTRAINT proposition_one_subject CHECK ((subject_concept IS NULL) <> (subject_link IS NULL)),
    CONSTRAINT proposition_one_object  CHECK ((object_concept IS NULL) <> (object_link IS NULL)),
    CONSTRAINT propositions_space_id_key UNIQUE (space, id),
    CONSTRAINT proposition_subject_concept_fk FOREIGN KEY (space, subject_concept)
        REFERENCES kip.concepts(space, id) ON DELETE CASCADE ON UPDATE CASCADE DEFERRABLE,
    CONSTRAINT proposition_object_concept_fk FOREIGN KEY (space, object_concept)
        REFERENCES kip.concepts(space, id) ON DELETE CASCADE ON UPDATE CASCADE DEFERRABLE,
    CONSTRAINT proposition_subject_link_fk FOREIGN KEY (space, subject_link)
        REFERENCES kip.propositions(space, id) ON DELETE CASCADE ON UPDATE CASCADE DEFERRABLE,
    CONSTRAINT proposition_object_link_fk FOREIGN KEY (space, object_link)
        REFERENCES kip.propositions(space, id) ON DELETE CASCADE ON UPDATE CASCADE DEFERRABLE
);
COMMENT ON TABLE kip.propositions IS 'KIP proposition links; external id P:<id>:<predicate>; endpoints may be propositions (higher-order)';

-- Renaming a space (UPDATE kip.spaces SET name) cascades the new name to
-- its concepts, and from each concept to its links, and from each link to
-- the links about it, one element at a time. A link about a link, with a
-- concept endpoint too, can be reached first from its concept: its key to
-- the other link was then checked before that link had moved, and the
-- rename failed (`tests/storage.rs`). The endpoint keys are DEFERRABLE
-- (initially immediate: every other transaction is checked as before), and
-- a rename defers their checks to the end of its transaction, when every
-- element has moved. (Checking them again at the end of the rename's own
-- statement, from an AFTER statement trigger, ran before the cascades had
-- finished.)
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

-- Access paths the compiler emits: forward and reverse traversal by predicate,
-- uniqueness of (s, p, o), lookups by name, and the cascade lookups of the
-- foreign keys (partial: each endpoint column is null half of the time).
CREATE UNIQUE INDEX propositions_spo_key ON kip.propositions (space, subject, predicate, object);
CREATE INDEX propositions_ops_idx ON kip.propositions (space, object, predicate, subject);
-- A predicate's links with both their endpoints, so that a scan of them
-- needs no heap: without the endpoints, the planner read a predicate's links
-- (a NOT block's anti-join, a predicate scanned with no anchor) from the
-- (space, subject, predicate, object) key instead, every link of the space
-- (24 ms over a million links for a predicate with none).
CREATE INDEX propositions_predicate_idx ON kip.propositions (space, predicate) INCLUDE (subject, object);
CREATE INDEX propositions_subject_concept_idx ON kip.propositions (subject_concept) WHERE subject_concept IS NOT NULL;
CREATE INDEX propositions_object_concept_idx ON kip.propositions (object_concept) WHERE object_concept IS NOT NULL;
CREATE INDEX propositions_subject_link_idx ON kip.propositions (subject_link) WHERE subject_link IS NOT NULL;
CREATE INDEX propositions_object_link_idx ON kip.propositions (object_link) WHERE object_link IS NOT NULL;
CREATE INDEX concepts_space_name_idx ON kip.concepts (space, name);
-- The members of a type in creation order: `FIND(?x) WHERE { ?x {type: "T"} }
-- LIMIT n` streams its page from here and stops after n rows, whatever the
-- size of the type.
CREATE INDEX concepts_space_type_id_idx ON kip.concepts (space, type, id);
-- DESCRIBE CONCEPT TYPES / PROPOSITION TYPES list the definitions by name in
-- byte order, whatever the database's collation, each page after the last
-- name of the previous one: this index serves that order and that start, so
-- a page reads its own rows. Partial: only definition nodes, which are few
-- and rarely written, so other writes do not pay for it.
CREATE INDEX concepts_definition_names_idx ON kip.concepts (space, type, name COLLATE "C")
    WHERE type IN ('$ConceptType', '$PropositionType');
-- How many concepts of each type each space holds. The planner otherwise
-- multiplies the share of the space by the share of the type as if the two
-- were independent: 100,000 definitions in one space of a 2.2-million-row
-- table were estimated at 643 rows, and DESCRIBE sorted all of them for each
-- page instead of reading the first ones from the index above.
CREATE STATISTICS kip.concepts_space_type (mcv) ON space, type FROM kip.concepts;
-- Likewise how many links of each predicate each space holds: a predicate
-- common in one space (every Event's `belongs_to_domain` in an agent's
-- memory) was estimated at 82,813 links in a space that has 29 of them, and
-- a FIND planned for its values walked the space's million links in
-- endpoint order looking for them (engine::rare_predicates).
CREATE STATISTICS kip.propositions_space_predicate (mcv) ON space, predicate FROM kip.propositions;
-- Keyword search looks words up per space: each word of search_text is
-- indexed as `space U+001F word` (kip.space_words, src/search/space_words.rs),
-- so a word's posting list holds only one space's elements, and ANALYZE's
-- element statistics of the expression say how common the word is in each
-- space. A word another space uses a million times costs this space no more
-- than a rare one.
CREATE FUNCTION kip.space_words(space text, words text[]) RETURNS text[]
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_space_words';
COMMENT ON FUNCTION kip.space_words(text, text[]) IS 'Each word prefixed with its space and U+001F: the keys of the keyword indexes (kip internal)';
-- Every write of a row, a new vector included, adds its words to the GIN
-- pending list, which each keyword search reads linearly until (auto)vacuum
-- merges it: a 4 MB default list after a backfill costs every search ~5 ms
-- per word. A 256 kB list keeps that cost small and still batches writes.
CREATE INDEX concepts_words_idx ON kip.concepts
    USING gin (kip.space_words(space, tsvector_to_array(search_text))) WITH (gin_pending_list_limit = 256);
CREATE INDEX propositions_words_idx ON kip.propositions
    USING gin (kip.space_words(space, tsvector_to_array(search_text))) WITH (gin_pending_list_limit = 256);
-- Keyword search (src/search/keyword.rs): exact names case-insensitively, and
-- trigram GIN for both substring matches and similar names (a typo).
CREATE INDEX concepts_space_lower_name_idx ON kip.concepts (space, lower(name));
-- The trigram index is on the lowercased name in the "C" collation, an
-- expression no equality elsewhere uses: on the name itself the planner
-- took it for `name = 'x'` (FIND anchors, schema lookups), which a trigram
-- scan answers in milliseconds where the btree takes microseconds. GIN, not
-- GiST: a GiST scan for names similar to a term walked most of the tree
-- whenever the names were many and alike (232 ms for a term matching none
-- of 2.2 million names; 0.2 ms with GIN, which reads the term's trigrams'
-- posting lists). Its small pending list is the keyword index's reason.
CREATE INDEX concepts_name_trgm_idx ON kip.concepts
    USING gin ((lower(name) COLLATE "C") gin_trgm_ops) WITH (gin_pending_list_limit = 256);
-- Attribute FILTERs: equality and IN on an attribute also compile to
-- `attributes @> {"key": value}`, which this index serves.
CREATE INDEX concepts_attributes_idx ON kip.concepts USING gin (attributes jsonb_path_ops);
-- ef_construction 128 (pgvector's default is 64): on near-duplicate memories
-- the build's search width decides recall (benches/SEARCH-BENCH.md); m stays 16.
CREATE INDEX concepts_embedding_idx ON kip.concepts
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);
CREATE INDEX propositions_embedding_idx ON kip.propositions
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);

-- Version and timestamp bookkeeping. Any change to an element's content
-- (attributes, metadata, identity, endpoints) bumps its version by one and
-- stamps updated_at, whoever wrote it; an update that changes nothing leaves
-- both alone. Writers cannot set these columns: the trigger owns them.
-- The content columns are compared one by one with their types' equality
-- (as IS DISTINCT FROM does), never the 384-dimension vector or the
-- tsvector. C functions (src/exec/touch.rs): every capsule updates the
-- concepts it names, and the PL/pgSQL version ran its interpreter per row.
CREATE FUNCTION kip.touch_concept() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_touch_concept';
CREATE FUNCTION kip.touch_proposition() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_touch_proposition';

-- Only updates are touched: inserts take the column defaults (version 1, now),
-- and a restore from pg_dump keeps the versions and timestamps it carries.
CREATE TRIGGER concepts_touch BEFORE UPDATE ON kip.concepts
    FOR EACH ROW EXECUTE FUNCTION kip.touch_concept();
CREATE TRIGGER propositions_touch BEFORE UPDATE ON kip.propositions
    FOR EACH ROW EXECUTE FUNCTION kip.touch_proposition();

-- A row keeps the id kip issued it: no writer chooses one (a superuser, a
-- kip_admin member and a restore with row_security off, such as
-- pg_restore, excepted), and an update never changes it (the touch
-- functions).
CREATE FUNCTION kip.check_element_id() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_check_element_id';
CREATE TRIGGER concepts_element_id BEFORE INSERT ON kip.concepts
    FOR EACH ROW EXECUTE FUNCTION kip.check_element_id('concept');
CREATE TRIGGER propositions_element_id BEFORE INSERT ON kip.propositions
    FOR EACH ROW EXECUTE FUNCTION kip.check_element_id('proposition');

-- External ids.
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

-- A space whose meta-type $ConceptType is deleted by plain SQL (KIP cannot:
-- it is immutable), or whose concepts are truncated, is no longer
-- bootstrapped: the next kip_execute in it runs the Genesis capsule again.
-- Marked ready, such a space refused every write, since defining a type
-- takes $ConceptType. Ordinary triggers: a subscriber gets the publisher's
-- kip.spaces row.
CREATE FUNCTION kip.core_deleted() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        UPDATE kip.spaces SET bootstrapped_at = NULL WHERE bootstrapped_at IS NOT NULL;
    ELSE
        UPDATE kip.spaces SET bootstrapped_at = NULL WHERE name = OLD.space AND bootstrapped_at IS NOT NULL;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION kip.core_deleted() IS 'Marks a space whose core was deleted by plain SQL for bootstrapping again (kip internal)';
CREATE TRIGGER core_deleted AFTER DELETE ON kip.concepts
    FOR EACH ROW WHEN (OLD.type = '$ConceptType' AND OLD.name = '$ConceptType') EXECUTE FUNCTION kip.core_deleted();
CREATE TRIGGER core_truncated AFTER TRUNCATE ON kip.concepts
    FOR EACH STATEMENT EXECUTE FUNCTION kip.core_deleted();

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

-- The bodies name the operator's schema: a body is inlined into the
-- caller's query under its search_path, where an operator || (text, bigint)
-- in another schema would match closer than the built-in's anynonarray.
CREATE FUNCTION kip.concept_ref(id bigint) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT 'C:' OPERATOR(pg_catalog.||) id::text $$;
CREATE FUNCTION kip.proposition_ref(id bigint, predicate text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT 'P:' OPERATOR(pg_catalog.||) id::text OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) predicate
$$;

-- The external id of any element (concept or proposition) in a space.
CREATE FUNCTION kip.element_ref(p_space text, p_id bigint) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(
        (SELECT kip.concept_ref(c.id) FROM kip.concepts c WHERE c.space OPERATOR(pg_catalog.=) p_space AND c.id OPERATOR(pg_catalog.=) p_id),
        (SELECT kip.proposition_ref(p.id, p.predicate) FROM kip.propositions p
         WHERE p.space OPERATOR(pg_catalog.=) p_space AND p.id OPERATOR(pg_catalog.=) p_id))
$$;

-- Readable views for SQL and BI users.
CREATE VIEW kip.concept_nodes AS
SELECT c.space, kip.concept_ref(c.id) AS id, c.type, c.name, c.attributes, c.metadata,
       c.version, c.created_at, c.updated_at
FROM kip.concepts c;
COMMENT ON VIEW kip.concept_nodes IS 'One row per concept node, with its external id';

CREATE VIEW kip.facts AS
SELECT p.space,
       kip.proposition_ref(p.id, p.predicate) AS id,
       coalesce(kip.concept_ref(sc.id), kip.proposition_ref(sp.id, sp.predicate)) AS subject_id,
       coalesce(sc.type, '(proposition)') AS subject_type,
       coalesce(sc.name, sp.predicate) AS subject_name,
       p.predicate,
       coalesce(kip.concept_ref(oc.id), kip.proposition_ref(op.id, op.predicate)) AS object_id,
       coalesce(oc.type, '(proposition)') AS object_type,
       coalesce(oc.name, op.predicate) AS object_name,
       p.attributes, p.metadata, p.version, p.created_at, p.updated_at
FROM kip.propositions p
LEFT JOIN kip.concepts sc ON sc.id = p.subject_concept
LEFT JOIN kip.propositions sp ON sp.id = p.subject_link
LEFT JOIN kip.concepts oc ON oc.id = p.object_concept
LEFT JOIN kip.propositions op ON op.id = p.object_link;
COMMENT ON VIEW kip.facts IS 'One row per proposition link with subject and object type and name';

-- pg_dump carries the memory: extension member tables are otherwise skipped.
SELECT pg_catalog.pg_extension_config_dump('kip.spaces', '');
SELECT pg_catalog.pg_extension_config_dump('kip.concepts', '');
SELECT pg_catalog.pg_extension_config_dump('kip.propositions', '');
SELECT pg_catalog.pg_extension_config_dump('kip.element_id_seq', '');

-- A random secret of this database's kip installation, created with the
-- extension (pg_strong_random through gen_random_uuid): the key that
-- authenticates CURSOR tokens, so a client cannot forge one from anything
-- public such as the database oid. Not dumped: a restored database gets a
-- new secret (old cursors then restart with KIP_1001). The table is closed
-- to PUBLIC; kip reads it through kip.cursor_secret() as the caller, so a
-- role that may call kip could mint tokens: they grant nothing beyond a
-- page of a query the role may run anyway (docs/DESIGN.md §16).
CREATE TABLE kip.instance_secrets (
    name   text PRIMARY KEY,
    secret bytea NOT NULL CONSTRAINT instance_secret_length CHECK (length(secret) >= 16)
);
REVOKE ALL ON kip.instance_secrets FROM PUBLIC;
INSERT INTO kip.instance_secrets (name, secret)
VALUES ('cursor', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
CREATE FUNCTION kip.cursor_secret() RETURNS bytea
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT secret FROM kip.instance_secrets WHERE name = 'cursor'
$$;
COMMENT ON FUNCTION kip.cursor_secret() IS 'The key of CURSOR tokens (kip internal)';

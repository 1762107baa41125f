-- kip embeddings: the grounding text of every element, staleness, and the
-- backlog of elements waiting for a vector (src/embed/).
--
-- The grounding text is the one definition of what an element "means" for
-- semantic search (RC10 §5.2.2). It is defined here, once, and used by the
-- in-database model (background worker and kip_embed_pending), by the
-- kip.embedding_backlog view that external embedders read, and by the
-- staleness triggers below.
--
-- Staleness: an element whose `embedding` is NULL is waiting for a vector.
-- Inserts start NULL (whoever writes them: KIP, plain SQL, pg_restore of a
-- dump taken before the vector existed). An update that changes the
-- grounding text sets the embedding back to NULL in the same statement,
-- so a write never waits for the model and search never uses a vector of
-- text that is gone.

-- Concepts: "<type>: <name>", then aliases, description and the salient
-- text attributes an agent writes (an Event's content_summary, a summary;
-- an Experience's or a Skill's goal, outcome, states, context, conditions,
-- procedure and failure signals, as RC11's Experience profile asks: every
-- string inside them, in that order).
-- Capped at 2,000 characters: the model reads at most 256 tokens anyway.
-- Every function and operator is written with its schema, and every
-- literal with its type: the body is inlined into the caller's query under
-- its search_path, where another schema could hold a closer match (an
-- operator #>> (jsonb, jsonb) for an untyped literal, a concat_ws of three
-- texts for the variadic built-in).
CREATE FUNCTION kip.concept_grounding_text(p_type text, p_name text, p_attributes jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT pg_catalog.left(pg_catalog.concat_ws('. '::text,
        p_type OPERATOR(pg_catalog.||) ': '::text OPERATOR(pg_catalog.||) p_name,
        CASE WHEN pg_catalog.jsonb_typeof(p_attributes OPERATOR(pg_catalog.->) 'aliases'::text) OPERATOR(pg_catalog.=) 'array'::text
                  AND pg_catalog.jsonb_array_length(p_attributes OPERATOR(pg_catalog.->) 'aliases'::text) OPERATOR(pg_catalog.>) 0
             THEN 'Also known as '::text OPERATOR(pg_catalog.||)
                  (SELECT pg_catalog.string_agg(a.alias, ', '::text)
                   FROM pg_catalog.jsonb_array_elements_text(p_attributes OPERATOR(pg_catalog.->) 'aliases'::text) AS a(alias)) END,
        (SELECT f.value FROM (SELECT p_attributes OPERATOR(pg_catalog.->>) 'description'::text) AS f(value)
         WHERE f.value OPERATOR(pg_catalog.<>) ''::text),
        (SELECT f.value FROM (SELECT p_attributes OPERATOR(pg_catalog.->>) 'content_summary'::text) AS f(value)
         WHERE f.value OPERATOR(pg_catalog.<>) ''::text),
        (SELECT f.value FROM (SELECT p_attributes OPERATOR(pg_catalog.->>) 'summary'::text) AS f(value)
         WHERE f.value OPERATOR(pg_catalog.<>) ''::text),
        (SELECT pg_catalog.string_agg(s.text, '. '::text ORDER BY k.ord)
         FROM pg_catalog.unnest(ARRAY['goal', 'outcome', 'initial_state', 'context', 'trigger_conditions',
                                      'procedure', 'failure_signals', 'applicability_context']::text[]) WITH ORDINALITY AS k(key, ord),
              LATERAL (SELECT pg_catalog.string_agg(v OPERATOR(pg_catalog.#>>) '{}'::text[], ' '::text) AS text
                       FROM pg_catalog.jsonb_path_query(p_attributes OPERATOR(pg_catalog.->) k.key, 'strict $.**'::jsonpath) AS v
                       WHERE pg_catalog.jsonb_typeof(v) OPERATOR(pg_catalog.=) 'string'::text
                         AND v OPERATOR(pg_catalog.#>>) '{}'::text[] OPERATOR(pg_catalog.<>) ''::text) s
         WHERE s.text IS NOT NULL)
    ), 2000)
$$;
COMMENT ON FUNCTION kip.concept_grounding_text(text, text, jsonb) IS
    'The text a concept is embedded from: type, name, aliases, description, content_summary, summary, and an Experience''s or Skill''s goal, outcome, states, context, conditions, procedure and failure signals';

-- How an endpoint reads inside a proposition's text: a concept by its name,
-- a proposition (higher-order link) by its predicate.
CREATE FUNCTION kip.endpoint_label(p_space text, p_id bigint) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        (SELECT c.name FROM kip.concepts c WHERE c.space OPERATOR(pg_catalog.=) p_space AND c.id OPERATOR(pg_catalog.=) p_id),
        (SELECT pg_catalog.replace(p.predicate, '_'::text, ' '::text) FROM kip.propositions p
         WHERE p.space OPERATOR(pg_catalog.=) p_space AND p.id OPERATOR(pg_catalog.=) p_id),
        ''::text)
$$;

-- Propositions: "<subject name> <predicate words> <object name>", then the
-- link's description.
CREATE FUNCTION kip.proposition_grounding_text(p_space text, p_subject bigint, p_predicate text,
                                               p_object bigint, p_attributes jsonb) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT pg_catalog.left(pg_catalog.concat_ws('. '::text,
        pg_catalog.concat_ws(' '::text, kip.endpoint_label(p_space, p_subject), pg_catalog.replace(p_predicate, '_'::text, ' '::text),
                                        kip.endpoint_label(p_space, p_object)),
        (SELECT f.value FROM (SELECT p_attributes OPERATOR(pg_catalog.->>) 'description'::text) AS f(value)
         WHERE f.value OPERATOR(pg_catalog.<>) ''::text)
    ), 2000)
$$;
COMMENT ON FUNCTION kip.proposition_grounding_text(text, bigint, text, bigint, jsonb) IS
    'The text a proposition is embedded from: subject name, predicate, object name, description';

-- An update that changes the grounding text makes the vector stale. The
-- vectors are compared as text: the cast needs no operator lookup, so the
-- trigger works under any search_path (pgvector's = lives in its schema).
CREATE FUNCTION kip.concept_embedding_stale() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.embedding IS NOT NULL
       AND NEW.embedding::text IS NOT DISTINCT FROM OLD.embedding::text
       AND kip.concept_grounding_text(NEW.type, NEW.name, NEW.attributes)
           IS DISTINCT FROM kip.concept_grounding_text(OLD.type, OLD.name, OLD.attributes) THEN
        NEW.embedding := NULL;
    END IF;
    RETURN NEW;
END;
$$;

CREATE FUNCTION kip.proposition_embedding_stale() RETURNS trigger
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

-- Fired only by updates of the columns the grounding text reads: a write of
-- the vector itself (or of metadata) never pays for the comparison. The WHEN
-- conditions call the function only for a row that has a vector and whose
-- grounding columns changed: a capsule's statements rewrite the attributes
-- of the concepts they name, mostly to the same value, and each such row
-- otherwise ran the function, which printed both vectors as text.
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

-- The backlog is found through these partial indexes, so looking for work
-- costs nothing when there is none.
CREATE INDEX concepts_embedding_pending_idx ON kip.concepts (id) WHERE embedding IS NULL;
CREATE INDEX propositions_embedding_pending_idx ON kip.propositions (id) WHERE embedding IS NULL;

-- Every element waiting for a vector, with the text to embed: what an
-- application that embeds elsewhere (kip.embedding_provider = 'external')
-- reads before calling kip_set_embedding(id, vector, grounding_text).
CREATE VIEW kip.embedding_backlog AS
SELECT c.space, 'C:' || c.id AS id, 'concept' AS kind,
       kip.concept_grounding_text(c.type, c.name, c.attributes) AS grounding_text
FROM kip.concepts c
WHERE c.embedding IS NULL
UNION ALL
SELECT p.space, 'P:' || p.id || ':' || p.predicate, 'proposition',
       kip.proposition_grounding_text(p.space, p.subject, p.predicate, p.object, p.attributes)
FROM kip.propositions p
WHERE p.embedding IS NULL;
COMMENT ON VIEW kip.embedding_backlog IS
    'Elements whose embedding is missing or stale, with the grounding text to embed';

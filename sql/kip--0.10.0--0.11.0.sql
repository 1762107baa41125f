-- kip 0.10.0 -> 0.11.0.

-- Keyword search looks each word up in its space's own posting list: the
-- GIN indexes on search_text are replaced by GIN indexes on each word
-- prefixed with its space (see sql/schema.sql and
-- src/search/space_words.rs). Building them reads every concept and link
-- once; the statistics keyword search reads come with the next ANALYZE of
-- each table, autovacuum's or an explicit one, and until then every word
-- of a search is counted in its space (bounded, as before).
CREATE FUNCTION kip.space_words(space text, words text[]) RETURNS text[]
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_space_words';
COMMENT ON FUNCTION kip.space_words(text, text[]) IS 'Each word prefixed with its space and U+001F: the keys of the keyword indexes (kip internal)';

DROP INDEX kip.concepts_search_idx;
DROP INDEX kip.propositions_search_idx;
CREATE INDEX concepts_words_idx ON kip.concepts
    USING gin (kip.space_words(space, tsvector_to_array(search_text))) WITH (gin_pending_list_limit = 256);
CREATE INDEX propositions_words_idx ON kip.propositions
    USING gin (kip.space_words(space, tsvector_to_array(search_text))) WITH (gin_pending_list_limit = 256);

-- The trigram index on names (keyword search's substring and similar-name
-- sources) becomes GIN: a GiST scan for names similar to a term walked
-- most of the tree when the names were many and alike.
DROP INDEX kip.concepts_name_trgm_idx;
CREATE INDEX concepts_name_trgm_idx ON kip.concepts
    USING gin ((lower(name) COLLATE "C") gin_trgm_ops) WITH (gin_pending_list_limit = 256);

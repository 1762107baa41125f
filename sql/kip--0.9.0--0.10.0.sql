-- kip 0.9.0 -> 0.10.0.

-- DESCRIBE CONCEPT TYPES / PROPOSITION TYPES page after the previous page's
-- last name instead of skipping an offset (src/engine/describe.rs); this
-- partial index serves their byte-order listing, so walking every page costs
-- time linear in the listing. Only definition nodes are indexed.
CREATE INDEX concepts_definition_names_idx ON kip.concepts (space, type, name COLLATE "C")
    WHERE type IN ('$ConceptType', '$PropositionType');

-- How many concepts of each type each space holds, for the planner's
-- estimates (see sql/schema.sql). Gathered by the next ANALYZE of
-- kip.concepts, autovacuum's or an explicit one.
CREATE STATISTICS kip.concepts_space_type (mcv) ON space, type FROM kip.concepts;

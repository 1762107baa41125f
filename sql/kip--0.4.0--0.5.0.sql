-- kip 0.4.0 -> 0.5.0.

-- issue 11: performance
--
-- The members of a type in creation order (FIND's natural order): a FIND
-- over one type with a LIMIT reads its page from this index and stops there,
-- instead of reading and sorting every member (built here for the existing
-- concepts; no element, version or timestamp changes).
CREATE INDEX concepts_space_type_id_idx ON kip.concepts (space, type, id);

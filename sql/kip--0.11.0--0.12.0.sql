-- kip 0.11.0 -> 0.12.0.

-- How many links of each predicate each space holds, as for the types of
-- concepts (kip.concepts_space_type): without it the planner multiplies the
-- share of the space by the share of the predicate in the whole table, and
-- a predicate common in one space looks common in every space. It is filled
-- by the next ANALYZE of kip.propositions (autovacuum's or an explicit one).
CREATE STATISTICS kip.propositions_space_predicate (mcv) ON space, predicate FROM kip.propositions;

-- A space whose core is wiped by plain SQL (its meta-type $ConceptType
-- deleted, or kip.concepts truncated) is bootstrapped again by its next
-- command, in the session that was using it and in a new one: before, it
-- stayed marked ready and refused every write (defining a type takes
-- $ConceptType).
CREATE EXTENSION kip CASCADE;
SET client_min_messages = warning;
SET kip.space = 'wiped';
SELECT kip_execute('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Person"} } CONCEPT ?p { {type: "Person", name: "Ana"} } }') -> 'error' AS error;
SET kip.space = 'kept';
SELECT kip_execute('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Person"} } CONCEPT ?p { {type: "Person", name: "Ben"} } }') -> 'error' AS error;
-- The meta-type of one space deleted by plain SQL: that space only.
DELETE FROM kip.concepts WHERE space = 'wiped';
SELECT name, bootstrapped_at IS NOT NULL AS bootstrapped FROM kip.spaces WHERE name IN ('wiped', 'kept') ORDER BY name;
SET kip.space = 'wiped';
SELECT kip_execute('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Person"} } CONCEPT ?p { {type: "Person", name: "Cy"} } }') -> 'error' AS error;
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} }') -> 'result' AS persons;
-- Every space's concepts truncated, then a new session.
TRUNCATE kip.concepts CASCADE;
SELECT count(*) AS bootstrapped FROM kip.spaces WHERE bootstrapped_at IS NOT NULL;
\c
SET client_min_messages = warning;
SET kip.space = 'kept';
SELECT kip_execute('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Person"} } CONCEPT ?p { {type: "Person", name: "Dee"} } }') -> 'error' AS error;
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} }') -> 'result' AS persons;
SELECT kip_execute('FIND(COUNT(?t)) WHERE { ?t {type: "$ConceptType"} }') -> 'result' -> 0 > '3' AS core_back;

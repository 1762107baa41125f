-- A database copied with CREATE DATABASE ... TEMPLATE has the same cursor
-- secret as its original; the key also takes in the database, so the
-- copy refuses the original's cursors (KIP_1001) and pages its own.
CREATE EXTENSION kip CASCADE;
SET kip.space = 'copied';
SELECT kip_execute('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Person"} } CONCEPT ?a { {type: "Person", name: "Ana"} } CONCEPT ?b { {type: "Person", name: "Ben"} } CONCEPT ?c { {type: "Person", name: "Cy"} } }') -> 'error' AS error;
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} } ORDER BY ?p.name ASC LIMIT 1') ->> 'next_cursor' AS token \gset
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} } ORDER BY ?p.name ASC LIMIT 1 CURSOR :c', jsonb_build_object('c', :'token')) -> 'result' AS second_page_here;
SELECT current_database() AS original \gset
\c postgres
DROP DATABASE IF EXISTS kip_scenario_cursor_copy;
CREATE DATABASE kip_scenario_cursor_copy TEMPLATE :"original";
\c kip_scenario_cursor_copy
SET kip.space = 'copied';
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} } ORDER BY ?p.name ASC LIMIT 1 CURSOR :c', jsonb_build_object('c', :'token')) #>> '{error,code}' AS in_the_copy;
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} } ORDER BY ?p.name ASC LIMIT 1') ->> 'next_cursor' AS copy_token \gset
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} } ORDER BY ?p.name ASC LIMIT 1 CURSOR :c', jsonb_build_object('c', :'copy_token')) -> 'result' AS second_page_in_the_copy;
\c postgres
DROP DATABASE kip_scenario_cursor_copy;

-- In a database whose collation is ICU's (not byte order), kip orders
-- names by bytes everywhere, as in a C database: FIND's ORDER BY and its
-- CURSOR pages, and SEARCH's order among hits of equal score.
\c postgres
DROP DATABASE IF EXISTS kip_scenario_icu;
CREATE DATABASE kip_scenario_icu TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8';
\c kip_scenario_icu
SET client_min_messages = warning;
CREATE EXTENSION kip CASCADE;
SET kip.space = 'icu';
SELECT kip_execute('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Person"} }
  CONCEPT ?a { {type: "Person", name: "alice"} } CONCEPT ?b { {type: "Person", name: "Alice"} }
  CONCEPT ?c { {type: "Person", name: "ALICE"} } CONCEPT ?d { {type: "Person", name: "Émile"} }
  CONCEPT ?e { {type: "Person", name: "emile"} } CONCEPT ?f { {type: "Person", name: "Zoë"} } }') -> 'error' AS error;
SELECT 'a' < 'B' AS icu_orders_a_before_b;
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} FILTER(?p.name != "$self" && ?p.name != "$system") } ORDER BY ?p.name ASC') -> 'result' AS by_name;
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} FILTER(?p.name != "$self" && ?p.name != "$system") } ORDER BY ?p.name ASC LIMIT 4') ->> 'next_cursor' AS token \gset
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} FILTER(?p.name != "$self" && ?p.name != "$system") } ORDER BY ?p.name ASC LIMIT 4 CURSOR :c', jsonb_build_object('c', :'token')) -> 'result' AS second_page;
SELECT jsonb_path_query_array(kip_execute('SEARCH CONCEPT "alice" WITH TYPE "Person" MODE "keyword" LIMIT 3') -> 'result', '$[*].name') AS equal_scores_by_bytes;
\c postgres
DROP DATABASE kip_scenario_icu;

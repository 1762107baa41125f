-- Governance as non-superusers: a writer confined to its space, a reader
-- that cannot write, the same through plain SQL, and the history.
CREATE EXTENSION kip CASCADE;
\set ON_ERROR_STOP 0
\set VERBOSITY terse
DROP ROLE IF EXISTS kip_scenario_reader;
DROP ROLE IF EXISTS kip_scenario_writer;
CREATE ROLE kip_scenario_reader IN ROLE kip_reader;
CREATE ROLE kip_scenario_writer IN ROLE kip_writer;
SELECT kip_grant('team', 'kip_scenario_writer', 'write') AS writer_granted,
       kip_grant('team', 'kip_scenario_reader', 'read') AS reader_granted;
SELECT kip_grant('team', 'kip_scenario_nobody', 'read');

SET ROLE kip_scenario_writer;
SET kip.space = 'team';
SELECT kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human" } } }') ? 'result' AS written;
SET kip.space = 'private';
SELECT kip_execute('DESCRIBE PRIMER') -> 'error' AS other_space;
SELECT kip_create_space('private');
RESET ROLE;

SET ROLE kip_scenario_reader;
SET kip.space = 'team';
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person", name: "Ana"} }') AS reader_finds;
SELECT kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Eve"} } }') -> 'error' ->> 'code' AS reader_writes;
UPDATE kip.concepts SET name = 'Eve' WHERE name = 'Ana';
SELECT operation, kind, count(*) FROM kip.history WHERE role = 'kip_scenario_writer' GROUP BY 1, 2 ORDER BY 1, 2;
SELECT (kip_history(id) -> 'versions' -> 0 ->> 'operation') AS ana_history
FROM kip.concept_nodes WHERE name = 'Ana';
RESET ROLE;

DROP ROLE kip_scenario_reader;
DROP ROLE kip_scenario_writer;

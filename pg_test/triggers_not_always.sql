-- A restore with `pg_dump --disable-triggers` leaves kip's memo triggers
-- enabled as ordinary ones (ENABLE TRIGGER ALL), not ALWAYS: kip still
-- answers correctly, without its memos, and says so once, with the
-- statements that put them back.
CREATE EXTENSION kip CASCADE;
ALTER TABLE kip.concepts DISABLE TRIGGER registry_changed;
ALTER TABLE kip.concepts ENABLE TRIGGER registry_changed;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'kip.concepts'::regclass AND tgname LIKE 'registry%' ORDER BY tgname;
\c
SET client_min_messages = warning;
SET kip.space = 'restored';
SELECT kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Ana"} } }') ? 'result' AS written;
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person", name: "Ana"} }') -> 'result' AS found;
ALTER TABLE kip.concepts ENABLE ALWAYS TRIGGER registry_changed;
\c
SET client_min_messages = warning;
SET kip.space = 'restored';
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person", name: "Ana"} }') -> 'result' AS found_quietly;

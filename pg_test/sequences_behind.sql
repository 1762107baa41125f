-- Tables restored without their id sequences (`pg_dump -t kip.concepts`
-- leaves out kip.element_id_seq, which no table owns): the sequence is
-- behind the stored ids, every write collides, and kip says which sequence
-- and how to mend it instead of "retry later".
CREATE EXTENSION kip CASCADE;
SET kip.space = 'seq';
SELECT kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Ana"} } }') ? 'result' AS written;
SELECT setval('kip.element_id_seq', 1) AS element_id_seq_behind;
SELECT e -> 'error' ->> 'code' AS code, e -> 'error' ->> 'message' AS message, e -> 'error' ->> 'hint' AS hint
FROM kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Bo"} } }') e;
SELECT setval('kip.element_id_seq', (SELECT max(id) FROM (SELECT max(id) AS id FROM kip.concepts UNION ALL SELECT max(id) FROM kip.propositions UNION ALL SELECT max(element_id) FROM kip.history) m)) > 1 AS mended;
SELECT kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Bo"} } }') ? 'result' AS written;
SELECT kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Ana"} SET ATTRIBUTES { age: 40 } } }') ? 'result' AS ana_changed;
SELECT setval('kip.history_id_seq', 1) AS history_id_seq_behind;
SELECT e -> 'error' ->> 'code' AS code, e -> 'error' ->> 'message' AS message, e -> 'error' ->> 'hint' AS hint
FROM kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Cy"} } }') e;
-- kip_revert says the same of its own history row (not that another
-- element took the reverted one's identity).
DO $$
DECLARE message text; hint text;
BEGIN
    PERFORM kip_revert((SELECT 'C:' || id FROM kip.concepts WHERE name = 'Ana'), 1);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
    RAISE WARNING '% (hint: %)', message, hint;
END $$;
SELECT setval('kip.history_id_seq', (SELECT max(id) FROM kip.history)) > 1 AS mended;
SELECT kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Cy"} } }') ? 'result' AS written;
SELECT kip_execute('FIND(?p.name) WHERE { ?p {type: "Person"} } ORDER BY ?p.name ASC') -> 'result' AS persons;

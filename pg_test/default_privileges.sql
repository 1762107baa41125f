-- Default privileges of the role that creates the extension (ALTER DEFAULT
-- PRIVILEGES) do not reach kip's schema, tables, sequences and functions:
-- a role kip grants nothing gets nothing (not the history to truncate, nor
-- the instance secrets, which have no row-level security, nor the history
-- trigger functions), and kip's own grants stay, and every role may still
-- execute the functions row-level security calls.
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_scenario_outsider') THEN
        CREATE ROLE kip_scenario_outsider;
    END IF;
END $$;
ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO kip_scenario_outsider;
ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO kip_scenario_outsider;
ALTER DEFAULT PRIVILEGES GRANT ALL ON SCHEMAS TO kip_scenario_outsider;
ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO PUBLIC;
ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON FUNCTIONS TO kip_scenario_outsider;
CREATE EXTENSION kip CASCADE;
SELECT count(*) AS outsider_or_public_grants
FROM pg_class c, aclexplode(c.relacl) a
WHERE c.relnamespace = 'kip'::regnamespace
  AND (a.grantee = 0 OR a.grantee = 'kip_scenario_outsider'::regrole);
SELECT has_schema_privilege('kip_scenario_outsider', 'kip', 'USAGE') AS schema_usage,
       has_table_privilege('kip_scenario_outsider', 'kip.history', 'TRUNCATE') AS truncate_history,
       has_table_privilege('kip_scenario_outsider', 'kip.instance_secrets', 'SELECT') AS read_secrets,
       has_sequence_privilege('kip_scenario_outsider', 'kip.history_id_seq', 'UPDATE') AS setval_history,
       has_function_privilege('kip_scenario_outsider', 'kip.concepts_history()', 'EXECUTE') AS history_trigger_fn;
SELECT has_schema_privilege('kip_reader', 'kip', 'USAGE') AS reader_usage,
       has_table_privilege('kip_reader', 'kip.concepts', 'SELECT') AS reader_select,
       has_sequence_privilege('kip_reader', 'kip.history_id_seq', 'SELECT') AS reader_sequence,
       has_table_privilege('kip_writer', 'kip.concepts', 'INSERT') AS writer_insert,
       has_table_privilege('kip_reader', 'kip.instance_secrets', 'SELECT') AS reader_secrets,
       has_function_privilege('kip_reader', 'kip.is_admin()', 'EXECUTE') AS reader_policy_fn;
DROP EXTENSION kip;
DROP OWNED BY kip_scenario_outsider;
DROP ROLE kip_scenario_outsider;

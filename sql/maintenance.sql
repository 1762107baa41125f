-- kip maintenance ("sleep") cycle: audit log and helpers (src/maintenance/).

-- Every element the maintenance cycle deletes, changes or creates gets one row
-- here, written in the same statement as the change itself. No foreign key to
-- kip.spaces: the audit outlives a dropped space.
CREATE TABLE kip.maintenance_log (
    id          bigserial PRIMARY KEY,
    space       text NOT NULL,
    ran_at      timestamptz NOT NULL DEFAULT now(),
    action      text NOT NULL,
    element_ref text,
    detail      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX maintenance_log_space_idx ON kip.maintenance_log (space, ran_at);
COMMENT ON TABLE kip.maintenance_log IS 'Audit of the kip maintenance cycle (kip_maintenance and the background worker)';

-- The TTL sweep looks only at elements that carry an expires_at; these partial
-- indexes keep it from scanning a whole space every cycle. They are on the
-- generated expires_at columns, not on metadata: see sql/schema.sql.
CREATE INDEX concepts_expiring_idx ON kip.concepts (space) WHERE expires_at IS NOT NULL;
CREATE INDEX propositions_expiring_idx ON kip.propositions (space) WHERE expires_at IS NOT NULL;

-- An ISO-8601 text as timestamptz, or NULL when it is not one: metadata such
-- as expires_at is agent-written and may be anything; the cycle skips values
-- it cannot read instead of failing on them. PARALLEL UNSAFE: the EXCEPTION
-- block starts a subtransaction, which a parallel operation forbids.
CREATE FUNCTION kip.try_timestamptz(value text) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL UNSAFE AS $$
BEGIN
    -- Bracket classes instead of backslash escapes: the pattern reads the
    -- same under standard_conforming_strings = off.
    IF value IS NULL OR value !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]+)?)?)?(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)?$' THEN
        RETURN NULL;
    END IF;
    RETURN value::timestamptz;
EXCEPTION WHEN others THEN
    RETURN NULL;
END;
$$;

SELECT pg_catalog.pg_extension_config_dump('kip.maintenance_log', '');
SELECT pg_catalog.pg_extension_config_dump('kip.maintenance_log_id_seq', '');

-- kip 0.1.0 -> 0.2.0: KIP v1.0-RC11.
--
-- Spaces record the capsule level they were bootstrapped with. Every space
-- that exists now holds the RC10 capsules (level 1); each gets the RC11 ones
-- (Experience, ExperienceStep, Skill and the shared predicate capsules)
-- merged in without loss on its next use or maintenance cycle
-- (src/bootstrap/upgrade.rs). No element, version or timestamp changes here.
--
-- Memory-strength decay replaces confidence decay in the maintenance cycle;
-- that is library code and its setting (kip.memory_strength_decay), no SQL.

ALTER TABLE kip.spaces ADD COLUMN capsule_level integer NOT NULL DEFAULT 1;
COMMENT ON COLUMN kip.spaces.capsule_level IS 'Capsule level of the space; older spaces are upgraded on their next use';

-- Hostile input (issue 9).
--
-- Entry points that run every command in a subtransaction are PARALLEL
-- UNSAFE: Postgres forbids subtransactions during a parallel operation.
ALTER FUNCTION kip_execute_readonly(text, jsonb) PARALLEL UNSAFE;
ALTER FUNCTION kip_execute_readonly(jsonb) PARALLEL UNSAFE;

-- An ISO-8601 text as timestamptz, or NULL when it is not one: metadata such
-- as expires_at is agent-written and may be anything; the cycle skips values
-- it cannot read instead of failing on them. PARALLEL UNSAFE: the EXCEPTION
-- block starts a subtransaction, which a parallel operation forbids.
CREATE OR REPLACE FUNCTION kip.try_timestamptz(value text) RETURNS timestamptz
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

-- An update that changes the grounding text makes the vector stale. The
-- vectors are compared as text: the cast needs no operator lookup, so the
-- trigger works under any search_path (pgvector's = lives in its schema).
CREATE OR REPLACE FUNCTION kip.concept_embedding_stale() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.embedding IS NOT NULL
       AND NEW.embedding::text IS NOT DISTINCT FROM OLD.embedding::text
       AND kip.concept_grounding_text(NEW.type, NEW.name, NEW.attributes)
           IS DISTINCT FROM kip.concept_grounding_text(OLD.type, OLD.name, OLD.attributes) THEN
        NEW.embedding := NULL;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION kip.proposition_embedding_stale() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.embedding IS NOT NULL
       AND NEW.embedding::text IS NOT DISTINCT FROM OLD.embedding::text
       AND kip.proposition_grounding_text(NEW.space, NEW.subject, NEW.predicate, NEW.object, NEW.attributes)
           IS DISTINCT FROM
           kip.proposition_grounding_text(OLD.space, OLD.subject, OLD.predicate, OLD.object, OLD.attributes) THEN
        NEW.embedding := NULL;
    END IF;
    RETURN NEW;
END;
$$;

-- A random secret of this database's kip installation, created with the
-- extension (pg_strong_random through gen_random_uuid): the key that
-- authenticates CURSOR tokens, so a token cannot be forged from anything
-- public such as the database oid. Not dumped: a restored database gets a
-- new secret (old cursors then restart with KIP_1001). The table is closed
-- to PUBLIC; kip reads it through kip.cursor_secret().
CREATE TABLE kip.instance_secrets (
    name   text PRIMARY KEY,
    secret bytea NOT NULL CONSTRAINT instance_secret_length CHECK (length(secret) >= 16)
);
REVOKE ALL ON kip.instance_secrets FROM PUBLIC;
INSERT INTO kip.instance_secrets (name, secret)
VALUES ('cursor', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
CREATE FUNCTION kip.cursor_secret() RETURNS bytea
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT secret FROM kip.instance_secrets WHERE name = 'cursor'
$$;
COMMENT ON FUNCTION kip.cursor_secret() IS 'The key of CURSOR tokens (kip internal)';

-- kip governance: who may read and write which memory space, and the history
-- of every change (src/governance/, docs/DESIGN.md §16).
--
-- Access is enforced by Postgres itself, for kip_execute and for plain SQL
-- alike:
--
--   * three group roles, created if missing (roles are cluster-wide, so they
--     outlive DROP EXTENSION): kip_reader (may use kip and read the tables),
--     kip_writer (may also write them), kip_admin (every space, grants, the
--     maintenance of all spaces);
--   * kip.space_grants says which role may use which space: read, write
--     (implies read) or admin (implies write);
--   * row-level security on kip.spaces, kip.concepts, kip.propositions,
--     kip.history and kip.maintenance_log admits only the spaces the current
--     role may use. Superusers and the extension's owner bypass it.
--
-- History: statement-level AFTER triggers with transition tables write one
-- INSERT ... SELECT per statement into kip.history, whoever made the change
-- (KIP, plain SQL, maintenance, a cascade).

-- Group roles.
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'kip_reader') THEN
        CREATE ROLE kip_reader NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'kip_writer') THEN
        CREATE ROLE kip_writer NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'kip_admin') THEN
        CREATE ROLE kip_admin NOLOGIN;
    END IF;
    IF NOT pg_catalog.pg_has_role('kip_writer', 'kip_reader', 'MEMBER') THEN
        GRANT kip_reader TO kip_writer;
    END IF;
    IF NOT pg_catalog.pg_has_role('kip_admin', 'kip_writer', 'MEMBER') THEN
        GRANT kip_writer TO kip_admin;
    END IF;
END
$roles$;

-- Which role may use which space. One row per (space, role): the highest
-- privilege granted. A grant may name a space that does not exist yet: it
-- lets that role create the space. Like Postgres's own ACLs, grants are
-- visible to every kip role; only admins of a space change them.
CREATE TABLE kip.space_grants (
    space      text NOT NULL CONSTRAINT space_grant_name_format CHECK (space ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$'),
    role       name NOT NULL,
    privilege  text NOT NULL CONSTRAINT space_grant_privilege CHECK (privilege IN ('read', 'write', 'admin')),
    granted_by name NOT NULL DEFAULT current_user,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (space, role)
);
CREATE INDEX space_grants_role_idx ON kip.space_grants (role);
COMMENT ON TABLE kip.space_grants IS 'Which role may read, write or administer which memory space (kip_grant, kip_revoke)';

-- Each backend remembers the spaces a role was granted (kip.granted_spaces,
-- src/governance/privileges.rs) and forgets them when this table changes:
-- the trigger registers a relcache invalidation of the table, delivered to
-- every backend. Also where session_replication_role = replica; a row
-- trigger, as well as one for TRUNCATE, because a logical replication
-- subscriber's apply fires no statement triggers but TRUNCATE's (a revoke
-- replicated there must reach its open sessions).
CREATE FUNCTION kip.grants_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_grants_changed';
COMMENT ON FUNCTION kip.grants_changed() IS 'Tells every backend that kip.space_grants changed (kip internal)';
CREATE TRIGGER space_grants_changed AFTER INSERT OR UPDATE OR DELETE ON kip.space_grants
    FOR EACH ROW EXECUTE FUNCTION kip.grants_changed();
CREATE TRIGGER space_grants_truncated AFTER TRUNCATE ON kip.space_grants
    FOR EACH STATEMENT EXECUTE FUNCTION kip.grants_changed();
ALTER TABLE kip.space_grants ENABLE ALWAYS TRIGGER space_grants_changed;
ALTER TABLE kip.space_grants ENABLE ALWAYS TRIGGER space_grants_truncated;

-- Who granted and when is written by the database, not by the granter: an
-- admin of a space inserting a grant by plain SQL could name anyone, at any
-- time. A restore (row_security off, as a role that may bypass it) keeps
-- the stamps it carries.
CREATE FUNCTION kip.stamp_grant() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_setting('row_security') = 'on'
       OR NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = current_user AND (r.rolsuper OR r.rolbypassrls)) THEN
        NEW.granted_by := current_user;
        NEW.granted_at := now();
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION kip.stamp_grant() IS 'Stamps a grant with the role that made it and the time (kip internal)';
CREATE TRIGGER space_grants_stamped BEFORE INSERT OR UPDATE ON kip.space_grants
    FOR EACH ROW EXECUTE FUNCTION kip.stamp_grant();

-- Whether the current role is a kip administrator: it has the privileges
-- of kip_admin (pg_has_role(..., 'USAGE')), as superusers do.
-- In C (src/governance/privileges.rs): every row-level security policy
-- calls it, and an SQL function with SET search_path is planned again in
-- every statement that calls it.
CREATE FUNCTION kip.is_admin() RETURNS boolean
LANGUAGE c STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_is_admin';

-- The spaces the current role holds one of the given privileges on, directly
-- or through a role whose privileges it has; sorted, distinct. Roles dropped
-- since the grant match nobody. In C, as kip.is_admin.
CREATE FUNCTION kip.granted_spaces(p_privileges text[]) RETURNS text[]
LANGUAGE c STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_granted_spaces';

CREATE FUNCTION kip.readable_spaces() RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT kip.granted_spaces(ARRAY['read', 'write', 'admin']) $$;
CREATE FUNCTION kip.writable_spaces() RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT kip.granted_spaces(ARRAY['write', 'admin']) $$;
CREATE FUNCTION kip.administered_spaces() RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT kip.granted_spaces(ARRAY['admin']) $$;

-- The current role's access to one space: 'admin', 'write', 'read' or
-- 'none'. kip_execute asks the same through the C functions' code
-- (governance::access::grant, checked against this function by a pg_test).
CREATE FUNCTION kip.space_access(p_space text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
        WHEN kip.is_admin() OR p_space = ANY (kip.administered_spaces()) THEN 'admin'
        WHEN p_space = ANY (kip.writable_spaces()) THEN 'write'
        WHEN p_space = ANY (kip.readable_spaces()) THEN 'read'
        ELSE 'none'
    END
$$;
COMMENT ON FUNCTION kip.space_access(text) IS 'The current role''s access to a memory space: admin, write, read or none';

-- Row-level security. Each predicate is a scalar subquery, evaluated once
-- per statement (an InitPlan), not once per row.
ALTER TABLE kip.spaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY spaces_read ON kip.spaces FOR SELECT
    USING ((SELECT kip.is_admin()) OR name = ANY ((SELECT kip.readable_spaces())::text[]));
CREATE POLICY spaces_create ON kip.spaces FOR INSERT
    WITH CHECK ((SELECT kip.is_admin()) OR name = ANY ((SELECT kip.writable_spaces())::text[]));
CREATE POLICY spaces_update ON kip.spaces FOR UPDATE
    USING ((SELECT kip.is_admin()) OR name = ANY ((SELECT kip.writable_spaces())::text[]))
    WITH CHECK ((SELECT kip.is_admin()) OR name = ANY ((SELECT kip.writable_spaces())::text[]));
CREATE POLICY spaces_drop ON kip.spaces FOR DELETE
    USING ((SELECT kip.is_admin()) OR name = ANY ((SELECT kip.administered_spaces())::text[]));

-- Renaming a space moves its whole memory to the new name: like dropping it
-- (admins only) and taking it over. It takes admin on both names (or
-- kip_admin); the update policy alone let any writer of a space move it
-- into one the writer administers.
CREATE FUNCTION kip.check_space_rename() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NEW.name IS DISTINCT FROM OLD.name AND NOT (kip.is_admin()
       OR (OLD.name = ANY (kip.administered_spaces()) AND NEW.name = ANY (kip.administered_spaces()))) THEN
        RAISE EXCEPTION 'kip: renaming memory space % to % takes admin on both names', quote_literal(OLD.name), quote_literal(NEW.name)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Ask an admin of both spaces, or a member of kip_admin, to rename it.';
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION kip.check_space_rename() IS 'Refuses a space rename without admin on both names (kip internal)';
CREATE TRIGGER spaces_rename_needs_admin BEFORE UPDATE OF name ON kip.spaces
    FOR EACH ROW EXECUTE FUNCTION kip.check_space_rename();

ALTER TABLE kip.concepts ENABLE ROW LEVEL SECURITY;
CREATE POLICY concepts_read ON kip.concepts FOR SELECT
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.readable_spaces())::text[]));
CREATE POLICY concepts_insert ON kip.concepts FOR INSERT
    WITH CHECK ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]));
CREATE POLICY concepts_update ON kip.concepts FOR UPDATE
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]))
    WITH CHECK ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]));
CREATE POLICY concepts_delete ON kip.concepts FOR DELETE
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]));

ALTER TABLE kip.propositions ENABLE ROW LEVEL SECURITY;
CREATE POLICY propositions_read ON kip.propositions FOR SELECT
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.readable_spaces())::text[]));
CREATE POLICY propositions_insert ON kip.propositions FOR INSERT
    WITH CHECK ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]));
CREATE POLICY propositions_update ON kip.propositions FOR UPDATE
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]))
    WITH CHECK ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]));
CREATE POLICY propositions_delete ON kip.propositions FOR DELETE
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]));

ALTER TABLE kip.maintenance_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY maintenance_log_read ON kip.maintenance_log FOR SELECT
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.readable_spaces())::text[]));
CREATE POLICY maintenance_log_insert ON kip.maintenance_log FOR INSERT
    WITH CHECK ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.writable_spaces())::text[]));

ALTER TABLE kip.space_grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY space_grants_read ON kip.space_grants FOR SELECT USING (true);
CREATE POLICY space_grants_insert ON kip.space_grants FOR INSERT
    WITH CHECK ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.administered_spaces())::text[]));
CREATE POLICY space_grants_update ON kip.space_grants FOR UPDATE
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.administered_spaces())::text[]))
    WITH CHECK ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.administered_spaces())::text[]));
CREATE POLICY space_grants_delete ON kip.space_grants FOR DELETE
    USING ((SELECT kip.is_admin()) OR space = ANY ((SELECT kip.administered_spaces())::text[]));

-- The views run with the privileges (and row-level security) of the role
-- reading them, not of their owner.
ALTER VIEW kip.concept_nodes SET (security_invoker = true);
ALTER VIEW kip.facts SET (security_invoker = true);
ALTER VIEW kip.embedding_backlog SET (security_invoker = true);

-- History of every change of a concept or proposition. The row images hold
-- the content (identity, endpoints, attributes, metadata, timestamps), not
-- the vector or the tsvector. `version` is the version after the change (the
-- last one for a delete). Written only by the triggers below (callers have
-- no privilege to write it); kept for kip.history_retention. kind and
-- operation are constants of those triggers' statements and have no CHECK:
-- Postgres reads a table's CHECK expressions back from the catalog and
-- plans them for every statement that inserts, and the history insert runs
-- with every write statement (docs/DESIGN.md §16).
CREATE TABLE kip.history (
    id               bigserial PRIMARY KEY,
    space            text NOT NULL,
    element_id       bigint NOT NULL,
    kind             text NOT NULL,
    version          integer NOT NULL,
    operation        text NOT NULL,
    before           jsonb,
    after            jsonb,
    changed_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    xact_id          xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(),
    role             name NOT NULL,
    application_name text,
    command_hash     text
);
CREATE INDEX history_element_idx ON kip.history (element_id, id);
CREATE INDEX history_changed_at_idx ON kip.history (changed_at);
COMMENT ON TABLE kip.history IS 'Every insert, update and delete of a concept or proposition (kip_history, kip_revert, kip_changes)';
COMMENT ON COLUMN kip.history.kind IS 'concept or proposition';
COMMENT ON COLUMN kip.history.operation IS 'insert, update or delete';
COMMENT ON COLUMN kip.history.command_hash IS 'sha256 (hex) of the KIP command text when kip_execute made the change';

ALTER TABLE kip.history ENABLE ROW LEVEL SECURITY;
-- Which space a history row belongs to is the space's incarnation, not
-- its name alone: a number a space gets when it is created and again when
-- it is renamed (kip.stamp_space_incarnation), which the history triggers
-- write into each row (space_incarnation; 0 when the writing transaction
-- sees no such space, as in a space's own drop). A later space of a
-- dropped or renamed space's name, with a number of its own, starts with
-- an empty history for its readers, whoever creates it and whenever: a
-- creation time, which the creator's transaction, clock or INSERT chose,
-- let a writer of the reused name read the dropped space's rows. Only a
-- restore (row_security off, as a role that may bypass it) sets the
-- number itself, keeping the one it carries.
CREATE SEQUENCE kip.space_incarnation_seq;
ALTER TABLE kip.spaces ADD COLUMN incarnation bigint NOT NULL DEFAULT pg_catalog.nextval('kip.space_incarnation_seq');
COMMENT ON COLUMN kip.spaces.incarnation IS 'This space''s number, new at each creation and rename: its history rows carry it (kip internal)';
ALTER TABLE kip.history ADD COLUMN space_incarnation bigint;
COMMENT ON COLUMN kip.history.space_incarnation IS 'The incarnation of the space the change was made in (NULL: written before 0.12.0)';
-- A space's elements go with it at the end of the statement that drops it
-- (its foreign keys' cascade), and their history rows take the
-- incarnation of the space of that name then: a space created again, or
-- renamed into the name, by the same statement would get them. So the
-- names a transaction dropped or renamed away are noted
-- (kip_txn.spaces_gone, transaction-local), and taking such a name while
-- its old elements are still there, which only the same statement sees,
-- is refused.
CREATE FUNCTION kip.stamp_space_incarnation() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    gone text := coalesce(current_setting('kip_txn.spaces_gone', true), '');
BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NEW.name IS DISTINCT FROM OLD.name) THEN
        PERFORM set_config('kip_txn.spaces_gone', gone || ',' || OLD.name || ',', true);
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
    END IF;
    IF current_setting('row_security') = 'off'
       AND EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = current_user AND (r.rolsuper OR r.rolbypassrls)) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.name IS DISTINCT FROM OLD.name THEN
        IF strpos(gone, ',' || NEW.name || ',') > 0
           AND (EXISTS (SELECT 1 FROM kip.concepts c WHERE c.space = NEW.name)
                OR EXISTS (SELECT 1 FROM kip.propositions p WHERE p.space = NEW.name)) THEN
            RAISE EXCEPTION 'kip: memory space % is being dropped or renamed away by this statement', quote_literal(NEW.name)
                USING ERRCODE = 'object_in_use',
                      HINT = 'Create the space again, or rename another into its name, in a later statement: its elements go at the end of this one.';
        END IF;
        NEW.incarnation := nextval('kip.space_incarnation_seq');
    ELSE
        NEW.incarnation := OLD.incarnation;
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION kip.stamp_space_incarnation() IS 'Gives a space a new incarnation when it is created or renamed (kip internal)';
CREATE TRIGGER spaces_incarnation_stamped BEFORE INSERT OR UPDATE OF name, incarnation OR DELETE ON kip.spaces
    FOR EACH ROW EXECUTE FUNCTION kip.stamp_space_incarnation();
GRANT USAGE ON SEQUENCE kip.space_incarnation_seq TO kip_writer;
GRANT SELECT ON SEQUENCE kip.space_incarnation_seq TO kip_reader;
SELECT pg_catalog.pg_extension_config_dump('kip.space_incarnation_seq', '');

-- A space's readers see the rows of the space that holds its name now:
-- those whose space_incarnation is its incarnation (above), and those
-- written before 0.12.0, which carry none, by name. The history of a space
-- dropped or renamed away stays, for kip_admin and superusers (an audit
-- trail outlives what it audits), and a grant on a name no space has yet
-- shows nothing. The EXISTS reads kip.spaces under its own policy
-- (readable spaces only).
CREATE POLICY history_read ON kip.history FOR SELECT
    USING ((SELECT kip.is_admin())
           OR (space = ANY ((SELECT kip.readable_spaces())::text[])
               AND EXISTS (SELECT 1 FROM kip.spaces s
                           WHERE s.name = kip.history.space
                             AND (kip.history.space_incarnation IS NULL
                                  OR s.incarnation = kip.history.space_incarnation))));

-- The history triggers (src/governance/history_trigger.rs): statement-level,
-- with transition tables, one INSERT ... SELECT into kip.history per
-- statement that changed something. Not recorded: kip.history off, or a
-- pg_dump/pg_restore session (those run with row_security off; a restore
-- brings the history it carries). An update is recorded when it made a new
-- version or moved the element to another space (a vector stored by the
-- embedder does neither). The role is the SET ROLE role, else the session's
-- user (current_user is the functions' owner).
CREATE FUNCTION kip.concepts_history() RETURNS trigger
LANGUAGE c SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'kip_concepts_history';

CREATE FUNCTION kip.propositions_history() RETURNS trigger
LANGUAGE c SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'kip_propositions_history';

-- Only kip's own triggers call them: a role that could execute them could
-- attach them to a table of its own and run, as their owner, code of its
-- choosing (casts of its own types in the transition rows) and write the
-- history of any space. Postgres checks EXECUTE when a trigger is created,
-- not when it fires. The functions check their table as well.
REVOKE EXECUTE ON FUNCTION kip.concepts_history(), kip.propositions_history() FROM PUBLIC;

-- Postgres allows transition tables only on single-event triggers: three per table.
CREATE TRIGGER concepts_history_insert AFTER INSERT ON kip.concepts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kip.concepts_history();
CREATE TRIGGER concepts_history_update AFTER UPDATE ON kip.concepts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kip.concepts_history();
CREATE TRIGGER concepts_history_delete AFTER DELETE ON kip.concepts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION kip.concepts_history();
CREATE TRIGGER propositions_history_insert AFTER INSERT ON kip.propositions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kip.propositions_history();
CREATE TRIGGER propositions_history_update AFTER UPDATE ON kip.propositions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kip.propositions_history();
CREATE TRIGGER propositions_history_delete AFTER DELETE ON kip.propositions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION kip.propositions_history();

-- A KIP error raised by the SQL functions below: 'KIP_xxxx: message', with a hint.
CREATE FUNCTION kip.raise_kip(p_code text, p_message text, p_hint text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = p_code || ': ' || p_message, HINT = p_hint;
END;
$$;

-- An external id (C:<n>, P:<n> or P:<n>:<predicate>) as (kind, element id).
-- A predicate in the id must be the link's, as in a KIP pattern's
-- (id: "P:<n>:<predicate>"): the history of the link says which it is.
CREATE FUNCTION kip.parse_element_ref(p_ref text, OUT kind text, OUT element_id bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m text[];
    v_id bigint;
BEGIN
    m := regexp_match(coalesce(p_ref, ''), '^([CP]):(0|[1-9][0-9]{0,17})(:.+)?$');
    IF m IS NULL OR (m[1] = 'C' AND m[3] IS NOT NULL) THEN
        PERFORM kip.raise_kip('KIP_1001', format('malformed element id %L', p_ref),
            'Use the external id of a concept (C:<n>) or a proposition (P:<n>:<predicate>).');
    END IF;
    v_id := m[2]::bigint;
    -- Only a link whose history shows another predicate is refused here: a
    -- link with no history at all (made before history was kept, or
    -- pruned) is the caller's to report as such.
    IF m[3] IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM kip.history h
        WHERE h.element_id = v_id AND h.kind = 'proposition'
          AND coalesce(h.after, h.before) ->> 'predicate' = substr(m[3], 2))
       AND EXISTS (SELECT 1 FROM kip.history h WHERE h.element_id = v_id AND h.kind = 'proposition') THEN
        PERFORM kip.raise_kip('KIP_3002', format('%s names no link: P:%s has no history as a %L link', p_ref, v_id, substr(m[3], 2)),
            format('Use the id as FIND returns it, or P:%s alone.', v_id));
    END IF;
    kind := CASE m[1] WHEN 'C' THEN 'concept' ELSE 'proposition' END;
    element_id := v_id;
END;
$$;

-- A grant says which spaces a role may use; the group (kip_reader,
-- kip_writer) gives kip's schema and functions. A grant that no role can
-- use is kept, and warned about: neither the grantee nor any role that is
-- a member of it (a team role's agents) is in the group it needs, so it
-- gives nothing until one joins.
CREATE FUNCTION kip.warn_without_group(role name, privilege text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    needed CONSTANT name := CASE privilege WHEN 'read' THEN 'kip_reader' ELSE 'kip_writer' END;
BEGIN
    -- pg_has_role counts a superuser as a member of every role: superusers
    -- are left out of the members (and need no grant themselves). USAGE,
    -- not MEMBER: a NOINHERIT member uses neither the grant nor the group
    -- without SET ROLE, and after SET ROLE it is another role.
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = role AND r.rolsuper)
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles m
                       WHERE NOT m.rolsuper
                         AND pg_catalog.pg_has_role(m.oid, role, 'USAGE')
                         AND pg_catalog.pg_has_role(m.oid, needed, 'USAGE')) THEN
        RAISE WARNING 'neither role % nor any member of it is in %: the % grant gives nothing until one is', quote_ident(role), needed, privilege
            USING HINT = format('GRANT %s TO %s;', needed, quote_ident(role));
    END IF;
END;
$$;
COMMENT ON FUNCTION kip.warn_without_group(name, text) IS 'Warns that a role granted a space is not in the group that privilege needs (kip internal)';

-- Grant a role read, write or admin on a space (write implies read, admin
-- implies write). Callers: kip_admin members, or admins of that space.
CREATE FUNCTION kip_grant(space text, role name, privilege text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    rank_of CONSTANT jsonb := '{"read": 1, "write": 2, "admin": 3}';
    held text;
BEGIN
    IF privilege IS NULL OR NOT rank_of ? privilege THEN
        PERFORM kip.raise_kip('KIP_1001', format('unknown privilege %L', privilege),
            'The privilege is ''read'', ''write'' (implies read) or ''admin'' (implies write).');
    END IF;
    IF space IS NULL OR space !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$' THEN
        PERFORM kip.raise_kip('KIP_1002', format('invalid memory space name %L', space),
            'A space name has 1 to 63 characters: letters, digits, ''_'', ''.'' or ''-'', starting with a letter, digit or ''_''.');
    END IF;
    IF role IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = role) THEN
        PERFORM kip.raise_kip('KIP_3002', format('role %L does not exist', role),
            'Create the role first (CREATE ROLE ... ; roles are cluster-wide), then grant it a space.');
    END IF;
    IF kip.space_access(space) <> 'admin' THEN
        PERFORM kip.raise_kip('KIP_3004', format('role %L may not grant access to memory space %L', current_user, space),
            'Only members of kip_admin and roles with the admin privilege on a space grant access to it.');
    END IF;
    PERFORM kip.warn_without_group(role, privilege);
    SELECT g.privilege INTO held FROM kip.space_grants g WHERE g.space = space AND g.role = role;
    IF held IS NOT NULL AND (rank_of ->> held)::int >= (rank_of ->> privilege)::int THEN
        RETURN false;
    END IF;
    INSERT INTO kip.space_grants AS g (space, role, privilege) VALUES (space, role, privilege)
    ON CONFLICT ON CONSTRAINT space_grants_pkey
    DO UPDATE SET privilege = EXCLUDED.privilege, granted_by = EXCLUDED.granted_by, granted_at = EXCLUDED.granted_at;
    RETURN true;
END;
$$;

-- Take a privilege back: revoking read removes the role's access to the
-- space, revoking write leaves read, revoking admin leaves write.
CREATE FUNCTION kip_revoke(space text, role name, privilege text DEFAULT 'read') RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    rank_of CONSTANT jsonb := '{"read": 1, "write": 2, "admin": 3}';
    below CONSTANT jsonb := '{"write": "read", "admin": "write"}';
    held text;
BEGIN
    IF privilege IS NULL OR NOT rank_of ? privilege THEN
        PERFORM kip.raise_kip('KIP_1001', format('unknown privilege %L', privilege),
            'The privilege is ''read'', ''write'' or ''admin''.');
    END IF;
    -- A dropped role's grants can be revoked too: they outlive it, and a
    -- role created later with its name would hold them.
    IF role IS NULL OR NOT (EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = role)
                            OR EXISTS (SELECT 1 FROM kip.space_grants g WHERE g.role = role)) THEN
        PERFORM kip.raise_kip('KIP_3002', format('role %L does not exist', role), 'Name an existing role.');
    END IF;
    IF space IS NULL OR kip.space_access(space) <> 'admin' THEN
        PERFORM kip.raise_kip('KIP_3004', format('role %L may not revoke access to memory space %L', current_user, space),
            'Only members of kip_admin and roles with the admin privilege on a space revoke access to it.');
    END IF;
    SELECT g.privilege INTO held FROM kip.space_grants g WHERE g.space = space AND g.role = role;
    IF held IS NULL OR (rank_of ->> held)::int < (rank_of ->> privilege)::int THEN
        RETURN false;
    END IF;
    IF privilege = 'read' THEN
        DELETE FROM kip.space_grants g WHERE g.space = space AND g.role = role;
    ELSE
        UPDATE kip.space_grants g SET privilege = below ->> privilege, granted_by = current_user, granted_at = now()
        WHERE g.space = space AND g.role = role;
    END IF;
    RETURN true;
END;
$$;

-- The versions of one element, newest first.
CREATE FUNCTION kip_history(id text, "limit" integer DEFAULT 50) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ref record;
    result jsonb;
BEGIN
    SELECT * INTO ref FROM kip.parse_element_ref(id);
    IF "limit" IS NULL OR "limit" < 1 OR "limit" > 10000 THEN
        PERFORM kip.raise_kip('KIP_1001', format('limit %s is out of range', coalesce("limit"::text, 'NULL')),
            'Pass a limit between 1 and 10000.');
    END IF;
    SELECT jsonb_build_object(
               'id', id, 'space', (array_agg(v.space ORDER BY v.hid DESC))[1], 'kind', ref.kind,
               'versions', jsonb_agg(jsonb_build_object(
                   'version', v.version, 'operation', v.operation, 'changed_at', v.changed_at,
                   'role', v.role, 'application_name', v.application_name, 'command_hash', v.command_hash,
                   'before', v.before, 'after', v.after) ORDER BY v.hid DESC))
    INTO result
    FROM (SELECT h.id AS hid, h.space, h.version, h.operation, h.changed_at, h.role, h.application_name,
                 h.command_hash, h.before, h.after
          FROM kip.history h
          WHERE h.element_id = ref.element_id AND h.kind = ref.kind
          ORDER BY h.id DESC
          LIMIT "limit") v
    HAVING count(*) > 0;
    IF result IS NULL THEN
        PERFORM kip.raise_kip('KIP_3002', format('no history for %s', id),
            'The element never existed, its history is older than kip.history_retention, or it is in a memory space you cannot read.');
    END IF;
    RETURN result;
END;
$$;

-- A history id the history's trigger took is already stored: the sequence
-- is behind the table's rows (kip.history restored without
-- kip.history_id_seq, or a setval). Every write fails so until it is mended;
-- the same report as kip_execute's (src/exec/pg_error.rs).
CREATE FUNCTION kip.raise_history_id_taken(p_id text, p_version integer) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM kip.raise_kip('KIP_4003',
        format('cannot revert %s to version %s: a history id is taken: kip.history_id_seq may be behind the stored history (the table restored without it?)', p_id, p_version),
        'If so, as the extension''s owner: SELECT setval(''kip.history_id_seq'', (SELECT max(id) FROM kip.history));');
END;
$$;

-- Restore the content an element had at `version`, as a new version; an
-- element deleted since is re-created with its id, and so are the links
-- deleted with it (in the same transaction) whose endpoints exist. The
-- revert is recorded in the history like any change.
CREATE FUNCTION kip_revert(id text, version integer) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    ref record;
    target record;
    last record;
    img jsonb;
    sp text;
    access text;
    new_version integer;
    missing bigint;
    restored bigint[] := '{}';
    frontier bigint[];
    round_ids bigint[];
    exists_now boolean;
    now_in text;
    violated text;
    turn bigint;
BEGIN
    SELECT * INTO ref FROM kip.parse_element_ref(id);
    -- One revert of an element at a time, each reading its history after
    -- the one before committed: a revert that re-creates a deleted
    -- element gives it the version after its history's last, and two
    -- concurrent ones (or one that waited while the other's transaction
    -- wrote and deleted it again) issued the same version twice.
    -- A transaction whose snapshot is older than the turn (REPEATABLE READ,
    -- SERIALIZABLE) would still read the history from before the other
    -- revert: it fails as a serialization failure, to be run again.
    turn := pg_catalog.hashtextextended('kip_revert:' || ref.kind || ':' || ref.element_id, 0);
    IF NOT pg_catalog.pg_try_advisory_xact_lock(turn) THEN
        PERFORM pg_catalog.pg_advisory_xact_lock(turn);
        IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
            RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
                MESSAGE = format('KIP_4003: concurrent update conflict: another kip_revert of %s ran while this one waited', id),
                HINT = 'Roll back the transaction and run it again: under REPEATABLE READ or SERIALIZABLE its snapshot predates that revert.';
        END IF;
    END IF;
    SELECT h.space, h.after, h.version INTO target
    FROM kip.history h
    WHERE h.element_id = ref.element_id AND h.kind = ref.kind AND h.version = version
      AND h.operation IN ('insert', 'update')
    ORDER BY h.id DESC LIMIT 1;
    -- The element's changes in the space of that version: an element is
    -- only ever reverted within one space, so a version's content never
    -- reaches another space's row.
    SELECT h.space, h.version, h.operation, h.xact_id, h.command_hash INTO last
    FROM kip.history h
    WHERE h.element_id = ref.element_id AND h.kind = ref.kind AND (target.space IS NULL OR h.space = target.space)
    ORDER BY h.id DESC LIMIT 1;
    IF last IS NULL THEN
        PERFORM kip.raise_kip('KIP_3002', format('no history for %s', id),
            'The element never existed, its history is older than kip.history_retention, or it is in a memory space you cannot read.');
    END IF;
    IF target IS NULL THEN
        PERFORM kip.raise_kip('KIP_3002', format('%s has no version %s', id, coalesce(version::text, 'NULL')),
            format('kip_history(%L) lists its versions (the latest is %s).', id, last.version));
    END IF;
    sp := target.space;
    img := target.after;
    access := kip.space_access(sp);
    IF access NOT IN ('write', 'admin') THEN
        PERFORM kip.raise_kip('KIP_3004', format('role %L may not write memory space %L', current_user, sp),
            'Reverting writes the element: it needs the write privilege on its space.');
    END IF;
    IF NOT EXISTS (SELECT 1 FROM kip.spaces s WHERE s.name = sp) THEN
        now_in := CASE ref.kind WHEN 'concept' THEN (SELECT c.space FROM kip.concepts c WHERE c.id = ref.element_id)
                  ELSE (SELECT p.space FROM kip.propositions p WHERE p.id = ref.element_id) END;
        IF now_in IS NOT NULL THEN
            -- The space was renamed (or the element moved): its history
            -- before that names the old space.
            PERFORM kip.raise_kip('KIP_3003', format('cannot revert %s to version %s of memory space %L: that space no longer exists and the element is now in memory space %L', id, version, sp, now_in),
                format('Versions from before a space was renamed or the element moved cannot be restored; revert it to a version it had in %L (kip_history(%L) lists them).', now_in, id));
        END IF;
        PERFORM kip.raise_kip('KIP_3002', format('memory space %L of %s no longer exists', sp, id),
            'Create the space again (kip_create_space), then revert its elements into it: the history of a dropped space is kept for members of kip_admin.');
    END IF;
    -- The version's type or predicate must still be defined: UPSERT
    -- refuses an undefined one (KIP_2001), and a definition in use cannot
    -- be deleted, so none is brought back from before its deletion.
    IF ref.kind = 'concept' AND NOT EXISTS (SELECT 1 FROM kip.concepts d
            WHERE d.space = sp AND d.type = '$ConceptType' AND d.name = img ->> 'type') THEN
        PERFORM kip.raise_kip('KIP_2001', format('cannot revert %s to version %s: its type %L is no longer defined', id, version, img ->> 'type'),
            format('Define the type again (UPSERT its $ConceptType node) or revert its definition first.'));
    END IF;
    IF ref.kind = 'proposition' AND NOT EXISTS (SELECT 1 FROM kip.concepts d
            WHERE d.space = sp AND d.type = '$PropositionType' AND d.name = img ->> 'predicate') THEN
        PERFORM kip.raise_kip('KIP_2001', format('cannot revert %s to version %s: its predicate %L is no longer defined', id, version, img ->> 'predicate'),
            format('Define the predicate again (UPSERT its $PropositionType node) or revert its definition first.'));
    END IF;
    IF ref.kind = 'proposition' THEN
        -- Every endpoint of the version must exist now.
        SELECT e INTO missing
        FROM unnest(ARRAY[(img ->> 'subject_concept')::bigint, (img ->> 'object_concept')::bigint]) e
        WHERE e IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kip.concepts c WHERE c.space = sp AND c.id = e)
        LIMIT 1;
        IF missing IS NOT NULL THEN
            PERFORM kip.raise_kip('KIP_3002', format('cannot revert %s to version %s: its endpoint C:%s no longer exists', id, version, missing),
                format('Revert C:%s first (kip_history(''C:%s'') lists its versions).', missing, missing));
        END IF;
        SELECT e INTO missing
        FROM unnest(ARRAY[(img ->> 'subject_link')::bigint, (img ->> 'object_link')::bigint]) e
        WHERE e IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kip.propositions p WHERE p.space = sp AND p.id = e)
        LIMIT 1;
        IF missing IS NOT NULL THEN
            PERFORM kip.raise_kip('KIP_3002', format('cannot revert %s to version %s: its endpoint P:%s no longer exists', id, version, missing),
                format('Revert P:%s first (kip_history(''P:%s'') lists its versions).', missing, missing));
        END IF;
        now_in := (SELECT p.space FROM kip.propositions p WHERE p.id = ref.element_id);
    ELSE
        now_in := (SELECT c.space FROM kip.concepts c WHERE c.id = ref.element_id);
    END IF;
    exists_now := now_in IS NOT DISTINCT FROM sp;
    IF now_in <> sp THEN
        PERFORM kip.raise_kip('KIP_3003', format('cannot revert %s to version %s of memory space %L: the element is now in memory space %L', id, version, sp, now_in),
            format('Revert it to a version it had in %L (kip_history(%L) lists them), or move it back first.', now_in, id));
    END IF;
    -- Not in the space, yet its history there ends with no deletion: plain
    -- SQL moved it to a space the caller cannot read (whose history holds
    -- the move), or deleted it while kip.history was off. Re-creating it
    -- would take an id that is not free.
    IF now_in IS NULL AND last.operation <> 'delete' THEN
        PERFORM kip.raise_kip('KIP_3003', format('cannot revert %s to version %s: it is no longer in memory space %L, and its history there ends with no deletion', id, version, sp),
            'It was moved to a memory space you cannot read, or deleted while kip.history was off; an admin of its space now can revert it there.');
    END IF;

    BEGIN
        IF ref.kind = 'concept' AND exists_now THEN
            UPDATE kip.concepts c
            SET type = img ->> 'type', name = img ->> 'name', attributes = img -> 'attributes', metadata = img -> 'metadata'
            WHERE c.id = ref.element_id AND c.space = sp
            RETURNING c.version INTO new_version;
        ELSIF ref.kind = 'concept' THEN
            INSERT INTO kip.concepts (id, space, type, name, attributes, metadata, version, created_at)
            VALUES (ref.element_id, sp, img ->> 'type', img ->> 'name', img -> 'attributes', img -> 'metadata',
                    last.version + 1, (img ->> 'created_at')::timestamptz)
            RETURNING kip.concepts.version INTO new_version;
        ELSIF exists_now THEN
            UPDATE kip.propositions p
            SET subject_concept = (img ->> 'subject_concept')::bigint, subject_link = (img ->> 'subject_link')::bigint,
                predicate = img ->> 'predicate',
                object_concept = (img ->> 'object_concept')::bigint, object_link = (img ->> 'object_link')::bigint,
                attributes = img -> 'attributes', metadata = img -> 'metadata'
            WHERE p.id = ref.element_id AND p.space = sp
            RETURNING p.version INTO new_version;
        ELSE
            INSERT INTO kip.propositions (id, space, subject_concept, subject_link, predicate, object_concept, object_link,
                                          attributes, metadata, version, created_at)
            VALUES (ref.element_id, sp, (img ->> 'subject_concept')::bigint, (img ->> 'subject_link')::bigint,
                    img ->> 'predicate', (img ->> 'object_concept')::bigint, (img ->> 'object_link')::bigint,
                    img -> 'attributes', img -> 'metadata', last.version + 1, (img ->> 'created_at')::timestamptz)
            RETURNING kip.propositions.version INTO new_version;
        END IF;
        -- The element was there when looked at and deleted (or moved) by
        -- another session before the update reached it: nothing was written.
        IF new_version IS NULL THEN
            PERFORM kip.raise_kip('KIP_3002', format('cannot revert %s to version %s: it was deleted or moved to another space concurrently, nothing was reverted', id, version),
                format('Revert it again: its history now ends with that deletion (kip_history(%L)).', id));
        END IF;
    EXCEPTION WHEN unique_violation THEN
        -- The history row the trigger wrote collided: the history's id
        -- sequence is behind its rows (the table restored without it), as
        -- kip_execute reports it, not another element. (By the message:
        -- the history trigger's error reaches here without the
        -- constraint's name in its fields.)
        GET STACKED DIAGNOSTICS violated = MESSAGE_TEXT;
        IF strpos(violated, 'history_pkey') > 0 THEN
            PERFORM kip.raise_history_id_taken(id, version);
        END IF;
        PERFORM kip.raise_kip('KIP_3003', format('cannot revert %s to version %s: another element now has its identity', id, version),
            'Delete or rename the element that took its place, then revert again.');
    WHEN foreign_key_violation THEN
        PERFORM kip.raise_kip('KIP_3002', format('cannot revert %s to version %s: an element or the space it refers to was deleted concurrently', id, version),
            format('Look at what it refers to now (kip_history(%L) lists its versions), restore that first, and revert again.', id));
    END;

    -- A deleted element comes back with the links deleted with it (same
    -- transaction and, when a KIP command deleted it, the same command: a
    -- link an earlier command of a batch deleted on purpose stays deleted),
    -- round by round through links about links, as far as their other
    -- endpoints exist and their predicates are defined.
    IF NOT exists_now AND last.operation = 'delete' THEN
      BEGIN
        frontier := ARRAY[ref.element_id];
        FOR round IN 1..64 LOOP
            WITH candidates AS (
                SELECT DISTINCT ON (h.element_id) h.element_id, h.before AS img, h.version
                FROM kip.history h
                WHERE h.kind = 'proposition' AND h.operation = 'delete' AND h.space = sp AND h.xact_id = last.xact_id
                  AND h.command_hash IS NOT DISTINCT FROM last.command_hash
                  AND h.element_id <> ref.element_id
                ORDER BY h.element_id, h.id DESC
            ), eligible AS (
                SELECT c.* FROM candidates c
                WHERE NOT EXISTS (SELECT 1 FROM kip.propositions p WHERE p.id = c.element_id)
                  AND (coalesce((c.img ->> 'subject_concept')::bigint, (c.img ->> 'subject_link')::bigint) = ANY (frontier)
                       OR coalesce((c.img ->> 'object_concept')::bigint, (c.img ->> 'object_link')::bigint) = ANY (frontier))
                  AND ((c.img ->> 'subject_concept') IS NULL OR EXISTS (SELECT 1 FROM kip.concepts x WHERE x.space = sp AND x.id = (c.img ->> 'subject_concept')::bigint))
                  AND ((c.img ->> 'object_concept') IS NULL OR EXISTS (SELECT 1 FROM kip.concepts x WHERE x.space = sp AND x.id = (c.img ->> 'object_concept')::bigint))
                  AND ((c.img ->> 'subject_link') IS NULL OR EXISTS (SELECT 1 FROM kip.propositions x WHERE x.space = sp AND x.id = (c.img ->> 'subject_link')::bigint))
                  AND ((c.img ->> 'object_link') IS NULL OR EXISTS (SELECT 1 FROM kip.propositions x WHERE x.space = sp AND x.id = (c.img ->> 'object_link')::bigint))
                  AND EXISTS (SELECT 1 FROM kip.concepts d WHERE d.space = sp AND d.type = '$PropositionType' AND d.name = c.img ->> 'predicate')
            ), ins AS (
                INSERT INTO kip.propositions (id, space, subject_concept, subject_link, predicate, object_concept, object_link,
                                              attributes, metadata, version, created_at)
                SELECT e.element_id, sp, (e.img ->> 'subject_concept')::bigint, (e.img ->> 'subject_link')::bigint,
                       e.img ->> 'predicate', (e.img ->> 'object_concept')::bigint, (e.img ->> 'object_link')::bigint,
                       e.img -> 'attributes', e.img -> 'metadata', e.version + 1, (e.img ->> 'created_at')::timestamptz
                FROM eligible e
                ON CONFLICT DO NOTHING
                RETURNING kip.propositions.id
            )
            SELECT coalesce(array_agg(ins.id ORDER BY ins.id), '{}') INTO round_ids FROM ins;
            EXIT WHEN cardinality(round_ids) = 0;
            restored := restored || round_ids;
            frontier := round_ids;
        END LOOP;
      EXCEPTION WHEN unique_violation THEN
        GET STACKED DIAGNOSTICS violated = MESSAGE_TEXT;
        IF strpos(violated, 'history_pkey') > 0 THEN
            PERFORM kip.raise_history_id_taken(id, version);
        END IF;
        RAISE;
      WHEN foreign_key_violation THEN
        -- An endpoint of a link being restored was deleted meanwhile.
        PERFORM kip.raise_kip('KIP_3002', format('cannot revert %s to version %s: an element one of its links refers to was deleted concurrently', id, version),
            format('Revert it again: the links whose endpoints exist are restored (kip_history(%L) lists its versions).', id));
      END;
    END IF;

    RETURN jsonb_build_object(
        'id', id, 'space', sp, 'reverted_to', version, 'version', new_version,
        'restored_links', (SELECT coalesce(jsonb_agg('P:' || p.id || ':' || p.predicate ORDER BY p.id), '[]')
                           FROM kip.propositions p WHERE p.id = ANY (restored)));
END;
$$;

-- The change feed: every change after `since` (optionally in one space) the
-- caller may read, oldest first. `change_id` orders the changes as they
-- were written, not as their transactions committed: a consumer polling the
-- feed asks again with an overlap (README, SQL reference).
-- Inlined into the caller's query (no SET clause, not SECURITY DEFINER, a
-- single SELECT), so a LIMIT or a `change_id >` condition the caller adds
-- reaches the scan of kip.history: called as a function of its own, it
-- read and sorted every change after `since` first (0.8 s for 725,000,
-- with a LIMIT 100). Inlined SQL is parsed under the caller's search_path,
-- so every operator and type names its schema (as sql/embedding.sql).
CREATE FUNCTION kip_changes(since timestamptz, space text DEFAULT NULL)
RETURNS TABLE (change_id bigint, changed_at timestamptz, space text, id text, kind text, operation text,
               version integer, before jsonb, after jsonb, role name, command_hash text)
LANGUAGE sql STABLE AS $$
    SELECT h.id, h.changed_at, h.space,
           CASE WHEN h.kind OPERATOR(pg_catalog.=) 'concept'::pg_catalog.text
                THEN 'C:'::pg_catalog.text OPERATOR(pg_catalog.||) h.element_id::pg_catalog.text
                ELSE 'P:'::pg_catalog.text OPERATOR(pg_catalog.||) h.element_id::pg_catalog.text
                     OPERATOR(pg_catalog.||) ':'::pg_catalog.text
                     OPERATOR(pg_catalog.||) coalesce(h.after OPERATOR(pg_catalog.->>) 'predicate'::pg_catalog.text,
                                                      h.before OPERATOR(pg_catalog.->>) 'predicate'::pg_catalog.text) END,
           h.kind, h.operation, h.version, h.before, h.after, h.role, h.command_hash
    FROM kip.history h
    WHERE h.changed_at OPERATOR(pg_catalog.>) $1 AND ($2 IS NULL OR h.space OPERATOR(pg_catalog.=) $2)
    ORDER BY h.id
$$;

-- Default privileges (ALTER DEFAULT PRIVILEGES) of the role that creates or
-- updates the extension grant others access to the schema and to every
-- table and sequence the script makes, past row-level security where a
-- table has none (kip.instance_secrets) and past "only the owner writes the
-- history", or let a role attach the history trigger functions to its own
-- table. What they granted on kip's schema, tables, sequences and
-- functions to roles other than the owner and kip's three roles is taken
-- back (with what the grantees passed on), with a WARNING per grantee; grants an
-- administrator made otherwise stay.
DO $$
DECLARE
    o record;
    grantee text;
    taken jsonb := '{}';
BEGIN
    FOR o IN
        WITH defaults AS (
            SELECT d.defaclobjtype AS objtype, a.grantee, a.privilege_type
            FROM pg_catalog.pg_default_acl d, pg_catalog.aclexplode(d.defaclacl) a
            WHERE d.defaclrole = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user)
              AND d.defaclnamespace IN (0, 'kip'::regnamespace)
        ), objects AS (
            SELECT 'n'::"char" AS objtype, 'SCHEMA' AS kind, 'kip' AS object, n.nspowner AS owner, n.nspacl AS acl,
                   'pg_catalog.pg_namespace'::pg_catalog.regclass AS classoid, n.oid
            FROM pg_catalog.pg_namespace n WHERE n.nspname = 'kip'
            UNION ALL
            SELECT CASE c.relkind WHEN 'S' THEN 'S' ELSE 'r' END::"char",
                   CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
                   'kip.' || pg_catalog.quote_ident(c.relname), c.relowner, c.relacl,
                   'pg_catalog.pg_class'::pg_catalog.regclass, c.oid
            FROM pg_catalog.pg_class c WHERE c.relnamespace = 'kip'::regnamespace
            UNION ALL
            SELECT 'f'::"char", 'ROUTINE', p.oid::pg_catalog.regprocedure::text, p.proowner, p.proacl,
                   'pg_catalog.pg_proc'::pg_catalog.regclass, p.oid
            FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'kip'::regnamespace
        )
        SELECT DISTINCT ob.kind, ob.object, a.grantee, a.privilege_type
        FROM objects ob, pg_catalog.aclexplode(ob.acl) a
        WHERE a.grantee <> ob.owner
          -- Every role may execute a function unless revoked: PUBLIC's
          -- EXECUTE in a default ACL of functions is Postgres's own default.
          AND NOT (ob.objtype = 'f' AND a.grantee = 0)
          AND (a.grantee = 0 OR pg_catalog.pg_get_userbyid(a.grantee) NOT IN ('kip_reader', 'kip_writer', 'kip_admin'))
          AND EXISTS (SELECT 1 FROM defaults d
                      WHERE d.objtype = ob.objtype AND d.grantee = a.grantee AND d.privilege_type = a.privilege_type)
          -- ... and that the object had when an extension script made it
          -- (pg_init_privs): a grant made by hand later stays, even to a
          -- role the default privileges also name. (Postgres records
          -- initial privileges only for objects an extension script
          -- granted or revoked on: for the others, kip's functions and
          -- the history's sequence among them, the default privileges
          -- decide.)
          AND (EXISTS (SELECT 1 FROM pg_catalog.pg_init_privs ip, pg_catalog.aclexplode(ip.initprivs) i
                       WHERE ip.objoid = ob.oid AND ip.classoid = ob.classoid AND ip.objsubid = 0
                         AND i.grantee = a.grantee AND i.privilege_type = a.privilege_type)
               OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_init_privs ip
                              WHERE ip.objoid = ob.oid AND ip.classoid = ob.classoid AND ip.objsubid = 0))
    LOOP
        grantee := CASE o.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(o.grantee)) END;
        EXECUTE pg_catalog.format('REVOKE %s ON %s %s FROM %s CASCADE', o.privilege_type, o.kind, o.object, grantee);
        taken := taken || pg_catalog.jsonb_build_object(grantee, coalesce((taken ->> grantee)::int, 0) + 1);
    END LOOP;
    -- A WARNING: Postgres runs extension scripts with client_min_messages
    -- and log_min_messages at WARNING at least.
    FOR o IN SELECT key, value FROM pg_catalog.jsonb_each_text(taken) ORDER BY key LOOP
        RAISE WARNING 'kip: took back % privileges on kip''s schema and its objects from %, granted by default privileges of %',
            o.value, o.key, current_user
            USING HINT = 'ALTER DEFAULT PRIVILEGES granted them; kip''s own grants to kip_reader, kip_writer and kip_admin are the access it gives.';
    END LOOP;
END $$;

-- Privileges. Only the extension's owner (and superusers) writes the
-- history and the instance secrets; the rest follows the group roles, and
-- row-level security narrows every table to the spaces a role may use.
GRANT USAGE ON SCHEMA kip TO kip_reader;
GRANT SELECT ON kip.spaces, kip.concepts, kip.propositions, kip.concept_nodes, kip.facts,
                kip.embedding_backlog, kip.history, kip.space_grants, kip.maintenance_log TO kip_reader;
GRANT INSERT, UPDATE, DELETE ON kip.concepts, kip.propositions TO kip_writer;
GRANT INSERT, UPDATE, DELETE ON kip.spaces TO kip_writer;
GRANT INSERT, UPDATE, DELETE ON kip.space_grants TO kip_writer;
GRANT INSERT ON kip.maintenance_log TO kip_writer;
GRANT USAGE ON SEQUENCE kip.element_id_seq, kip.maintenance_log_id_seq TO kip_writer;
-- Reading the sequences lets a member dump what it may read (pg_dump
-- --enable-row-security reads every dumped sequence's position).
GRANT SELECT ON SEQUENCE kip.element_id_seq, kip.maintenance_log_id_seq, kip.history_id_seq TO kip_reader;

-- pg_dump carries grants and history like the memory itself.
SELECT pg_catalog.pg_extension_config_dump('kip.space_grants', '');
SELECT pg_catalog.pg_extension_config_dump('kip.history', '');
SELECT pg_catalog.pg_extension_config_dump('kip.history_id_seq', '');

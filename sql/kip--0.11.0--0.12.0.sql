-- kip 0.11.0 -> 0.12.0.

-- How many links of each predicate each space holds, as for the types of
-- concepts (kip.concepts_space_type): without it the planner multiplies the
-- share of the space by the share of the predicate in the whole table, and
-- a predicate common in one space looks common in every space. It is filled
-- by the next ANALYZE of kip.propositions (autovacuum's or an explicit one).
CREATE STATISTICS kip.propositions_space_predicate (mcv) ON space, predicate FROM kip.propositions;

-- A space rename checks the links' endpoint keys at the end of its transaction
-- (see sql/schema.sql): a link about a link, with a concept endpoint too,
-- could be moved from its concept before the link it names, and the rename
-- failed on its key. The keys become DEFERRABLE, initially immediate.
ALTER TABLE kip.propositions ALTER CONSTRAINT proposition_subject_concept_fk DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE kip.propositions ALTER CONSTRAINT proposition_object_concept_fk DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE kip.propositions ALTER CONSTRAINT proposition_subject_link_fk DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE kip.propositions ALTER CONSTRAINT proposition_object_link_fk DEFERRABLE INITIALLY IMMEDIATE;
CREATE FUNCTION kip.defer_endpoint_checks() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    SET CONSTRAINTS kip.proposition_subject_concept_fk, kip.proposition_object_concept_fk,
                    kip.proposition_subject_link_fk, kip.proposition_object_link_fk DEFERRED;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION kip.defer_endpoint_checks() IS 'Checks the links'' endpoint keys at the end of the transaction of a space rename (kip internal)';
CREATE TRIGGER spaces_rename_defers_endpoint_checks BEFORE UPDATE OF name ON kip.spaces
    FOR EACH STATEMENT EXECUTE FUNCTION kip.defer_endpoint_checks();

-- The predicate index carries both endpoints (see sql/schema.sql), so that a
-- scan of a predicate's links reads no heap and is not made along the
-- (space, subject, predicate, object) key instead. Rebuilt: it reads every
-- link once.
DROP INDEX kip.propositions_predicate_idx;
CREATE INDEX propositions_predicate_idx ON kip.propositions (space, predicate) INCLUDE (subject, object);

-- An external id (C:<n>, P:<n> or P:<n>:<predicate>) as (kind, element id).
-- A predicate in the id must be the link's, as in a KIP pattern's
-- (id: "P:<n>:<predicate>"): the history of the link says which it is.
CREATE OR REPLACE FUNCTION kip.parse_element_ref(p_ref text, OUT kind text, OUT element_id bigint)
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
    IF m[3] IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM kip.history h
        WHERE h.element_id = v_id AND h.kind = 'proposition'
          AND coalesce(h.after, h.before) ->> 'predicate' = substr(m[3], 2)) THEN
        PERFORM kip.raise_kip('KIP_3002', format('%s names no link: P:%s has no history as a %L link', p_ref, v_id, substr(m[3], 2)),
            format('Use the id as FIND returns it, or P:%s alone.', v_id));
    END IF;
    kind := CASE m[1] WHEN 'C' THEN 'concept' ELSE 'proposition' END;
    element_id := v_id;
END;
$$;

-- A dropped role's grants can be revoked (they outlive the role).
CREATE OR REPLACE FUNCTION kip_revoke(space text, role name, privilege text DEFAULT 'read') RETURNS boolean
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

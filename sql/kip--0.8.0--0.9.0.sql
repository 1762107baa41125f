-- kip 0.8.0 -> 0.9.0.

-- Element ids are kip's to issue (src/governance/element_ids.rs). A writer
-- could insert a row with an id of its choice: the id of an element deleted
-- from a space it cannot read (a revert there then wrote that element's
-- content into the writer's row), or ids ahead of the sequence, which failed
-- every other space's writes on the primary key until the sequence passed
-- them. The ids' default is now kip.issue_element_id(), nextval of the same
-- sequence remembered by the backend, and a BEFORE INSERT trigger refuses a
-- row whose id was not just issued, unless it restores an element deleted
-- from the same space (kip_revert); a superuser, a kip_admin member and a
-- restore with row_security off (pg_restore) are not checked. An update can no longer
-- change an id (the touch functions, same symbols). Stored rows are not
-- touched.
CREATE FUNCTION kip.issue_element_id() RETURNS bigint
    LANGUAGE c VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'kip_issue_element_id';
COMMENT ON FUNCTION kip.issue_element_id() IS 'A new element id from kip.element_id_seq (kip internal: the default of the element ids)';
ALTER TABLE kip.concepts ALTER COLUMN id SET DEFAULT kip.issue_element_id();
ALTER TABLE kip.propositions ALTER COLUMN id SET DEFAULT kip.issue_element_id();

CREATE FUNCTION kip.check_element_id() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'kip_check_element_id';
CREATE TRIGGER concepts_element_id BEFORE INSERT ON kip.concepts
    FOR EACH ROW EXECUTE FUNCTION kip.check_element_id('concept');
CREATE TRIGGER propositions_element_id BEFORE INSERT ON kip.propositions
    FOR EACH ROW EXECUTE FUNCTION kip.check_element_id('proposition');

-- kip_revert writes only within the space of the version it restores: the
-- element's row there is updated, or re-created when it was deleted from
-- there; an element now in another space is KIP_3003. Before, it updated
-- whatever row had the id, in any space. kip_history names the space of
-- the element's latest change (it took the smallest space name).
CREATE OR REPLACE FUNCTION kip_history(id text, "limit" integer DEFAULT 50) RETURNS jsonb
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

CREATE OR REPLACE FUNCTION kip_revert(id text, version integer) RETURNS jsonb
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
BEGIN
    SELECT * INTO ref FROM kip.parse_element_ref(id);
    SELECT h.space, h.after, h.version INTO target
    FROM kip.history h
    WHERE h.element_id = ref.element_id AND h.kind = ref.kind AND h.version = version
      AND h.operation IN ('insert', 'update')
    ORDER BY h.id DESC LIMIT 1;
    -- The element's changes in the space of that version: an element is
    -- only ever reverted within one space, so a version's content never
    -- reaches another space's row.
    SELECT h.space, h.version, h.operation, h.xact_id INTO last
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
        PERFORM kip.raise_kip('KIP_3002', format('memory space %L of %s no longer exists', sp, id),
            'Create the space again (kip_create_space) before reverting its elements.');
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
    EXCEPTION WHEN unique_violation THEN
        PERFORM kip.raise_kip('KIP_3003', format('cannot revert %s to version %s: another element now has its identity', id, version),
            'Delete or rename the element that took its place, then revert again.');
    END;

    -- A deleted element comes back with the links deleted with it (same
    -- transaction), round by round through links about links, as far as
    -- their other endpoints exist.
    IF NOT exists_now AND last.operation = 'delete' THEN
        frontier := ARRAY[ref.element_id];
        FOR round IN 1..64 LOOP
            WITH candidates AS (
                SELECT DISTINCT ON (h.element_id) h.element_id, h.before AS img, h.version
                FROM kip.history h
                WHERE h.kind = 'proposition' AND h.operation = 'delete' AND h.space = sp AND h.xact_id = last.xact_id
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
    END IF;

    RETURN jsonb_build_object(
        'id', id, 'space', sp, 'reverted_to', version, 'version', new_version,
        'restored_links', (SELECT coalesce(jsonb_agg('P:' || p.id || ':' || p.predicate ORDER BY p.id), '[]')
                           FROM kip.propositions p WHERE p.id = ANY (restored)));
END;
$$;

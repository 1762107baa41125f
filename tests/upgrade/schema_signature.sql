-- The kip extension's SQL objects, one line each, in a stable order: what a
-- fresh install and an upgraded install must agree on. scripts/upgrade_test.sh
-- diffs this between `CREATE EXTENSION kip` and 0.1.0 + `ALTER EXTENSION kip
-- UPDATE`; a difference means a schema change lacks its line in the upgrade
-- script (sql/kip--<previous>--<next>.sql).
WITH ext AS (SELECT oid, extconfig, extcondition FROM pg_extension WHERE extname = 'kip'),
members AS (
    SELECT d.classid, d.objid FROM pg_depend d, ext
    WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
),
kip_rels AS (SELECT oid, relname FROM pg_class WHERE relnamespace = 'kip'::regnamespace)
SELECT line FROM (
    SELECT 'member ' || pg_describe_object(classid, objid, 0) AS line FROM members
    UNION ALL
    SELECT 'function ' || pg_get_functiondef(p.oid) || ' acl=' || coalesce(p.proacl::text, '-')
           || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
    FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid AND p.prokind IN ('f', 'p')
    UNION ALL
    SELECT format('relation %s kind=%s rls=%s/%s options=%s acl=%s comment=%s', c.relname, c.relkind,
                  c.relrowsecurity, c.relforcerowsecurity, coalesce(c.reloptions::text, '-'),
                  coalesce(c.relacl::text, '-'), coalesce(obj_description(c.oid, 'pg_class'), '-'))
    FROM pg_class c WHERE c.relnamespace = 'kip'::regnamespace
    UNION ALL
    SELECT format('column %s.%s #%s %s notnull=%s default=%s generated=%s identity=%s comment=%s',
                  r.relname, a.attname, a.attnum, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                  coalesce(pg_get_expr(ad.adbin, ad.adrelid), '-'), a.attgenerated, a.attidentity,
                  coalesce(col_description(r.oid, a.attnum), '-'))
    FROM kip_rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
    UNION ALL
    SELECT format('constraint %s.%s %s', r.relname, con.conname, pg_get_constraintdef(con.oid))
    FROM pg_constraint con JOIN kip_rels r ON r.oid = con.conrelid
    UNION ALL
    SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'kip'
    UNION ALL
    SELECT 'statistics ' || pg_get_statisticsobjdef(s.oid) FROM pg_statistic_ext s WHERE s.stxnamespace = 'kip'::regnamespace
    UNION ALL
    SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled=' || t.tgenabled::text
    FROM pg_trigger t JOIN kip_rels r ON r.oid = t.tgrelid WHERE NOT t.tgisinternal
    UNION ALL
    SELECT format('policy %s.%s %s %s roles=%s using=%s check=%s', tablename, policyname, permissive, cmd,
                  roles::text, coalesce(qual, '-'), coalesce(with_check, '-'))
    FROM pg_policies WHERE schemaname = 'kip'
    UNION ALL
    SELECT format('view %s %s', viewname, definition) FROM pg_views WHERE schemaname = 'kip'
    UNION ALL
    SELECT format('sequence %s %s start=%s inc=%s min=%s max=%s cycle=%s', sequencename, data_type,
                  start_value, increment_by, min_value, max_value, cycle)
    FROM pg_sequences WHERE schemaname = 'kip'
    UNION ALL
    SELECT format('type %s %s', t.typname, t.typtype) FROM pg_type t
    WHERE t.typnamespace = 'kip'::regnamespace AND t.typtype IN ('e', 'd', 'c', 'r')
      AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.reltype = t.oid)
    UNION ALL
    SELECT format('config %s %s', cfg::regclass, cond)
    FROM ext, unnest(ext.extconfig, ext.extcondition) AS x(cfg, cond)
    UNION ALL
    SELECT format('schema kip acl=%s comment=%s', coalesce(n.nspacl::text, '-'), coalesce(obj_description(n.oid, 'pg_namespace'), '-'))
    FROM pg_namespace n WHERE n.nspname = 'kip'
) lines
ORDER BY line;

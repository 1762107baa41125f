// In-database tests of governance (included by src/pg_tests.rs): the same
// entry points as a non-superuser role, inside one backend.

#[pg_test]
fn a_non_superuser_is_held_to_its_grants() {
    Spi::run(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_pg_test_writer') THEN
             CREATE ROLE kip_pg_test_writer IN ROLE kip_writer; END IF; END $$;
         SELECT kip_grant('pg_test_team', 'kip_pg_test_writer', 'write');",
    )
    .unwrap();
    Spi::run("SET ROLE kip_pg_test_writer; SET kip.space = 'pg_test_team'").unwrap();
    let superuser = Spi::get_one::<bool>("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").unwrap().unwrap();
    assert!(!superuser);
    let out = Spi::get_one::<pgrx::JsonB>(
        "SELECT kip_execute('UPSERT { CONCEPT ?p { {type: \"Person\", name: \"Ana\"} SET ATTRIBUTES { person_class: \"Human\" } } }')",
    )
    .unwrap()
    .unwrap()
    .0;
    assert!(out.get("result").is_some(), "{out}");
    Spi::run("SET kip.space = 'pg_test_elsewhere'").unwrap();
    let out = Spi::get_one::<pgrx::JsonB>("SELECT kip_execute('DESCRIBE PRIMER')").unwrap().unwrap().0;
    assert_eq!(out["error"]["code"], json!("KIP_3004"), "{out}");
    let writer_rows = Spi::get_one::<i64>("SELECT count(*) FROM kip.history WHERE role = 'kip_pg_test_writer'").unwrap().unwrap();
    assert!(writer_rows > 0);
    Spi::run("RESET ROLE; DELETE FROM kip.space_grants WHERE role = 'kip_pg_test_writer'").unwrap();
}

/// `governance::access::grant` writes `kip.space_access` out in one
/// statement of its own: both must answer alike for every privilege.
#[pg_test]
fn the_grant_lookup_agrees_with_kip_space_access() {
    use crate::governance::access::{grant, Privilege};
    Spi::run(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_pg_test_mixed') THEN
             CREATE ROLE kip_pg_test_mixed IN ROLE kip_reader; END IF; END $$;
         SELECT kip_grant('pg_g_read', 'kip_pg_test_mixed', 'read');
         SELECT kip_grant('pg_g_write', 'kip_pg_test_mixed', 'write');
         SELECT kip_grant('pg_g_admin', 'kip_pg_test_mixed', 'admin');",
    )
    .unwrap();
    Spi::run("SET ROLE kip_pg_test_mixed").unwrap();
    for (space, expected) in [("pg_g_read", "read"), ("pg_g_write", "write"), ("pg_g_admin", "admin"), ("pg_g_none", "none")] {
        let by_sql = Spi::get_one::<String>(&format!("SELECT kip.space_access('{space}')")).unwrap().unwrap();
        let by_lookup = match grant(&crate::space::validate(space).unwrap()).unwrap().privilege {
            Some(Privilege::Admin) => "admin",
            Some(Privilege::Write) => "write",
            Some(Privilege::Read) => "read",
            None => "none",
        };
        assert_eq!((by_sql.as_str(), by_lookup), (expected, expected), "{space}");
    }
    Spi::run("RESET ROLE; DELETE FROM kip.space_grants WHERE role = 'kip_pg_test_mixed'").unwrap();
}

/// `kip.is_admin()` and `kip.granted_spaces(text[])` (C,
/// `governance::privileges`) answer as the SQL definitions they replaced,
/// for a superuser, a `kip_admin` member, a role with direct grants, a
/// member inheriting a group's grants, a member that does not inherit, and
/// grants to a role that no longer exists.
#[pg_test]
fn the_privilege_functions_answer_as_their_sql_definitions() {
    Spi::run(
        "DO $$ BEGIN
           -- Each role once per cluster (the test may run again on it).
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_pg_priv_direct') THEN
             CREATE ROLE kip_pg_priv_direct IN ROLE kip_reader;
           END IF;
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_pg_priv_group') THEN
             CREATE ROLE kip_pg_priv_group IN ROLE kip_reader;
             CREATE ROLE kip_pg_priv_member IN ROLE kip_pg_priv_group, kip_reader;
             -- Inherits nothing, kip_reader's privileges included.
             CREATE ROLE kip_pg_priv_noinherit NOINHERIT IN ROLE kip_pg_priv_group;
             GRANT USAGE ON SCHEMA kip TO kip_pg_priv_noinherit;
             GRANT SELECT ON kip.space_grants TO kip_pg_priv_noinherit;
           END IF;
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_pg_priv_admin') THEN
             CREATE ROLE kip_pg_priv_admin IN ROLE kip_admin;
           END IF;
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_pg_priv_deep') THEN
             -- Two levels down: the group's grants through kip_pg_priv_member.
             CREATE ROLE kip_pg_priv_deep IN ROLE kip_pg_priv_member;
           END IF; END $$;
         SELECT kip_grant('pg_p_a', 'kip_pg_priv_direct', 'read');
         SELECT kip_grant('pg_p_b', 'kip_pg_priv_direct', 'write');
         SELECT kip_grant('pg_p_b', 'kip_pg_priv_group', 'read');
         SELECT kip_grant('pg_p_c', 'kip_pg_priv_group', 'admin');
         SELECT kip_grant('pg_p_d', 'kip_pg_priv_member', 'write');
         INSERT INTO kip.space_grants (space, role, privilege) VALUES ('pg_p_e', 'kip_pg_priv_gone', 'admin');
         INSERT INTO kip.space_grants (space, role, privilege)
           SELECT 'pg_p_other_' || i, 'kip_pg_priv_other_' || i, 'write' FROM generate_series(1, 50) i;",
    )
    .unwrap();
    let by_sql_admin = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r \
                        WHERE r.rolname = 'kip_admin' AND pg_catalog.pg_has_role(r.oid, 'USAGE'))";
    let by_sql_spaces = |privileges: &str| {
        format!(
            "SELECT coalesce(array_agg(DISTINCT g.space), '{{}}') FROM kip.space_grants g \
             JOIN pg_catalog.pg_roles r ON r.rolname = g.role \
             WHERE g.privilege = ANY ({privileges}) AND pg_catalog.pg_has_role(r.oid, 'USAGE')"
        )
    };
    let sorted = |sql: &str| {
        let mut v: Vec<String> = Spi::get_one::<Vec<String>>(sql).unwrap().unwrap_or_default();
        v.sort();
        v
    };
    let roles = ["", "kip_pg_priv_direct", "kip_pg_priv_member", "kip_pg_priv_deep", "kip_pg_priv_noinherit", "kip_pg_priv_admin", "kip_pg_priv_group"];
    let mut seen_spaces = 0;
    for role in roles {
        Spi::run(if role.is_empty() { "RESET ROLE".to_string() } else { format!("SET ROLE {role}") }.as_str()).unwrap();
        let admin_sql = Spi::get_one::<bool>(by_sql_admin).unwrap().unwrap();
        let admin_c = Spi::get_one::<bool>("SELECT kip.is_admin()").unwrap().unwrap();
        assert_eq!(admin_c, admin_sql, "is_admin as {role:?}");
        for privileges in ["ARRAY['read', 'write', 'admin']", "ARRAY['write', 'admin']", "ARRAY['admin']", "ARRAY[]::text[]", "NULL::text[]"] {
            let c = sorted(&format!("SELECT kip.granted_spaces({privileges})"));
            let sql = sorted(&by_sql_spaces(privileges));
            assert_eq!(c, sql, "granted_spaces({privileges}) as {role:?}");
            seen_spaces += c.iter().filter(|s| s.starts_with("pg_p_")).count();
        }
    }
    // The roles above do hold some of these grants (the comparison is not
    // one of empty lists), and the dropped role's grant matches nobody.
    assert!(seen_spaces >= 8, "{seen_spaces}");
    Spi::run("SET ROLE kip_pg_priv_member").unwrap();
    assert_eq!(sorted("SELECT kip.granted_spaces(ARRAY['read', 'write', 'admin'])"), vec!["pg_p_b", "pg_p_c", "pg_p_d"]);
    Spi::run("SET ROLE kip_pg_priv_deep").unwrap();
    assert_eq!(sorted("SELECT kip.granted_spaces(ARRAY['read', 'write', 'admin'])"), vec!["pg_p_b", "pg_p_c", "pg_p_d"]);
    Spi::run("SET ROLE kip_pg_priv_noinherit").unwrap();
    assert_eq!(sorted("SELECT kip.granted_spaces(ARRAY['read', 'write', 'admin'])"), Vec::<String>::new());
    Spi::run("RESET ROLE; DELETE FROM kip.space_grants WHERE space LIKE 'pg_p_%'").unwrap();
}

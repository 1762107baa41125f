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

// In-database tests (`cargo pgrx test`): the pieces that only exist inside a
// backend — SPI access modes, subtransaction rollback, the entry points.

use crate::exec::{spi, subxact, Access, SqlParam};
use pgrx::prelude::*;
use serde_json::json;

#[pg_test]
fn read_only_spi_refuses_writes() {
    let r = subxact::run_isolated(|| {
        spi::execute("INSERT INTO kip.spaces (name) VALUES ('ro_probe')", &[], Access::ReadOnly)
    });
    let e = r.expect_err("a write through a read-only SPI call must fail");
    assert!(e.message.contains("read-only") || e.message.contains("non-volatile"), "{}", e.message);
    let n = spi::query_scalar("SELECT count(*) FROM kip.spaces WHERE name = 'ro_probe'", &[], Access::ReadOnly).unwrap();
    assert_eq!(n, json!(0));
}

#[pg_test]
fn failed_command_leaves_no_partial_write() {
    let r: Result<(), _> = subxact::run_isolated(|| {
        spi::execute("INSERT INTO kip.spaces (name) VALUES ($1)", &[SqlParam::Text("half".into())], Access::ReadWrite)?;
        Err(kip_lang::KipError::new(kip_lang::ErrorCode::NotFound, "later step failed"))
    });
    assert!(r.is_err());
    let n = spi::query_scalar("SELECT count(*) FROM kip.spaces WHERE name = 'half'", &[], Access::ReadOnly).unwrap();
    assert_eq!(n, json!(0));
    // A Postgres error inside becomes a KIP error and is rolled back too.
    let r: Result<u64, _> = subxact::run_isolated(|| {
        spi::execute("INSERT INTO kip.spaces (name) VALUES ('ok1')", &[], Access::ReadWrite)?;
        spi::execute("INSERT INTO kip.spaces (name) VALUES ('bad name!')", &[], Access::ReadWrite)
    });
    assert_eq!(r.unwrap_err().code.as_str(), "KIP_4003");
    let n = spi::query_scalar("SELECT count(*) FROM kip.spaces WHERE name = 'ok1'", &[], Access::ReadOnly).unwrap();
    assert_eq!(n, json!(0));
}

#[pg_test]
fn entry_points_return_envelopes() {
    let out = Spi::get_one::<pgrx::JsonB>("SELECT kip_execute('FIND(')").unwrap().unwrap().0;
    assert_eq!(out["error"]["code"], json!("KIP_1001"));
    let out = Spi::get_one::<pgrx::JsonB>("SELECT kip_execute('{\"commands\": 1}'::jsonb)").unwrap().unwrap().0;
    assert_eq!(out["error"]["code"], json!("KIP_1001"));
    let out = Spi::get_one::<pgrx::JsonB>("SELECT kip_execute_readonly('UPSERT { CONCEPT ?x { {type: \"T\", name: \"n\"} } }')")
        .unwrap()
        .unwrap()
        .0;
    assert!(out["error"]["message"].as_str().unwrap().contains("kip_execute_readonly"));
}

#[pg_test]
fn kip_format_and_kip_parse_are_exposed() {
    let formatted = Spi::get_one::<String>("SELECT kip_format('FIND(?d.name)   WHERE { ?d {type:\"Drug\"} }  LIMIT 5')")
        .unwrap()
        .unwrap();
    let again = Spi::get_one_with_args::<String>("SELECT kip_format($1)", &[formatted.clone().into()]).unwrap().unwrap();
    assert_eq!(formatted, again, "canonical text is a fixed point");
    let ast = Spi::get_one::<pgrx::JsonB>("SELECT kip_parse('DESCRIBE PRIMER')").unwrap().unwrap().0;
    assert!(ast["commands"].is_array(), "{ast}");
    let err = Spi::get_one::<pgrx::JsonB>("SELECT kip_parse('FIND(')").unwrap().unwrap().0;
    assert_eq!(err["error"]["code"], json!("KIP_1001"));
}
include!("governance/pg_tests.rs");

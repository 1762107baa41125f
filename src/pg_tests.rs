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

/// A statement with a fixed value gets a plan for that value, whose constant
/// answers: the plan kept for one value never answers for another. Past
/// `MAX_FIXED_PLANS` the backend plans the other values at each call, with
/// the same answers, and keeps no more.
#[pg_test]
fn fixed_values_get_plans_of_their_own_up_to_a_bound() {
    let sql = "SELECT $1::text || '/' || $2::text";
    let run = |v: &str| {
        let params = [SqlParam::Fixed(v.to_string()), SqlParam::Text("x".into())];
        spi::query_planned(sql, &params, Access::ReadOnly, spi::Planning::GenericParallel).unwrap()[0][0].clone()
    };
    let values: Vec<String> = (0..spi::MAX_FIXED_PLANS + 40).map(|i| format!("v{i}")).collect();
    for round in 0..2 {
        for v in &values {
            assert_eq!(run(v), json!(format!("{v}/x")), "round {round}");
        }
    }
    assert_eq!(spi::fixed_plans_kept(), spi::MAX_FIXED_PLANS);
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
/// `exec::jsonb` reads a jsonb value from its bytes as Postgres's iterator
/// walks it: every JSON kind, nesting, objects and arrays past the 32
/// children after which jsonb stores offsets instead of lengths, numerics
/// of every form, and a value stored compressed.
#[pg_test]
fn jsonb_is_read_from_its_bytes_as_the_iterator_reads_it() {
    let many_keys: String = (0..70).map(|i| format!("\"k{i}\": {i}")).collect::<Vec<_>>().join(", ");
    let many_items: String = (0..100).map(|i| format!("\"{}\"", "x".repeat(i))).collect::<Vec<_>>().join(", ");
    let texts = [
        "null".to_string(),
        "true".into(),
        "\"a\"".into(),
        "0".into(),
        "-12.50".into(),
        "1e20".into(),
        "123456789012345678901234567890.000000001".into(),
        "[]".into(),
        "{}".into(),
        r#"{"a": 1, "bb": [true, false, null, "s", 2.5, {"c": {}}], "": "empty key", "ünï": "cödé ☃"}"#.into(),
        r#"[[[[[1]]]], {"x": [{"y": [null]}]}, -0.0]"#.into(),
        format!("{{{many_keys}}}"),
        format!("[{many_items}]"),
        format!(r#"{{"long": "{}", "n": 1}}"#, "long text ".repeat(3000)),
    ];
    for text in texts {
        let datum = Spi::get_one_with_args::<pgrx::JsonB>("SELECT $1::jsonb", &[text.as_str().into()]).unwrap().unwrap();
        let expected: serde_json::Value = datum.0.clone();
        // The datum as a backend holds it, then read both ways.
        let cstring = std::ffi::CString::new(text.clone()).unwrap();
        unsafe {
            let raw = pgrx::direct_function_call::<pg_sys::Datum>(pg_sys::jsonb_in, &[Some(pg_sys::Datum::from(cstring.as_ptr()))]).unwrap();
            let jb = pg_sys::pg_detoast_datum(raw.cast_mut_ptr()) as *mut pg_sys::Jsonb;
            let size = pgrx::varlena::varsize(jb as *const pg_sys::varlena);
            let decoded = crate::exec::jsonb::decode(jb.cast::<u8>().add(4), size - 4, 0, crate::exec::jsonb::BigNumbers::AsText);
            let iterated = crate::exec::jsonb::iterate(jb, crate::exec::jsonb::BigNumbers::AsText);
            assert_eq!(decoded, iterated, "{}", &text[..text.len().min(200)]);
            assert_eq!(decoded.as_ref().ok(), Some(&expected), "{}", &text[..text.len().min(200)]);
            assert_eq!(crate::exec::jsonb::to_value(raw), Some(expected), "{}", &text[..text.len().min(200)]);
        }
    }
    // A compressed value, as read from a table.
    Spi::run("CREATE TEMP TABLE big_json AS SELECT jsonb_build_object('t', repeat('abc ', 20000), 'n', 7) AS j").unwrap();
    let out = crate::exec::spi::query_scalar("SELECT j FROM big_json", &[], Access::ReadOnly).unwrap();
    assert_eq!(out["n"], json!(7));
    assert_eq!(out["t"].as_str().map(str::len), Some(80000));
}

/// The bytes of a jsonb datum, its varlena header included.
unsafe fn jsonb_bytes(datum: pg_sys::Datum) -> Vec<u8> {
    let jb = pg_sys::pg_detoast_datum(datum.cast_mut_ptr());
    std::slice::from_raw_parts(jb.cast::<u8>(), pgrx::varlena::varsize(jb)).to_vec()
}

/// `jsonb_in`'s datum of a JSON text.
unsafe fn jsonb_in(text: &str) -> pg_sys::Datum {
    let cstring = std::ffi::CString::new(text).unwrap();
    pgrx::direct_function_call::<pg_sys::Datum>(pg_sys::jsonb_in, &[Some(pg_sys::Datum::from(cstring.as_ptr()))]).unwrap()
}

/// `exec::jsonb` writes a value byte for byte as `jsonb_in` lays out the
/// text the text path would print (serde's); a reply whose parts are
/// stored jsonb containers comes out as `jsonb_in` lays out the whole
/// reply's text, those parts' numbers exactly as stored.
#[pg_test]
fn jsonb_is_written_byte_for_byte_as_jsonb_in_writes_it() {
    use crate::exec::jsonb::{datum_of_doc, from_value, Doc, Jsonb};
    let many_keys: String = (0..70).map(|i| format!("\"k{}\": {i}", "x".repeat(i % 7))).collect::<Vec<_>>().join(", ");
    let many_items: String = (0..100).map(|i| format!("\"{}\"", "x".repeat(i))).collect::<Vec<_>>().join(", ");
    let texts = [
        "null".to_string(),
        "true".into(),
        "false".into(),
        "\"a\"".into(),
        "0".into(),
        "-12.50".into(),
        "1e20".into(),
        "-9223372036854775808".into(),
        "18446744073709551615".into(),
        "0.1".into(),
        "[]".into(),
        "{}".into(),
        r#"{"a": 1, "bb": [true, false, null, "s", 2.5, {"c": {}}], "": "empty key", "ünï": "cödé ☃", "b": -7}"#.into(),
        r#"[[[[[1]]]], {"x": [{"y": [null, 3]}]}, -0.0, "tail"]"#.into(),
        format!("{{{many_keys}}}"),
        format!("[{many_items}]"),
        format!(r#"{{"long": "{}", "n": 1}}"#, "long text ".repeat(3000)),
    ];
    unsafe {
        for text in &texts {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            let written = from_value(&value).expect(text);
            assert_eq!(jsonb_bytes(written), jsonb_bytes(jsonb_in(&value.to_string())), "{}", &text[..text.len().min(200)]);
        }
        // What only the text path decides.
        assert_eq!(from_value(&json!({"a": "nul \u{0} inside"})), None);
        let deep = (0..200).fold(json!(1), |v, _| json!([v]));
        assert_eq!(from_value(&deep), None);

        // A reply of stored containers and values, around every container
        // of the corpus (numbers such as 1e20 or -12.50 kept as stored).
        let containers: Vec<&String> = texts.iter().filter(|t| t.starts_with('{') || t.starts_with('[')).collect();
        let mut parts = Vec::new();
        let mut part_texts = Vec::new();
        for (i, text) in containers.iter().enumerate() {
            let stored = Jsonb::of_datum(jsonb_in(text)).expect(text);
            assert_eq!(stored.to_value(), crate::exec::jsonb::to_value(jsonb_in(text)).unwrap());
            parts.push(Doc::Jsonb(stored));
            part_texts.push(text.to_string());
            parts.push(Doc::Json(json!({"i": i, "s": "x".repeat(i)})));
            part_texts.push(json!({"i": i, "s": "x".repeat(i)}).to_string());
        }
        let reply = Doc::Object(vec![
            ("result".into(), Doc::Array(vec![Doc::Array(parts), Doc::Json(json!(3.25))])),
            ("next_cursor".into(), Doc::Json(json!("token"))),
        ]);
        let reply_text = format!(r#"{{"result": [[{}], 3.25], "next_cursor": "token"}}"#, part_texts.join(", "));
        assert_eq!(jsonb_bytes(datum_of_doc(&reply).unwrap()), jsonb_bytes(jsonb_in(&reply_text)));
        // A scalar is no container to copy.
        assert_eq!(Jsonb::of_datum(jsonb_in("7")), None);
    }
}

include!("governance/pg_tests.rs");

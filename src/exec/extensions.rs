//! Names from the extensions kip requires (pgvector, pg_trgm), qualified
//! with the schema each is installed in, so the SQL kip generates resolves
//! them whatever the session's `search_path` is (even `''`).
//!
//! Schemas are looked up once per backend: kip's own objects are created
//! against them at CREATE EXTENSION time, and moving a required extension
//! afterwards is not something kip supports.

use super::{spi, Access};
use kip_lang::{ErrorCode, KipError};
use std::cell::RefCell;

#[derive(Clone)]
struct Schemas {
    vector: String,
    trgm: String,
}

thread_local! {
    static SCHEMAS: RefCell<Option<Schemas>> = const { RefCell::new(None) };
}

/// A schema name quoted as an identifier (it comes from the catalog, never
/// from user text, and is quoted anyway).
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn schemas() -> Result<Schemas, KipError> {
    if let Some(s) = SCHEMAS.with(|s| s.borrow().clone()) {
        return Ok(s);
    }
    let rows = spi::query(
        "SELECT e.extname::text, n.nspname::text FROM pg_catalog.pg_extension e
         JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname IN ('vector', 'pg_trgm')",
        &[],
        Access::ReadOnly,
    )?;
    let find = |ext: &str| {
        rows.iter()
            .find(|r| r[0].as_str() == Some(ext))
            .and_then(|r| r[1].as_str())
            .map(quote_ident)
            .ok_or_else(|| {
                KipError::new(ErrorCode::InternalError, format!("the extension {ext} is not installed"))
                    .with_hint("kip requires pgvector (vector) and pg_trgm: CREATE EXTENSION kip CASCADE installs them.")
            })
    };
    let s = Schemas { vector: find("vector")?, trgm: find("pg_trgm")? };
    SCHEMAS.with(|cell| *cell.borrow_mut() = Some(s.clone()));
    Ok(s)
}

/// The pgvector type, e.g. `"public".vector`.
pub fn vector_type() -> Result<String, KipError> {
    Ok(format!("{}.vector", schemas()?.vector))
}

/// A pgvector operator, e.g. `OPERATOR("public".<=>)`.
pub fn vector_op(op: &str) -> Result<String, KipError> {
    Ok(format!("OPERATOR({}.{op})", schemas()?.vector))
}

/// A pg_trgm function, e.g. `"public".similarity`.
pub fn trgm_fn(name: &str) -> Result<String, KipError> {
    Ok(format!("{}.{name}", schemas()?.trgm))
}

/// A pg_trgm operator, e.g. `OPERATOR("public".<->)`.
pub fn trgm_op(op: &str) -> Result<String, KipError> {
    Ok(format!("OPERATOR({}.{op})", schemas()?.trgm))
}

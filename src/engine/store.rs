//! The fixed SQL statements of the KML write path: identity lookups and
//! shallow-merge writes of single concepts and propositions.
//!
//! Every statement text is a constant (one cached plan each); every value is
//! a bind parameter. Shallow merge is jsonb `||`: keys present in the command
//! overwrite (a JSON `null` is stored as given), other keys stay. Versions and
//! `updated_at` are left to the version triggers (`kip.touch_concept`,
//! `kip.touch_proposition`), which bump them only when content really
//! changes, so an idempotent re-UPSERT keeps `_version`.
//!
//! Lookups run as read-write SPI calls although they only select: a
//! read-only SPI call keeps the caller's snapshot and would not see the rows
//! this very command (or an earlier statement of its capsule) just wrote.

use crate::compile::ids::ElementRef;
use crate::exec::{spi, Access, SqlParam};
use crate::space::Space;
use kip_lang::KipError;
use serde_json::{Map, Value};

pub type JsonMap = Map<String, Value>;

fn json(m: &JsonMap) -> SqlParam {
    SqlParam::Json(Value::Object(m.clone()))
}

fn int_at(row: &[Value], i: usize) -> i64 {
    row.get(i).and_then(Value::as_i64).unwrap_or_default()
}

fn text_at(row: &[Value], i: usize) -> String {
    row.get(i).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn first_id(rows: spi::Rows) -> Option<i64> {
    rows.first().map(|r| int_at(r, 0))
}

// ---------------------------------------------------------------- concepts --

#[derive(Debug, Clone, PartialEq)]
pub struct ConceptRow {
    pub id: i64,
    pub type_name: String,
    pub name: String,
    pub version: i64,
}

fn concept_row(rows: spi::Rows) -> Option<ConceptRow> {
    rows.first().map(|r| ConceptRow { id: int_at(r, 0), type_name: text_at(r, 1), name: text_at(r, 2), version: int_at(r, 3) })
}

/// The concept `{type, name}`; `lock` takes its row lock (guarded writes).
pub fn concept_by_identity(space: &Space, type_name: &str, name: &str, lock: bool) -> Result<Option<ConceptRow>, KipError> {
    let sql = if lock {
        "SELECT id, type, name, version FROM kip.concepts WHERE space = $1 AND type = $2 AND name = $3 FOR UPDATE"
    } else {
        "SELECT id, type, name, version FROM kip.concepts WHERE space = $1 AND type = $2 AND name = $3"
    };
    let params = [space.param(), SqlParam::Text(type_name.into()), SqlParam::Text(name.into())];
    Ok(concept_row(spi::query(sql, &params, Access::ReadWrite)?))
}

/// The concept with row id `id`.
pub fn concept_by_id(space: &Space, id: i64, lock: bool) -> Result<Option<ConceptRow>, KipError> {
    let sql = if lock {
        "SELECT id, type, name, version FROM kip.concepts WHERE space = $1 AND id = $2 FOR UPDATE"
    } else {
        "SELECT id, type, name, version FROM kip.concepts WHERE space = $1 AND id = $2"
    };
    Ok(concept_row(spi::query(sql, &[space.param(), SqlParam::Int(id)], Access::ReadWrite)?))
}

/// Create `{type, name}` or shallow-merge into it, in one statement.
pub fn concept_upsert(space: &Space, type_name: &str, name: &str, attrs: &JsonMap, meta: &JsonMap) -> Result<i64, KipError> {
    if attrs.is_empty() && meta.is_empty() {
        // Nothing to write: do not rewrite (and row-lock) an existing node
        // that a capsule merely references.
        if let Some(row) = concept_by_identity(space, type_name, name, false)? {
            return Ok(row.id);
        }
    }
    let rows = spi::query(
        "INSERT INTO kip.concepts AS c (space, type, name, attributes, metadata) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (space, type, name) DO UPDATE \
         SET attributes = c.attributes || EXCLUDED.attributes, metadata = c.metadata || EXCLUDED.metadata \
         RETURNING id",
        &[space.param(), SqlParam::Text(type_name.into()), SqlParam::Text(name.into()), json(attrs), json(meta)],
        Access::ReadWrite,
    )?;
    Ok(first_id(rows).unwrap_or_default())
}

/// One concept of [`concepts_merge`]: identity, attributes, metadata.
pub struct ConceptWrite<'a> {
    pub type_name: &'a str,
    pub name: &'a str,
    pub attrs: &'a JsonMap,
    pub meta: &'a JsonMap,
}

/// [`concept_upsert`] of several distinct concepts in one statement (one
/// executor start-up and one firing of the statement triggers instead of
/// one per concept); their row ids, in the order given.
pub fn concepts_merge(space: &Space, concepts: &[ConceptWrite<'_>]) -> Result<Vec<i64>, KipError> {
    let rows: Vec<Value> = concepts
        .iter()
        .map(|c| serde_json::json!({ "t": c.type_name, "n": c.name, "a": Value::Object(c.attrs.clone()), "m": Value::Object(c.meta.clone()) }))
        .collect();
    let rows = spi::query(
        "INSERT INTO kip.concepts AS c (space, type, name, attributes, metadata) \
         SELECT $1, u.t, u.n, u.a, u.m FROM jsonb_to_recordset($2) AS u(t text, n text, a jsonb, m jsonb) \
         ON CONFLICT (space, type, name) DO UPDATE \
         SET attributes = c.attributes || EXCLUDED.attributes, metadata = c.metadata || EXCLUDED.metadata \
         RETURNING id, type, name",
        &[space.param(), SqlParam::Json(Value::Array(rows))],
        Access::ReadWrite,
    )?;
    // RETURNING has no defined order: match the rows back by identity.
    concepts
        .iter()
        .map(|c| {
            rows.iter()
                .find(|r| r.get(1).and_then(Value::as_str) == Some(c.type_name) && r.get(2).and_then(Value::as_str) == Some(c.name))
                .map(|r| int_at(r, 0))
                .ok_or_else(|| KipError::new(kip_lang::ErrorCode::InternalError, format!("concept {{type: {:?}, name: {:?}}} was not written", c.type_name, c.name)))
        })
        .collect()
}

/// Create `{type, name}` only if it does not exist; `None` when it does.
pub fn concept_create(space: &Space, type_name: &str, name: &str, attrs: &JsonMap, meta: &JsonMap) -> Result<Option<i64>, KipError> {
    let rows = spi::query(
        "INSERT INTO kip.concepts (space, type, name, attributes, metadata) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (space, type, name) DO NOTHING RETURNING id",
        &[space.param(), SqlParam::Text(type_name.into()), SqlParam::Text(name.into()), json(attrs), json(meta)],
        Access::ReadWrite,
    )?;
    Ok(first_id(rows))
}

/// Shallow-merge attributes and metadata into an existing concept. The row
/// was read before, without a lock: a transaction that deleted it since
/// (the UPDATE waited for it to commit, then found nothing) makes this
/// `KIP_3002`, not a success that wrote nowhere.
pub fn concept_patch(space: &Space, id: i64, attrs: &JsonMap, meta: &JsonMap) -> Result<(), KipError> {
    if attrs.is_empty() && meta.is_empty() {
        return Ok(());
    }
    let updated = spi::execute(
        "UPDATE kip.concepts SET attributes = attributes || $3, metadata = metadata || $4 WHERE space = $1 AND id = $2",
        &[space.param(), SqlParam::Int(id), json(attrs), json(meta)],
        Access::ReadWrite,
    )?;
    if updated == 0 {
        return Err(KipError::new(kip_lang::ErrorCode::NotFound, format!("concept C:{id} was deleted concurrently; nothing was written"))
            .with_hint("Another session deleted it while this command ran; look it up again before writing to it."));
    }
    Ok(())
}

/// One attribute of a concept (`None` when the key is absent).
pub fn concept_attribute(space: &Space, id: i64, key: &str) -> Result<Option<Value>, KipError> {
    let rows = spi::query(
        "SELECT attributes -> $3 FROM kip.concepts WHERE space = $1 AND id = $2",
        &[space.param(), SqlParam::Int(id), SqlParam::Text(key.into())],
        Access::ReadWrite,
    )?;
    Ok(rows.into_iter().next().and_then(|r| r.into_iter().next()).filter(|v| !v.is_null()))
}

// ------------------------------------------------------------ propositions --

#[derive(Debug, Clone, PartialEq)]
pub struct PropositionRow {
    pub id: i64,
    pub predicate: String,
    pub version: i64,
}

fn proposition_row(rows: spi::Rows) -> Option<PropositionRow> {
    rows.first().map(|r| PropositionRow { id: int_at(r, 0), predicate: text_at(r, 1), version: int_at(r, 2) })
}

/// The proposition with row id `id` (and predicate, when given).
pub fn proposition_by_id(space: &Space, id: i64, predicate: Option<&str>, lock: bool) -> Result<Option<PropositionRow>, KipError> {
    let sql = if lock {
        "SELECT id, predicate, version FROM kip.propositions WHERE space = $1 AND id = $2 AND ($3::text IS NULL OR predicate = $3) FOR UPDATE"
    } else {
        "SELECT id, predicate, version FROM kip.propositions WHERE space = $1 AND id = $2 AND ($3::text IS NULL OR predicate = $3)"
    };
    let pred = predicate.map_or(SqlParam::NullText, |p| SqlParam::Text(p.into()));
    Ok(proposition_row(spi::query(sql, &[space.param(), SqlParam::Int(id), pred], Access::ReadWrite)?))
}

/// The proposition `(subject, predicate, object)`.
pub fn proposition_by_triple(space: &Space, s: ElementRef, predicate: &str, o: ElementRef, lock: bool) -> Result<Option<PropositionRow>, KipError> {
    let sql = if lock {
        "SELECT id, predicate, version FROM kip.propositions WHERE space = $1 AND subject = $2 AND predicate = $3 AND object = $4 FOR UPDATE"
    } else {
        "SELECT id, predicate, version FROM kip.propositions WHERE space = $1 AND subject = $2 AND predicate = $3 AND object = $4"
    };
    let params = [space.param(), SqlParam::Int(s.id), SqlParam::Text(predicate.into()), SqlParam::Int(o.id)];
    Ok(proposition_row(spi::query(sql, &params, Access::ReadWrite)?))
}

fn triple_params(space: &Space, s: ElementRef, predicate: &str, o: ElementRef, attrs: &JsonMap, meta: &JsonMap) -> [SqlParam; 8] {
    [
        space.param(),
        SqlParam::Int(s.id),
        SqlParam::Bool(s.is_concept()),
        SqlParam::Text(predicate.into()),
        SqlParam::Int(o.id),
        SqlParam::Bool(o.is_concept()),
        json(attrs),
        json(meta),
    ]
}

const INSERT_PROPOSITION: &str = "INSERT INTO kip.propositions AS p \
     (space, subject_concept, subject_link, predicate, object_concept, object_link, attributes, metadata) \
     VALUES ($1, CASE WHEN $3 THEN $2 END, CASE WHEN NOT $3 THEN $2 END, $4, \
             CASE WHEN $6 THEN $5 END, CASE WHEN NOT $6 THEN $5 END, $7, $8) ";

/// Create `(s, p, o)` or shallow-merge into the existing link (uniqueness of
/// `(subject, predicate, object)`, RC10 §2.10).
pub fn proposition_upsert(space: &Space, s: ElementRef, predicate: &str, o: ElementRef, attrs: &JsonMap, meta: &JsonMap) -> Result<i64, KipError> {
    thread_local! {
        static SQL: String = format!(
            "{INSERT_PROPOSITION} ON CONFLICT (space, subject, predicate, object) DO UPDATE \
             SET attributes = p.attributes || EXCLUDED.attributes, metadata = p.metadata || EXCLUDED.metadata RETURNING id"
        );
    }
    let params = triple_params(space, s, predicate, o, attrs, meta);
    let rows = SQL.with(|sql| spi::query(sql, &params, Access::ReadWrite))?;
    Ok(first_id(rows).unwrap_or_default())
}

/// One link of [`propositions_merge`]: `(s, p, o)` and the metadata to merge.
pub struct LinkWrite<'a> {
    pub subject: ElementRef,
    pub predicate: &'a str,
    pub object: ElementRef,
    pub meta: JsonMap,
}

/// Several `SET PROPOSITIONS` links of one block in one statement: each is
/// created, or its metadata shallow-merged into the existing link. The
/// triples must be distinct (one statement cannot update a row twice).
pub fn propositions_merge(space: &Space, links: &[LinkWrite<'_>]) -> Result<(), KipError> {
    let rows: Vec<Value> = links
        .iter()
        .map(|l| {
            serde_json::json!({
                "s": l.subject.id, "sc": l.subject.is_concept(), "p": l.predicate,
                "o": l.object.id, "oc": l.object.is_concept(), "m": Value::Object(l.meta.clone()),
            })
        })
        .collect();
    spi::execute(
        "INSERT INTO kip.propositions AS p \
           (space, subject_concept, subject_link, predicate, object_concept, object_link, attributes, metadata) \
         SELECT $1, CASE WHEN u.sc THEN u.s END, CASE WHEN NOT u.sc THEN u.s END, u.p, \
                CASE WHEN u.oc THEN u.o END, CASE WHEN NOT u.oc THEN u.o END, '{}'::jsonb, u.m \
         FROM jsonb_to_recordset($2) AS u(s bigint, sc boolean, p text, o bigint, oc boolean, m jsonb) \
         ON CONFLICT (space, subject, predicate, object) DO UPDATE \
         SET attributes = p.attributes || EXCLUDED.attributes, metadata = p.metadata || EXCLUDED.metadata",
        &[space.param(), SqlParam::Json(Value::Array(rows))],
        Access::ReadWrite,
    )?;
    Ok(())
}

/// Create `(s, p, o)` only if it does not exist; `None` when it does.
pub fn proposition_create(space: &Space, s: ElementRef, predicate: &str, o: ElementRef, attrs: &JsonMap, meta: &JsonMap) -> Result<Option<i64>, KipError> {
    thread_local! {
        static SQL: String = format!("{INSERT_PROPOSITION} ON CONFLICT (space, subject, predicate, object) DO NOTHING RETURNING id");
    }
    let params = triple_params(space, s, predicate, o, attrs, meta);
    Ok(first_id(SQL.with(|sql| spi::query(sql, &params, Access::ReadWrite))?))
}

/// Shallow-merge attributes and metadata into an existing proposition. The row
/// was read before, without a lock: a transaction that deleted it since
/// (the UPDATE waited for it to commit, then found nothing) makes this
/// `KIP_3002`, not a success that wrote nowhere.
pub fn proposition_patch(space: &Space, id: i64, attrs: &JsonMap, meta: &JsonMap) -> Result<(), KipError> {
    if attrs.is_empty() && meta.is_empty() {
        return Ok(());
    }
    let updated = spi::execute(
        "UPDATE kip.propositions SET attributes = attributes || $3, metadata = metadata || $4 WHERE space = $1 AND id = $2",
        &[space.param(), SqlParam::Int(id), json(attrs), json(meta)],
        Access::ReadWrite,
    )?;
    if updated == 0 {
        return Err(KipError::new(kip_lang::ErrorCode::NotFound, format!("proposition P:{id} was deleted concurrently; nothing was written"))
            .with_hint("Another session deleted it while this command ran; look it up again before writing to it."));
    }
    Ok(())
}

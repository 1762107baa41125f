//! UPDATE value expressions → SQL (RC10 §4.3).
//!
//! A `SET ATTRIBUTES {…}` / `SET METADATA {…}` block becomes one jsonb
//! "patch" expression over the row alias of the element being updated, so
//! every value is computed from that element's *own* current state inside
//! the UPDATE statement itself (a concurrent writer's change is re-read by
//! Postgres before the row is rewritten: no lost increments).
//!
//! Semantics: an expression whose operand is missing, `null` (outside
//! `COALESCE`) or not a number yields SQL NULL, and a key whose value is SQL
//! NULL is left out of the patch — the key is skipped for that element. A
//! literal JSON `null` value is still written. Arithmetic is exact
//! (numeric) over the numbers as written, its result kept to a double's 17
//! significant digits and range, like the JSON numbers agents exchange;
//! whole results print as integers (`1`, not `1.0`), and no session
//! setting changes them.

use super::element;
use super::ids::ElementKind;
use super::bound;
use super::Params;
use kip_lang::ast::{DotPath, PathField, UpdateExpr, UpdateField, UpdateFunc};
use kip_lang::KipError;

/// The patch object for `fields`, evaluated against the row `alias`.
pub fn patch(fields: Option<&[UpdateField]>, alias: &str, kind: ElementKind, params: &mut Params) -> Result<String, KipError> {
    let Some(fields) = fields.filter(|f| !f.is_empty()) else {
        return Ok("'{}'::jsonb".to_string());
    };
    let mut rows = Vec::with_capacity(fields.len());
    for (i, f) in fields.iter().enumerate() {
        let key = params.text(f.key.clone());
        let value = expr(&f.value, alias, kind, params)?;
        // The ordinal keeps "last one wins" for a key written twice.
        rows.push(format!("({i}, {key}, {value})"));
    }
    Ok(format!(
        "(SELECT coalesce(jsonb_object_agg(u.k, u.v ORDER BY u.n), '{{}}'::jsonb) FROM (VALUES {}) AS u(n, k, v) WHERE u.v IS NOT NULL)",
        rows.join(", ")
    ))
}

fn expr(e: &UpdateExpr, alias: &str, kind: ElementKind, params: &mut Params) -> Result<String, KipError> {
    Ok(match e {
        UpdateExpr::Value(v) => params.json(bound::value(v)?),
        UpdateExpr::Path(p) => path(p, alias, kind, params),
        UpdateExpr::Call { func, args } => {
            if let (UpdateFunc::Clamp, [_, UpdateExpr::Value(lo), UpdateExpr::Value(hi)]) = (func, args.as_slice()) {
                check_clamp_bounds(&bound::value(lo)?, &bound::value(hi)?)?;
            }
            let args: Vec<String> = args.iter().map(|a| expr(a, alias, kind, params)).collect::<Result<_, _>>()?;
            call(*func, &args)
        }
    })
}

/// `CLAMP(x, lo, hi)` with literal bounds the wrong way round (`lo > hi`)
/// wrote `hi` to every match: `KIP_1001` instead.
fn check_clamp_bounds(lo: &serde_json::Value, hi: &serde_json::Value) -> Result<(), KipError> {
    match (lo.as_f64(), hi.as_f64()) {
        (Some(l), Some(h)) if l > h => Err(KipError::new(
            kip_lang::ErrorCode::InvalidSyntax,
            format!("CLAMP's lower bound {lo} is above its upper bound {hi}"),
        )
        .with_hint("Write CLAMP(value, low, high) with low <= high, e.g. CLAMP(?x.metadata.memory_strength, 0.0, 1.0).")),
        _ => Ok(()),
    }
}

/// Whether the numeric `n` is a double: zero, or of a magnitude between the
/// smallest normal double and the largest.
fn a_double(n: &str) -> String {
    format!("({n} = 0 OR abs({n}) BETWEEN 2.2250738585072014e-308 AND 1.7976931348623157e308)")
}

/// A jsonb number as numeric (exact, as written), SQL NULL for anything
/// else (a number beyond a double's range too); `e` is evaluated once.
///
/// `OFFSET 0` keeps each inner `(SELECT … AS v)` a subquery of its own:
/// flattened, Postgres pasted `e` at every reference of `v`, so nested
/// calls multiplied (CLAMP(MUL(COALESCE(…))) became a plan of 1,100
/// subplans and 0.3 ms of work per updated row; 7 with the fence).
fn num(e: &str) -> String {
    format!(
        "(SELECT CASE WHEN jsonb_typeof(s.v) = 'number' AND {} THEN s.v::numeric END FROM (SELECT {e} AS v OFFSET 0) s)",
        a_double("s.v::numeric")
    )
}

/// The numeric `n` to 17 significant digits (a double's precision), its
/// trailing zeros trimmed: repeated products keep a bounded length.
fn significant(n: &str) -> String {
    format!("CASE WHEN {n} = 0 THEN 0::numeric ELSE trim_scale(round({n}, 16 - floor(log(abs({n})))::int)) END")
}

/// `a <op> b` over two numbers, as jsonb; SQL NULL ("skip the key", RC10
/// §4.3) when the result leaves a double's range. Computed in numeric from
/// the numbers as written and stored to a double's 17 significant digits:
/// through float8, `to_jsonb` printed the result as the session's
/// `extra_float_digits` asked (at -15, 123.456789 became 100), and the
/// cast of a float8 to numeric kept 15 digits (ADD(x, 0) changed x).
fn arithmetic(a: &str, op: &str, b: &str) -> String {
    format!(
        "(SELECT CASE WHEN {} THEN to_jsonb({}) END FROM (SELECT {} {op} {} AS n OFFSET 0) r)",
        a_double("r.n"),
        significant("r.n"),
        num(a),
        num(b)
    )
}

fn call(func: UpdateFunc, args: &[String]) -> String {
    match (func, args) {
        (UpdateFunc::Add, [a, b]) => arithmetic(a, "+", b),
        (UpdateFunc::Mul, [a, b]) => arithmetic(a, "*", b),
        (UpdateFunc::Clamp, [x, lo, hi]) => format!(
            "(SELECT CASE WHEN c.x IS NULL OR c.lo IS NULL OR c.hi IS NULL THEN NULL ELSE to_jsonb(LEAST(GREATEST(c.x, c.lo), c.hi)) END \
             FROM (SELECT {} AS x, {} AS lo, {} AS hi OFFSET 0) c)",
            num(x),
            num(lo),
            num(hi)
        ),
        (UpdateFunc::Coalesce, [x, d]) => format!("coalesce(NULLIF({x}, 'null'::jsonb), {d})"),
        // The parser checks arities; anything else yields "skip the key".
        _ => "NULL::jsonb".to_string(),
    }
}

/// A dot path on the target itself, as jsonb (SQL NULL when absent).
fn path(p: &DotPath, alias: &str, kind: ElementKind, params: &mut Params) -> String {
    let concept = kind == ElementKind::Concept;
    match &p.field {
        PathField::Whole if concept => element::concept_json(alias),
        PathField::Whole => element::proposition_json(alias),
        PathField::Id if concept => format!("to_jsonb('C:' || {alias}.id)"),
        PathField::Id => format!("to_jsonb({})", element::proposition_ref(alias)),
        PathField::Type if concept => format!("to_jsonb({alias}.type)"),
        PathField::Name if concept => format!("to_jsonb({alias}.name)"),
        PathField::Predicate if !concept => format!("to_jsonb({alias}.predicate)"),
        PathField::Subject if !concept => format!("to_jsonb({})", element::endpoint_ref(alias, "subject")),
        PathField::Object if !concept => format!("to_jsonb({})", element::endpoint_ref(alias, "object")),
        PathField::Attributes(None) => format!("{alias}.attributes"),
        PathField::Attributes(Some(k)) => format!("({alias}.attributes -> {})", params.text(k.clone())),
        PathField::Metadata(None) => element::metadata_json(alias),
        PathField::Metadata(Some(k)) => match k.as_str() {
            "_version" => format!("to_jsonb({alias}.version)"),
            "_created_at" => format!("to_jsonb({})", element::iso_time(&format!("{alias}.created_at"))),
            "_updated_at" => format!("to_jsonb({})", element::iso_time(&format!("{alias}.updated_at"))),
            _ => format!("({alias}.metadata -> {})", params.text(k.clone())),
        },
        _ => "NULL::jsonb".to_string(),
    }
}

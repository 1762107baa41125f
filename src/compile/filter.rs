//! FILTER expressions → SQL booleans with KIP's JSON-typed semantics, and
//! dot-path access to element fields (shared with FIND projection).
//!
//! Semantics (RC10 §3.4.3, §2.7):
//! * numbers compare as numbers, strings as strings in byte order
//!   (`COLLATE "C"`, so ISO-8601 timestamps order correctly), booleans as
//!   booleans; values of different JSON types are never equal nor ordered —
//!   the comparison is false (for `!=` too), never an error and never
//!   Postgres's cross-type jsonb ordering;
//! * a dot path into a missing key is null; any comparison of null with
//!   another value is false, except `== null` / `!= null` with the literal
//!   `null`, which test for null (so the constant `null != 5` is true: 5 is
//!   not null); two null operands are equal;
//! * whole `attributes` / `metadata` objects are not comparable (`KIP_1001`);
//! * every compiled condition is a definite boolean (never SQL NULL), so `!`
//!   negates exactly.
//!
//! Common forms stay sargable: `?c.name == "x"` becomes `c.name = $n` on the
//! indexed column, `IN(?c.type, [...])` becomes `c.type = ANY($n)`.

use crate::compile::element::{endpoint_ref, iso_time, metadata_json};
use crate::compile::ids::parse_ref;
use crate::compile::pattern::scope::{Cx, Row, Var, VarKind};
use crate::params::SqlParam;
use kip_lang::ast::{CompareOp, DotPath, Expr, FilterFunc, Json, PathField, WhereClause};
use kip_lang::{ErrorCode, KipError};

/// How an expression finds variables and their rows.
pub(crate) trait VarAccess {
    fn var(&self, name: &str) -> Option<Var>;
    /// A readable row of an element variable (joined on demand).
    fn row(&mut self, cx: &mut Cx, name: &str) -> Option<Row>;
}

/// A FILTER / projection operand.
#[derive(Debug, Clone)]
pub(crate) enum Operand {
    /// A literal JSON value (folded at compile time when possible).
    Lit(Json),
    /// An SQL text expression (names, types, predicates).
    Text(String),
    /// An SQL jsonb expression (attribute/metadata values, ids).
    Json(JsonSql),
    /// The bigint id of a bound element (a bare `?var`).
    Id(String, VarKind),
    /// A whole attributes/metadata object: projectable, not comparable.
    Object(String),
}

/// An SQL jsonb expression; when it reads one key of a jsonb column, that
/// column and key, so a string value can be read as text by `->>`: one
/// extraction, where `#>> '{}'` on the jsonb value extracts the key as
/// jsonb first and then prints it (~90 ns a row, measured on a FILTER over
/// 100,000 attributes).
#[derive(Debug, Clone)]
pub(crate) enum JsonSql {
    /// Any jsonb expression.
    Expr(String),
    /// `container -> key`: `container` a jsonb expression, `key` a text one.
    Key { container: String, key: String },
}

impl JsonSql {
    /// The value's text when it is a JSON string (callers test that first:
    /// for other types this is their JSON text, or NULL for a key that is
    /// missing).
    pub(crate) fn string_text(&self) -> String {
        match self {
            JsonSql::Key { container, key } => format!("({container} ->> {key})"),
            JsonSql::Expr(sql) => format!("({sql} #>> '{{}}')"),
        }
    }
}

impl std::fmt::Display for JsonSql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonSql::Key { container, key } => write!(f, "({container} -> {key})"),
            JsonSql::Expr(sql) => f.write_str(sql),
        }
    }
}

pub(crate) fn unbound(name: &str) -> KipError {
    KipError::new(ErrorCode::ReferenceError, format!("Unbound variable ?{name}"))
        .with_hint(format!("Bind ?{name} in the WHERE block (e.g. ?{name} {{type: \"…\"}}) before using it."))
}

fn not_comparable(what: &str) -> KipError {
    KipError::new(ErrorCode::InvalidSyntax, format!("{what} is a whole object and is not comparable"))
        .with_hint("Compare a field instead, e.g. ?x.attributes.<key> or ?x.metadata.<key>.")
}

fn not_a_condition(what: &str) -> KipError {
    KipError::new(ErrorCode::InvalidSyntax, format!("{what} is a string, not a condition: a FILTER needs true or false"))
        .with_hint(format!("Compare it, e.g. FILTER({what} == \"…\"), or test it with IS_NOT_NULL({what})."))
}

/// `?x`, `?x.name`, `?x.attributes.<key>`, … as written, for messages.
pub(crate) fn path_text(p: &DotPath) -> String {
    match &p.field {
        PathField::Whole => format!("?{}", p.var),
        PathField::Id => format!("?{}.id", p.var),
        PathField::Type => format!("?{}.type", p.var),
        PathField::Name => format!("?{}.name", p.var),
        PathField::Subject => format!("?{}.subject", p.var),
        PathField::Predicate => format!("?{}.predicate", p.var),
        PathField::Object => format!("?{}.object", p.var),
        PathField::Attributes(None) => format!("?{}.attributes", p.var),
        PathField::Attributes(Some(k)) => format!("?{}.attributes.{k}", p.var),
        PathField::Metadata(None) => format!("?{}.metadata", p.var),
        PathField::Metadata(Some(k)) => format!("?{}.metadata.{k}", p.var),
    }
}

/// A column readable on any element row.
pub(crate) fn col_any(row: &Row, col: &str) -> String {
    match row {
        Row::Concept(a) | Row::Proposition(a) => format!("{a}.{col}"),
        Row::Either { concept, proposition } => format!("coalesce({concept}.{col}, {proposition}.{col})"),
    }
}

fn col_concept(row: &Row, col: &str) -> String {
    match row {
        Row::Concept(a) | Row::Either { concept: a, .. } => format!("{a}.{col}"),
        Row::Proposition(_) => "NULL::text".to_string(),
    }
}

fn prop_alias(row: &Row) -> Option<&str> {
    match row {
        Row::Proposition(a) | Row::Either { proposition: a, .. } => Some(a),
        Row::Concept(_) => None,
    }
}

/// External id (`C:<n>` / `P:<n>:<pred>`) of the element in `row`, as text.
pub(crate) fn ref_text(row: &Row) -> String {
    match row {
        Row::Concept(c) => format!("('C:' || {c}.id)"),
        Row::Proposition(p) => format!("('P:' || {p}.id || ':' || {p}.predicate)"),
        Row::Either { concept, proposition } => format!(
            "coalesce('C:' || {concept}.id, 'P:' || {proposition}.id || ':' || {proposition}.predicate)"
        ),
    }
}

/// The operand a dot path denotes.
pub(crate) fn path_operand(access: &mut dyn VarAccess, cx: &mut Cx, path: &DotPath) -> Result<Operand, KipError> {
    let var = access.var(&path.var).ok_or_else(|| unbound(&path.var))?;
    if var.kind == VarKind::Predicate {
        return match path.field {
            PathField::Whole => Ok(Operand::Text(var.expr)),
            _ => Err(KipError::new(
                ErrorCode::InvalidSyntax,
                format!("{} is not valid: ?{} binds a predicate name (a string), which has no fields", path_text(path), path.var),
            )
            .with_hint(format!("Use ?{} itself.", path.var))),
        };
    }
    if path.field == PathField::Whole {
        return Ok(Operand::Id(var.expr, var.kind));
    }
    let row = access.row(cx, &path.var).expect("element variables have rows");
    Ok(match &path.field {
        PathField::Whole => unreachable!(),
        PathField::Id => Operand::Text(ref_text(&row)),
        PathField::Type => Operand::Text(col_concept(&row, "type")),
        PathField::Name => Operand::Text(col_concept(&row, "name")),
        PathField::Predicate => match prop_alias(&row) {
            Some(p) => Operand::Text(format!("{p}.predicate")),
            None => Operand::Text("NULL::text".into()),
        },
        PathField::Subject | PathField::Object => {
            let side = if path.field == PathField::Subject { "subject" } else { "object" };
            match prop_alias(&row) {
                Some(p) => Operand::Text(format!("({})", endpoint_ref(p, side))),
                None => Operand::Text("NULL::text".into()),
            }
        }
        PathField::Attributes(None) => Operand::Object(col_any(&row, "attributes")),
        PathField::Attributes(Some(k)) => {
            Operand::Json(JsonSql::Key { container: col_any(&row, "attributes"), key: cx.params.text(k.clone()) })
        }
        PathField::Metadata(None) => Operand::Object(match &row {
            Row::Concept(a) | Row::Proposition(a) => metadata_json(a),
            Row::Either { concept, proposition } => format!(
                "CASE WHEN {concept}.id IS NOT NULL THEN {} ELSE {} END",
                metadata_json(concept),
                metadata_json(proposition)
            ),
        }),
        PathField::Metadata(Some(k)) => match k.as_str() {
            "_version" => Operand::Json(JsonSql::Expr(format!("to_jsonb({})", col_any(&row, "version")))),
            "_created_at" | "_updated_at" => {
                let col = col_any(&row, &k[1..]);
                Operand::Json(JsonSql::Expr(format!("CASE WHEN {col} IS NOT NULL THEN to_jsonb({}) END", iso_time(&col))))
            }
            _ => Operand::Json(JsonSql::Key { container: col_any(&row, "metadata"), key: cx.params.text(k.clone()) }),
        },
    })
}

fn operand(access: &mut dyn VarAccess, cx: &mut Cx, e: &Expr) -> Result<Operand, KipError> {
    match e {
        Expr::Value(v) => Ok(Operand::Lit(crate::compile::bound::value(v)?)),
        Expr::Path(p) => path_operand(access, cx, p),
        _ => Err(KipError::new(ErrorCode::InvalidSyntax, "a comparison operand must be a value or a dot path")
            .with_hint("Compare paths with values, e.g. ?x.attributes.level > 3; combine conditions with && and ||.")),
    }
}

/// `operand` as an SQL jsonb expression.
fn as_json(cx: &mut Cx, o: &Operand) -> String {
    match o {
        Operand::Lit(v) => cx.params.json(v.clone()),
        Operand::Text(t) => format!("to_jsonb({t})"),
        Operand::Json(j) => j.to_string(),
        Operand::Object(j) => j.clone(),
        Operand::Id(e, VarKind::Concept) => format!("to_jsonb('C:' || {e})"),
        Operand::Id(e, _) => format!("to_jsonb(kip.element_ref({}, {e}))", cx.space_sql),
    }
}

fn sql_op(op: CompareOp) -> &'static str {
    match op {
        CompareOp::Eq => "=",
        CompareOp::Ne => "<>",
        CompareOp::Lt => "<",
        CompareOp::Gt => ">",
        CompareOp::Le => "<=",
        CompareOp::Ge => ">=",
    }
}

fn flip(op: CompareOp) -> CompareOp {
    match op {
        CompareOp::Lt => CompareOp::Gt,
        CompareOp::Gt => CompareOp::Lt,
        CompareOp::Le => CompareOp::Ge,
        CompareOp::Ge => CompareOp::Le,
        o => o,
    }
}

fn ordering(op: CompareOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        CompareOp::Eq => ord == Equal,
        CompareOp::Ne => ord != Equal,
        CompareOp::Lt => ord == Less,
        CompareOp::Gt => ord == Greater,
        CompareOp::Le => ord != Greater,
        CompareOp::Ge => ord != Less,
    }
}

/// Compile-time evaluation of a comparison of two literals.
pub(crate) fn compare_values(op: CompareOp, a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Null, Json::Null) => op == CompareOp::Eq,
        (Json::Null, _) | (_, Json::Null) => op == CompareOp::Ne,
        (Json::Number(x), Json::Number(y)) => match x.as_f64().zip(y.as_f64()).and_then(|(x, y)| x.partial_cmp(&y)) {
            Some(o) => ordering(op, o),
            None => false,
        },
        (Json::String(x), Json::String(y)) => ordering(op, x.as_bytes().cmp(y.as_bytes())),
        (Json::Bool(x), Json::Bool(y)) => ordering(op, x.cmp(y)),
        (Json::Array(_), Json::Array(_)) | (Json::Object(_), Json::Object(_)) => match op {
            CompareOp::Eq => a == b,
            CompareOp::Ne => a != b,
            _ => false,
        },
        _ => false,
    }
}

fn bool_sql(b: bool) -> String {
    if b { "true".into() } else { "false".into() }
}

/// `a <op> b` with type guards.
fn compare(cx: &mut Cx, op: CompareOp, a: Operand, b: Operand) -> Result<String, KipError> {
    if let Operand::Object(_) = a {
        return Err(not_comparable("an attributes/metadata path"));
    }
    if let Operand::Object(_) = b {
        return Err(not_comparable("an attributes/metadata path"));
    }
    // Literal on the right.
    let (op, a, b) = match (&a, &b) {
        (Operand::Lit(_), r) if !matches!(r, Operand::Lit(_)) => (flip(op), b, a),
        _ => (op, a, b),
    };
    let o = sql_op(op);
    Ok(match (a, b) {
        (Operand::Lit(x), Operand::Lit(y)) => bool_sql(compare_values(op, &x, &y)),
        (a, Operand::Lit(Json::Null)) => match op {
            CompareOp::Eq => is_null(&a),
            CompareOp::Ne => format!("NOT {}", is_null(&a)),
            _ => "false".into(),
        },
        (Operand::Text(t), Operand::Lit(Json::String(s))) => {
            let p = cx.params.text(s);
            match op {
                CompareOp::Eq | CompareOp::Ne => format!("coalesce({t} {o} {p}, false)"),
                _ => format!("coalesce({t} COLLATE \"C\" {o} {p} COLLATE \"C\", false)"),
            }
        }
        (Operand::Text(_), Operand::Lit(_)) => "false".into(),
        (Operand::Text(x), Operand::Text(y)) => format!("coalesce({x} COLLATE \"C\" {o} {y} COLLATE \"C\", false)"),
        (Operand::Id(e, _), Operand::Lit(Json::String(s))) => match (parse_ref(&s), op) {
            (Some((_, n)), CompareOp::Eq | CompareOp::Ne) => format!("coalesce({e} {o} {}, false)", cx.params.int(n)),
            _ => "false".into(),
        },
        (Operand::Id(_, _), Operand::Lit(_)) => "false".into(),
        (Operand::Id(x, _), Operand::Id(y, _)) => format!("coalesce({x} {o} {y}, false)"),
        (Operand::Json(j), Operand::Lit(v)) => json_vs_literal(cx, op, &j, &v)?,
        (a, b) => {
            let (x, y) = (as_json(cx, &a), as_json(cx, &b));
            json_vs_json(op, &x, &y)
        }
    })
}

/// A JSON type that every solution's value of a dot path is known to have
/// (`typed_paths`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonType {
    Number,
    String,
    Boolean,
}

impl JsonType {
    /// The position of this type's key among a JSON value's sort keys
    /// (`projection::json_sort`: number, string, boolean).
    pub(crate) fn sort_key(self) -> usize {
        match self {
            JsonType::Number => 0,
            JsonType::String => 1,
            JsonType::Boolean => 2,
        }
    }
}

/// The attribute and metadata paths whose value has one JSON type in every
/// solution of `clauses`: those a FILTER of the top block (not inside
/// OPTIONAL, NOT or UNION, nor under `||` or `!`) compares with a number,
/// string or boolean literal. Such a comparison is false for a value of any
/// other type, `!=` included ([`json_vs_literal`]), so every solution that
/// passes it holds a value of the literal's type. A sort key on such a path
/// needs only that type's key (`projection::path_sort`): the others are
/// null in every row, and computing them was ~0.7 µs a row and key.
pub(crate) fn typed_paths(clauses: &[WhereClause]) -> Vec<(DotPath, JsonType)> {
    fn conjuncts(e: &Expr, out: &mut Vec<(DotPath, JsonType)>) {
        match e {
            Expr::And(items) => items.iter().for_each(|i| conjuncts(i, out)),
            Expr::Compare { left, right, .. } => {
                let ((Expr::Path(p), Expr::Value(v)) | (Expr::Value(v), Expr::Path(p))) = (&**left, &**right) else { return };
                if !matches!(p.field, PathField::Attributes(Some(_)) | PathField::Metadata(Some(_))) {
                    return;
                }
                let known = match crate::compile::bound::value(v) {
                    Ok(Json::Number(_)) => JsonType::Number,
                    Ok(Json::String(_)) => JsonType::String,
                    Ok(Json::Bool(_)) => JsonType::Boolean,
                    _ => return,
                };
                out.push((p.clone(), known));
            }
            _ => {}
        }
    }
    // A FILTER written before a UNION narrows only the block before it
    // (`pattern::block`), not the branch's solutions.
    let mut out = Vec::new();
    for clause in kip_lang::ast::after_last_union(clauses) {
        if let WhereClause::Filter(e) = clause {
            conjuncts(e, &mut out);
        }
    }
    out
}

fn json_vs_literal(cx: &mut Cx, op: CompareOp, j: &JsonSql, v: &Json) -> Result<String, KipError> {
    let o = sql_op(op);
    Ok(match v {
        Json::Number(n) => {
            let p = cx.params.numeric(n);
            format!("coalesce(CASE WHEN jsonb_typeof({j}) = 'number' THEN ({j})::numeric {o} {p} ELSE false END, false)")
        }
        Json::String(s) => {
            let p = cx.params.text(s.clone());
            let t = j.string_text();
            format!("coalesce(CASE WHEN jsonb_typeof({j}) = 'string' THEN {t} COLLATE \"C\" {o} {p} COLLATE \"C\" ELSE false END, false)")
        }
        Json::Bool(b) => {
            let p = cx.params.push(SqlParam::Bool(*b));
            format!("coalesce(CASE WHEN jsonb_typeof({j}) = 'boolean' THEN ({j})::boolean {o} {p}::boolean ELSE false END, false)")
        }
        Json::Null => unreachable!("handled by the caller"),
        Json::Array(_) | Json::Object(_) => match op {
            CompareOp::Eq | CompareOp::Ne => {
                let p = cx.params.json(v.clone());
                format!("coalesce(jsonb_typeof({j}) = jsonb_typeof({p}) AND {j} {o} {p}, false)")
            }
            _ => return Err(not_comparable("an array or object value")),
        },
    })
}

/// Two jsonb operands. A missing key (SQL NULL) is the JSON null it reads
/// as everywhere else: two null sides are equal (`==`, `<=`, `>=`), as
/// `?x.a == null` is true for a missing `a`, and a null beside any other
/// value is the comparison of two types, false.
fn json_vs_json(op: CompareOp, a: &str, b: &str) -> String {
    let (a, b) = (&format!("coalesce({a}, 'null'::jsonb)"), &format!("coalesce({b}, 'null'::jsonb)"));
    let o = sql_op(op);
    let on_null = bool_sql(op == CompareOp::Eq || op == CompareOp::Le || op == CompareOp::Ge);
    let composite = match op {
        CompareOp::Eq | CompareOp::Ne => format!("{a} {o} {b}"),
        _ => "false".into(),
    };
    format!(
        "coalesce(CASE WHEN jsonb_typeof({a}) IS DISTINCT FROM jsonb_typeof({b}) THEN false \
         WHEN jsonb_typeof({a}) = 'number' THEN ({a})::numeric {o} ({b})::numeric \
         WHEN jsonb_typeof({a}) = 'string' THEN ({a} #>> '{{}}') COLLATE \"C\" {o} ({b} #>> '{{}}') COLLATE \"C\" \
         WHEN jsonb_typeof({a}) = 'boolean' THEN ({a})::boolean {o} ({b})::boolean \
         WHEN jsonb_typeof({a}) = 'null' THEN {on_null} \
         ELSE {composite} END, false)"
    )
}

fn is_null(o: &Operand) -> String {
    match o {
        Operand::Lit(v) => bool_sql(v.is_null()),
        Operand::Json(j) => format!("({j} IS NULL OR {j} = 'null'::jsonb)"),
        Operand::Text(t) | Operand::Object(t) | Operand::Id(t, _) => format!("({t} IS NULL)"),
    }
}

/// A string operand as SQL text (NULL when it is not a string).
fn as_text(cx: &mut Cx, o: &Operand) -> Result<String, KipError> {
    Ok(match o {
        Operand::Lit(Json::String(s)) => cx.params.text(s.clone()),
        Operand::Lit(_) => "NULL::text".into(),
        Operand::Text(t) => t.clone(),
        Operand::Json(j) => format!("(CASE WHEN jsonb_typeof({j}) = 'string' THEN {} END)", j.string_text()),
        Operand::Id(e, VarKind::Concept) => format!("('C:' || {e})"),
        Operand::Id(e, _) => format!("kip.element_ref({}, {e})", cx.space_sql),
        Operand::Object(_) => return Err(not_comparable("an attributes/metadata path")),
    })
}

fn call(access: &mut dyn VarAccess, cx: &mut Cx, func: FilterFunc, args: &[Expr]) -> Result<String, KipError> {
    if args.len() != func.arity() {
        return Err(KipError::new(
            ErrorCode::InvalidSyntax,
            format!("{} takes {} argument(s), got {}", func.keyword(), func.arity(), args.len()),
        )
        .with_hint(format!("Write it as {}.", func.usage())));
    }
    let a = operand(access, cx, &args[0])?;
    match func {
        FilterFunc::IsNull => return Ok(is_null(&a)),
        FilterFunc::IsNotNull => return Ok(format!("NOT {}", is_null(&a))),
        _ => {}
    }
    let b = operand(access, cx, &args[1])?;
    if func == FilterFunc::In {
        return in_list(cx, a, b);
    }
    // A pattern, prefix or suffix is a string (CONTAINS may also look for
    // another value in an array): any other literal matched nothing. A
    // null (an optional parameter left out) still matches nothing.
    if let Operand::Lit(pattern) = &b {
        if func != FilterFunc::Contains && !pattern.is_string() && !pattern.is_null() {
            return Err(KipError::new(
                ErrorCode::InvalidSyntax,
                format!("{}'s second argument must be a string, got {}", func.keyword(), kip_lang::json_kind(pattern)),
            )
            .with_hint(format!("Write it as {}.", func.usage())));
        }
    }
    if let (Operand::Lit(x), Operand::Lit(y)) = (&a, &b) {
        match (func, x, y) {
            // Postgres's regular expressions, not Rust's: evaluated in SQL
            // (`resolve` validated the pattern).
            (FilterFunc::Regex, Json::String(_), Json::String(_)) => {}
            _ => return Ok(bool_sql(fold_string_func(func, x, y))),
        }
    }
    let bt = as_text(cx, &b)?;
    if func == FilterFunc::Contains {
        if let Operand::Json(j) = &a {
            // CONTAINS also tests membership in an array value.
            let (bj, t) = (as_json(cx, &b), j.string_text());
            return Ok(format!(
                "coalesce(CASE jsonb_typeof({j}) WHEN 'string' THEN strpos({t}, {bt}) > 0 \
                 WHEN 'array' THEN {j} @> jsonb_build_array({bj}) ELSE false END, false)"
            ));
        }
    }
    let at = as_text(cx, &a)?;
    Ok(match func {
        FilterFunc::Contains => format!("coalesce(strpos({at}, {bt}) > 0, false)"),
        FilterFunc::StartsWith => format!("coalesce(starts_with({at}, {bt}), false)"),
        FilterFunc::EndsWith => format!("coalesce(right({at}, length({bt})) = {bt}, false)"),
        FilterFunc::Regex => format!("coalesce({at} ~ {bt}, false)"),
        _ => unreachable!(),
    })
}

fn fold_string_func(func: FilterFunc, a: &Json, b: &Json) -> bool {
    let (Json::String(a), Json::String(b)) = (a, b) else { return false };
    match func {
        FilterFunc::Contains => a.contains(b.as_str()),
        FilterFunc::StartsWith => a.starts_with(b.as_str()),
        FilterFunc::EndsWith => a.ends_with(b.as_str()),
        _ => false,
    }
}

fn in_list(cx: &mut Cx, a: Operand, list: Operand) -> Result<String, KipError> {
    let Operand::Lit(Json::Array(items)) = list else {
        return Err(KipError::new(ErrorCode::InvalidSyntax, "IN expects a list of values as its second argument")
            .with_hint("Write IN(?x.attributes.k, [\"a\", \"b\"]) or pass a JSON array parameter."));
    };
    // `null` in the list matches what `== null` matches: an absent value, an
    // unbound OPTIONAL variable, or an explicit null (RC10 §3.4.3).
    let null_test = match &a {
        Operand::Lit(_) | Operand::Object(_) => None,
        other if items.iter().any(Json::is_null) => Some(is_null(other)),
        _ => None,
    };
    let listed = match a {
        Operand::Lit(v) => bool_sql(items.iter().any(|i| compare_values(CompareOp::Eq, &v, i))),
        Operand::Object(_) => return Err(not_comparable("an attributes/metadata path")),
        Operand::Text(t) => {
            let strings: Vec<String> = items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect();
            let p = cx.params.push(SqlParam::TextArray(strings));
            format!("coalesce({t} = ANY({p}::text[]), false)")
        }
        Operand::Id(e, _) => {
            let ids: Vec<i64> = items.iter().filter_map(|i| i.as_str().and_then(parse_ref)).map(|(_, n)| n).collect();
            let p = cx.params.push(SqlParam::IntArray(ids));
            format!("coalesce({e} = ANY({p}::bigint[]), false)")
        }
        Operand::Json(j) => {
            let p = cx.params.json(Json::Array(items));
            format!(
                "coalesce(jsonb_typeof({j}) NOT IN ('array', 'object') AND {p} @> jsonb_build_array({j}), false)"
            )
        }
    };
    Ok(match null_test {
        Some(test) => format!("({listed} OR {test})"),
        None => listed,
    })
}

/// A FILTER expression as an SQL boolean (never NULL).
pub(crate) fn compile_filter(access: &mut dyn VarAccess, cx: &mut Cx, e: &Expr) -> Result<String, KipError> {
    Ok(match e {
        Expr::Value(v) => match crate::compile::bound::value(v)? {
            Json::Bool(b) => bool_sql(b),
            // A parameter may carry no flag: no condition holds.
            Json::Null => bool_sql(false),
            other => {
                return Err(KipError::new(
                    ErrorCode::InvalidSyntax,
                    format!("{} is {}, not a condition: a FILTER needs true or false", other, kip_lang::json_kind(&other)),
                )
                .with_hint("Compare a value with a field, e.g. FILTER(?x.attributes.<key> == …)."))
            }
        },
        Expr::Path(p) => match path_operand(access, cx, p)? {
            Operand::Json(j) => format!("coalesce({j} = 'true'::jsonb, false)"),
            Operand::Object(_) => return Err(not_comparable(&path_text(p))),
            // A name, type, id, predicate or endpoint is a string: never
            // the true a condition needs.
            Operand::Text(_) => return Err(not_a_condition(&path_text(p))),
            other => format!("NOT {}", is_null(&other)),
        },
        Expr::Not(inner) => format!("(NOT {})", compile_filter(access, cx, inner)?),
        Expr::And(items) | Expr::Or(items) => {
            let joiner = if matches!(e, Expr::And(_)) { " AND " } else { " OR " };
            let parts = items.iter().map(|i| compile_filter(access, cx, i)).collect::<Result<Vec<_>, _>>()?;
            format!("({})", parts.join(joiner))
        }
        Expr::Compare { op, left, right } => {
            if let Some((id, literal)) = short_id_comparison(access, cx, *op, left, right) {
                return compare(cx, *op, id, literal);
            }
            let equality = match (op, &**left, &**right) {
                (CompareOp::Eq, Expr::Path(p), Expr::Value(v)) | (CompareOp::Eq, Expr::Value(v), Expr::Path(p)) => {
                    Some((p, crate::compile::bound::value(v)?))
                }
                _ => None,
            };
            if let Some((p, value)) = &equality {
                if let Some(containment) = attribute_containment(access, cx, p, std::slice::from_ref(value)) {
                    return Ok(containment_alone(&containment));
                }
            }
            let a = operand(access, cx, left)?;
            let b = operand(access, cx, right)?;
            let exact = compare(cx, *op, a, b)?;
            let candidates = match (op, &**left, &**right) {
                // `== null` passes the absent value.
                (CompareOp::Eq, ..) => match equality {
                    Some((p, value)) if value != Json::Null => expiring_candidate(access, cx, p),
                    _ => None,
                },
                // An order with a value other than null passes only a value.
                (CompareOp::Lt | CompareOp::Le | CompareOp::Gt | CompareOp::Ge, Expr::Path(p), Expr::Value(v))
                | (CompareOp::Lt | CompareOp::Le | CompareOp::Gt | CompareOp::Ge, Expr::Value(v), Expr::Path(p))
                    if crate::compile::bound::value(v)? != Json::Null =>
                {
                    expiring_candidate(access, cx, p)
                }
                _ => None,
            };
            with_candidates(candidates, exact)
        }
        Expr::Call { func: FilterFunc::In, args } if args.len() == 2 => {
            if let (Expr::Path(p), Expr::Value(v)) = (&args[0], &args[1]) {
                if let Json::Array(items) = crate::compile::bound::value(v)? {
                    if let Some(containment) = attribute_containment(access, cx, p, &items) {
                        return Ok(containment_alone(&containment));
                    }
                    if let Some(sql) = in_with_short_ids(access, cx, p, &items)? {
                        return Ok(sql);
                    }
                }
            }
            format!("({})", call(access, cx, FilterFunc::In, args)?)
        }
        Expr::Call { func: FilterFunc::IsNotNull, args } if args.len() == 1 => {
            let exact = format!("({})", call(access, cx, FilterFunc::IsNotNull, args)?);
            let candidates = match &args[0] {
                Expr::Path(p) => expiring_candidate(access, cx, p),
                _ => None,
            };
            with_candidates(candidates, exact)
        }
        Expr::Call { func, args } => format!("({})", call(access, cx, *func, args)?),
    })
}

/// For a condition that only an element whose `metadata.expires_at` is set
/// passes (`IS_NOT_NULL` of it, or its comparison with a value other than
/// null, `!=` aside): the row's `expires_at IS NOT NULL`, which the partial
/// indexes `concepts_expiring_idx` / `propositions_expiring_idx` serve.
/// `expires_at` is the stored column `metadata ->> 'expires_at'`, null
/// exactly when the key is absent or JSON null, as `IS_NULL` sees it; so
/// the condition changes no result, and a sweep for expired links
/// (`FILTER(?l.metadata.expires_at < :now)`) reads the few that expire
/// instead of every link of its predicate. `None` for other paths, and for
/// an element variable of either kind (a `coalesce` of both rows, which no
/// index serves).
fn expiring_candidate(access: &mut dyn VarAccess, cx: &mut Cx, path: &DotPath) -> Option<String> {
    let PathField::Metadata(Some(key)) = &path.field else { return None };
    if key != "expires_at" {
        return None;
    }
    match access.row(cx, &path.var)? {
        Row::Concept(a) | Row::Proposition(a) => Some(format!("{a}.expires_at IS NOT NULL")),
        Row::Either { .. } => None,
    }
}

/// `?x.id == "P:92"` (or `!=`): an id written without its predicate, as clauses
/// accept it (`(id: "P:92")`), against an element of that kind compares
/// the numeric id; `?x.id` is otherwise the full text `P:92:treats`. The
/// pair is (the variable's id, the literal).
fn short_id_comparison(access: &mut dyn VarAccess, cx: &mut Cx, op: CompareOp, left: &Expr, right: &Expr) -> Option<(Operand, Operand)> {
    if !matches!(op, CompareOp::Eq | CompareOp::Ne) {
        return None;
    }
    let (path, value) = match (left, right) {
        (Expr::Path(p), Expr::Value(v)) | (Expr::Value(v), Expr::Path(p)) => (p, v),
        _ => return None,
    };
    let Ok(Json::String(text)) = crate::compile::bound::value(value) else { return None };
    short_id(access, cx, path, &text).map(|id| (id, Operand::Lit(Json::String(text))))
}

/// The numeric id `path` holds, to compare with `text` when `text` is an id
/// of the path's kind (`C:<n>`, or `P:<n>` without its predicate): `?x.id`,
/// and a link's `?l.subject` / `?l.object`, which name the same element
/// with the same short id. `==`, `!=` and `IN` compare so, each item of an
/// IN list as `==` would (`IN(?l.id, ["P:92"])` is `?l.id == "P:92"`).
fn short_id(access: &mut dyn VarAccess, cx: &mut Cx, path: &DotPath, text: &str) -> Option<Operand> {
    use crate::compile::ids::ElementKind;
    if !matches!(path.field, PathField::Id | PathField::Subject | PathField::Object) {
        return None;
    }
    let parsed = crate::compile::ids::parse(text).ok()?;
    parsed.id?;
    if parsed.kind == ElementKind::Proposition && parsed.predicate.is_some() {
        return None;
    }
    let var = access.var(&path.var)?;
    if path.field == PathField::Id {
        // Ids are one sequence over both kinds, so the number names the
        // element of a variable that may be either (an endpoint `?o`).
        let same_kind = match parsed.kind {
            ElementKind::Concept => matches!(var.kind, VarKind::Concept | VarKind::Element),
            ElementKind::Proposition => matches!(var.kind, VarKind::Proposition | VarKind::Element),
        };
        return same_kind.then_some(Operand::Id(var.expr, var.kind));
    }
    if !matches!(var.kind, VarKind::Proposition | VarKind::Element) {
        return None;
    }
    let row = access.row(cx, &path.var)?;
    let link = prop_alias(&row)?;
    let side = if path.field == PathField::Subject { "subject" } else { "object" };
    // The endpoint column of the other kind is null: 0 (never an id) when
    // the link is there, so that `!=` holds for an endpoint of the other
    // kind; null without a link (an unbound variable), as for any path.
    let column = match parsed.kind {
        ElementKind::Concept => format!("{side}_concept"),
        ElementKind::Proposition => format!("{side}_link"),
    };
    Some(Operand::Id(format!("(CASE WHEN {link}.id IS NOT NULL THEN coalesce({link}.{column}, 0) END)"), var.kind))
}

/// `IN(path, [...])` where some items are short ids of the path's kind
/// ([`short_id`]): those items compared as `==` compares them, the rest as
/// IN does. `None` when no item is one.
fn in_with_short_ids(access: &mut dyn VarAccess, cx: &mut Cx, path: &DotPath, items: &[Json]) -> Result<Option<String>, KipError> {
    let mut short = Vec::new();
    let mut rest = Vec::new();
    for item in items {
        match item.as_str().and_then(|t| short_id(access, cx, path, t)) {
            Some(id) => short.push((id, item.clone())),
            None => rest.push(item.clone()),
        }
    }
    if short.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for (id, literal) in short {
        parts.push(compare(cx, CompareOp::Eq, id, Operand::Lit(literal))?);
    }
    if !rest.is_empty() {
        let operand = path_operand(access, cx, path)?;
        parts.push(in_list(cx, operand, Operand::Lit(Json::Array(rest)))?);
    }
    Ok(Some(format!("({})", parts.join(" OR "))))
}

/// `(candidates AND exact)`, or `(exact)` alone.
fn with_candidates(candidates: Option<String>, exact: String) -> String {
    match candidates {
        Some(c) => format!("({c} AND {exact})"),
        None => format!("({exact})"),
    }
}

/// The condition of an attribute containment alone, as a definite boolean:
/// the bare containment for the GIN index (a condition under `coalesce` is
/// one no index serves), and its `coalesce` for the answer, false rather
/// than NULL on a row an outer join left empty, so that `!` negates it
/// exactly. On a bitmap scan whose pages are exact the bare one is not
/// evaluated again.
fn containment_alone(containment: &str) -> String {
    format!("({containment} AND coalesce({containment}, false))")
}

/// For `?c.attributes.k == v` (or `IN(?c.attributes.k, [v, …])`) on a concept
/// row, with scalar values: `c.attributes @> '{"k": v}'` (or `@> ANY` of one
/// object per value), which the GIN index `concepts_attributes_idx` serves.
/// It is the exact comparison itself: jsonb containment of an object of one
/// scalar holds when the key's value is that scalar, numbers by value,
/// strings byte-wise, booleans, and not when the value is an array or an
/// object holding it (`{"k": [5]}` does not contain `{"k": 5}`), which is
/// KIP's `==` (and `IN` of scalars). The type-guarded comparison beside it
/// cost ~0.3 µs a candidate row (a FIND over the thousand Items of a value
/// 2.07 → 1.80 ms). `None` when the path is something else.
fn attribute_containment(access: &mut dyn VarAccess, cx: &mut Cx, path: &DotPath, values: &[Json]) -> Option<String> {
    let PathField::Attributes(Some(key)) = &path.field else { return None };
    if values.is_empty() || !values.iter().all(|v| matches!(v, Json::Number(_) | Json::String(_) | Json::Bool(_))) {
        return None;
    }
    let var = access.var(&path.var)?;
    if var.kind != VarKind::Concept {
        return None;
    }
    let Some(Row::Concept(alias)) = access.row(cx, &path.var) else { return None };
    let objects: Vec<Json> = values.iter().map(|v| serde_json::json!({ key.clone(): v.clone() })).collect();
    cx.value_dependent = true;
    Some(match objects.as_slice() {
        [one] => format!("{alias}.attributes @> {}", cx.params.json(one.clone())),
        _ => {
            let p = cx.params.json(Json::Array(objects));
            format!("{alias}.attributes @> ANY (ARRAY(SELECT jsonb_array_elements({p})))")
        }
    })
}

//! Placeholder binding: replace `:name` nodes of the AST by JSON values.
//!
//! Binding works on the tree, never on text, so a value can never change
//! the structure of a command (no injection) and a `:name` inside a quoted
//! string stays literal text. Each placeholder position knows what kind of
//! value it accepts ([`Slot`]); a wrong kind is a `KIP_1001` naming the
//! parameter. Parameters that the script does not use are ignored (a batch
//! shares one `parameters` object between commands).

use crate::ast::*;
use crate::error::KipError;
use serde_json::Map;
use crate::depth::MAX_VALUE_DEPTH;

/// A placeholder position, with the kind of value it accepts.
enum Slot<'a> {
    /// A string position; `&str` says what it is, for messages.
    Str(&'a mut StrArg, &'static str),
    /// A non-negative integer (LIMIT, EXPECT VERSION).
    UInt(&'a mut UIntArg, &'static str),
    /// SEARCH THRESHOLD, a number in [0, 1].
    Threshold(&'a mut NumArg),
    /// SEARCH MODE.
    Mode(&'a mut Bindable<SearchMode>),
    /// Any JSON value (placeholders may be nested inside arrays/objects).
    Value(&'a mut ValueOrParam),
    /// The list argument of `IN(…)`.
    List(&'a mut ValueOrParam),
}

type Visit<'f> = dyn FnMut(Slot<'_>) -> Result<(), KipError> + 'f;

pub(crate) fn bind_script(
    mut script: Script,
    params: &Map<String, Json>,
) -> Result<Script, KipError> {
    walk_script(&mut script, &mut |slot| bind_slot(slot, params))?;
    Ok(script)
}

pub(crate) fn collect_params(script: &Script) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |n: &str| {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    };
    // The walker needs `&mut`; inspecting a clone keeps this API read-only.
    let mut copy = script.clone();
    let _ = walk_script(&mut copy, &mut |slot| {
        match slot {
            Slot::Str(Bindable::Param(n), _) | Slot::UInt(Bindable::Param(n), _) => add(n),
            Slot::Threshold(Bindable::Param(n)) | Slot::Mode(Bindable::Param(n)) => add(n),
            Slot::Value(v) | Slot::List(v) => value_params(v, &mut add),
            _ => {}
        }
        Ok(())
    });
    names
}

fn value_params(v: &ValueOrParam, add: &mut impl FnMut(&str)) {
    match v {
        ValueOrParam::Value(_) => {}
        ValueOrParam::Param(n) => add(n),
        ValueOrParam::Array(items) => items.iter().for_each(|i| value_params(i, add)),
        ValueOrParam::Object(fields) => fields.iter().for_each(|f| value_params(&f.value, add)),
    }
}

// ---------------------------------------------------------------- binding --

fn lookup<'p>(name: &str, params: &'p Map<String, Json>) -> Result<&'p Json, KipError> {
    params.get(name).ok_or_else(|| {
        KipError::syntax(format!("missing parameter :{name}")).with_hint(format!(
            "Provide it in `parameters`, e.g. {{\"{name}\": …}}."
        ))
    })
}

fn wrong_kind(name: &str, expected: &str, got: &Json) -> KipError {
    KipError::syntax(format!(
        "parameter :{name} must be {expected}, got {}",
        kind_of(got)
    ))
    .with_hint(format!(
        "Change the value of \"{name}\" in `parameters`: this position takes {expected}."
    ))
}

/// "a number", "a string", … : a JSON value's kind, for messages.
pub fn kind_of(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn bind_slot(slot: Slot<'_>, params: &Map<String, Json>) -> Result<(), KipError> {
    match slot {
        Slot::Str(arg, what) => {
            if let Bindable::Param(n) = arg {
                match lookup(n, params)? {
                    Json::String(s) => *arg = Bindable::Lit(s.clone()),
                    other => return Err(wrong_kind(n, &format!("a string ({what})"), other)),
                }
            }
        }
        Slot::UInt(arg, what) => {
            if let Bindable::Param(n) = arg {
                let v = lookup(n, params)?;
                let int = v.as_u64().or_else(|| {
                    // Accept 10.0 from JSON encoders that emit floats.
                    v.as_f64()
                        .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f <= u64::MAX as f64)
                        .map(|f| f as u64)
                });
                match int {
                    Some(i) => *arg = Bindable::Lit(i),
                    None => {
                        return Err(wrong_kind(
                            n,
                            &format!("a non-negative integer ({what})"),
                            v,
                        ))
                    }
                }
            }
        }
        Slot::Threshold(arg) => {
            if let Bindable::Param(n) = arg {
                let v = lookup(n, params)?;
                match v.as_f64() {
                    Some(f) if (0.0..=1.0).contains(&f) => *arg = Bindable::Lit(f),
                    Some(f) => {
                        return Err(KipError::syntax(format!(
                            "parameter :{n} (THRESHOLD) must be between 0 and 1, got {f}"
                        ))
                        .with_hint(format!("Set \"{n}\" in `parameters` to a score from 0 to 1, e.g. 0.5.")))
                    }
                    None => return Err(wrong_kind(n, "a number (THRESHOLD)", v)),
                }
            }
        }
        Slot::Mode(arg) => {
            if let Bindable::Param(n) = arg {
                let v = lookup(n, params)?;
                match v.as_str().and_then(SearchMode::from_name) {
                    Some(m) => *arg = Bindable::Lit(m),
                    None => {
                        return Err(KipError::syntax(format!(
                            "parameter :{n} (MODE) must be \"keyword\", \"semantic\" or \"hybrid\", got {v}"
                        ))
                        .with_hint(format!("Set \"{n}\" in `parameters` to one of \"keyword\", \"semantic\" or \"hybrid\".")))
                    }
                }
            }
        }
        Slot::Value(v) => {
            bind_value(v, params)?;
            check_depth(v)?;
        }
        Slot::List(v) => {
            if let ValueOrParam::Param(n) = v {
                let got = lookup(n, params)?;
                if !got.is_array() {
                    return Err(wrong_kind(n, "an array (IN list)", got));
                }
            }
            bind_value(v, params)?;
            check_depth(v)?;
        }
    }
    Ok(())
}

/// KIP_1001 for a bound value nested deeper than [`MAX_VALUE_DEPTH`].
fn check_depth(v: &ValueOrParam) -> Result<(), KipError> {
    let depth = value_depth(v);
    if depth > MAX_VALUE_DEPTH {
        return Err(KipError::syntax(format!("a value nests {depth} levels deep; at most {MAX_VALUE_DEPTH} are allowed"))
            .with_hint(format!("Flatten the value: a value (an attribute, a metadata value, a literal) may nest at most {MAX_VALUE_DEPTH} levels of arrays and objects.")));
    }
    Ok(())
}

/// Levels of arrays and objects: a scalar is 0, `[1]` is 1.
fn value_depth(v: &ValueOrParam) -> usize {
    fn json_depth(j: &Json) -> usize {
        match j {
            Json::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
            Json::Object(map) => 1 + map.values().map(json_depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    match v {
        ValueOrParam::Value(j) => json_depth(j),
        ValueOrParam::Param(_) => 0,
        ValueOrParam::Array(items) => 1 + items.iter().map(value_depth).max().unwrap_or(0),
        ValueOrParam::Object(fields) => 1 + fields.iter().map(|f| value_depth(&f.value)).max().unwrap_or(0),
    }
}

fn bind_value(v: &mut ValueOrParam, params: &Map<String, Json>) -> Result<(), KipError> {
    let bound = match std::mem::replace(v, ValueOrParam::Value(Json::Null)) {
        ValueOrParam::Value(j) => ValueOrParam::Value(j),
        ValueOrParam::Param(n) => ValueOrParam::Value(lookup(&n, params)?.clone()),
        ValueOrParam::Array(mut items) => {
            for i in &mut items {
                bind_value(i, params)?;
            }
            ValueOrParam::array(items)
        }
        ValueOrParam::Object(mut fields) => {
            for f in &mut fields {
                bind_value(&mut f.value, params)?;
            }
            ValueOrParam::object(fields)
        }
    };
    *v = bound;
    Ok(())
}

// ----------------------------------------------------------------- walker --
// Visits every placeholder position in source order.

fn walk_script(s: &mut Script, f: &mut Visit<'_>) -> Result<(), KipError> {
    for c in &mut s.commands {
        walk_command(c, f)?;
    }
    Ok(())
}

fn walk_command(c: &mut Command, f: &mut Visit<'_>) -> Result<(), KipError> {
    match c {
        Command::Find(q) => {
            walk_where(&mut q.where_clauses, f)?;
            walk_page(&mut q.limit, &mut q.cursor, f)
        }
        Command::Upsert(u) => {
            for item in &mut u.items {
                match item {
                    UpsertItem::Concept(b) => {
                        walk_selector(&mut b.identity, f)?;
                        walk_uint(&mut b.expect_version, "EXPECT VERSION", f)?;
                        walk_fields(&mut b.set_attributes, f)?;
                        for sp in b.set_propositions.iter_mut().flatten() {
                            f(Slot::Str(&mut sp.predicate, "a predicate"))?;
                            walk_endpoint(&mut sp.target, f)?;
                            walk_fields(&mut sp.metadata, f)?;
                        }
                        walk_fields(&mut b.metadata, f)?;
                    }
                    UpsertItem::Proposition(b) => {
                        walk_prop(&mut b.identity, f)?;
                        walk_uint(&mut b.expect_version, "EXPECT VERSION", f)?;
                        walk_fields(&mut b.set_attributes, f)?;
                        walk_fields(&mut b.metadata, f)?;
                    }
                }
            }
            walk_fields(&mut u.metadata, f)
        }
        Command::Update(u) => {
            for field in u
                .set_attributes
                .iter_mut()
                .chain(u.set_metadata.iter_mut())
                .flatten()
            {
                walk_update_expr(&mut field.value, f)?;
            }
            walk_where(&mut u.where_clauses, f)?;
            walk_uint(&mut u.limit, "LIMIT", f)
        }
        Command::Merge(m) => walk_where(&mut m.where_clauses, f),
        Command::Delete(d) => match d {
            Delete::Attributes {
                keys,
                where_clauses,
                ..
            }
            | Delete::Metadata {
                keys,
                where_clauses,
                ..
            } => {
                for k in keys {
                    f(Slot::Str(k, "a key"))?;
                }
                walk_where(where_clauses, f)
            }
            Delete::Propositions { where_clauses, .. } | Delete::Concept { where_clauses, .. } => {
                walk_where(where_clauses, f)
            }
        },
        Command::Describe(d) => match d {
            Describe::Primer | Describe::Domains => Ok(()),
            Describe::ConceptTypes { limit, cursor }
            | Describe::PropositionTypes { limit, cursor } => walk_page(limit, cursor, f),
            Describe::ConceptType(name) => f(Slot::Str(name, "a concept type name")),
            Describe::PropositionType(name) => f(Slot::Str(name, "a predicate")),
        },
        Command::Search(s) => {
            f(Slot::Str(&mut s.term, "a search term"))?;
            if let Some(t) = &mut s.with_type {
                f(Slot::Str(t, "a type name"))?;
            }
            if let Some(m) = &mut s.mode {
                f(Slot::Mode(m))?;
            }
            if let Some(t) = &mut s.threshold {
                f(Slot::Threshold(t))?;
            }
            walk_uint(&mut s.limit, "LIMIT", f)
        }
        Command::Export(e) => {
            walk_where(&mut e.where_clauses, f)?;
            walk_page(&mut e.limit, &mut e.cursor, f)
        }
    }
}

fn walk_page(
    limit: &mut Option<UIntArg>,
    cursor: &mut Option<StrArg>,
    f: &mut Visit<'_>,
) -> Result<(), KipError> {
    walk_uint(limit, "LIMIT", f)?;
    if let Some(c) = cursor {
        f(Slot::Str(c, "a CURSOR token"))?;
    }
    Ok(())
}

fn walk_uint(
    v: &mut Option<UIntArg>,
    what: &'static str,
    f: &mut Visit<'_>,
) -> Result<(), KipError> {
    match v {
        Some(v) => f(Slot::UInt(v, what)),
        None => Ok(()),
    }
}

fn walk_fields(fields: &mut Option<Fields>, f: &mut Visit<'_>) -> Result<(), KipError> {
    for field in fields.iter_mut().flatten() {
        f(Slot::Value(&mut field.value))?;
    }
    Ok(())
}

fn walk_where(clauses: &mut [WhereClause], f: &mut Visit<'_>) -> Result<(), KipError> {
    for c in clauses {
        match c {
            WhereClause::Concept { selector, .. } => walk_selector(selector, f)?,
            WhereClause::Proposition { pattern, .. } => walk_prop(pattern, f)?,
            WhereClause::Filter(e) => walk_expr(e, f)?,
            WhereClause::Optional(b) | WhereClause::Not(b) | WhereClause::Union(b) => {
                walk_where(b, f)?
            }
        }
    }
    Ok(())
}

fn walk_selector(s: &mut ConceptSelector, f: &mut Visit<'_>) -> Result<(), KipError> {
    match s {
        ConceptSelector::Id(id) => f(Slot::Str(id, "an id")),
        ConceptSelector::TypeName { type_name, name } => {
            f(Slot::Str(type_name, "a concept type name"))?;
            f(Slot::Str(name, "a concept name"))
        }
        ConceptSelector::Type(t) => f(Slot::Str(t, "a concept type name")),
        ConceptSelector::Name(n) => f(Slot::Str(n, "a concept name")),
    }
}

fn walk_prop(p: &mut PropPattern, f: &mut Visit<'_>) -> Result<(), KipError> {
    match p {
        PropPattern::Id(id) => f(Slot::Str(id, "an id")),
        PropPattern::Triple(t) => {
            walk_endpoint(&mut t.subject, f)?;
            match &mut t.predicate {
                Predicate::Literal(p) => f(Slot::Str(p, "a predicate"))?,
                Predicate::Alternatives(ps) | Predicate::Hops { predicates: ps, .. } => {
                    for p in ps {
                        f(Slot::Str(p, "a predicate"))?;
                    }
                }
                Predicate::Var(_) => {}
            }
            walk_endpoint(&mut t.object, f)
        }
    }
}

fn walk_endpoint(e: &mut Endpoint, f: &mut Visit<'_>) -> Result<(), KipError> {
    match e {
        Endpoint::Var(_) => Ok(()),
        Endpoint::Concept(s) => walk_selector(s, f),
        Endpoint::Proposition(p) => walk_prop(p, f),
        Endpoint::Id(id) => f(Slot::Str(id, "an id")),
    }
}

fn walk_expr(e: &mut Expr, f: &mut Visit<'_>) -> Result<(), KipError> {
    match e {
        Expr::Value(v) => f(Slot::Value(v)),
        Expr::Path(_) => Ok(()),
        Expr::Not(x) => walk_expr(x, f),
        Expr::And(xs) | Expr::Or(xs) => xs.iter_mut().try_for_each(|x| walk_expr(x, f)),
        Expr::Compare { left, right, .. } => {
            walk_expr(left, f)?;
            walk_expr(right, f)
        }
        Expr::Call { func, args } => {
            for (i, a) in args.iter_mut().enumerate() {
                match a {
                    Expr::Value(v) if *func == FilterFunc::In && i == 1 => f(Slot::List(v))?,
                    _ => walk_expr(a, f)?,
                }
            }
            Ok(())
        }
    }
}

fn walk_update_expr(e: &mut UpdateExpr, f: &mut Visit<'_>) -> Result<(), KipError> {
    match e {
        UpdateExpr::Value(v) => f(Slot::Value(v)),
        UpdateExpr::Path(_) => Ok(()),
        UpdateExpr::Call { args, .. } => args.iter_mut().try_for_each(|a| walk_update_expr(a, f)),
    }
}

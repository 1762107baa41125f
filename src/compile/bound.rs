//! The one reader of bound AST values, for the compiler and the executors.
//! `kip_lang::bind` resolves every placeholder (a missing parameter is
//! `KIP_1001` there); meeting one afterwards is an engine bug, reported as
//! `KIP_4003` rather than a panic.

use kip_lang::ast::{Bindable, Field, StrArg, UIntArg, ValueOrParam};
use kip_lang::{ErrorCode, KipError};
use serde_json::{Map, Value};

fn unbound(name: &str) -> KipError {
    KipError::new(ErrorCode::InternalError, format!("parameter :{name} reached execution unbound"))
}

/// The literal of a bound position.
pub fn lit<T: Clone>(arg: &Bindable<T>) -> Result<T, KipError> {
    match arg {
        Bindable::Lit(v) => Ok(v.clone()),
        Bindable::Param(p) => Err(unbound(p)),
    }
}

/// The literal of an optional bound position (`LIMIT`, `CURSOR`).
pub fn opt_lit<T: Clone>(arg: &Option<Bindable<T>>) -> Result<Option<T>, KipError> {
    arg.as_ref().map(lit).transpose()
}

pub fn lit_str(arg: &StrArg) -> Result<&str, KipError> {
    match arg {
        Bindable::Lit(s) => Ok(s),
        Bindable::Param(p) => Err(unbound(p)),
    }
}

pub fn lit_u64(arg: &UIntArg) -> Result<u64, KipError> {
    match arg {
        Bindable::Lit(n) => Ok(*n),
        Bindable::Param(p) => Err(unbound(p)),
    }
}

pub fn value(v: &ValueOrParam) -> Result<Value, KipError> {
    match v {
        ValueOrParam::Value(v) => Ok(v.clone()),
        ValueOrParam::Param(p) => Err(unbound(p)),
        ValueOrParam::Array(items) => Ok(Value::Array(items.iter().map(value).collect::<Result<_, _>>()?)),
        ValueOrParam::Object(fields) => Ok(Value::Object(object(fields)?)),
    }
}

/// `{k: v, …}` entries as a JSON object; a repeated key takes the last value.
pub fn object(fields: &[Field]) -> Result<Map<String, Value>, KipError> {
    let mut map = Map::new();
    for f in fields {
        map.insert(f.key.clone(), value(&f.value)?);
    }
    Ok(map)
}

/// Optional entries (`SET ATTRIBUTES`, `WITH METADATA`) as an object.
pub fn optional_object(fields: Option<&[Field]>) -> Result<Map<String, Value>, KipError> {
    fields.map_or_else(|| Ok(Map::new()), object)
}

/// Metadata precedence (RC10 §2.10): `inner` shallow-merges over `outer`,
/// key by key; inner keys win, including those whose value is `null`.
pub fn layered(outer: &Map<String, Value>, inner: Option<&[Field]>) -> Result<Map<String, Value>, KipError> {
    let mut merged = outer.clone();
    if let Some(fields) = inner {
        for f in fields {
            merged.insert(f.key.clone(), value(&f.value)?);
        }
    }
    Ok(merged)
}

//! A `jsonb` argument read by kip itself.
//!
//! pgrx's `JsonB` parses the argument with serde before the function body
//! runs and panics when serde refuses it, e.g. for a value nested deeper
//! than serde's recursion limit (128), which `jsonb` itself accepts. That
//! panic becomes a Postgres ERROR instead of a KIP envelope. `JsonbArg`
//! reads the value with Postgres's jsonb iterator (`exec::jsonb`), and
//! keeps the text form of a value too deep for that;
//! [`JsonbArg::parse`] turns serde's refusal of it into `KIP_1001` naming
//! the limit.

use kip_lang::{ErrorCode, KipError};
use pgrx::callconv::{Arg, ArgAbi};
use pgrx::nullable::Nullable;
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::FromDatum;
use serde_json::Value;

/// How deep a JSON parameter may nest: serde_json's recursion limit.
pub const MAX_JSON_DEPTH: usize = 128;

/// A `jsonb` argument: its value, or the text of one too deep to read.
pub enum JsonbArg {
    Value(Value),
    Text(String),
}

impl JsonbArg {
    /// The argument as a JSON value; `what` names it in errors.
    pub fn parse(self, what: &str) -> Result<Value, KipError> {
        let text = match self {
            JsonbArg::Value(v) => return Ok(v),
            JsonbArg::Text(t) => t,
        };
        serde_json::from_str(&text).map_err(|e| {
            let message = if e.to_string().contains("recursion limit") {
                format!("{what} nest deeper than {MAX_JSON_DEPTH} levels")
            } else {
                format!("{what} could not be read as JSON: {e}")
            };
            KipError::new(ErrorCode::InvalidSyntax, message)
                .with_hint(format!("Flatten the value: JSON parameters may nest at most {MAX_JSON_DEPTH} levels deep."))
        })
    }
}

impl FromDatum for JsonbArg {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<JsonbArg> {
        if is_null {
            return None;
        }
        // SAFETY: a non-null jsonb datum.
        if let Some(value) = unsafe { crate::exec::jsonb::to_value(datum) } {
            return Some(JsonbArg::Value(value));
        }
        // jsonb_out detoasts its argument and returns a palloc'd C string.
        let text = unsafe {
            let cstr = pgrx::direct_function_call::<&std::ffi::CStr>(pg_sys::jsonb_out, &[Some(datum)])?;
            let owned = cstr.to_string_lossy().into_owned();
            pg_sys::pfree(cstr.as_ptr().cast_mut().cast());
            owned
        };
        Some(JsonbArg::Text(text))
    }
}

unsafe impl<'fcx> ArgAbi<'fcx> for JsonbArg {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        unsafe { arg.unbox_arg_using_from_datum().unwrap_or_else(|| panic!("argument {index} must not be null")) }
    }

    unsafe fn unbox_nullable_arg(arg: Arg<'_, 'fcx>) -> Nullable<Self> {
        unsafe { arg.unbox_arg_using_from_datum().into() }
    }
}

unsafe impl SqlTranslatable for JsonbArg {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(JsonbArg);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("jsonb"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("jsonb")));
}

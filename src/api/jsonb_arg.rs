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
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::FromDatum;
use serde_json::Value;

/// How deep a JSON parameter may nest: serde_json's recursion limit.
pub const MAX_JSON_DEPTH: usize = 128;

/// A `jsonb` argument: its value, the text of one too deep to read, or
/// why one of its numbers is refused (`kip_lang::parse_number`).
pub enum JsonbArg {
    Value(Value),
    Text(String),
    RefusedNumber(String),
}

impl JsonbArg {
    /// The argument as a JSON value; `what` names it in errors.
    pub fn parse(self, what: &str) -> Result<Value, KipError> {
        let text = match self {
            JsonbArg::Value(v) => return Ok(v),
            JsonbArg::Text(t) => t,
            JsonbArg::RefusedNumber(reason) => {
                return Err(KipError::new(ErrorCode::InvalidSyntax, format!("{what}: {reason}"))
                    .with_hint(kip_lang::NUMBER_RANGE_HINT))
            }
        };
        serde_json::from_str(&text).map_err(|e| {
            let reason = e.to_string();
            if reason.contains("recursion limit") {
                KipError::new(ErrorCode::InvalidSyntax, format!("{what}: nested deeper than {MAX_JSON_DEPTH} levels"))
                    .with_hint(format!("Flatten the value: JSON parameters may nest at most {MAX_JSON_DEPTH} levels deep."))
            } else if reason.contains("number out of range") {
                // jsonb holds any numeric; KIP values are JSON numbers, a
                // double at most (a literal that large is refused alike).
                KipError::new(ErrorCode::InvalidSyntax, format!("{what}: a number out of range ({reason})"))
                    .with_hint("KIP numbers are doubles (about ±1.8e308): pass a larger number as a string.")
            } else {
                KipError::new(ErrorCode::InvalidSyntax, format!("{what} could not be read as JSON: {e}"))
                    .with_hint(format!("Flatten the value: JSON parameters may nest at most {MAX_JSON_DEPTH} levels deep."))
            }
        })
    }
}

impl FromDatum for JsonbArg {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<JsonbArg> {
        if is_null {
            return None;
        }
        // SAFETY: a non-null jsonb datum.
        use crate::exec::jsonb::{to_value_with, BigNumbers, Unread};
        match unsafe { to_value_with(datum, BigNumbers::Refuse) } {
            Ok(value) => return Some(JsonbArg::Value(value)),
            Err(Unread::RefusedNumber { reason, path }) if path.is_empty() => return Some(JsonbArg::RefusedNumber(reason)),
            Err(Unread::RefusedNumber { reason, path }) => {
                // `"a"."b"[1]`: keys as JSON strings, positions in brackets.
                let mut at = String::new();
                for step in &path {
                    if !at.is_empty() && !step.starts_with('[') {
                        at.push('.');
                    }
                    at.push_str(step);
                }
                return Some(JsonbArg::RefusedNumber(format!("{at}: {reason}")));
            }
            Err(Unread::Unexpected) => {}
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

/// pgrx's argument ABI for a type that implements `FromDatum`: read through
/// `from_datum`, NULL as `None`.
macro_rules! arg_abi_from_datum {
    ($type:ty) => {
        unsafe impl<'fcx> pgrx::callconv::ArgAbi<'fcx> for $type {
            unsafe fn unbox_arg_unchecked(arg: pgrx::callconv::Arg<'_, 'fcx>) -> Self {
                let index = arg.index();
                unsafe { arg.unbox_arg_using_from_datum().unwrap_or_else(|| panic!("argument {index} must not be null")) }
            }

            unsafe fn unbox_nullable_arg(arg: pgrx::callconv::Arg<'_, 'fcx>) -> pgrx::nullable::Nullable<Self> {
                unsafe { arg.unbox_arg_using_from_datum().into() }
            }
        }
    };
}
pub(crate) use arg_abi_from_datum;

arg_abi_from_datum!(JsonbArg);

unsafe impl SqlTranslatable for JsonbArg {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(JsonbArg);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("jsonb"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("jsonb")));
}

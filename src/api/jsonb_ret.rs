//! A `jsonb` result built from a `serde_json::Value` by `exec::jsonb`
//! (Postgres's jsonb builder, no text round trip), where pgrx's `JsonB`
//! prints the value and parses the text again.

use crate::exec::jsonb;
use pgrx::callconv::{BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::{IntoDatum, JsonB};
use serde_json::Value;

/// The JSON a function returns as `jsonb`.
pub struct JsonbRet(pub Value);

unsafe impl BoxRet for JsonbRet {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        // The text path for what the builder leaves to it (see exec::jsonb).
        match jsonb::from_value(&self.0).or_else(|| JsonB(self.0).into_datum()) {
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}

unsafe impl SqlTranslatable for JsonbRet {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(JsonbRet);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("jsonb"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("jsonb")));
}

//! A `jsonb` result written from a reply `Doc` by `exec::jsonb` (its
//! jsonb parts copied, no text round trip), where pgrx's `JsonB` prints the
//! value and parses the text again.

use crate::exec::jsonb::{self, Doc};
use pgrx::callconv::{BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::{IntoDatum, JsonB};

/// The JSON a function returns as `jsonb`.
pub struct JsonbRet(pub Doc);

unsafe impl BoxRet for JsonbRet {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        // The text path for what the builder leaves to it (see exec::jsonb).
        match jsonb::datum_of_doc(&self.0).or_else(|| JsonB(self.0.into_value()).into_datum()) {
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

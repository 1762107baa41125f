//! A `real[]` vector argument (`kip_search`, `kip_set_embedding`) that
//! keeps the array's shape.
//!
//! pgrx reads any `real[]` into a flat `Vec`, so a 2 × 192 array passed
//! for a 384-dimensional vector was taken for one. `VectorArg` remembers
//! the array's dimensions, and [`VectorArg::components`] refuses an array
//! of more than one dimension with `KIP_1001`, as it does a NULL element.

use kip_lang::{ErrorCode, KipError};
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::FromDatum;

/// A `real[]` argument: its elements in storage order, and its dimensions.
pub struct VectorArg {
    elements: Vec<Option<f32>>,
    dims: Vec<i32>,
}

impl VectorArg {
    /// The vector's components; `what` names the argument in errors.
    pub fn components(self, what: &str) -> Result<Vec<f32>, KipError> {
        if self.dims.len() > 1 {
            let shape = self.dims.iter().map(i32::to_string).collect::<Vec<_>>().join(" × ");
            return Err(KipError::new(ErrorCode::InvalidSyntax, format!("{what} is a {shape} array"))
                .with_hint("Pass the vector as a one-dimensional real[] (ARRAY[…]::real[]), not an array of arrays."));
        }
        self.elements
            .into_iter()
            .map(|x| x.ok_or_else(|| KipError::new(ErrorCode::InvalidSyntax, format!("{what} contains NULL")).with_hint("Every component must be a number.")))
            .collect()
    }
}

impl FromDatum for VectorArg {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, typoid: pg_sys::Oid) -> Option<VectorArg> {
        if is_null {
            return None;
        }
        // SAFETY: a non-null real[] datum; detoasting gives a readable array
        // header (a copy when it was toasted, freed with the call's context),
        // whose elements are then read from the same detoasted value.
        let (dims, detoasted) = unsafe {
            let array = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()).cast::<pg_sys::ArrayType>();
            let ndim = (*array).ndim.max(0) as usize;
            let first = array.cast::<u8>().add(std::mem::size_of::<pg_sys::ArrayType>()).cast::<i32>();
            (std::slice::from_raw_parts(first, ndim).to_vec(), pg_sys::Datum::from(array))
        };
        let elements = unsafe { Vec::<Option<f32>>::from_polymorphic_datum(detoasted, false, typoid) }?;
        Some(VectorArg { elements, dims })
    }
}

super::jsonb_arg::arg_abi_from_datum!(VectorArg);

unsafe impl SqlTranslatable for VectorArg {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(VectorArg);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("real[]"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("real[]")));
}

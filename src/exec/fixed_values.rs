//! Plans made for some of their values.
//!
//! A statement's generic plan is made once, without its parameters' values;
//! a custom plan sees them but is made again at every call. A FIND that
//! scans the links of a predicate that is rare in a large space needs the
//! planner to see the predicate and the space (`engine::find::planning`):
//! its generic plan expected the predicate's links everywhere and walked
//! the whole space for them. Those two values are the same from call to
//! call of a text, so the statement is planned once *per value*: the values
//! marked [`SqlParam::Fixed`] become constants of the query tree, the
//! generic plan that Postgres then makes and keeps reads their statistics,
//! and `spi` keeps one saved plan for each set of fixed values.
//!
//! The values never enter the SQL text. The statement is prepared with a
//! parser hook (`SPI_prepare_extended`): where the parser meets `$n` of a
//! fixed value, the hook hands it a text constant holding the value; every
//! other `$n` becomes a parameter of its type, as `SPI_prepare` would make
//! it. The plan keeps the hook and its [`Folding`] for a re-analysis after
//! an invalidation, so a `Folding` lives as long as its saved plan.

use super::spi::SqlParam;
use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::ffi::{c_char, c_void, CStr};

/// What the parser hook of one saved plan needs: each parameter's type and,
/// for a fixed one, its value. The saved plan owns it (Postgres keeps a
/// pointer to it for a re-analysis), and its values are the plan's key.
pub(super) struct Folding {
    types: Box<[pg_sys::Oid]>,
    fixed: Box<[Option<Box<str>>]>,
}

impl Folding {
    /// Whether these are the fixed values (as [`fixed_values`] lists them)
    /// this folding was made for.
    pub(super) fn is_for(&self, fixed: &[(u32, &str)]) -> bool {
        let mine = self.fixed.iter().enumerate().filter_map(|(i, v)| Some((i as u32, &**v.as_ref()?)));
        mine.eq(fixed.iter().copied())
    }
}

/// The fixed values of `params`, as (index from 0, value).
pub(super) fn fixed_values(params: &[SqlParam]) -> Vec<(u32, &str)> {
    params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            SqlParam::Fixed(v) => Some((i as u32, v.as_str())),
            _ => None,
        })
        .collect()
}

/// Prepare `sql` with the parameters of `argtypes`, the ones of `fixed` as
/// constants. Returns the plan (null when preparing failed, as
/// `SPI_prepare_cursor` does) and its `Folding`, which must outlive the
/// plan (drop it after `SPI_freeplan`).
///
/// SAFETY: inside an SPI connection; `fixed`'s indexes are below
/// `argtypes.len()` and name text parameters.
pub(super) unsafe fn prepare(
    sql: &CStr,
    argtypes: &[pg_sys::Oid],
    fixed: &[(u32, &str)],
    cursor_options: i32,
) -> (pg_sys::SPIPlanPtr, Box<Folding>) {
    let mut values: Vec<Option<Box<str>>> = vec![None; argtypes.len()];
    for &(i, v) in fixed {
        values[i as usize] = Some(v.into());
    }
    // A box: its address stays put while the plan holds it. An error while
    // preparing unwinds through this frame and drops it with the half-made
    // plan.
    let folding = Box::new(Folding { types: argtypes.into(), fixed: values.into() });
    let options = pg_sys::SPIPrepareOptions {
        parserSetup: Some(setup_parser),
        parserSetupArg: (&*folding as *const Folding).cast_mut().cast::<c_void>(),
        parseMode: pg_sys::RawParseMode::RAW_PARSE_DEFAULT,
        cursorOptions: cursor_options,
    };
    (pg_sys::SPI_prepare_extended(sql.as_ptr(), &options), folding)
}

/// Run a plan made by [`prepare`] with `datums`, its parameters' values in
/// order: such a plan takes its parameters as a list (it was prepared
/// without a count of them). Returns SPI's status.
///
/// SAFETY: inside an SPI connection; the datums live until it returns.
pub(super) unsafe fn execute(plan: pg_sys::SPIPlanPtr, datums: &[DatumWithOid<'_>], read_only: bool) -> i32 {
    let options = pg_sys::SPIExecuteOptions { params: param_list(datums), read_only, ..Default::default() };
    pg_sys::SPI_execute_plan_extended(plan, &options)
}

/// The parameters as a list of constants, as `SPI_execute_plan` passes them.
///
/// SAFETY: allocates in the current memory context.
pub(super) unsafe fn param_list(datums: &[DatumWithOid<'_>]) -> pg_sys::ParamListInfo {
    let list = pg_sys::makeParamList(datums.len() as i32);
    let slots = (*list).params.as_mut_slice(datums.len());
    for (slot, d) in slots.iter_mut().zip(datums) {
        slot.value = d.datum().map(|d| d.sans_lifetime()).unwrap_or(pg_sys::Datum::from(0usize));
        slot.isnull = d.datum().is_none();
        slot.pflags = pg_sys::PARAM_FLAG_CONST as u16;
        slot.ptype = d.oid();
    }
    list
}

/// The parser set-up of a plan made by [`prepare`] (Postgres's
/// `ParserSetupHook`): parameter references go to [`param_ref`].
#[pg_guard]
unsafe extern "C-unwind" fn setup_parser(pstate: *mut pg_sys::ParseState, arg: *mut c_void) {
    (*pstate).p_paramref_hook = Some(param_ref);
    (*pstate).p_ref_hook_state = arg;
}

/// `$n` in the statement: a text constant for a fixed value, otherwise a
/// parameter of its declared type (what Postgres's own hook for
/// `SPI_prepare` makes).
#[pg_guard]
unsafe extern "C-unwind" fn param_ref(pstate: *mut pg_sys::ParseState, pref: *mut pg_sys::ParamRef) -> *mut pg_sys::Node {
    let folding = &*((*pstate).p_ref_hook_state as *const Folding);
    let number = (*pref).number;
    let Some(index) = usize::try_from(number).ok().and_then(|n| n.checked_sub(1)).filter(|&i| i < folding.types.len()) else {
        pgrx::error!("kip: the statement refers to ${number}, which it has no value for");
    };
    match &folding.fixed[index] {
        Some(value) => {
            let text = pg_sys::cstring_to_text_with_len(value.as_ptr().cast::<c_char>(), value.len() as i32);
            let constant = pg_sys::makeConst(
                pg_sys::TEXTOID,
                -1,
                pg_sys::DEFAULT_COLLATION_OID,
                -1,
                pg_sys::Datum::from(text),
                false,
                false,
            );
            (*constant).location = (*pref).location;
            constant.cast()
        }
        None => {
            let param = pg_sys::palloc0(std::mem::size_of::<pg_sys::Param>()).cast::<pg_sys::Param>();
            (*param).xpr.type_ = pg_sys::NodeTag::T_Param;
            (*param).paramkind = pg_sys::ParamKind::PARAM_EXTERN;
            (*param).paramid = number;
            (*param).paramtype = folding.types[index];
            (*param).paramtypmod = -1;
            (*param).paramcollid = pg_sys::get_typcollation(folding.types[index]);
            (*param).location = (*pref).location;
            param.cast()
        }
    }
}

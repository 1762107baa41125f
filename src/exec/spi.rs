//! Running one SQL statement through SPI with bind parameters.
//!
//! Every value that comes from a KIP command reaches SQL as a bind parameter
//! (`$1`, `$2`, …); the SQL text itself depends only on the command's shape.
//! That makes injection impossible by construction and lets us keep one saved
//! plan per shape: plans are prepared once per backend with `SPI_keepplan` and
//! reused, so a repeated query skips parsing and planning.

use kip_lang::{ErrorCode, KipError};
use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::Value;
use super::fixed_values;
use super::jsonb::{Doc, Jsonb};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CString;

pub use crate::params::SqlParam;

/// Whether a statement may write. Read-only statements run with SPI's
/// read-only flag, so Postgres itself refuses any write they attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// Result rows; each row holds its columns as JSON values.
pub type Rows = Vec<Vec<Value>>;

const MAX_SAVED_PLANS: usize = 1024;

/// The memory the saved plans may hold, as their contexts measure it: a
/// plan costs 0.1–0.3 MB for the FINDs agents send, and 3–4 MB for a FIND
/// of twenty UNION branches, so a count alone let one session's varied
/// shapes hold gigabytes. Past it every plan is freed, as past the count.
const MAX_SAVED_PLAN_BYTES: usize = 64 << 20;

/// Every how many new plans the held bytes are measured again: a plan's
/// generic plan is built at its first run, after it was counted.
const REMEASURE_EVERY: usize = 32;

/// A saved plan and what it was prepared for.
struct SavedPlan {
    sql: Box<str>,
    argtypes: Box<[u32]>,
    planning: Planning,
    plan: usize,
    /// The fixed values it was made for, with the parser hook's state
    /// (`fixed_values`); dropped after the plan is freed.
    folding: Option<Box<fixed_values::Folding>>,
}

impl SavedPlan {
    fn is_for(&self, sql: &str, argtypes: &[pg_sys::Oid], planning: Planning, fixed: &[(u32, &str)]) -> bool {
        self.planning == planning
            && *self.sql == *sql
            && self.argtypes.iter().copied().eq(argtypes.iter().map(|o| o.to_u32()))
            && self.folding.as_ref().map_or(fixed.is_empty(), |f| f.is_for(fixed))
    }
}

/// Saved plans by [`plan_hash`]: a lookup hashes the SQL text once, with a
/// fast hash, and copies nothing (kip's statements run to a few kilobytes,
/// and a SipHash of the text and a copy of it were a microsecond a call).
#[derive(Default)]
struct SavedPlans {
    by_hash: HashMap<u64, Vec<SavedPlan>>,
    count: usize,
    /// The memory they hold, as last measured ([`plan_bytes`]).
    bytes: usize,
    /// The plan saved last and the bytes counted for it then: it has run
    /// since, and its generic plan is counted at the next save.
    last: Option<(usize, usize)>,
    /// How many of them were made for fixed values.
    fixed: usize,
}

/// Plans made for fixed values that a backend keeps, at most
/// ([`plan_for`]).
pub(crate) const MAX_FIXED_PLANS: usize = 256;

/// How many of the backend's saved plans were made for fixed values.
#[cfg(any(test, feature = "pg_test"))]
pub(crate) fn fixed_plans_kept() -> usize {
    PLANS.with(|p| p.borrow().fixed)
}

impl Planning {
    /// The planning of a statement planned for each call's values.
    fn for_each_call(self) -> Planning {
        match self {
            Planning::GenericParallel | Planning::CustomParallel => Planning::CustomParallel,
            _ => Planning::Custom,
        }
    }
}

thread_local! {
    static PLANS: RefCell<SavedPlans> = RefCell::new(SavedPlans::default());
    /// How many of this cache's plans are executing now, one inside the
    /// other (a trigger on kip's tables that runs a KIP command, a policy
    /// function's lookup inside a KIP statement).
    static EXECUTING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A saved plan of this cache is executing while this lives (dropped also
/// when an error unwinds). The cache is emptied only when none is: freeing
/// a plan an outer call still runs left Postgres reading freed memory when
/// the inner call returned (a crash, and the postmaster's restart of every
/// session).
struct Executing;

impl Executing {
    fn begin() -> Executing {
        EXECUTING.with(|n| n.set(n.get() + 1));
        Executing
    }

    fn any() -> bool {
        EXECUTING.with(|n| n.get() > 0)
    }
}

impl Drop for Executing {
    fn drop(&mut self) {
        EXECUTING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

fn plan_hash(sql: &str, argtypes: &[pg_sys::Oid], planning: Planning, fixed: &[(u32, &str)]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(sql.as_bytes());
    for t in argtypes {
        h.write_u32(t.to_u32());
    }
    h.write_u8(planning as u8);
    for (i, v) in fixed {
        h.write_u32(*i);
        h.write(v.as_bytes());
    }
    h.finish()
}

impl SqlParam {
    fn to_datum(&self) -> DatumWithOid<'static> {
        match self {
            SqlParam::Text(s) | SqlParam::Fixed(s) => DatumWithOid::from(s.clone()),
            SqlParam::Int(i) => DatumWithOid::from(*i),
            SqlParam::Float(f) => DatumWithOid::from(*f),
            SqlParam::Numeric(n) => match pgrx::AnyNumeric::try_from(n.as_str()) {
                Ok(n) => DatumWithOid::from(n),
                Err(_) => DatumWithOid::null::<pgrx::AnyNumeric>(),
            },
            SqlParam::Bool(b) => DatumWithOid::from(*b),
            // SAFETY: a jsonb datum, tagged with its type.
            SqlParam::Json(v) => match super::jsonb::from_value(v) {
                Some(d) => unsafe { DatumWithOid::new(d, pg_sys::JSONBOID) },
                None => DatumWithOid::from(JsonB(v.clone())),
            },
            SqlParam::TextArray(v) => DatumWithOid::from(v.clone()),
            SqlParam::IntArray(v) => DatumWithOid::from(v.clone()),
            SqlParam::RealArray(v) => DatumWithOid::from(v.clone()),
            SqlParam::NullText => DatumWithOid::null::<String>(),
        }
    }
}

/// Run `sql` with `params` and return every row. `sql` must be trusted text
/// built by the compiler, never from user input.
pub fn query(sql: &str, params: &[SqlParam], access: Access) -> Result<Rows, KipError> {
    query_planned(sql, params, access, Planning::Default)
}

/// How a saved plan is chosen at each execution.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Planning {
    /// Postgres's plan cache decides: custom plans for the first five runs,
    /// then the generic plan if its estimated cost is not higher.
    Default,
    /// A plan for the values of each run, always: for statements whose good
    /// plan depends on them (a query vector that an HNSW index scan orders
    /// by, LIMITs that make a btree walk cheaper than a sort). Their generic
    /// plans were measured 1.3-5x (keyword) and 50-90x (semantic) slower
    /// (benches/SEARCH-BENCH.md).
    Custom,
    /// The generic plan, always, planned once per backend: for statements
    /// whose plan does not depend on the values and whose planning costs
    /// more than their execution (keyword SEARCH, whose generic plan was
    /// measured to match the custom plans' results and speed without their
    /// ~2 ms of planning per run).
    Generic,
    /// [`Planning::Generic`], planned with sequential scans disabled: for
    /// statements all of whose sources are bounded index lookups (keyword
    /// SEARCH). A generic plan knows neither the values nor how many rows
    /// a lookup will find, and under a LIMIT it costed a sequential scan
    /// as stopping early: when the value was rare it read the whole table
    /// (a predicate without links, 141 ms over a million links; an alias
    /// no element has, 200 ms over 1.2 million concepts).
    GenericIndexed,
    /// [`Planning::Generic`], for a statement that may get Postgres's
    /// parallel workers (a FIND's page, `engine::find::planning`).
    GenericParallel,
    /// [`Planning::Custom`], for a statement that may get parallel workers.
    CustomParallel,
}

/// [`query`] with a choice of planning.
pub fn query_planned(sql: &str, params: &[SqlParam], access: Access, planning: Planning) -> Result<Rows, KipError> {
    Spi::connect(|_client| unsafe { run_connected(sql, params, access, planning) })
}

/// [`query`] for a lookup by key (a space's row, ids, registered names,
/// grants): its plan never depends on the values, so it runs on its generic
/// plan, planned once per backend. The plan cache would otherwise keep
/// re-planning a custom plan on every call, since a custom plan's estimate
/// with the values is never above the generic one's: planning was a
/// quarter of a small `kip_execute` call.
pub fn lookup(sql: &str, params: &[SqlParam], access: Access) -> Result<Rows, KipError> {
    query_planned(sql, params, access, Planning::Generic)
}

/// [`lookup`] on the snapshot of the statement that called kip, not a
/// fresh one: for the functions row-level security policies call
/// (`governance::privileges`), which read what that statement sees, as the
/// STABLE SQL functions they replace did. A fresh snapshot when there is
/// none.
pub fn lookup_in_caller_snapshot(sql: &str, params: &[SqlParam]) -> Result<Rows, KipError> {
    Spi::connect(|_client| unsafe {
        let snapshot = if pg_sys::ActiveSnapshotSet() { Snapshot::Caller } else { Snapshot::Fresh };
        run_plan_on(sql, params, Access::ReadOnly, Planning::Generic, snapshot)?;
        Ok(result_rows(&mut |_, tuple, tupdesc, col| column_value(tuple, tupdesc, col)))
    })
}

/// [`lookup`] on a snapshot taken now, without ending the current command:
/// it sees every transaction committed so far and this transaction's
/// earlier statements, and can be taken while a statement runs (a policy's
/// function), where [`lookup`]'s fresh snapshot would start a new command
/// under it. For the grants a backend remembers (`governance::privileges`).
/// Not inside a parallel query, where Postgres takes no new snapshot.
pub fn lookup_in_latest_snapshot(sql: &str, params: &[SqlParam]) -> Result<Rows, KipError> {
    Spi::connect(|_client| unsafe {
        run_plan_on(sql, params, Access::ReadOnly, Planning::Generic, Snapshot::Latest)?;
        Ok(result_rows(&mut |_, tuple, tupdesc, col| column_value(tuple, tupdesc, col)))
    })
}

/// The snapshot a read-only statement runs on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Snapshot {
    /// One taken now, which sees what this transaction wrote so far.
    Fresh,
    /// The active one, the calling statement's.
    Caller,
    /// The latest one, taken now, in the current command.
    Latest,
}

/// [`lookup`]'s first column of the first row, or `Value::Null`.
pub fn lookup_scalar(sql: &str, params: &[SqlParam], access: Access) -> Result<Value, KipError> {
    Ok(first_value(lookup(sql, params, access)?))
}

/// Run a statement and return the number of rows it processed.
pub fn execute(sql: &str, params: &[SqlParam], access: Access) -> Result<u64, KipError> {
    Spi::connect(|_client| unsafe {
        run_plan(sql, params, access, Planning::Default)?;
        Ok(pg_sys::SPI_processed)
    })
}

/// The first column of the first row, or `Value::Null` when there is none.
pub fn query_scalar(sql: &str, params: &[SqlParam], access: Access) -> Result<Value, KipError> {
    Ok(first_value(query(sql, params, access)?))
}

fn first_value(rows: Rows) -> Value {
    rows.into_iter().next().and_then(|row| row.into_iter().next()).unwrap_or(Value::Null)
}

unsafe fn run_plan(sql: &str, params: &[SqlParam], access: Access, planning: Planning) -> Result<(), KipError> {
    run_plan_on(sql, params, access, planning, Snapshot::Fresh)
}

unsafe fn run_plan_on(sql: &str, params: &[SqlParam], access: Access, planning: Planning, snapshot: Snapshot) -> Result<(), KipError> {
    let datums: Vec<DatumWithOid<'static>> = params.iter().map(SqlParam::to_datum).collect();
    let mut argtypes: Vec<pg_sys::Oid> = datums.iter().map(|d| d.oid()).collect();
    let mut values: Vec<pg_sys::Datum> = datums
        .iter()
        .map(|d| d.datum().map(|d| d.sans_lifetime()).unwrap_or(pg_sys::Datum::from(0usize)))
        .collect();
    let nulls: Vec<std::os::raw::c_char> = datums
        .iter()
        .map(|d| if d.datum().is_some() { b' ' as std::os::raw::c_char } else { b'n' as std::os::raw::c_char })
        .collect();
    let (plan, folded) = plan_for(sql, &mut argtypes, planning, &fixed_values::fixed_values(params))?;
    let read_only = access == Access::ReadOnly;
    let fresh = read_only && snapshot == Snapshot::Fresh;
    let latest = read_only && snapshot == Snapshot::Latest;
    if latest {
        pg_sys::PushActiveSnapshot(pg_sys::GetLatestSnapshot());
    }
    if fresh {
        // A read-only SPI call runs on the caller's active snapshot, which
        // predates whatever this transaction wrote since the outer statement
        // began (an UPSERT earlier in the same batch, the bootstrap of a new
        // space). Give it a fresh snapshot that sees those writes, as SPI
        // does for read-write calls. (On error the subtransaction abort pops
        // the snapshot.)
        pg_sys::CommandCounterIncrement();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
        pg_sys::UpdateActiveSnapshotCommandId();
    }
    let status = {
        let _executing = Executing::begin();
        let _no_jit = SwitchedOff::new(std::ptr::addr_of_mut!(pg_sys::jit_enabled));
        // A cached plan is (re)planned inside SPI_execute_plan, so the
        // setting is in force whenever its plan is made.
        let _no_seqscan = (planning == Planning::GenericIndexed)
            .then(|| SwitchedOff::new(std::ptr::addr_of_mut!(pg_sys::enable_seqscan)));
        if folded {
            fixed_values::execute(plan, &datums, read_only)
        } else {
            pg_sys::SPI_execute_plan(plan, values.as_mut_ptr(), nulls.as_ptr(), read_only, 0)
        }
    };
    if fresh || latest {
        pg_sys::PopActiveSnapshot();
    }
    if status < 0 {
        return Err(KipError::new(
            ErrorCode::InternalError,
            format!("SPI_execute_plan failed with status {status}"),
        ));
    }
    Ok(())
}

/// Postgres's `EXPLAIN` text of `sql` with `params` as kip runs it: the
/// plan its saved plan gives for them under `planning` (for a FIND the
/// generic plan, planned once per backend, `kip_execute`'s own), planned and
/// run with the same switches. With `analyze` the statement runs, on a
/// fresh snapshot as a read does. An `EXPLAIN` statement of the text would
/// plan it anew with the values as constants: a custom plan, which for a
/// FIND is not the one that runs (`FIND … LIMIT 10` over a large type was
/// explained as a primary-key walk of 18 ms where the generic plan reads ten
/// entries of `(space, type, id)`). Only a SELECT that writes nothing is
/// explained.
pub fn explain(sql: &str, params: &[SqlParam], planning: Planning, analyze: bool) -> Result<String, KipError> {
    Spi::connect(|_client| unsafe { explain_connected(sql, params, planning, analyze) })
}

unsafe fn explain_connected(sql: &str, params: &[SqlParam], planning: Planning, analyze: bool) -> Result<String, KipError> {
    let datums: Vec<DatumWithOid<'static>> = params.iter().map(SqlParam::to_datum).collect();
    let mut argtypes: Vec<pg_sys::Oid> = datums.iter().map(|d| d.oid()).collect();
    let _no_jit = SwitchedOff::new(std::ptr::addr_of_mut!(pg_sys::jit_enabled));
    let _no_seqscan =
        (planning == Planning::GenericIndexed).then(|| SwitchedOff::new(std::ptr::addr_of_mut!(pg_sys::enable_seqscan)));
    let (plan, _) = plan_for(sql, &mut argtypes, planning, &fixed_values::fixed_values(params))?;
    let _executing = Executing::begin();
    let sources = pg_sys::SPI_plan_get_plan_sources(plan);
    if sources.is_null() || (*sources).length != 1 {
        return Err(KipError::new(ErrorCode::InternalError, "kip_explain: the statement is not a single query"));
    }
    let source = pg_sys::list_nth(sources, 0) as *mut pg_sys::CachedPlanSource;
    // The values as SPI_execute_plan passes them.
    let bound = fixed_values::param_list(&datums);
    let text = CString::new(sql).map_err(|_| KipError::new(ErrorCode::InternalError, "SQL text contains a NUL byte"))?;
    let owner = pg_sys::CurrentResourceOwner;
    let cached = pg_sys::GetCachedPlan(source, bound, owner, std::ptr::null_mut());
    let statements = (*cached).stmt_list;
    let statement = if statements.is_null() || (*statements).length != 1 {
        std::ptr::null_mut()
    } else {
        pg_sys::list_nth(statements, 0) as *mut pg_sys::PlannedStmt
    };
    if statement.is_null()
        || (*statement).commandType != pg_sys::CmdType::CMD_SELECT
        || (*statement).hasModifyingCTE
        || !(*statement).utilityStmt.is_null()
    {
        pg_sys::ReleaseCachedPlan(cached, owner);
        return Err(KipError::new(ErrorCode::InternalError, "kip_explain explains only a query that writes nothing"));
    }
    let es = pg_sys::NewExplainState();
    (*es).analyze = analyze;
    (*es).costs = true;
    (*es).buffers = analyze;
    (*es).timing = analyze;
    (*es).summary = analyze;
    if analyze {
        // As `run_plan_on` runs a read: on a snapshot that sees what this
        // transaction wrote so far.
        pg_sys::CommandCounterIncrement();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
    }
    pg_sys::ExplainBeginOutput(es);
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    pg_sys::ExplainOnePlan(
        statement,
        std::ptr::null_mut(),
        es,
        text.as_ptr(),
        bound,
        std::ptr::null_mut(),
        std::ptr::null(),
        std::ptr::null(),
    );
    #[cfg(feature = "pg17")]
    pg_sys::ExplainOnePlan(
        statement,
        std::ptr::null_mut(),
        es,
        text.as_ptr(),
        bound,
        std::ptr::null_mut(),
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null(),
    );
    pg_sys::ExplainEndOutput(es);
    if analyze {
        pg_sys::PopActiveSnapshot();
    }
    let out = std::ffi::CStr::from_ptr((*(*es).str_).data).to_string_lossy().into_owned();
    pg_sys::ReleaseCachedPlan(cached, owner);
    Ok(out)
}

/// A planner switch of the backend (`jit_enabled`, `enable_seqscan`) turned
/// off while one of kip's statements is planned and run, and restored
/// afterwards (also when an error unwinds through here); the session's own
/// setting is untouched for the caller's other queries.
///
/// * JIT, for every statement: kip's statements are short, index-driven
///   lookups, but the estimated cost of a generic plan with several bounded
///   sources can pass `jit_above_cost`: keyword SEARCH then spent 130 ms of
///   its 190 ms compiling expressions (benches/SEARCH-BENCH.md).
/// * Sequential scans, for [`Planning::GenericIndexed`] statements.
struct SwitchedOff {
    switch: *mut bool,
    was: bool,
}

impl SwitchedOff {
    /// SAFETY: `switch` is one of the backend's planner globals, read and
    /// written on its only thread.
    unsafe fn new(switch: *mut bool) -> SwitchedOff {
        let was = *switch;
        *switch = false;
        SwitchedOff { switch, was }
    }
}

impl Drop for SwitchedOff {
    fn drop(&mut self) {
        // SAFETY: as in `new`.
        unsafe { *self.switch = self.was }
    }
}

/// The saved plan of a statement ([`saved_plan`]) and whether it was made
/// with its fixed values ([`SqlParam::Fixed`], `fixed_values`): a
/// backend keeps at most [`MAX_FIXED_PLANS`] plans made for fixed values,
/// and past that a statement with other fixed values is planned for each
/// call's values instead (`Planning::for_each_call`), as it was before
/// such plans were kept. A backend serving many large spaces would
/// otherwise keep a plan for each, and fill the cache of plans, whose
/// overflow drops every plan at once.
unsafe fn plan_for(
    sql: &str,
    argtypes: &mut [pg_sys::Oid],
    planning: Planning,
    fixed: &[(u32, &str)],
) -> Result<(pg_sys::SPIPlanPtr, bool), KipError> {
    if fixed.is_empty() {
        return Ok((saved_plan(sql, argtypes, planning, fixed)?, false));
    }
    let full = PLANS.with(|p| p.borrow().fixed >= MAX_FIXED_PLANS);
    if full && kept_plan(sql, argtypes, planning, fixed).is_none() {
        return Ok((saved_plan(sql, argtypes, planning.for_each_call(), &[])?, false));
    }
    Ok((saved_plan(sql, argtypes, planning, fixed)?, true))
}

/// The saved plan for these inputs, if there is one.
fn kept_plan(sql: &str, argtypes: &[pg_sys::Oid], planning: Planning, fixed: &[(u32, &str)]) -> Option<pg_sys::SPIPlanPtr> {
    let hash = plan_hash(sql, argtypes, planning, fixed);
    PLANS.with(|p| {
        p.borrow()
            .by_hash
            .get(&hash)
            .and_then(|v| v.iter().find(|p| p.is_for(sql, argtypes, planning, fixed)))
            .map(|p| p.plan as pg_sys::SPIPlanPtr)
    })
}

/// The saved plan for this SQL text and parameter types, prepared on first
/// use. A read planned [`Planning::GenericParallel`] or
/// [`Planning::CustomParallel`] may get Postgres's parallel workers: kip's
/// own functions in its statements are parallel safe, and row-level
/// security's policies read their grants in initplans, which the leader
/// evaluates (a FIND over every Event of a 100,000-Event memory: 105 → 68-71
/// ms with the two workers of the default settings). Postgres chooses them
/// only for statements that cost more than `parallel_setup_cost`, so small
/// reads keep their serial plans.
///
/// A statement with [`SqlParam::Fixed`] values is prepared with them as
/// constants (`fixed_values`), and saved for those values.
unsafe fn saved_plan(
    sql: &str,
    argtypes: &mut [pg_sys::Oid],
    planning: Planning,
    fixed: &[(u32, &str)],
) -> Result<pg_sys::SPIPlanPtr, KipError> {
    if let Some(plan) = kept_plan(sql, argtypes, planning, fixed) {
        return Ok(plan);
    }
    let hash = plan_hash(sql, argtypes, planning, fixed);
    let csql = CString::new(sql).map_err(|_| KipError::new(ErrorCode::InternalError, "SQL text contains a NUL byte"))?;
    let options = match planning {
        Planning::Default => 0,
        Planning::Custom | Planning::CustomParallel => pg_sys::CURSOR_OPT_CUSTOM_PLAN as i32,
        Planning::Generic | Planning::GenericIndexed | Planning::GenericParallel => pg_sys::CURSOR_OPT_GENERIC_PLAN as i32,
    } | if matches!(planning, Planning::GenericParallel | Planning::CustomParallel) {
        pg_sys::CURSOR_OPT_PARALLEL_OK as i32
    } else {
        0
    };
    let (plan, folding) = if fixed.is_empty() {
        (pg_sys::SPI_prepare_cursor(csql.as_ptr(), argtypes.len() as i32, argtypes.as_mut_ptr(), options), None)
    } else {
        let (plan, folding) = fixed_values::prepare(&csql, argtypes, fixed, options);
        (plan, Some(folding))
    };
    if plan.is_null() {
        return Err(KipError::new(
            ErrorCode::InternalError,
            format!("SPI_prepare failed with status {}", std::ptr::addr_of!(pg_sys::SPI_result).read()),
        ));
    }
    pg_sys::SPI_keepplan(plan);
    PLANS.with(|p| {
        let mut plans = p.borrow_mut();
        let last = plans.last.take();
        if plans.count > 0 && plans.count % REMEASURE_EVERY == 0 {
            plans.bytes = plans.by_hash.values().flatten().map(|saved| plan_bytes(saved.plan as pg_sys::SPIPlanPtr)).sum();
        } else if let Some((last, counted)) = last {
            plans.bytes = (plans.bytes + plan_bytes(last as pg_sys::SPIPlanPtr)).saturating_sub(counted);
        }
        // Past a bound, when no plan of the cache is executing (else at a
        // later prepare: the cache may outgrow its bounds meanwhile).
        if (plans.count >= MAX_SAVED_PLANS || plans.bytes >= MAX_SAVED_PLAN_BYTES) && !Executing::any() {
            for (_, old) in plans.by_hash.drain() {
                for saved in old {
                    pg_sys::SPI_freeplan(saved.plan as pg_sys::SPIPlanPtr);
                    // Its folding goes with `saved`, after the plan.
                }
            }
            plans.count = 0;
            plans.fixed = 0;
            plans.bytes = 0;
            release_freed_memory();
        }
        let counted = plan_bytes(plan);
        plans.bytes += counted;
        plans.last = Some((plan as usize, counted));
        plans.count += 1;
        plans.fixed += usize::from(!fixed.is_empty());
        plans.by_hash.entry(hash).or_default().push(SavedPlan {
            sql: sql.into(),
            argtypes: argtypes.iter().map(|o| o.to_u32()).collect(),
            planning,
            plan: plan as usize,
            folding,
        });
    });
    Ok(plan)
}

/// The memory a saved plan holds: each of its plan sources' contexts (the
/// query trees included) and generic plan, when built.
unsafe fn plan_bytes(plan: pg_sys::SPIPlanPtr) -> usize {
    let sources = pg_sys::SPI_plan_get_plan_sources(plan);
    let mut bytes = 0;
    if sources.is_null() {
        return bytes;
    }
    for i in 0..(*sources).length {
        let source = pg_sys::list_nth(sources, i) as *mut pg_sys::CachedPlanSource;
        if source.is_null() {
            continue;
        }
        bytes += pg_sys::MemoryContextMemAllocated((*source).context, true);
        let generic = (*source).gplan;
        if !generic.is_null() && !(*generic).context.is_null() {
            bytes += pg_sys::MemoryContextMemAllocated((*generic).context, true);
        }
    }
    bytes
}

/// Give the memory of the plans just freed back to the system: glibc keeps
/// freed blocks for the process, and a backend would keep its high-water
/// mark for the rest of its connection.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's own bookkeeping; returns free memory to the system.
        unsafe { malloc_trim(0) };
    }
}

unsafe fn run_connected(sql: &str, params: &[SqlParam], access: Access, planning: Planning) -> Result<Rows, KipError> {
    run_plan(sql, params, access, planning)?;
    Ok(result_rows(&mut |_, tuple, tupdesc, col| column_value(tuple, tupdesc, col)))
}

/// [`query_planned`] for rows that go into a reply as they are: a jsonb
/// column holding an object or an array is copied as jsonb
/// (`Doc::Jsonb`), never decoded; any other column is read as a value.
/// Only the cells `wanted(row, column, rows)` says are read (`rows`: how
/// many the statement returned); the others are JSON null. A page reads
/// its sort keys and ids only where a cursor needs them, not in every row.
pub fn query_docs(
    sql: &str,
    params: &[SqlParam],
    access: Access,
    planning: Planning,
    wanted: &dyn Fn(usize, usize, usize) -> bool,
) -> Result<Vec<Vec<Doc>>, KipError> {
    Spi::connect(|_client| unsafe {
        run_plan(sql, params, access, planning)?;
        let rows = pg_sys::SPI_processed as usize;
        Ok(result_rows(&mut |row, tuple, tupdesc, col| {
            if wanted(row, col as usize - 1, rows) {
                column_doc(tuple, tupdesc, col)
            } else {
                Doc::default()
            }
        }))
    })
}

/// The `bigint[]` columns of the one row a statement returns (an empty
/// list for a NULL array; no row, no lists), read from the arrays' binary
/// form: for long lists of ids, which as JSON values would cost several
/// times their size in memory.
pub fn query_id_arrays(sql: &str, params: &[SqlParam], access: Access) -> Result<Vec<Vec<i64>>, KipError> {
    Spi::connect(|_client| unsafe {
        run_plan(sql, params, access, Planning::Default)?;
        let table = pg_sys::SPI_tuptable;
        if table.is_null() || pg_sys::SPI_processed == 0 {
            return Ok(Vec::new());
        }
        let tupdesc = (*table).tupdesc;
        let tuple = *(*table).vals;
        let mut out = Vec::new();
        for col in 1..=(*tupdesc).natts {
            let mut is_null = false;
            let datum = pg_sys::SPI_getbinval(tuple, tupdesc, col, &mut is_null);
            let ids = if is_null { None } else { <Vec<i64> as FromDatum>::from_datum(datum, false) };
            out.push(ids.unwrap_or_default());
        }
        Ok(out)
    })
}

/// The rows of the statement just run, each cell read by `read(row index,
/// tuple, descriptor, column number from 1)`.
unsafe fn result_rows<T>(read: &mut dyn FnMut(usize, pg_sys::HeapTuple, pg_sys::TupleDesc, i32) -> T) -> Vec<Vec<T>> {
    let table = pg_sys::SPI_tuptable;
    if table.is_null() {
        return Vec::new();
    }
    let tupdesc = (*table).tupdesc;
    let natts = (*tupdesc).natts;
    let nrows = pg_sys::SPI_processed as usize;
    let mut rows = Vec::with_capacity(nrows);
    for r in 0..nrows {
        let tuple = *(*table).vals.add(r);
        let mut row = Vec::with_capacity(natts as usize);
        for col in 1..=natts {
            row.push(read(r, tuple, tupdesc, col));
        }
        rows.push(row);
    }
    rows
}

unsafe fn column_doc(tuple: pg_sys::HeapTuple, tupdesc: pg_sys::TupleDesc, col: i32) -> Doc {
    if pg_sys::SPI_gettypeid(tupdesc, col) == pg_sys::JSONBOID {
        let mut is_null = false;
        let datum = pg_sys::SPI_getbinval(tuple, tupdesc, col, &mut is_null);
        if let Some(container) = (!is_null).then(|| Jsonb::of_datum(datum)).flatten() {
            return Doc::Jsonb(container);
        }
    }
    Doc::Json(column_value(tuple, tupdesc, col))
}

unsafe fn column_value(tuple: pg_sys::HeapTuple, tupdesc: pg_sys::TupleDesc, col: i32) -> Value {
    let mut is_null = false;
    let datum = pg_sys::SPI_getbinval(tuple, tupdesc, col, &mut is_null);
    if is_null {
        return Value::Null;
    }
    let oid = pg_sys::SPI_gettypeid(tupdesc, col);
    match oid {
        pg_sys::JSONBOID => super::jsonb::to_value(datum)
            .or_else(|| JsonB::from_datum(datum, false).map(|j| j.0))
            .unwrap_or(Value::Null),
        pg_sys::JSONOID => pgrx::Json::from_datum(datum, false).map(|j| j.0).unwrap_or(Value::Null),
        pg_sys::TEXTOID | pg_sys::VARCHAROID | pg_sys::NAMEOID => {
            String::from_datum(datum, false).map(Value::String).unwrap_or(Value::Null)
        }
        pg_sys::INT8OID => i64::from_datum(datum, false).map(Value::from).unwrap_or(Value::Null),
        pg_sys::INT4OID => i32::from_datum(datum, false).map(Value::from).unwrap_or(Value::Null),
        pg_sys::INT2OID => i16::from_datum(datum, false).map(Value::from).unwrap_or(Value::Null),
        pg_sys::BOOLOID => bool::from_datum(datum, false).map(Value::Bool).unwrap_or(Value::Null),
        pg_sys::FLOAT8OID => f64::from_datum(datum, false).map(Value::from).unwrap_or(Value::Null),
        _ => {
            // Any other type: its text output.
            let text = pg_sys::SPI_getvalue(tuple, tupdesc, col);
            if text.is_null() {
                Value::Null
            } else {
                Value::String(std::ffi::CStr::from_ptr(text).to_string_lossy().into_owned())
            }
        }
    }
}

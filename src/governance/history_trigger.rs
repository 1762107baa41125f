//! The history triggers, `kip.concepts_history()` and
//! `kip.propositions_history()`: statement-level, with transition tables,
//! one `INSERT … SELECT` into `kip.history` per statement that changed
//! something, whoever wrote (KIP, plain SQL, maintenance, cascades).
//!
//! They were PL/pgSQL. Every KIP write statement is an `INSERT … ON
//! CONFLICT`, which fires both the INSERT and the UPDATE trigger, one of
//! them with an empty transition table, and each call ran the PL/pgSQL
//! interpreter and a query to find that out. Here the empty cases cost a
//! look at the tuplestore's count, and the insert runs on a plan saved per
//! backend. The rows recorded are the same: the role that made the change
//! (the `SET ROLE` role, else the session user: `current_user` is the
//! functions' owner), `application_name`, the KIP command's hash, and one
//! timestamp per statement.
//!
//! Both functions are `SECURITY DEFINER` (callers have no privilege to
//! write `kip.history`) with `SET search_path = pg_catalog, pg_temp`, as
//! before: the statements are parsed, and re-parsed after an invalidation,
//! under that path. They record kip's own tables only
//! ([`fired_on_recorded_table`]), and only the owner may execute them.

use pgrx::pg_sys;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Concept,
    Proposition,
}

impl Kind {
    /// The table in schema kip whose changes this kind's function records.
    fn table(self) -> &'static CStr {
        match self {
            Kind::Concept => c"concepts",
            Kind::Proposition => c"propositions",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Insert,
    Update,
    Delete,
}

thread_local! {
    static PLANS: RefCell<HashMap<(Kind, Op, bool), usize>> = RefCell::new(HashMap::new());
}

const CONCEPT_ROW: &str = "jsonb_build_object('type', {r}.type, 'name', {r}.name, 'attributes', {r}.attributes, \
     'metadata', {r}.metadata, 'created_at', {r}.created_at, 'updated_at', {r}.updated_at)";
const PROPOSITION_ROW: &str = "jsonb_build_object('subject_concept', {r}.subject_concept, 'subject_link', {r}.subject_link, \
     'predicate', {r}.predicate, 'object_concept', {r}.object_concept, 'object_link', {r}.object_link, \
     'attributes', {r}.attributes, 'metadata', {r}.metadata, 'created_at', {r}.created_at, 'updated_at', {r}.updated_at)";

/// The `INSERT … SELECT` of one kind of element and operation. `$1` is the
/// statement's timestamp, `$2` the role, `$3` the application, `$4` the
/// command hash. With `incarnation`, the row's space's incarnation too
/// (a schema from 0.12.0 on; an older one has no such column until
/// `ALTER EXTENSION kip UPDATE`, and its rows are matched by name).
fn insert_sql(kind: Kind, op: Op, incarnation: bool) -> String {
    let (name, row) = match kind {
        Kind::Concept => ("concept", CONCEPT_ROW),
        Kind::Proposition => ("proposition", PROPOSITION_ROW),
    };
    let of = |alias: &str| row.replace("{r}", alias);
    let (select, from, row) = match op {
        Op::Insert => (format!("n.space, n.id, '{name}', n.version, 'insert', NULL, {}", of("n")), "new_rows n".to_string(), "n"),
        // Only real changes: a new version (content) or another space. A
        // vector stored by the embedder changes neither.
        Op::Update => (
            format!("n.space, n.id, '{name}', n.version, 'update', {}, {}", of("o"), of("n")),
            "new_rows n JOIN old_rows o ON o.id = n.id WHERE n.version <> o.version OR n.space <> o.space".to_string(),
            "n",
        ),
        Op::Delete => (format!("o.space, o.id, '{name}', o.version, 'delete', {}, NULL", of("o")), "old_rows o".to_string(), "o"),
    };
    // The incarnation of the row's space as this transaction sees it; 0 when
    // it sees none (the space's own drop cascading to its elements): such
    // rows match no space's number, and only kip_admin reads them.
    let (column, value) = if incarnation {
        (", space_incarnation", format!(", coalesce((SELECT sp.incarnation FROM kip.spaces sp WHERE sp.name = {row}.space), 0)"))
    } else {
        (Default::default(), String::new())
    };
    format!(
        "INSERT INTO kip.history (space, element_id, kind, version, operation, before, after, changed_at, role, application_name, command_hash{column}) \
         SELECT {select}, $1, $2, $3, $4{value} FROM {from}"
    )
}

/// A setting's value, or `None` when unset or empty.
unsafe fn setting(name: &CStr) -> Option<String> {
    let value = pg_sys::GetConfigOption(name.as_ptr(), true, false);
    if value.is_null() {
        return None;
    }
    let s = CStr::from_ptr(value).to_string_lossy().into_owned();
    (!s.is_empty()).then_some(s)
}

/// The role that made the change: the `SET ROLE` role, else the session's user.
unsafe fn acting_role() -> String {
    match setting(c"role") {
        Some(role) if role != "none" => role,
        _ => CStr::from_ptr(pg_sys::GetUserNameFromId(pg_sys::GetSessionUserId(), false)).to_string_lossy().into_owned(),
    }
}

unsafe fn saved_plan(kind: Kind, op: Op) -> pg_sys::SPIPlanPtr {
    // Unless the schema is known to predate the column: a failure to tell
    // writes the column (and fails if it is missing) rather than rows that
    // every later space of the name would match.
    let incarnation = !crate::exec::known::schema_is_older();
    if let Some(plan) = PLANS.with(|p| p.borrow().get(&(kind, op, incarnation)).copied()) {
        return plan as pg_sys::SPIPlanPtr;
    }
    let sql = CString::new(insert_sql(kind, op, incarnation)).expect("no NUL in fixed SQL");
    let mut types = [pg_sys::TIMESTAMPTZOID, pg_sys::NAMEOID, pg_sys::TEXTOID, pg_sys::TEXTOID];
    let plan = pg_sys::SPI_prepare(sql.as_ptr(), types.len() as i32, types.as_mut_ptr());
    if plan.is_null() {
        let status = std::ptr::addr_of!(pg_sys::SPI_result).read();
        pgrx::error!("kip: preparing the history statement failed (SPI status {status})");
    }
    pg_sys::SPI_keepplan(plan);
    PLANS.with(|p| p.borrow_mut().insert((kind, op, incarnation), plan as usize));
    plan
}

/// Whether the trigger fired on the table `kind` records. The functions run
/// as their owner (a superuser), and a role may create a trigger on a table
/// of its own with any function it may execute: on a temporary table whose
/// transition rows it wrote (columns of its own types, with casts that run
/// its code as the statement builds the history row), they ran the
/// caller's code as the owner and wrote history rows of any space. Only
/// kip's own table is recorded; EXECUTE on both functions is revoked from
/// PUBLIC as well (sql/governance.sql), which Postgres checks when a
/// trigger is created, not when it fires.
unsafe fn fired_on_recorded_table(trigger: *const pg_sys::TriggerData, kind: Kind) -> bool {
    let relation = (*trigger).tg_relation;
    if relation.is_null() || (*relation).rd_rel.is_null() {
        return false;
    }
    let form = (*relation).rd_rel;
    let name = CStr::from_ptr((*form).relname.data.as_ptr());
    let schema = pg_sys::get_namespace_name((*form).relnamespace);
    name == kind.table() && !schema.is_null() && CStr::from_ptr(schema) == c"kip"
}

unsafe fn record(fcinfo: pg_sys::FunctionCallInfo, kind: Kind) -> pg_sys::Datum {
    let trigger = (*fcinfo).context as *mut pg_sys::TriggerData;
    if trigger.is_null() || (*trigger).type_ != pg_sys::NodeTag::T_TriggerData {
        pgrx::ereport!(
            pgrx::PgLogLevel::ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "kip: a history function must be called as a trigger"
        );
    }
    let nothing = pg_sys::Datum::from(0usize);
    // Not recorded: kip.history off, or a pg_dump/pg_restore session (those
    // run with row_security off, as a role that may; a restore brings the
    // history it carries).
    if !super::settings::HISTORY.get() || crate::exec::trigger::restoring((*trigger).tg_relation) {
        return nothing;
    }
    let op = match (*trigger).tg_event & pg_sys::TRIGGER_EVENT_OPMASK {
        pg_sys::TRIGGER_EVENT_INSERT => Op::Insert,
        pg_sys::TRIGGER_EVENT_UPDATE => Op::Update,
        pg_sys::TRIGGER_EVENT_DELETE => Op::Delete,
        _ => return nothing,
    };
    // Nothing to record: an INSERT … ON CONFLICT fires both the INSERT and
    // the UPDATE trigger, one of them with an empty transition table.
    let table = if op == Op::Delete { (*trigger).tg_oldtable } else { (*trigger).tg_newtable };
    if table.is_null() || pg_sys::tuplestore_tuple_count(table) == 0 {
        return nothing;
    }
    // Before any transition row is read (an empty table reads none).
    if !fired_on_recorded_table(trigger, kind) {
        let table = kind.table().to_string_lossy();
        pgrx::error!("kip: kip.{table}_history() records the changes of kip.{table} only");
    }
    let changed_at = pg_sys::GetCurrentTimestamp();
    let role = CString::new(acting_role()).unwrap_or_default();
    let app = setting(c"application_name").and_then(|s| CString::new(s).ok());
    let command = super::history::running_command_hash().and_then(|s| CString::new(s).ok());
    let role_name = pgrx::direct_function_call_as_datum(pg_sys::namein, &[Some(pg_sys::Datum::from(role.as_ptr()))]);
    let text = |s: &Option<CString>| s.as_ref().map(|c| pg_sys::Datum::from(pg_sys::cstring_to_text(c.as_ptr())));
    let params = [Some(pg_sys::Datum::from(changed_at)), role_name, text(&app), text(&command)];
    let mut values = params.map(|p| p.unwrap_or(nothing));
    let nulls = params.map(|p| if p.is_some() { b' ' } else { b'n' } as std::ffi::c_char);
    if pg_sys::SPI_connect() != pg_sys::SPI_OK_CONNECT as i32 {
        pgrx::error!("kip: SPI_connect failed in a history trigger");
    }
    // The transition tables become the relations new_rows / old_rows.
    pg_sys::SPI_register_trigger_data(trigger);
    let plan = saved_plan(kind, op);
    let status = pg_sys::SPI_execute_plan(plan, values.as_mut_ptr(), nulls.as_ptr(), false, 0);
    if status < 0 {
        pgrx::error!("kip: recording history failed (SPI status {status})");
    }
    pg_sys::SPI_finish();
    nothing
}

/// `kip.concepts_history()`.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_concepts_history(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    record(fcinfo, Kind::Concept)
}

/// `kip.propositions_history()`.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_propositions_history(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    record(fcinfo, Kind::Proposition)
}

crate::exec::v1_function_info!(pg_finfo_kip_concepts_history, pg_finfo_kip_propositions_history);

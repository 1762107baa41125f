//! Mapping of Postgres errors caught inside a command to KIP errors.

use pgrx::prelude::*;
use kip_lang::{ErrorCode, KipError};
use pgrx::pg_sys::panic::{CaughtError, ErrorReportWithLevel};
use pgrx::PgSqlErrorCode;
use super::known::SchemaAge;

/// How a deadlock or serialization failure starts its message.
const CONFLICT: &str = "concurrent update conflict";

/// Whether the transaction reads one snapshot throughout (REPEATABLE READ
/// or SERIALIZABLE): a command that conflicted then conflicts again however
/// often it runs, until the transaction starts over.
pub fn uses_transaction_snapshot() -> bool {
    // SAFETY: reads this backend's isolation level.
    unsafe { pgrx::pg_sys::XactIsoLevel >= pgrx::pg_sys::XACT_REPEATABLE_READ as i32 }
}

/// Whether `e` reports a deadlock or serialization failure: the command's
/// subtransaction rolled back (releasing its locks), so running it again
/// may succeed.
pub fn is_conflict(e: &KipError) -> bool {
    e.code == ErrorCode::InternalError && e.message.starts_with(CONFLICT)
}

/// How a statement timeout's KIP error starts its message.
const STATEMENT_TIMEOUT: &str = "execution time exceeded the limit";

/// Whether `e` reports that the calling statement's `statement_timeout`
/// expired. Postgres fires that timer once: the commands of a batch after
/// it would run without it, so a batch stops there.
pub fn is_statement_timeout(e: &KipError) -> bool {
    e.code == ErrorCode::ExecutionTimeout && e.message.starts_with(STATEMENT_TIMEOUT)
}

thread_local! {
    /// The statement (local transaction, when its `statement_timeout` timer
    /// was armed) whose timeout a command reported as `KIP_4001`.
    static EXPIRED_STATEMENT: std::cell::Cell<Option<(u32, pg_sys::TimestampTz)>> = const { std::cell::Cell::new(None) };
}

/// The calling statement: its transaction and the arming of its timer.
/// (Not the statement's start time: the statements of one simple-query
/// message share it, and each has a timer of its own.)
fn current_statement() -> (u32, pg_sys::TimestampTz) {
    (crate::exec::element_size::local_transaction(), super::budget::statement_timer_started_at())
}

fn mark_statement_expired() {
    EXPIRED_STATEMENT.with(|s| s.set(Some(current_statement())));
}

/// `KIP_4001` when a command of the calling statement already met its
/// `statement_timeout`. Postgres fires that timer once, and kip answered it
/// with an envelope: a statement calling kip on many rows (`SELECT
/// kip_execute(c) FROM queue`) would run every later call without a limit,
/// so each is answered so instead.
pub fn statement_expired() -> Result<(), KipError> {
    match EXPIRED_STATEMENT.with(|s| s.get()) {
        Some(marked) if marked == current_statement() => Err(KipError::new(
            ErrorCode::ExecutionTimeout,
            format!("{STATEMENT_TIMEOUT}: an earlier command of this statement reached its statement_timeout"),
        )
        .with_hint("Run the remaining commands in a statement of their own, or raise statement_timeout.")),
        _ => Ok(()),
    }
}

/// Why this transaction cannot write, when it cannot: the server is a
/// standby in recovery, or the transaction is read-only, or the session
/// replays changes (`session_replication_role = replica`, where kip's
/// triggers and foreign-key cascades do not fire: a DELETE left links to
/// the concepts it deleted, an update no version nor history). A KML
/// command is refused with this before it runs, and a write Postgres
/// refused is reported with it: Postgres's own message names the
/// statement kip happened to run first (a `SELECT … FOR UPDATE` for a
/// MERGE), not the reason, nor what to do.
pub fn write_refusal() -> Option<KipError> {
    // SAFETY: reads this backend's recovery, transaction and session state.
    let (standby, read_only, replica) = unsafe {
        (
            pg_sys::RecoveryInProgress(),
            pg_sys::XactReadOnly,
            pg_sys::SessionReplicationRole == pg_sys::SESSION_REPLICATION_ROLE_REPLICA as i32,
        )
    };
    if replica {
        return Some(
            KipError::new(
                ErrorCode::InternalError,
                "write refused: session_replication_role is replica, under which kip's triggers and foreign-key cascades do not fire",
            )
            .with_hint("Run KML with session_replication_role = origin (SET session_replication_role = DEFAULT)."),
        );
    }
    if standby {
        Some(
            KipError::new(ErrorCode::InternalError, "write refused: this server is a standby in recovery, where every transaction is read-only")
                .with_hint("Send KML (UPSERT, UPDATE, MERGE, DELETE) and administration to the primary server; reads work here."),
        )
    } else if read_only {
        Some(
            KipError::new(
                ErrorCode::InternalError,
                "write refused: the transaction is read-only (BEGIN READ ONLY, SET TRANSACTION READ ONLY or default_transaction_read_only)",
            )
            .with_hint("Run writes in a read-write transaction: BEGIN READ WRITE, or SET default_transaction_read_only = off (a transaction begun on a standby stays read-only after its promotion: start a new one)."),
        )
    } else {
        None
    }
}

/// What to do with an error caught while running one KIP command.
pub enum Caught {
    /// Report it to the caller as a KIP error envelope.
    Kip(KipError),
    /// Let it propagate as a Postgres error (a user's cancel request).
    Rethrow(CaughtError),
}

pub fn classify(caught: CaughtError) -> Caught {
    let report: &ErrorReportWithLevel = match &caught {
        CaughtError::PostgresError(r) | CaughtError::ErrorReport(r) => r,
        CaughtError::RustPanic { ereport, .. } => ereport,
    };
    let code = report.sql_error_code();
    let message = report.message().to_string();
    use PgSqlErrorCode::*;
    if code == ERRCODE_READ_ONLY_SQL_TRANSACTION {
        if let Some(refusal) = write_refusal() {
            return Caught::Kip(refusal);
        }
    }
    if matches!(code, ERRCODE_UNDEFINED_FUNCTION | ERRCODE_UNDEFINED_TABLE | ERRCODE_UNDEFINED_COLUMN | ERRCODE_UNDEFINED_OBJECT) {
        if let Some(mismatch) = schema_mismatch(&message) {
            return Caught::Kip(mismatch);
        }
    }
    let kip = match code {
        ERRCODE_QUERY_CANCELED if super::budget::take_expiry() => KipError::new(
            ErrorCode::ExecutionTimeout,
            format!("the command ran longer than kip.command_timeout ({} ms) and was rolled back", super::budget::limit_ms()),
        )
        .with_hint("Narrow the pattern, lower LIMIT, reduce hops or regex use, write fewer elements per command, or raise kip.command_timeout (SET kip.command_timeout = '2min')."),
        ERRCODE_QUERY_CANCELED if message.contains("statement timeout") || super::budget::statement_timer_fired() => {
            mark_statement_expired();
            KipError::new(ErrorCode::ExecutionTimeout, format!("{STATEMENT_TIMEOUT}: {message}"))
                .with_hint("Narrow the pattern, lower LIMIT, reduce hops or regex use, write fewer elements per command, or raise statement_timeout.")
        }
        ERRCODE_QUERY_CANCELED => return Caught::Rethrow(caught),
        ERRCODE_LOCK_NOT_AVAILABLE => KipError::new(ErrorCode::ExecutionTimeout, format!("could not obtain a lock in time: {message}"))
            .with_hint("Another session holds a lock this command needs (a row it writes, or a whole table under LOCK TABLE, VACUUM FULL, CLUSTER or ALTER TABLE); retry later, or raise lock_timeout."),
        ERRCODE_READ_ONLY_SQL_TRANSACTION | ERRCODE_FEATURE_NOT_SUPPORTED if message.contains("read-only") || message.contains("non-volatile") => {
            KipError::new(ErrorCode::InternalError, format!("write refused in a read-only context: {message}"))
                .with_hint("Use kip_execute (not kip_execute_readonly) for KML, outside read-only transactions.")
        }
        ERRCODE_PROGRAM_LIMIT_EXCEEDED if message.contains("too long for tsvector") => KipError::new(
            ErrorCode::ConstraintViolation,
            format!("the text to index for keyword search is too long: {message}"),
        )
        .with_hint("Shorten the name, description or aliases: keyword search indexes at most 1 MB of words per element."),
        ERRCODE_PROGRAM_LIMIT_EXCEEDED if message.starts_with(super::element_size::REFUSAL) => {
            KipError::new(ErrorCode::ConstraintViolation, message.to_string())
                .with_hint("Keep long text outside memory elements or split it over several concepts, or raise kip.max_element_size.")
        }
        ERRCODE_PROGRAM_LIMIT_EXCEEDED if message.contains("index row") => KipError::new(
            ErrorCode::ConstraintViolation,
            format!("a value is too long to be indexed: {message}"),
        )
        .with_hint("Shorten the type, name or predicate."),
        // Postgres's stack depth limit: a trigger on kip's tables that runs
        // KIP commands which fire it again nests without end.
        ERRCODE_STATEMENT_TOO_COMPLEX if message.contains("stack depth") => {
            KipError::new(ErrorCode::ResourceExhausted, format!("resources exhausted: {message}"))
                .with_hint("Commands nest too deeply: a trigger on kip's tables that runs kip_execute may be firing itself again.")
        }
        // An error a user's trigger or function raised while kip wrote: the
        // user's to look at, not a transient fault to retry.
        ERRCODE_RAISE_EXCEPTION => KipError::new(ErrorCode::InternalError, format!("raised by a trigger or function outside kip: {message}"))
            .with_hint("A trigger or function added to kip's tables refused the change; fix or disable it, or change the command."),
        ERRCODE_OUT_OF_MEMORY | ERRCODE_PROGRAM_LIMIT_EXCEEDED | ERRCODE_STATEMENT_TOO_COMPLEX => {
            KipError::new(ErrorCode::ResourceExhausted, format!("resources exhausted: {message}"))
                .with_hint("Use LIMIT with CURSOR pagination, or narrow the pattern.")
        }
        // (Matched on the constraint names alone: `lc_messages` translates
        // the quotes around them.)
        // kip issues element and history ids from its sequences, so an id
        // already taken means a sequence is behind the rows, most likely: a
        // restore of the tables without their sequences (`pg_dump -t`), or
        // a `setval`. Every write would fail the same way. (The names are
        // kip's constraints; a user's trigger writing a table with a
        // constraint of the same name would be reported so too, hence
        // "may".) The mended value counts the ids of deleted elements,
        // which live on in the history and are never issued again.
        ERRCODE_UNIQUE_VIOLATION if message.contains("concepts_pkey") || message.contains("propositions_pkey") => KipError::new(
            ErrorCode::InternalError,
            format!("an element id kip issued is taken: kip.element_id_seq may be behind the stored ids (tables restored without it?): {message}"),
        )
        .with_hint("If so, as the extension's owner: SELECT setval('kip.element_id_seq', (SELECT max(id) FROM (SELECT max(id) AS id FROM kip.concepts UNION ALL SELECT max(id) FROM kip.propositions UNION ALL SELECT max(element_id) FROM kip.history) m));"),
        ERRCODE_UNIQUE_VIOLATION if message.contains("history_pkey") => KipError::new(
            ErrorCode::InternalError,
            format!("a history id is taken: kip.history_id_seq may be behind the stored history (the table restored without it?): {message}"),
        )
        .with_hint("If so, as the extension's owner: SELECT setval('kip.history_id_seq', (SELECT max(id) FROM kip.history));"),
        // A write that resolved its endpoints, then lost one to a DELETE
        // committed by another session before its INSERT: the referenced
        // element no longer exists.
        // The concepts' key to their space (`concepts_space_fkey`, the one
        // foreign key to kip.spaces): the space went, not an element.
        ERRCODE_FOREIGN_KEY_VIOLATION if message.contains("\"concepts_space_fkey\"") => KipError::new(
            ErrorCode::NotFound,
            "the memory space was dropped or renamed by another session while this command wrote to it; nothing was written",
        )
        .with_hint("Check the space (SELECT name FROM kip.spaces), then send the command again: in a space dropped meanwhile it starts a new, empty one."),
        ERRCODE_FOREIGN_KEY_VIOLATION => KipError::new(ErrorCode::NotFound, format!("a referenced element was deleted concurrently: {message}"))
            .with_hint("Another writer deleted an element this command refers to; check it with FIND and retry."),
        // Arithmetic past the range of a number (ADD/MUL of huge values).
        ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE => KipError::new(ErrorCode::ResourceExhausted, format!("number out of range: {message}"))
            .with_hint("Keep numeric values and their arithmetic within double precision range."),
        // "regular expression is too complex" (REG_ETOOBIG) is Postgres's
        // size limit on the compiled automaton, not a syntax error: a
        // resource limit like the other program limits above.
        ERRCODE_INVALID_REGULAR_EXPRESSION if message.contains("too complex") => {
            KipError::new(ErrorCode::ResourceExhausted, format!("resources exhausted: {message}"))
                .with_hint("Simplify the pattern given to REGEX (fewer nested or bounded repetitions).")
        }
        // Postgres's message already says "invalid regular expression: …".
        ERRCODE_INVALID_REGULAR_EXPRESSION => KipError::new(ErrorCode::InvalidSyntax, message.to_string())
            .with_hint("Fix the pattern given to REGEX (POSIX regular expression syntax)."),
        // A role without the privileges of kip's group roles, or a write
        // refused by row-level security: an access error, not an internal
        // one.
        // With `row_security` off, a role under row-level security gets
        // an error from every query on kip's tables, whatever its grants.
        ERRCODE_INSUFFICIENT_PRIVILEGE if !unsafe { pg_sys::row_security } => {
            KipError::new(ErrorCode::ImmutableTarget, format!("access denied: {message}"))
                .with_hint("row_security is off in this session, and this role's access to kip's tables goes through row-level security: SET row_security = on.")
        }
        // Postgres checks a link's endpoints as the owner of kip's tables:
        // an owner other than the extension's may lack USAGE on schema kip
        // where the caller has it (README "Roles").
        ERRCODE_INSUFFICIENT_PRIVILEGE if message.contains("schema kip") => KipError::new(ErrorCode::ImmutableTarget, format!("access denied: {message}"))
            .with_hint("Members of kip_reader and kip_writer have USAGE on schema kip. If this role is one (or a superuser), the role refused is the owner of kip's tables, as which Postgres checks links' endpoints: GRANT USAGE ON SCHEMA kip TO <that owner>; otherwise: GRANT kip_writer TO <role>; SELECT kip_grant('<space>', '<role>', 'write');"),
        ERRCODE_INSUFFICIENT_PRIVILEGE => KipError::new(ErrorCode::ImmutableTarget, format!("access denied: {message}"))
            .with_hint("A role uses kip as a member of kip_reader (to read) or kip_writer (to write), with a grant on the space: GRANT kip_writer TO <role>; SELECT kip_grant('<space>', '<role>', 'write');"),
        ERRCODE_T_R_SERIALIZATION_FAILURE | ERRCODE_T_R_DEADLOCK_DETECTED => {
            // Under REPEATABLE READ or SERIALIZABLE every later command of
            // the transaction reads the same snapshot and fails the same way.
            let hint = if uses_transaction_snapshot() {
                "Roll back the transaction and run it again: under REPEATABLE READ or SERIALIZABLE the command fails again until then."
            } else {
                "Retry the command; inside a transaction that wrote before it, roll back and retry the transaction."
            };
            KipError::new(ErrorCode::InternalError, format!("{CONFLICT}: {message}")).with_hint(hint)
        }
        _ => KipError::new(ErrorCode::InternalError, format!("internal database error ({code:?}): {message}"))
            .with_hint("Retry later; if it persists, report it with the command that caused it."),
    };
    Caught::Kip(kip)
}

/// A missing SQL object when the installed objects are not this library's
/// version: what is missing is the other side's to add, not a bug.
fn schema_mismatch(message: &str) -> Option<KipError> {
    let library = env!("CARGO_PKG_VERSION");
    match super::known::schema_age_known()? {
        SchemaAge::Current => None,
        SchemaAge::Older => Some(
            KipError::new(
                ErrorCode::InternalError,
                format!("kip's SQL objects in this database are older than its library ({library}), which needs what they lack: {message}"),
            )
            .with_hint("Run ALTER EXTENSION kip UPDATE in this database (README, Upgrading)."),
        ),
        SchemaAge::Newer => Some(
            KipError::new(
                ErrorCode::InternalError,
                format!("kip's SQL objects in this database are newer than the library this server loaded ({library}): {message}"),
            )
            .with_hint("Restart the server after installing a new kip (it is in shared_preload_libraries), or reconnect."),
        ),
    }
}

/// For the SQL functions that write and return values rather than the
/// envelope: on a standby, in a read-only transaction or under a replica
/// session role, raise the reason ([`write_refusal`]) before anything
/// runs (Postgres's own refusal named the statement, not the reason, and
/// `kip_embed_pending` ran the model before its first write failed).
pub fn refuse_writes_here() {
    if let Some(e) = write_refusal() {
        raise(e);
    }
}

/// Raise a KIP error as a Postgres ERROR, for SQL functions that return
/// values rather than the KIP envelope.
pub fn raise(e: kip_lang::KipError) -> ! {
    let mut report = pgrx::pg_sys::panic::ErrorReport::new(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("{}: {}", e.code.as_str(), e.message),
        "kip",
    );
    if let Some(hint) = e.hint {
        report = report.set_hint(hint);
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("ereport(ERROR) does not return")
}

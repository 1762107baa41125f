//! The time budget of one KIP command (`kip.command_timeout`).
//!
//! A per-backend Postgres timeout (`RegisterTimeout(USER_TIMEOUT)`) is armed
//! before each command and disarmed after it, so every command of a batch
//! gets the full budget, whatever the previous ones used. When it fires, the
//! handler requests a query cancel exactly as `statement_timeout` does; the
//! command's subtransaction catches the cancel and, seeing that the budget
//! expired, reports `KIP_4001` and rolls the command back. A user's own
//! cancel request still propagates (see `pg_error`).

use pgrx::pg_sys;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

// utils/timeout.h is not part of pgrx's bindings.
type TimeoutId = std::ffi::c_int;
/// `USER_TIMEOUT` of `enum TimeoutId` (utils/timeout.h): "give me a new id".
#[cfg(any(feature = "pg15", feature = "pg16"))]
const USER_TIMEOUT: TimeoutId = 12;
#[cfg(feature = "pg17")]
const USER_TIMEOUT: TimeoutId = 13;

/// `STATEMENT_TIMEOUT` of `enum TimeoutId` (the same from 15 to 17).
const STATEMENT_TIMEOUT: TimeoutId = 3;

extern "C-unwind" {
    fn RegisterTimeout(id: TimeoutId, handler: Option<unsafe extern "C-unwind" fn()>) -> TimeoutId;
    fn enable_timeout_after(id: TimeoutId, delay_ms: std::ffi::c_int);
    fn disable_timeout(id: TimeoutId, keep_indicator: bool);
    fn get_timeout_start_time(id: TimeoutId) -> pg_sys::TimestampTz;
    fn get_timeout_finish_time(id: TimeoutId) -> pg_sys::TimestampTz;
    fn get_timeout_active(id: TimeoutId) -> bool;
    fn enable_timeout_at(id: TimeoutId, fin_time: pg_sys::TimestampTz);
}

/// When `statement_timeout`'s timer was last armed: each statement that
/// runs under the setting arms it anew (several statements of one query
/// message each get their own), and it stays put while one statement runs.
pub fn statement_timer_started_at() -> pg_sys::TimestampTz {
    // SAFETY: reads the timeout module's bookkeeping of this backend.
    unsafe { get_timeout_start_time(STATEMENT_TIMEOUT) }
}

/// Whether `statement_timeout` fired during the calling statement: its
/// timer, armed since the statement started, is no longer active and its
/// time has come. Postgres tells that cancel from a user's only by the
/// message's text, which `lc_messages` may translate.
pub fn statement_timer_fired() -> bool {
    // SAFETY: reads the timeout module's bookkeeping and the transaction's
    // timestamps of this backend.
    unsafe {
        let armed = get_timeout_start_time(STATEMENT_TIMEOUT);
        armed != 0
            && armed >= pg_sys::GetCurrentStatementStartTimestamp()
            && !get_timeout_active(STATEMENT_TIMEOUT)
            && get_timeout_finish_time(STATEMENT_TIMEOUT) <= pg_sys::GetCurrentTimestamp()
    }
}

/// The registered timeout id; -1 until first use in this backend.
static TIMEOUT_ID: AtomicI32 = AtomicI32::new(-1);
/// Set by the timeout handler; read when a cancel is caught.
static EXPIRED: AtomicBool = AtomicBool::new(false);

extern "C" {
    /// Postgres's `SetLatch`, declared here without pgrx's guard: pgrx
    /// checks that its FFI is called from the backend's thread, and a
    /// failed check in a signal handler aborts the process.
    #[link_name = "SetLatch"]
    fn set_latch_unguarded(latch: *mut pg_sys::Latch);
}

/// Runs in the SIGALRM handler: only async-signal-safe work, and nothing
/// that needs the backend's thread (kip blocks Postgres's signals in the
/// threads it and the embedding runtime start, but a handler must never be
/// the place a thread check fails).
unsafe extern "C-unwind" fn on_timeout() {
    EXPIRED.store(true, Ordering::SeqCst);
    unsafe {
        pg_sys::QueryCancelPending = 1;
        pg_sys::InterruptPending = 1;
        set_latch_unguarded(pg_sys::MyLatch);
    }
}

fn timeout_id() -> TimeoutId {
    let id = TIMEOUT_ID.load(Ordering::Relaxed);
    if id >= 0 {
        return id;
    }
    let id = unsafe { RegisterTimeout(USER_TIMEOUT, Some(on_timeout)) };
    TIMEOUT_ID.store(id, Ordering::Relaxed);
    id
}

/// Whether the cancel just caught is the budget's, which it then answers:
/// the expiry is cleared, so a user's cancel arriving before the budget is
/// disarmed stays pending (the disarm withdraws a cancel only while an
/// expiry is unanswered).
pub fn take_expiry() -> bool {
    EXPIRED.swap(false, Ordering::SeqCst)
}

/// The budget in milliseconds (0: none).
pub fn limit_ms() -> i32 {
    crate::guc::COMMAND_TIMEOUT.get().max(0)
}

/// An armed budget; disarmed when dropped.
pub struct Armed {
    id: Option<TimeoutId>,
    /// The deadline of the KIP command this one runs inside (a trigger on
    /// kip's tables that the outer command fired ran it), put back when
    /// this one ends; and whether this one's deadline is that one.
    outer: Option<(pg_sys::TimestampTz, bool)>,
}

/// Arm the budget for one command. Inside another command's budget (a KIP
/// command run by a trigger the outer one fired) it may not outlast the
/// outer deadline, and the outer budget is armed again when it ends:
/// disarming it left the outer command without a time limit.
pub fn arm() -> Armed {
    let ms = limit_ms();
    let registered = TIMEOUT_ID.load(Ordering::Relaxed);
    // SAFETY: reads the timeout module's bookkeeping of this backend.
    let outer_deadline = (registered >= 0 && unsafe { get_timeout_active(registered) })
        .then(|| unsafe { get_timeout_finish_time(registered) });
    if outer_deadline.is_none() {
        EXPIRED.store(false, Ordering::SeqCst);
    }
    if ms == 0 {
        // No budget of its own: an outer one stays armed as it is.
        return Armed { id: None, outer: None };
    }
    let id = timeout_id();
    // SAFETY: this backend's own timeout, registered above.
    let outer = match outer_deadline {
        Some(deadline) => {
            let own = unsafe { pg_sys::GetCurrentTimestamp() }.saturating_add(i64::from(ms) * 1000);
            unsafe { enable_timeout_at(id, own.min(deadline)) };
            Some((deadline, deadline <= own))
        }
        None => {
            unsafe { enable_timeout_after(id, ms) };
            None
        }
    };
    Armed { id: Some(id), outer }
}

impl Drop for Armed {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        // SAFETY: this backend's own timeout.
        unsafe { disable_timeout(id, false) };
        if let Some((deadline, shared)) = self.outer {
            // The outer command's budget goes on; one spent here is spent
            // there too (the timer fires at once), an expiry of this
            // command's shorter budget is not the outer one's.
            if !shared {
                EXPIRED.store(false, Ordering::SeqCst);
            }
            unsafe { enable_timeout_at(id, deadline) };
            return;
        }
        // The budget ran out after the command's last interrupt check: the
        // cancel it requested belongs to no command, so withdraw it.
        if EXPIRED.swap(false, Ordering::SeqCst) {
            unsafe { pg_sys::QueryCancelPending = 0 };
        }
    }
}

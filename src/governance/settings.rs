//! Settings (GUCs) of the history.
//!
//! | setting                 | default   | context   | meaning                                              |
//! |-------------------------|-----------|-----------|------------------------------------------------------|
//! | `kip.history`           | `on`      | superuser | record every change of an element in `kip.history`   |
//! | `kip.history_retention` | `90 days` | superuser | history older than this is pruned by the worker; empty or `0` keeps it forever |
//!
//! `kip.history` and `kip.history_retention` are superuser settings: a role
//! that writes memory cannot switch off or shorten its own audit trail.

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use std::ffi::CString;

pub static HISTORY: GucSetting<bool> = GucSetting::<bool>::new(true);
pub static RETENTION: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"90 days"));

pub fn register() {
    GucRegistry::define_bool_guc(
        c"kip.history",
        c"Record every insert, update and delete of a concept or proposition in kip.history.",
        c"Superuser setting, so a role that writes memory cannot switch off its own audit trail.",
        &HISTORY,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"kip.history_retention",
        c"How long kip.history keeps a change (an interval, e.g. '90 days'); empty or 0 keeps it forever.",
        c"The background worker deletes older changes in bounded batches after each maintenance cycle.",
        &RETENTION,
        GucContext::Suset,
        GucFlags::default(),
    );
}

/// The retention interval as written, or `None` to keep everything.
pub fn retention() -> Option<String> {
    let value = RETENTION.get().map(|s| s.to_string_lossy().trim().to_string()).unwrap_or_default();
    (!value.is_empty() && value != "0").then_some(value)
}

//! Session settings (GUCs) of the extension.
//!
//! | setting             | default   | meaning                                                   |
//! |---------------------|-----------|-----------------------------------------------------------|
//! | `kip.space`         | `default` | the memory space every KIP command sees and touches       |
//! | `kip.default_limit` | `100`     | rows returned by FIND / DESCRIBE / EXPORT without LIMIT   |
//! | `kip.max_limit`     | `10000`   | the largest LIMIT accepted (larger ones are capped)       |
//! | `kip.max_hops`      | `10`      | depth bound of open hop quantifiers such as `{1,}`        |
//! | `kip.command_timeout` | `30s`   | time budget of each command (`KIP_4001`); 0 disables it   |
//! | `kip.max_command_size` | `4MB`  | largest command text accepted (`KIP_4002`)                |
//! | `kip.max_clauses`   | `512`     | WHERE clauses and FILTER terms per command (`KIP_4002`)   |

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use std::ffi::CString;

pub static SPACE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"default"));
pub static DEFAULT_LIMIT: GucSetting<i32> = GucSetting::<i32>::new(100);
pub static MAX_LIMIT: GucSetting<i32> = GucSetting::<i32>::new(10_000);
pub static MAX_HOPS: GucSetting<i32> = GucSetting::<i32>::new(10);
/// Milliseconds.
pub static COMMAND_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(30_000);
/// Kilobytes.
pub static MAX_COMMAND_SIZE: GucSetting<i32> = GucSetting::<i32>::new(4_096);
pub static MAX_CLAUSES: GucSetting<i32> = GucSetting::<i32>::new(512);
/// Kilobytes.
pub static MAX_ELEMENT_SIZE: GucSetting<i32> = GucSetting::<i32>::new(1_024);

pub fn register() {
    GucRegistry::define_string_guc(
        c"kip.space",
        c"The KIP memory space used by kip_execute in this session.",
        c"Each space is an independent memory inside the database; it is created and bootstrapped on first use.",
        &SPACE,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"kip.default_limit",
        c"Rows returned by FIND, DESCRIBE and EXPORT when the command has no LIMIT.",
        c"",
        &DEFAULT_LIMIT,
        1,
        1_000_000,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"kip.max_limit",
        c"The largest LIMIT a KIP read accepts; larger values are capped to it.",
        c"",
        &MAX_LIMIT,
        1,
        10_000_000,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"kip.max_hops",
        c"Depth bound of open-ended hop quantifiers such as {1,} in KIP patterns.",
        c"A walk that would need more hops than this fails with KIP_4002 instead of being silently truncated.",
        &MAX_HOPS,
        1,
        1_000,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"kip.command_timeout",
        c"Time budget of each KIP command; 0 disables it.",
        c"Every command of a batch gets its own budget. A command that exceeds it is rolled back and answered with KIP_4001.",
        &COMMAND_TIMEOUT,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"kip.max_command_size",
        c"The largest KIP command text accepted.",
        c"Larger command texts are refused with KIP_4002 before they are parsed.",
        &MAX_COMMAND_SIZE,
        1,
        1_048_576,
        GucContext::Userset,
        GucFlags::UNIT_KB,
    );
    GucRegistry::define_int_guc(
        c"kip.max_element_size",
        c"The most bytes of attributes and metadata a KML command may leave on one element.",
        c"Counted uncompressed; a write past it is refused with KIP_2002 and leaves nothing. Plain SQL writes are not checked.",
        &MAX_ELEMENT_SIZE,
        1,
        1_048_576,
        GucContext::Userset,
        GucFlags::UNIT_KB,
    );
    GucRegistry::define_int_guc(
        c"kip.max_clauses",
        c"The most WHERE clauses and FILTER terms one KIP command may have.",
        c"Counted over every nesting level; larger patterns are refused with KIP_4002 before they are compiled.",
        &MAX_CLAUSES,
        1,
        100_000,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The current space name, as set (validated separately by `space::current`).
pub fn space_setting() -> String {
    SPACE
        .get()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "default".to_string())
}

//! kip — KIP (Knowledge Interaction Protocol) memory engine for PostgreSQL.
//!
//! Data flow: SQL entry point (`api`) → request validation → `kip_lang`
//! parse + bind → `engine` dispatch → per-command compilation to SQL with
//! bind parameters → SPI execution (`exec`) inside a subtransaction → KIP
//! response envelope. Storage lives in schema `kip` (`sql/schema.sql`).

use pgrx::prelude::*;

::pgrx::pg_module_magic!(name, version);

mod api;
mod bootstrap;
mod compile;
mod embed;
mod engine;
mod exec;
mod explain;
mod governance;
mod guc;
mod maintenance;
mod schema;
mod search;
mod space;
mod sql_api;

pgrx::extension_sql_file!("../sql/schema.sql", name = "kip_schema", bootstrap);
pgrx::extension_sql_file!("../sql/maintenance.sql", name = "kip_maintenance_schema", requires = ["kip_schema"]);
pgrx::extension_sql_file!("../sql/embedding.sql", name = "kip_embedding_schema", requires = ["kip_schema"]);
// Roles, grants, row-level security and history: last, over every object.
pgrx::extension_sql_file!("../sql/governance.sql", name = "kip_governance_schema", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    guc::register();
    maintenance::settings::register();
    embed::settings::register();
    governance::settings::register();
    // Only does something while the postmaster preloads the library.
    maintenance::worker::register();
}

// `#[pg_schema]` needs an inline module; the tests live in their own file.
#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    include!("pg_tests.rs");
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}

//! kip — KIP (Knowledge Interaction Protocol) memory engine for PostgreSQL.
//!
//! Data flow: SQL entry point (`api`) → request validation and the session's
//! space (`engine::request`, `bootstrap::spaces`) → `kip_lang` parse + bind →
//! per command, inside a subtransaction: `resolve` (batched catalog reads) →
//! `compile` (pure: AST + facts → SQL with bind parameters) → `exec` (SPI) →
//! KIP response envelope (`engine::envelope`). Storage lives in schema `kip`
//! (`sql/schema.sql`). docs/DESIGN.md §1 has the layers and their rules.

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
mod params;
mod resolve;
mod maintenance;
mod schema;
mod search;
mod space;
mod sql_api;

pgrx::extension_sql_file!("../sql/schema.sql", name = "kip_schema", bootstrap);
pgrx::extension_sql_file!("../sql/maintenance.sql", name = "kip_maintenance_schema", requires = ["kip_schema"]);
pgrx::extension_sql_file!("../sql/embedding.sql", name = "kip_embedding_schema", requires = ["kip_schema"]);
// Raised by the SQL of open hop walks (`compile::hops`).
pgrx::extension_sql!(
    r#"
CREATE FUNCTION kip.hops_exceeded(ok boolean, max_hops integer) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT ok THEN
        RAISE EXCEPTION 'the walk goes deeper than kip.max_hops = % links', max_hops
            USING ERRCODE = '54001',
                  HINT = 'Give the quantifier an upper bound, anchor the walk closer to its target, or raise kip.max_hops.';
    END IF;
    RETURN true;
END;
$$;
COMMENT ON FUNCTION kip.hops_exceeded(boolean, integer) IS 'Raises SQLSTATE 54001 (KIP_4002) when an open hop walk exceeds kip.max_hops';
"#,
    name = "kip_hops_helpers",
    requires = ["kip_schema"]
);
// Roles, grants, row-level security and history: last, over every object.
pgrx::extension_sql_file!("../sql/governance.sql", name = "kip_governance_schema", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    guc::register();
    maintenance::settings::register();
    embed::settings::register();
    governance::settings::register();
    exec::known::register();
    governance::privileges::register();
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

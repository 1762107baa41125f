//! In-database tests (`cargo pgrx test`).

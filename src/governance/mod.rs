//! Governance: who may read and write which memory space, and the history
//! of every change (`sql/governance.sql`, docs/DESIGN.md §16).
//!
//! Postgres enforces access itself: group roles (`kip_reader`,
//! `kip_writer`, `kip_admin`), grants per space (`kip.space_grants`,
//! `kip_grant` / `kip_revoke`) and row-level security on the tables. This
//! module adds what the engine needs on top: a clear KIP error
//! (`KIP_3004`) before a command touches a space the caller may not use
//! (`access`), the KIP command's hash for the history triggers and the
//! history settings (`history`, `settings`), and the pruning of old
//! history by the background worker (`retention`).
//!
//! Floor: engine-level helpers (SPI through `exec`); no compile-stage code.

pub mod access;
mod element_ids;
pub mod history;
pub mod privileges;
mod history_trigger;
pub mod retention;
pub mod settings;

//! The reserved `_` metadata namespace (RC10 §2.11.1): `_version`,
//! `_updated_at`, `_merged_from`, `_score`, … are written by the engine only.
//! KML that sets or deletes such a key fails with `KIP_2002`.

use kip_lang::ast::{Field, StrArg, UpdateField};
use kip_lang::{ErrorCode, KipError};

pub fn is_reserved(key: &str) -> bool {
    key.starts_with('_')
}

fn refused(key: &str, action: &str) -> KipError {
    KipError::new(
        ErrorCode::ConstraintViolation,
        format!("metadata key {key:?} is reserved: `_`-prefixed metadata is maintained by the engine and cannot be {action}"),
    )
    .with_hint("Remove the `_` key from the command. Read _version/_updated_at/_merged_from with dot notation (?x.metadata._version); use EXPECT VERSION to guard a write.")
}

/// `WITH METADATA {…}` of an UPSERT (statement, block or item level).
pub fn check_metadata_fields(fields: Option<&[Field]>) -> Result<(), KipError> {
    match fields.and_then(|f| f.iter().find(|f| is_reserved(&f.key))) {
        Some(f) => Err(refused(&f.key, "written")),
        None => Ok(()),
    }
}

/// `SET METADATA {…}` of an UPDATE.
pub fn check_update_fields(fields: Option<&[UpdateField]>) -> Result<(), KipError> {
    match fields.and_then(|f| f.iter().find(|f| is_reserved(&f.key))) {
        Some(f) => Err(refused(&f.key, "written")),
        None => Ok(()),
    }
}

/// The key list of `DELETE METADATA {…}` (already bound).
pub fn check_deleted_keys(keys: &[StrArg]) -> Result<(), KipError> {
    match keys.iter().filter_map(|k| k.as_str()).find(|k| is_reserved(k)) {
        Some(k) => Err(refused(k, "deleted")),
        None => Ok(()),
    }
}

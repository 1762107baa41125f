//! Bootstrapping a new memory space with the Genesis and core capsules.

use crate::space::Space;
use kip_lang::KipError;

pub fn run(_space: &Space) -> Result<(), KipError> {
    Ok(())
}

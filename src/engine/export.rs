//! Execution of EXPORT commands.

use super::Ctx;
use crate::api::envelope::Outcome;
use kip_lang::KipError;

pub fn execute(command: &kip_lang::ast::Command, _ctx: &Ctx) -> Result<Outcome, KipError> {
    Err(super::not_supported(command))
}

//! What a statement runs as: the memory space, whether it may write, and
//! who issued the command.

use super::Access;
use crate::space::Space;
use std::rc::Rc;

/// The entry point a command came through: `kip_execute` (read-write) or
/// `kip_execute_readonly`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadWrite,
    ReadOnly,
}

/// Who issued a command. Only the extension's own bootstrap may refine the
/// immutable core of the schema (see `resolve::protection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// An agent or application (kip_execute, the maintenance cycle's tasks).
    Caller,
    /// The extension loading its capsules into a space.
    Bootstrap,
}

/// What every command executor gets.
pub struct Ctx {
    pub space: Space,
    pub access: Access,
    pub origin: Origin,
    /// The command text as the caller sent it, when the command came as
    /// text: the key of per-text memos (`engine::find`'s templates).
    pub text: Option<Rc<str>>,
}

impl Ctx {
    /// A caller's context in `space`.
    pub fn new(space: Space, access: Access) -> Ctx {
        Ctx { space, access, origin: Origin::Caller, text: None }
    }

    /// A caller's context for the command text `text`.
    pub fn for_text(space: Space, access: Access, text: &str) -> Ctx {
        Ctx { text: Some(Rc::from(text)), ..Ctx::new(space, access) }
    }
}

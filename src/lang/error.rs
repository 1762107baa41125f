//! KIP standard errors (spec Appendix 4).

use std::fmt;

/// Every error code of the spec's Appendix 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ErrorCode {
    /// KIP_1001 — parse or structural error.
    InvalidSyntax,
    /// KIP_1002 — illegal identifier format (e.g. starting with a digit).
    InvalidIdentifier,
    /// KIP_2001 — unknown type or predicate.
    TypeMismatch,
    /// KIP_2002 — schema constraint violated.
    ConstraintViolation,
    /// KIP_2003 — JSON value type mismatches schema.
    InvalidValueType,
    /// KIP_3001 — undefined variable or handle.
    ReferenceError,
    /// KIP_3002 — referenced node/link does not exist.
    NotFound,
    /// KIP_3003 — uniqueness violated / MERGE variable matched >1 node.
    DuplicateExists,
    /// KIP_3004 — protected system structure.
    ImmutableTarget,
    /// KIP_3005 — EXPECT VERSION mismatch.
    VersionConflict,
    /// KIP_4001 — execution timeout.
    ExecutionTimeout,
    /// KIP_4002 — result/resource limit exceeded.
    ResourceExhausted,
    /// KIP_4003 — internal error.
    InternalError,
}

impl ErrorCode {
    /// All codes, in spec order.
    pub const ALL: [ErrorCode; 13] = [
        ErrorCode::InvalidSyntax,
        ErrorCode::InvalidIdentifier,
        ErrorCode::TypeMismatch,
        ErrorCode::ConstraintViolation,
        ErrorCode::InvalidValueType,
        ErrorCode::ReferenceError,
        ErrorCode::NotFound,
        ErrorCode::DuplicateExists,
        ErrorCode::ImmutableTarget,
        ErrorCode::VersionConflict,
        ErrorCode::ExecutionTimeout,
        ErrorCode::ResourceExhausted,
        ErrorCode::InternalError,
    ];

    /// The wire code, e.g. `"KIP_1001"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidSyntax => "KIP_1001",
            ErrorCode::InvalidIdentifier => "KIP_1002",
            ErrorCode::TypeMismatch => "KIP_2001",
            ErrorCode::ConstraintViolation => "KIP_2002",
            ErrorCode::InvalidValueType => "KIP_2003",
            ErrorCode::ReferenceError => "KIP_3001",
            ErrorCode::NotFound => "KIP_3002",
            ErrorCode::DuplicateExists => "KIP_3003",
            ErrorCode::ImmutableTarget => "KIP_3004",
            ErrorCode::VersionConflict => "KIP_3005",
            ErrorCode::ExecutionTimeout => "KIP_4001",
            ErrorCode::ResourceExhausted => "KIP_4002",
            ErrorCode::InternalError => "KIP_4003",
        }
    }

    /// The spec's error name, e.g. `"InvalidSyntax"`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::InvalidSyntax => "InvalidSyntax",
            ErrorCode::InvalidIdentifier => "InvalidIdentifier",
            ErrorCode::TypeMismatch => "TypeMismatch",
            ErrorCode::ConstraintViolation => "ConstraintViolation",
            ErrorCode::InvalidValueType => "InvalidValueType",
            ErrorCode::ReferenceError => "ReferenceError",
            ErrorCode::NotFound => "NotFound",
            ErrorCode::DuplicateExists => "DuplicateExists",
            ErrorCode::ImmutableTarget => "ImmutableTarget",
            ErrorCode::VersionConflict => "VersionConflict",
            ErrorCode::ExecutionTimeout => "ExecutionTimeout",
            ErrorCode::ResourceExhausted => "ResourceExhausted",
            ErrorCode::InternalError => "InternalError",
        }
    }

    /// Parse a wire code (`"KIP_3002"`).
    pub fn from_code(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == code)
    }

    /// The spec's generic recovery hint for this code.
    pub fn default_hint(self) -> &'static str {
        match self {
            ErrorCode::InvalidSyntax => "Check parenthesis matching, keyword spelling, and statement structure. Ensure JSON data format is valid.",
            ErrorCode::InvalidIdentifier => "Identifiers must match regex [a-zA-Z_][a-zA-Z0-9_]*.",
            ErrorCode::TypeMismatch => "Execute DESCRIBE to confirm type names. Types are case-sensitive (Drug vs drug).",
            ErrorCode::ConstraintViolation => "Supply the missing required attributes. Never write _-prefixed metadata: it is engine-maintained.",
            ErrorCode::InvalidValueType => "Correct the JSON value type.",
            ErrorCode::ReferenceError => "Ensure the block defining the handle or variable comes before any clause that references it.",
            ErrorCode::NotFound => "The target may have been deleted or never created. Use SEARCH or FIND to confirm it exists first.",
            ErrorCode::DuplicateExists => "If the intent is an update, use UPSERT. For MERGE, narrow the WHERE pattern until each variable matches exactly one node.",
            ErrorCode::ImmutableTarget => "Operation prohibited on protected system structures.",
            ErrorCode::VersionConflict => "Re-read the element to get its fresh _version, re-apply your merge, then retry the guarded write.",
            ErrorCode::ExecutionTimeout => "Optimize the query: reduce UNION usage, lower LIMIT, or reduce regex/hops.",
            ErrorCode::ResourceExhausted => "Use LIMIT with CURSOR pagination; shard bulk sweeps with a structural constraint.",
            ErrorCode::InternalError => "Retry later or contact the administrator.",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A KIP error: `{code, message, hint?}` on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KipError {
    pub code: ErrorCode,
    pub message: String,
    pub hint: Option<String>,
}

impl KipError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> KipError {
        KipError {
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// KIP_1001 InvalidSyntax.
    pub fn syntax(message: impl Into<String>) -> KipError {
        KipError::new(ErrorCode::InvalidSyntax, message)
    }

    /// KIP_1002 InvalidIdentifier.
    pub fn identifier(message: impl Into<String>) -> KipError {
        KipError::new(ErrorCode::InvalidIdentifier, message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> KipError {
        self.hint = Some(hint.into());
        self
    }

    /// `{"code": "KIP_xxxx", "message": "...", "hint": "..."}` (hint omitted
    /// when absent).
    pub fn to_json(&self) -> serde_json::Value {
        let mut obj = serde_json::Map::new();
        obj.insert("code".into(), self.code.as_str().into());
        obj.insert("message".into(), self.message.clone().into());
        if let Some(h) = &self.hint {
            obj.insert("hint".into(), h.clone().into());
        }
        serde_json::Value::Object(obj)
    }
}

impl fmt::Display for KipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for KipError {}

/// A value from the command, quoted for an error message: whole when short,
/// else its start and its length, so a megabyte name or id does not come
/// back a megabyte long.
pub fn quoted(value: &str) -> String {
    const SHOWN_CHARS: usize = 60;
    if value.chars().count() <= 2 * SHOWN_CHARS {
        return format!("{value:?}");
    }
    let start: String = value.chars().take(SHOWN_CHARS).collect();
    format!("{start:?}… ({} bytes)", value.len())
}

//! Bind parameters: the values that reach SQL beside its text, and their
//! collection while the text is generated. A leaf module: the compiler builds
//! them, `exec` turns them into datums.

use serde_json::Value;

/// A bind parameter. The variant fixes the parameter's SQL type.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlParam {
    Text(String),
    Int(i64),
    Float(f64),
    /// A `numeric`, from the text of a JSON number (always valid numeric
    /// text: serde_json prints no NaN nor infinity).
    Numeric(String),
    Bool(bool),
    Json(Value),
    TextArray(Vec<String>),
    IntArray(Vec<i64>),
    /// A `real[]` (float4), e.g. a vector before its cast to pgvector's type.
    RealArray(Vec<f32>),
    /// A SQL NULL of type text.
    NullText,
    /// A text value the statement's plan is made for: a constant of the
    /// plan, which is kept for this value (`exec::fixed_values`). For values
    /// that stay the same from call to call and that the planner must see.
    Fixed(String),
}


/// Bind parameters of one SQL statement, numbered `$1`, `$2`, … in order.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Params {
    values: Vec<SqlParam>,
}

impl Params {
    pub fn new() -> Self {
        Params::default()
    }

    /// Add a parameter whose placeholder the SQL text has already (a
    /// template's, `compile::template`).
    pub fn append(&mut self, value: SqlParam) {
        self.values.push(value);
    }

    /// Add a parameter and return its placeholder (`$n`) for the SQL text.
    pub fn push(&mut self, value: SqlParam) -> String {
        self.values.push(value);
        format!("${}", self.values.len())
    }

    /// Add a text parameter, typed explicitly so Postgres never has to guess.
    pub fn text(&mut self, value: impl Into<String>) -> String {
        format!("{}::text", self.push(SqlParam::Text(value.into())))
    }

    /// Add a numeric parameter from a JSON number's text. Typed as numeric
    /// (not text cast in the statement), so a comparison with a row's
    /// value does not convert the text again for every row: ~0.1 µs a row.
    pub fn numeric(&mut self, value: &serde_json::Number) -> String {
        format!("{}::numeric", self.push(SqlParam::Numeric(value.to_string())))
    }

    /// Add a jsonb parameter.
    pub fn json(&mut self, value: serde_json::Value) -> String {
        format!("{}::jsonb", self.push(SqlParam::Json(value)))
    }

    /// Add a bigint parameter.
    pub fn int(&mut self, value: i64) -> String {
        format!("{}::bigint", self.push(SqlParam::Int(value)))
    }

    pub fn values(&self) -> &[SqlParam] {
        &self.values
    }

}

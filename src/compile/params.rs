//! Collecting bind parameters while SQL text is generated.

use crate::exec::SqlParam;

/// Bind parameters of one SQL statement, numbered `$1`, `$2`, … in order.
#[derive(Debug, Default, Clone)]
pub struct Params {
    values: Vec<SqlParam>,
}

impl Params {
    pub fn new() -> Self {
        Params::default()
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

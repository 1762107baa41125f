//! What a SEARCH asks and what each ranking returns.

use crate::compile::ids::ElementKind;

/// How SEARCH ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Keyword,
    Semantic,
    Hybrid,
}

pub struct Query<'a> {
    pub kind: ElementKind,
    pub term: &'a str,
    pub with_type: Option<&'a str>,
    pub threshold: f64,
    pub limit: i64,
}

/// One ranked element: its row id and score, and whether it still waits
/// for its embedding (then no semantic ranking can see it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub id: i64,
    pub score: f64,
    pub unembedded: bool,
}

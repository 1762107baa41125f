//! Embeddings: the in-database sentence model, the vectors of elements, and
//! the query vectors of semantic SEARCH.
//!
//! * What is embedded is each element's *grounding text*, defined once in SQL
//!   (`kip.concept_grounding_text`, `kip.proposition_grounding_text` in
//!   `sql/embedding.sql`).
//! * When: writes never wait for the model. An element whose `embedding` is
//!   NULL is stale; the background worker (`maintenance::worker`) and
//!   `kip_embed_pending()` embed the backlog in batches (`backfill`).
//! * Who: `kip.embedding_provider` — the in-database model (`runtime`), the
//!   application (`external`: `kip_set_embedding`, and `kip_search` with a
//!   query vector), or nobody (`none`).

pub mod backfill;
mod cache;
pub mod runtime;
pub mod settings;

use kip_lang::{ErrorCode, KipError};
use serde_json::{json, Value};
pub use settings::Provider;
use std::cell::RefCell;

pub use runtime::DIMENSIONS;

/// The model `scripts/setup.sh` installs, as DESCRIBE PRIMER names it.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions)";

/// Whether semantic search can run in this session, and why not.
#[derive(Debug, Clone)]
pub struct Availability {
    pub provider: Provider,
    pub available: bool,
    pub reason: Option<String>,
}

impl Availability {
    /// The search capability as DESCRIBE PRIMER advertises it.
    /// With the `external` provider kip embeds no query itself: a SEARCH
    /// sent through kip_execute runs as keyword, and only kip_search, which
    /// takes the application's query vector, searches by meaning; the
    /// advertisement says so (RC10 §5.2.1: advertise what actually runs).
    pub fn describe(&self) -> Value {
        let by_text = self.available && self.provider != Provider::External;
        let modes: Vec<&str> = if by_text { vec!["keyword", "semantic", "hybrid"] } else { vec!["keyword"] };
        let mut v = json!({
            "modes": modes,
            "default_mode": if by_text { "hybrid" } else { "keyword" },
            "embedding_provider": self.provider.name(),
        });
        if self.provider == Provider::Onnx {
            v["embedding_model"] = json!(MODEL_NAME);
        }
        if let Some(reason) = &self.reason {
            v["fallback"] = json!(format!("semantic and hybrid SEARCH run as keyword: {reason}"));
        } else if self.provider == Provider::External {
            v["fallback"] = json!(
                "semantic and hybrid SEARCH run as keyword in kip_execute: with kip.embedding_provider = 'external' they take the application's query vector through kip_search(command, query_embedding)"
            );
        }
        v
    }
}

/// The session's semantic-search capability. With `load`, the in-database
/// model is loaded if it is not yet (the first semantic query pays for it);
/// without, the answer only checks that its files are in place.
pub fn availability(load: bool) -> Availability {
    let provider = match settings::provider() {
        Ok(p) => p,
        Err(e) => return Availability { provider: Provider::Disabled, available: false, reason: Some(e.message) },
    };
    let (available, reason) = match provider {
        Provider::Disabled => (false, Some("kip.embedding_provider is none".to_string())),
        Provider::External => (true, None),
        Provider::Onnx => {
            let state = if load {
                runtime::ensure_loaded()
            } else if let Some(reason) = runtime::known_failure() {
                Err(reason)
            } else {
                runtime::ModelFiles::from_settings().check()
            };
            match state {
                Ok(()) => (true, None),
                Err(reason) => (false, Some(reason)),
            }
        }
    };
    Availability { provider, available, reason }
}

thread_local! {
    /// The query vector an application passed to `kip_search`, for the
    /// duration of that call (provider `external`).
    static EXTERNAL_QUERY: RefCell<Option<Vec<f32>>> = const { RefCell::new(None) };
}

/// Run `body` with `vector` as the query vector of semantic SEARCH.
pub fn with_external_query<T>(vector: Vec<f32>, body: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            EXTERNAL_QUERY.with(|q| *q.borrow_mut() = None);
        }
    }
    EXTERNAL_QUERY.with(|q| *q.borrow_mut() = Some(vector));
    let _reset = Reset;
    body()
}

/// The query vector of a semantic SEARCH for `term`, or `None` when this
/// session cannot search by meaning (SEARCH then falls back to keyword).
pub fn query_vector(term: &str) -> Result<Option<Vec<f32>>, KipError> {
    let provider = settings::provider()?;
    // `kip.embedding_provider = 'none'` is keyword only, an application's
    // vector (kip_search) included.
    if provider == Provider::Disabled {
        return Ok(None);
    }
    if let Some(v) = EXTERNAL_QUERY.with(|q| q.borrow().clone()) {
        return Ok(Some(v));
    }
    match provider {
        Provider::Disabled | Provider::External => Ok(None),
        Provider::Onnx => {
            if runtime::ensure_loaded().is_err() {
                return Ok(None);
            }
            if let Some(v) = cache::get(term) {
                return Ok(Some(v));
            }
            let v = embed_one(term)?;
            cache::put(term, v.clone());
            Ok(Some(v))
        }
    }
}

/// Whether [`query_vector`] can give a vector (without computing one): an
/// application's vector was passed, or the in-database model is loaded or
/// loads now.
pub fn query_vector_expected() -> Result<bool, KipError> {
    let provider = settings::provider()?;
    if provider != Provider::Disabled && EXTERNAL_QUERY.with(|q| q.borrow().is_some()) {
        return Ok(true);
    }
    Ok(provider == Provider::Onnx && runtime::ensure_loaded().is_ok())
}

/// [`query_vector`], computed while `body` runs (hybrid SEARCH runs its
/// keyword half meanwhile): a vector the in-database model has to compute
/// is computed on a helper thread (`runtime::embed_while`).
pub fn query_vector_while<T>(term: &str, body: impl FnOnce() -> T) -> (Result<Option<Vec<f32>>, KipError>, T) {
    let needs_model = EXTERNAL_QUERY.with(|q| q.borrow().is_none())
        && matches!(settings::provider(), Ok(Provider::Onnx))
        && runtime::ensure_loaded().is_ok()
        && cache::get(term).is_none();
    if !needs_model {
        let out = body();
        return (query_vector(term), out);
    }
    let (vector, out) = runtime::embed_while(term, body);
    let vector = match vector {
        Ok(v) => {
            cache::put(term, v.clone());
            Ok(Some(v))
        }
        // The helper thread failed (or could not start): embed here, which
        // reports a model failure as before.
        Err(_) => query_vector(term),
    };
    (vector, out)
}

/// Embed one text with the in-database model.
pub fn embed_one(text: &str) -> Result<Vec<f32>, KipError> {
    runtime::embed(&[text]).map_err(model_error)?.pop().ok_or_else(|| model_error("no vector".into()))
}

pub fn model_error(reason: String) -> KipError {
    KipError::new(ErrorCode::InternalError, format!("the embedding model failed: {reason}"))
        .with_hint("Check the server log and the files named by kip.embedding_model_dir and kip.onnxruntime_library.")
}

/// A vector from an application, checked against the column dimension.
pub fn check_vector(v: &[f32], what: &str) -> Result<(), KipError> {
    if v.len() != DIMENSIONS {
        return Err(KipError::new(
            ErrorCode::InvalidSyntax,
            format!("{what} has {} dimensions; kip stores {DIMENSIONS}-dimensional vectors", v.len()),
        )
        .with_hint("Embed with a 384-dimensional model such as all-MiniLM-L6-v2."));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(KipError::new(ErrorCode::InvalidSyntax, format!("{what} contains NaN or infinity"))
            .with_hint("Every component must be a finite number."));
    }
    if v.iter().all(|x| *x == 0.0) {
        return Err(KipError::new(ErrorCode::InvalidSyntax, format!("{what} is the zero vector"))
            .with_hint("A zero vector has no direction, so it has no cosine similarity to anything."));
    }
    // pgvector computes the norm in single precision: a squared norm that
    // underflows to zero or overflows to infinity gives a cosine of ±1 or
    // NaN against every vector, which would rank the element first (or
    // never) for any query.
    let squared: f32 = v.iter().map(|x| x * x).sum();
    if !squared.is_normal() {
        return Err(KipError::new(ErrorCode::InvalidSyntax, format!("{what} has a norm too small or too large for single precision"))
            .with_hint("Normalise the vector (unit length), as embedding models do."));
    }
    Ok(())
}

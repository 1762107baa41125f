//! The sentence-embedding model inside a backend: ONNX Runtime, loaded
//! dynamically from the library `scripts/setup.sh` installs, running
//! all-MiniLM-L6-v2 (int8) on the CPU, with the model's own WordPiece
//! tokenizer.
//!
//! Loaded lazily, at most once per backend process, on the first text to
//! embed: never in the postmaster (a forked backend must not inherit
//! runtime threads or handles), and never by a backend that does not search.
//! A load failure is remembered for the life of the backend (the reason is
//! logged once), so a missing or corrupt model costs one attempt, not one per
//! query; semantic search then degrades to keyword.
//!
//! Pooling is the sentence-transformers recipe: mean of the last hidden
//! state over the attention mask, then L2 normalisation, so the cosine of two
//! vectors is their dot product.

use super::settings;
use ort::session::Session;
use ort::value::Tensor;
use std::cell::RefCell;
use std::path::PathBuf;
use tokenizers::{Tokenizer, TruncationParams};

/// Dimensions of the model's vectors (the `vector(384)` columns).
pub const DIMENSIONS: usize = 384;

/// Tokens the model reads at most per text (sentence-transformers'
/// `max_seq_length` for this model); longer texts are truncated.
const MAX_TOKENS: usize = 256;

/// The files of the model, as installed by `scripts/setup.sh`.
pub struct ModelFiles {
    pub runtime_library: PathBuf,
    pub model: PathBuf,
    pub tokenizer: PathBuf,
}

impl ModelFiles {
    pub fn from_settings() -> ModelFiles {
        let dir = settings::model_dir();
        ModelFiles {
            runtime_library: settings::runtime_library(),
            model: dir.join("model.onnx"),
            tokenizer: dir.join("tokenizer.json"),
        }
    }

    /// Every file is in place, or the reason the model cannot load.
    pub fn check(&self) -> Result<(), String> {
        match [&self.runtime_library, &self.model, &self.tokenizer].into_iter().find(|p| !p.is_file()) {
            None => Ok(()),
            Some(path) => Err(format!(
                "{} does not exist (scripts/setup.sh installs the model; see kip.embedding_model_dir and kip.onnxruntime_library)",
                path.display()
            )),
        }
    }
}

struct Model {
    session: Session,
    tokenizer: Tokenizer,
    // Keeps the process-wide ONNX Runtime environment alive.
    _env: ort::environment::Environment,
}

thread_local! {
    /// `None`: not tried yet; `Some(Err)`: tried and failed, with the reason.
    static MODEL: RefCell<Option<Result<Model, String>>> = const { RefCell::new(None) };
}

/// Whether the model is loaded, or can be; the reason when it cannot.
pub fn ensure_loaded() -> Result<(), String> {
    MODEL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            // ONNX Runtime and the tokenizer start threads of their own
            // while loading, which live as long as the backend and inherit
            // the mask of the thread that starts them: with Postgres's
            // signals open, a SIGALRM or SIGINT could run the backend's
            // handler on one of them, where pgrx's FFI guard aborts the
            // process (and the postmaster restarts the whole cluster).
            let files = ModelFiles::from_settings();
            let loaded = with_signals_blocked(|| load(&files));
            if let Err(reason) = &loaded {
                pgrx::log!("kip: the embedding model is not available, semantic search falls back to keyword: {reason}");
            }
            *slot = Some(loaded);
        }
        match slot.as_ref() {
            Some(Ok(_)) => Ok(()),
            Some(Err(reason)) => Err(reason.clone()),
            None => unreachable!("the slot was filled above"),
        }
    })
}

/// Whether a load was already attempted and failed (without attempting one).
pub fn known_failure() -> Option<String> {
    MODEL.with(|cell| match cell.borrow().as_ref() {
        Some(Err(reason)) => Some(reason.clone()),
        _ => None,
    })
}

fn load(files: &ModelFiles) -> Result<Model, String> {
    files.check()?;
    // ONNX Runtime aborts the process on some internal errors by throwing
    // C++ exceptions through its C API boundary only in debug builds; the
    // release library reports errors as status codes, which ort turns into
    // `Err`. A Rust panic inside ort or tokenizers is caught here.
    std::panic::catch_unwind(|| load_unguarded(files))
        .unwrap_or_else(|_| Err("the embedding runtime panicked while loading the model".to_string()))
}

fn load_unguarded(files: &ModelFiles) -> Result<Model, String> {
    let env = ort::init_from(&files.runtime_library)
        .map_err(|e| format!("cannot load ONNX Runtime: {e}"))?
        .with_name("kip")
        .build()
        .map_err(|e| format!("cannot start ONNX Runtime: {e}"))?;
    let threads = settings::threads();
    let configure = |e: &dyn std::fmt::Display| format!("cannot configure ONNX Runtime: {e}");
    let mut builder = Session::builder(&env)
        .map_err(|e| configure(&e))?
        .with_intra_threads(threads)
        .map_err(|e| configure(&e))?
        .with_inter_threads(1)
        .map_err(|e| configure(&e))?
        .with_intra_op_spinning(false)
        .map_err(|e| configure(&e))?;
    let session = builder
        .commit_from_file(&files.model)
        .map_err(|e| format!("cannot load the model {}: {e}", files.model.display()))?;
    let mut tokenizer = Tokenizer::from_file(&files.tokenizer)
        .map_err(|e| format!("cannot load the tokenizer {}: {e}", files.tokenizer.display()))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
        .map_err(|e| format!("cannot configure the tokenizer: {e}"))?;
    Ok(Model { session, tokenizer, _env: env })
}

/// Embed texts, one L2-normalised vector each.
pub fn embed(texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
    ensure_loaded()?;
    MODEL.with(|cell| {
        let mut slot = cell.borrow_mut();
        let Some(Ok(model)) = slot.as_mut() else {
            return Err("the embedding model is not loaded".to_string());
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.embed(texts)))
            .unwrap_or_else(|_| Err("the embedding runtime panicked".to_string()))
    })
}

/// Embed `text` on a helper thread while `body` runs on the backend's own
/// thread, and return both results. A hybrid SEARCH needs the query vector
/// only for its semantic half, so the model runs while Postgres executes the
/// keyword half: on a machine with a free core the embedding costs no wall
/// time. The helper thread only runs the model (no Postgres code) and blocks
/// every signal, so Postgres's signal handlers keep running on the backend
/// thread; the scope joins it before returning, also when `body` unwinds.
pub fn embed_while<T>(text: &str, body: impl FnOnce() -> T) -> (Result<Vec<f32>, String>, T) {
    if let Err(reason) = ensure_loaded() {
        return (Err(reason), body());
    }
    MODEL.with(|cell| {
        let mut slot = cell.borrow_mut();
        let Some(Ok(model)) = slot.as_mut() else {
            drop(slot);
            return (Err("the embedding model is not loaded".to_string()), body());
        };
        std::thread::scope(|scope| {
            // The new thread inherits the signal mask of the thread that
            // creates it: block everything around the spawn, so no signal
            // can ever be delivered to the helper, not even before it runs.
            let spawned = with_signals_blocked(|| {
                std::thread::Builder::new().name("kip-embed".into()).spawn_scoped(scope, move || {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.embed(&[text])))
                        .unwrap_or_else(|_| Err("the embedding runtime panicked".to_string()))
                        .and_then(|mut v| v.pop().ok_or_else(|| "no vector".to_string()))
                })
            });
            match spawned {
                Ok(handle) => {
                    let out = body();
                    let vector = handle.join().unwrap_or_else(|_| Err("the embedding thread panicked".to_string()));
                    (vector, out)
                }
                // No thread (resource limits): the model never moved, so run
                // it here, after the body.
                Err(_) => {
                    let out = body();
                    (Err("cannot start the embedding thread".to_string()), out)
                }
            }
        })
    })
}

/// glibc's `sigset_t` (1,024 bits).
#[repr(C)]
struct SigSet([u64; 16]);

extern "C" {
    fn sigfillset(set: *mut SigSet) -> i32;
    fn pthread_sigmask(how: i32, set: *const SigSet, old: *mut SigSet) -> i32;
}

/// Block every signal in the calling thread; returns the mask to restore.
/// Postgres's handlers must run on the backend thread only.
fn block_signals() -> SigSet {
    const SIG_BLOCK: i32 = 0; // Linux
    let mut all = SigSet([0; 16]);
    let mut old = SigSet([0; 16]);
    unsafe {
        sigfillset(&mut all);
        pthread_sigmask(SIG_BLOCK, &all, &mut old);
    }
    old
}

fn restore_signals(saved: &SigSet) {
    const SIG_SETMASK: i32 = 2; // Linux
    unsafe {
        pthread_sigmask(SIG_SETMASK, saved, std::ptr::null_mut());
    }
}

/// Run `f` with every signal blocked in the calling thread, and restore the
/// mask afterwards, also when `f` unwinds.
fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(SigSet);
    impl Drop for Restore {
        fn drop(&mut self) {
            restore_signals(&self.0);
        }
    }
    let _restore = Restore(block_signals());
    f()
}

impl Model {
    /// Each text in a model run of its own. The model is quantized with
    /// dynamic int8 activations, whose scale is computed over the whole
    /// input: in a padded batch the other texts and the padding changed a
    /// text's vector (cosine 0.96–0.98 against the same text embedded
    /// alone, as a SEARCH query always is), so a stored vector depended on
    /// what happened to be embedded with it.
    ///
    /// Each run has every signal blocked, as the load had: a thread the
    /// runtime would start lazily inherits a closed mask. The signals that
    /// arrive meanwhile (a cancel, SIGTERM) are handled when the mask is
    /// restored, after one text (milliseconds), not after a whole batch.
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        texts
            .iter()
            .map(|text| with_signals_blocked(|| self.embed_batch(std::slice::from_ref(text))).map(|mut v| v.remove(0)))
            .collect()
    }

    fn embed_batch(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut encodings = Vec::with_capacity(texts.len());
        for text in texts {
            let enc = self.tokenizer.encode(*text, true).map_err(|e| format!("tokenizer: {e}"))?;
            encodings.push(enc);
        }
        // One padded batch: [batch, seq] for ids, mask and token types.
        let batch = encodings.len();
        let seq = encodings.iter().map(|e| e.get_ids().len()).max().unwrap_or(0).max(1);
        let mut ids = vec![0i64; batch * seq];
        let mut mask = vec![0i64; batch * seq];
        let types = vec![0i64; batch * seq];
        for (row, enc) in encodings.iter().enumerate() {
            for (col, (&id, &m)) in enc.get_ids().iter().zip(enc.get_attention_mask()).enumerate() {
                ids[row * seq + col] = i64::from(id);
                mask[row * seq + col] = i64::from(m);
            }
        }
        let shape = vec![batch as i64, seq as i64];
        let tensor = |data: Vec<i64>| Tensor::from_array((shape.clone(), data)).map_err(|e| format!("input tensor: {e}"));
        let inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask.clone())?,
            "token_type_ids" => tensor(types)?,
        ];
        let outputs = self.session.run(inputs).map_err(|e| format!("model run: {e}"))?;
        let (out_shape, hidden) = outputs["last_hidden_state"]
            .try_extract_tensor::<f32>()
            .map_err(|e| format!("model output: {e}"))?;
        let dims: Vec<i64> = out_shape.iter().copied().collect();
        if dims != [batch as i64, seq as i64, DIMENSIONS as i64] {
            return Err(format!("unexpected model output shape {dims:?}"));
        }
        Ok((0..batch).map(|row| mean_pool(&hidden[row * seq * DIMENSIONS..(row + 1) * seq * DIMENSIONS], &mask[row * seq..(row + 1) * seq])).collect())
    }
}

/// Mean of the token vectors the mask keeps, L2-normalised.
fn mean_pool(hidden: &[f32], mask: &[i64]) -> Vec<f32> {
    let mut sum = vec![0f32; DIMENSIONS];
    let mut count = 0f32;
    for (token, &m) in hidden.chunks_exact(DIMENSIONS).zip(mask) {
        if m != 0 {
            for (s, v) in sum.iter_mut().zip(token) {
                *s += v;
            }
            count += 1.0;
        }
    }
    let count = count.max(1e-9);
    sum.iter_mut().for_each(|s| *s /= count);
    let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    sum.iter_mut().for_each(|s| *s /= norm);
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pooling_ignores_padding_and_normalises() {
        let mut hidden = vec![0f32; DIMENSIONS * 3];
        hidden[0] = 3.0; // token 0, dim 0
        hidden[DIMENSIONS + 1] = 4.0; // token 1, dim 1
        hidden[2 * DIMENSIONS + 2] = 100.0; // padding, must not count
        let v = mean_pool(&hidden, &[1, 1, 0]);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6 && v[2] == 0.0, "{:?}", &v[..3]);
    }
}

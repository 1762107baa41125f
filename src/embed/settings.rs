//! Settings (GUCs) of embeddings and semantic search.
//!
//! | setting                     | default                          | context   | meaning |
//! |-----------------------------|----------------------------------|-----------|---------|
//! | `kip.embedding_provider`    | `onnx`                           | user      | `onnx`: the in-database model embeds; `external`: the application does (`kip_set_embedding`); `none`: keyword only |
//! | `kip.embedding_model_dir`   | `$sharedir/kip/all-minilm-l6-v2` | superuser | folder with `model.onnx` and `tokenizer.json` |
//! | `kip.onnxruntime_library`   | `$pkglibdir/kip/libonnxruntime.so` | superuser | the ONNX Runtime shared library |
//! | `kip.embedding_threads`     | `1`                              | user      | ONNX Runtime intra-op threads per backend (read when the model loads) |
//! | `kip.embedding_batch`       | `16`                             | user      | texts per batch of the backlog (one store)     |
//! | `kip.hybrid_fusion`         | `rrf`                            | user      | `rrf`: Reciprocal Rank Fusion (k = 60); `weighted`: 0.7 semantic + 0.3 keyword over min–max normalised scores |
//!
//! The two paths are superuser-only: they name files the server process
//! loads and runs.

use kip_lang::{ErrorCode, KipError};
use pgrx::{pg_sys, GucContext, GucFlags, GucRegistry, GucSetting};
use std::ffi::{CStr, CString};
use std::path::PathBuf;

pub static PROVIDER: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"onnx"));
pub static MODEL_DIR: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static RUNTIME_LIBRARY: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static THREADS: GucSetting<i32> = GucSetting::<i32>::new(1);
pub static BATCH: GucSetting<i32> = GucSetting::<i32>::new(16);
pub static FUSION: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"rrf"));

/// Where `scripts/setup.sh` installs the model, below the server's share
/// and lib directories.
const MODEL_SUBDIR: &str = "kip/all-minilm-l6-v2";
const RUNTIME_SUBPATH: &str = "kip/libonnxruntime.so";

/// Who computes element vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// The in-database model (ONNX Runtime).
    Onnx,
    /// The application, through `kip_set_embedding`.
    External,
    /// Nobody: SEARCH is keyword only.
    Disabled,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Onnx => "onnx",
            Provider::External => "external",
            Provider::Disabled => "none",
        }
    }
}

/// How hybrid SEARCH fuses its keyword and semantic rankings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    Rrf,
    Weighted,
}

pub fn register() {
    GucRegistry::define_string_guc(
        c"kip.embedding_provider",
        c"Who computes embeddings: onnx (the in-database model), external (the application, via kip_set_embedding) or none.",
        c"With none, or when the model is unavailable, semantic and hybrid SEARCH fall back to keyword.",
        &PROVIDER,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"kip.embedding_model_dir",
        c"Folder holding the embedding model (model.onnx) and its tokenizer (tokenizer.json).",
        c"Empty means the folder scripts/setup.sh installs: $sharedir/kip/all-minilm-l6-v2.",
        &MODEL_DIR,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"kip.onnxruntime_library",
        c"Path of the ONNX Runtime shared library the embedding model runs on.",
        c"Empty means the library scripts/setup.sh installs: $pkglibdir/kip/libonnxruntime.so.",
        &RUNTIME_LIBRARY,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"kip.embedding_threads",
        c"ONNX Runtime threads per backend for the embedding model (read when the model loads).",
        c"",
        &THREADS,
        1,
        64,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"kip.embedding_batch",
        c"Texts embedded per batch (one store statement) when the backlog of stale elements is embedded.",
        c"",
        &BATCH,
        1,
        1024,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"kip.hybrid_fusion",
        c"How hybrid SEARCH fuses keyword and semantic rankings: rrf (Reciprocal Rank Fusion, k = 60) or weighted (0.7 semantic + 0.3 keyword).",
        c"",
        &FUSION,
        GucContext::Userset,
        GucFlags::default(),
    );
}

fn string_setting(setting: &GucSetting<Option<CString>>) -> Option<String> {
    setting.get().map(|s| s.to_string_lossy().trim().to_string()).filter(|s| !s.is_empty())
}

pub fn provider() -> Result<Provider, KipError> {
    match string_setting(&PROVIDER).as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("onnx") => Ok(Provider::Onnx),
        Some("external") => Ok(Provider::External),
        Some("none") | Some("off") => Ok(Provider::Disabled),
        Some(other) => Err(KipError::new(
            ErrorCode::InvalidSyntax,
            format!("kip.embedding_provider = {other:?} is not a provider"),
        )
        .with_hint("Set kip.embedding_provider to onnx, external or none.")),
    }
}

pub fn fusion() -> Result<Fusion, KipError> {
    match string_setting(&FUSION).as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("rrf") => Ok(Fusion::Rrf),
        Some("weighted") => Ok(Fusion::Weighted),
        Some(other) => Err(KipError::new(ErrorCode::InvalidSyntax, format!("kip.hybrid_fusion = {other:?} is not a fusion method"))
            .with_hint("Set kip.hybrid_fusion to rrf or weighted.")),
    }
}

pub fn threads() -> usize {
    THREADS.get().clamp(1, 64) as usize
}

pub fn batch() -> usize {
    BATCH.get().clamp(1, 1024) as usize
}

pub fn model_dir() -> PathBuf {
    string_setting(&MODEL_DIR).map(PathBuf::from).unwrap_or_else(|| share_dir().join(MODEL_SUBDIR))
}

pub fn runtime_library() -> PathBuf {
    string_setting(&RUNTIME_LIBRARY).map(PathBuf::from).unwrap_or_else(|| pkglib_dir().join(RUNTIME_SUBPATH))
}

/// The server's share directory (`pg_config --sharedir`), as the running
/// server computes it from its own executable's location.
fn share_dir() -> PathBuf {
    let mut buf = [0 as std::os::raw::c_char; pg_sys::MAXPGPATH as usize];
    unsafe {
        let exec_path = &*std::ptr::addr_of!(pg_sys::my_exec_path);
        pg_sys::get_share_path(exec_path.as_ptr(), buf.as_mut_ptr());
        PathBuf::from(CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned())
    }
}

/// The server's package library directory (`pg_config --pkglibdir`).
fn pkglib_dir() -> PathBuf {
    unsafe {
        let path = &*std::ptr::addr_of!(pg_sys::pkglib_path);
        PathBuf::from(CStr::from_ptr(path.as_ptr()).to_string_lossy().into_owned())
    }
}

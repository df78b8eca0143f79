//! `paraes._paraes`: the native half of the `paraes` Python package (PyO3, CPython 3.11+ stable
//! ABI). The Python package (`python/paraes/`) wraps it: containers as whole files (`files`),
//! as a writable stream (`writer`) and as a seekable reader (`reader`), over what they share
//! (`containers`); AES-CTR/ECB over any buffer and bare Cobblestone messages (`raw`); the key
//! arguments (`keys`); Python buffers (`buffer`); and how Rust errors become Python exceptions
//! (`errors`). Files, outputs and the text rules of keys are paraes-files', as the CLI's.
//!
//! Every call that does real work releases the GIL. Work runs on one `CpuEngine` of all cores,
//! which runs a buffer under its parallel threshold (512 KiB) on the calling thread, so a
//! 23 KB call pays for no thread fan-out; containers under [`THREADED_FROM`] bytes go
//! through the pipeline's steps in turn on the calling thread instead of its threads.

mod buffer;
mod containers;
mod cuda;
mod cuda_arrays;
mod cuda_streams;
mod dlpack;
mod errors;
mod files;
mod keys;
mod raw;
mod reader;
mod writer;

use std::sync::OnceLock;

use paraes_core::{CpuEngine, Engine};
use pyo3::prelude::*;

/// Large buffers start on a page boundary, so the kernel copies file data in and out of them at
/// full speed (`paraes_files::page_aligned` says why).
#[global_allocator]
static ALLOCATOR: paraes_files::PageAlignedLarge = paraes_files::PageAlignedLarge;

/// Containers of at least this many bytes run on the pipeline's threads (reader, engine,
/// tags, writer) with the engine's threads; smaller ones run the same steps in turn on the
/// calling thread, so a small file pays for no thread fan-out. Bare messages use it too.
pub const THREADED_FROM: usize = 1 << 20;

/// Calls on at least this many bytes release the GIL while they run.
pub const DETACH_FROM: usize = 16 << 10;

/// The CPU engine of the process: every core, the fastest AES implementation of the CPU.
fn engine() -> PyResult<&'static CpuEngine> {
    static ENGINE: OnceLock<CpuEngine> = OnceLock::new();
    if let Some(engine) = ENGINE.get() {
        return Ok(engine);
    }
    let engine = CpuEngine::new(None).map_err(|e| errors::Error::new_err(e.to_string()))?;
    Ok(ENGINE.get_or_init(|| engine))
}

/// The AES implementation the engine runs (`vaes512`, `vaes256`, `aesni` or `portable`).
#[pyfunction]
fn implementation() -> PyResult<String> {
    Ok(engine()?.aes_impl().name().to_string())
}

/// The number of threads the engine spreads large buffers over.
#[pyfunction]
fn threads() -> PyResult<usize> {
    Ok(engine()?.workers())
}

#[pymodule]
fn _paraes(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<errors::Error>())?;
    m.add(
        "AuthenticationError",
        py.get_type::<errors::AuthenticationError>(),
    )?;
    m.add(
        "NoMatchingKeyError",
        py.get_type::<errors::NoMatchingKeyError>(),
    )?;
    m.add_function(wrap_pyfunction!(implementation, m)?)?;
    m.add_function(wrap_pyfunction!(threads, m)?)?;
    raw::register(m)?;
    keys::register(m)?;
    files::register(m)?;
    cuda::register(m)?;
    cuda_arrays::register(m)?;
    m.add_class::<writer::Writer>()?;
    m.add_class::<reader::Reader>()?;
    m.add("THREADED_FROM", THREADED_FROM)?;
    Ok(())
}

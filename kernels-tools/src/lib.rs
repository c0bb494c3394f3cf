//! Shared code of the runnable programs and GPU tests: float64 CPU references of the ops
//! ([`reference`](mod@reference)) and seeded test data with tolerant comparison ([`data`]).

#[cfg(not(target_arch = "wasm32"))]
pub mod bench;
pub mod cases;
pub mod cases_onnx;
pub mod data;
#[cfg(not(target_arch = "wasm32"))]
pub mod inference_loop;
pub mod reference;
// Files and a blocking device: native only, as the command.
#[cfg(not(target_arch = "wasm32"))]
pub mod run_op;
#[cfg(not(target_arch = "wasm32"))]
pub mod run_op_files;

/// Every op the tools know: the seed packages' (`kernels`) and the Hub's (`hub`, when its
/// manifests were found at build time).
pub fn ops() -> impl Iterator<Item = &'static kernel_runtime::registry::OpEntry> {
    kernels::OPS.iter().chain(hub::ops())
}

/// The main job's cases: the seed packages' ([`cases::all`]) and the Hub's
/// ([`cases_onnx::all`]).
pub fn all_cases() -> anyhow::Result<Vec<cases::Case>> {
    let mut all = cases::all()?;
    all.extend(cases_onnx::kernels_matmul()?);
    all.extend(cases_onnx::all()?);
    Ok(all)
}

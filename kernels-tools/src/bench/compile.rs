//! `bench --compile-times`: every shader of every op compiled on its own, one after another,
//! each timed: which shaders make a cold first call or `precompile` slow. Meaningful with the
//! driver's shader cache disabled (`__GL_SHADER_DISK_CACHE=0` on NVIDIA).

use std::time::Instant;

use anyhow::Result;
use kernel_runtime::{Context, ContextOptions};
use serde::Serialize;

/// One shader's compile time.
#[derive(Debug, Serialize)]
pub struct CompileTime {
    pub op: String,
    /// The kernel's label (op and variant).
    pub label: String,
    /// The shader's digest, which names it among the generated files.
    pub digest: String,
    pub features: Vec<String>,
    /// Lines of WGSL.
    pub lines: usize,
    /// Whether a whole pipeline was created; shaders whose pipelines take shape-dependent
    /// overrides are compiled to a module only, which leaves the driver's work to the call.
    pub pipeline: bool,
    pub ms: f64,
}

/// Compiles every shader the adapter can run, one at a time on a fresh device per op.
pub fn measure(options: &ContextOptions) -> Result<Vec<CompileTime>> {
    let mut times = Vec::new();
    for entry in crate::ops() {
        let ctx = Context::with_options(options)?;
        for shader in entry.shaders.shaders() {
            if !shader.features.iter().all(|f| ctx.caps().has_feature(f)) {
                continue;
            }
            let pipeline = shader.overrides.is_empty();
            let started = Instant::now();
            if pipeline {
                ctx.precompile(&shader.kernel, &[])?;
            } else {
                ctx.precompile_module(&shader.kernel)?;
            }
            times.push(CompileTime {
                op: entry.name.to_owned(),
                label: shader.kernel.label.to_owned(),
                digest: shader.kernel.digest.to_owned(),
                features: shader.features.iter().map(|&f| f.to_owned()).collect(),
                lines: shader.kernel.source.lines().count(),
                pipeline,
                ms: started.elapsed().as_secs_f64() * 1e3,
            });
        }
    }
    Ok(times)
}

/// The table `bench --compile-times` prints: slowest first, then each op's total.
pub fn print(times: &[CompileTime]) {
    let mut sorted: Vec<&CompileTime> = times.iter().collect();
    sorted.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    println!(
        "{:<48} {:<10} {:<22} {:>6} {:>9} {:>9}",
        "shader", "digest", "features", "lines", "created", "ms"
    );
    for t in sorted {
        println!(
            "{:<48} {:<10} {:<22} {:>6} {:>9} {:>9.1}",
            t.label,
            &t.digest[..t.digest.len().min(8)],
            t.features.join(","),
            t.lines,
            if t.pipeline { "pipeline" } else { "module" },
            t.ms
        );
    }
    for entry in crate::ops() {
        let of_op: Vec<&CompileTime> = times.iter().filter(|t| t.op == entry.name).collect();
        let total: f64 = of_op.iter().map(|t| t.ms).sum();
        let slowest = of_op.iter().map(|t| t.ms).fold(0.0, f64::max);
        println!(
            "{}: {} shaders, {:.1} ms one after another, slowest {:.1} ms",
            entry.name,
            of_op.len(),
            total,
            slowest
        );
    }
}

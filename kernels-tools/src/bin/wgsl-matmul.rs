//! Times one float16 MatMul WGSL kernel file outside the generated code, for experiments on
//! the tensor-core kernel (`benchmarks/matmul-ceilings/`): the shader is compiled three ways
//! and each is timed on `square 4096` and `batched 16 x 1024` with a float64 check of sampled
//! outputs.
//!
//! - `wgsl`: through wgpu, as the runtime compiles every shader;
//! - `spv`: naga's SPIR-V (wgpu's options on Vulkan, workgroup memory not zeroed, as the
//!   runtime asks), given to the driver as a passthrough shader;
//! - `spv-aligned`: the same with a 16-byte `Aligned` memory operand on every cooperative load
//!   and store, which naga does not write.
//!
//! Each mode may end in `-unchecked` (no index clamping). The kernel has the bindings of
//! `packages/kernels.MatMul`'s subgroup-matrix variants (a, b, y, `Params { M, N, K,
//! bBatchStride, batches }`) and tiles of `--tile-m` × `--tile-n`; float16 tensors, f32 sums
//! checked against Σ|a·b|. Needs a Vulkan adapter with shader-f16 and timestamp queries.
//!
//! ```text
//! cargo run --release -p kernels-tools --bin wgsl-matmul -- kernel.wgsl --tile-n 256
//! ```

use std::borrow::Cow;

use anyhow::{Context as _, Result, bail};
use clap::Parser;
use half::f16;
use kernel_runtime::wgpu;

/// `OpCooperativeMatrixLoadKHR` and `OpCooperativeMatrixStoreKHR`.
const OP_COOP_LOAD: u32 = 4457;
const OP_COOP_STORE: u32 = 4458;
/// SPIR-V's `MemoryAccess::Aligned`.
const MEMORY_ACCESS_ALIGNED: u32 = 0x2;

#[derive(Parser)]
#[command(about = "Time a float16 MatMul WGSL kernel as WGSL and as naga's SPIR-V by passthrough")]
struct Args {
    /// The kernel's WGSL (naga's cooperative-matrix syntax).
    wgsl: std::path::PathBuf,
    /// Comma-separated modes: wgsl, spv, spv-aligned, each optionally ending in -unchecked.
    #[arg(long, default_value = "wgsl")]
    modes: String,
    /// Output rows per workgroup (the dispatch's y is ⌈M / tile-m⌉).
    #[arg(long, default_value_t = 128)]
    tile_m: u32,
    /// Output columns per workgroup.
    #[arg(long, default_value_t = 128)]
    tile_n: u32,
    /// Timed repetitions per case, after 3 untimed ones; the median is printed.
    #[arg(long, default_value_t = 30)]
    repetitions: usize,
}

/// Adds `Aligned 16` to every cooperative load and store that has no memory operand.
fn align_cooperative_accesses(words: &[u32]) -> Result<(Vec<u32>, usize)> {
    const HEADER: usize = 5;
    if words.len() < HEADER {
        bail!("SPIR-V shorter than its header");
    }
    let mut out = words[..HEADER].to_vec();
    let mut at = HEADER;
    let mut changed = 0;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            bail!("malformed SPIR-V instruction at word {at}");
        }
        let instruction = &words[at..at + count];
        // Load: opcode, type, id, pointer, layout, stride. Store: opcode, pointer, object,
        // layout, stride. One word more means a memory operand is there already.
        let bare = match opcode {
            OP_COOP_LOAD => 6,
            OP_COOP_STORE => 5,
            _ => 0,
        };
        if bare != 0 && count == bare {
            out.push((((count + 2) as u32) << 16) | opcode);
            out.extend_from_slice(&instruction[1..]);
            out.extend_from_slice(&[MEMORY_ACCESS_ALIGNED, 16]);
            changed += 1;
        } else {
            out.extend_from_slice(instruction);
        }
        at += count;
    }
    Ok((out, changed))
}

/// naga's SPIR-V for `source`, with the options wgpu uses on Vulkan 1.3.
fn spirv(source: &str, checked: bool) -> Result<Vec<u32>> {
    use naga::back::spv;
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| anyhow::anyhow!("{}", e.emit_to_string(source)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| anyhow::anyhow!("{}", e.emit_to_string(source)))?;
    let index = if checked {
        naga::proc::BoundsCheckPolicy::Restrict
    } else {
        naga::proc::BoundsCheckPolicy::Unchecked
    };
    let options = spv::Options {
        lang_version: (1, 6),
        flags: spv::WriterFlags::empty(),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index,
            buffer: naga::proc::BoundsCheckPolicy::Unchecked,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        // naga's default (`Polyfill`) zeroes workgroup memory from one invocation, which
        // costs more than the kernel; the runtime's pipelines skip zeroing.
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        ..spv::Options::default()
    };
    let pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".into(),
    };
    Ok(spv::write_vec(&module, &info, &options, Some(&pipeline))?)
}

/// Uniform float16 values in [-1, 1) from the harness's seeded generator.
fn values(len: usize, seed: u64) -> Vec<f16> {
    kernels_tools::data::DataRng::new(seed)
        .uniform(len, -1.0, 1.0)
        .into_iter()
        .map(f16::from_f64)
        .collect()
}

struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    layout: wgpu::BindGroupLayout,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let source = std::fs::read_to_string(&args.wgsl)
        .with_context(|| format!("reading {}", args.wgsl.display()))?;
    let gpu = open()?;
    let cases = [
        (4096, 4096, 4096, 1, "square 4096"),
        (1024, 1024, 1024, 16, "batched 16 x 1024"),
    ];
    for mode in args.modes.split(',') {
        let module = module(&gpu, &source, mode)?;
        let pipeline_layout = gpu
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: None,
                bind_group_layouts: &[Some(&gpu.layout)],
                immediate_size: 0,
            });
        let pipeline = gpu
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: None,
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                // As the runtime creates its pipelines.
                compilation_options: wgpu::PipelineCompilationOptions {
                    zero_initialize_workgroup_memory: false,
                    ..Default::default()
                },
                cache: None,
            });
        for (m, n, k, batches, name) in cases {
            let (micros, error) = run(&gpu, &pipeline, [m, n, k, batches], &args)?;
            let tflops = 2.0 * f64::from(m) * f64::from(n) * f64::from(k) * f64::from(batches)
                / micros
                / 1e6;
            println!(
                "{}\t{mode}\t{name}\t{micros:.1} us\t{tflops:.1} TFLOP/s\tworst error {error:.2e} of sum |a*b|",
                args.wgsl.display()
            );
        }
    }
    Ok(())
}

fn open() -> Result<Gpu> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))?;
    let wanted = wgpu::Features::SHADER_F16
        | wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | wgpu::Features::PASSTHROUGH_SHADERS;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: wanted & adapter.features(),
        required_limits: adapter.limits(),
        // SAFETY: the caller runs experiments on wgpu's experimental cooperative matrices.
        #[allow(unsafe_code)]
        experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
        ..Default::default()
    }))?;
    eprintln!("adapter: {}", adapter.get_info().name);
    let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let read = wgpu::BufferBindingType::Storage { read_only: true };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &[
            entry(0, read),
            entry(1, read),
            entry(2, wgpu::BufferBindingType::Storage { read_only: false }),
            entry(3, wgpu::BufferBindingType::Uniform),
        ],
    });
    Ok(Gpu {
        device,
        queue,
        layout,
    })
}

fn module(gpu: &Gpu, source: &str, mode: &str) -> Result<wgpu::ShaderModule> {
    let (base, checked) = match mode.strip_suffix("-unchecked") {
        Some(base) => (base, false),
        None => (mode, true),
    };
    if base == "wgsl" {
        let descriptor = wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(source)),
        };
        return Ok(if checked {
            gpu.device.create_shader_module(descriptor)
        } else {
            // SAFETY: an experiment on shaders whose indices stay in bounds for these shapes.
            #[allow(unsafe_code)]
            unsafe {
                gpu.device.create_shader_module_trusted(
                    descriptor,
                    wgpu::ShaderRuntimeChecks::unchecked(),
                )
            }
        });
    }
    let mut words = spirv(source, checked)?;
    match base {
        "spv" => {}
        "spv-aligned" => {
            let (aligned, count) = align_cooperative_accesses(&words)?;
            eprintln!("{mode}: {count} cooperative loads and stores given Aligned 16");
            words = aligned;
        }
        other => bail!("unknown mode {other:?}: wgsl, spv or spv-aligned, optionally -unchecked"),
    }
    if !gpu
        .device
        .features()
        .contains(wgpu::Features::PASSTHROUGH_SHADERS)
    {
        bail!("the adapter does not take passthrough shaders, which {mode} needs");
    }
    let size = source
        .split("@workgroup_size(")
        .nth(1)
        .and_then(|rest| rest.split([',', ')']).next())
        .and_then(|x| x.trim().parse().ok())
        .context("no @workgroup_size(<x>) in the shader")?;
    let entry_points = [wgpu::PassthroughShaderEntryPoint {
        name: "main".into(),
        workgroup_size: (size, 1, 1),
    }];
    // SAFETY: naga's own output for a shader naga validated, given to the driver unchanged
    // but for the memory operands above.
    #[allow(unsafe_code)]
    let module = unsafe {
        gpu.device
            .create_shader_module_passthrough(wgpu::ShaderModuleDescriptorPassthrough {
                entry_points: Cow::Borrowed(&entry_points),
                spirv: Some(Cow::Owned(words)),
                ..Default::default()
            })
    };
    Ok(module)
}

/// Times `pipeline` on `[m, n, k, batches]` (b batched) and checks 256 sampled outputs:
/// the median in microseconds and the worst error relative to Σ|a·b|.
fn run(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    [m, n, k, batches]: [u32; 4],
    args: &Args,
) -> Result<(f64, f64)> {
    use wgpu::util::DeviceExt;
    let (device, queue) = (&gpu.device, &gpu.queue);
    let a = values((m * k * batches) as usize, 1);
    let b = values((k * n * batches) as usize, 2);
    let storage = |data: &[f16]| {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &bytes,
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let (a_buffer, b_buffer) = (storage(&a), storage(&b));
    let y_bytes = u64::from(m * n * batches) * 2;
    let buffer = |size, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    use wgpu::BufferUsages as U;
    let y_buffer = buffer(y_bytes, U::STORAGE | U::COPY_SRC);
    let params: Vec<u8> = [m, n, k, k * n, batches, 0, 0, 0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &params,
        usage: U::UNIFORM,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &gpu.layout,
        entries: &[&a_buffer, &b_buffer, &y_buffer, &params]
            .iter()
            .enumerate()
            .map(|(i, buffer)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: buffer.as_entire_binding(),
            })
            .collect::<Vec<_>>(),
    });
    let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: None,
        ty: wgpu::QueryType::Timestamp,
        count: 2,
    });
    let resolved = buffer(16, U::QUERY_RESOLVE | U::COPY_SRC);
    let stamps = buffer(16, U::MAP_READ | U::COPY_DST);
    let mut times = Vec::with_capacity(args.repetitions);
    for repetition in 0..args.repetitions + 3 {
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: &queries,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                }),
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(n.div_ceil(args.tile_n), m.div_ceil(args.tile_m), batches);
        }
        encoder.resolve_query_set(&queries, 0..2, &resolved, 0);
        encoder.copy_buffer_to_buffer(&resolved, 0, &stamps, 0, 16);
        queue.submit([encoder.finish()]);
        let bytes = read(device, &stamps)?;
        let stamp =
            |i: usize| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap_or_default());
        if repetition >= 3 {
            let ticks = stamp(1).saturating_sub(stamp(0)) as f64;
            times.push(ticks * f64::from(queue.get_timestamp_period()) / 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];

    let staging = buffer(y_bytes, U::MAP_READ | U::COPY_DST);
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&y_buffer, 0, &staging, 0, y_bytes);
    queue.submit([encoder.finish()]);
    let y: Vec<f16> = read(device, &staging)?
        .chunks_exact(2)
        .map(|pair| f16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    let mut worst = 0f64;
    let mut state = 12_345u64;
    for _ in 0..256 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let batch = (state >> 33) as u32 % batches;
        let (i, j) = ((state >> 13) as u32 % m, (state >> 45) as u32 % n);
        let (mut sum, mut magnitude) = (0f64, 0f64);
        for d in 0..k {
            let product = a[(batch * m * k + i * k + d) as usize].to_f64()
                * b[(batch * k * n + d * n + j) as usize].to_f64();
            sum += product;
            magnitude += product.abs();
        }
        let got = y[(batch * m * n + i * n + j) as usize].to_f64();
        worst = worst.max((got - sum).abs() / magnitude.max(f64::MIN_POSITIVE));
    }
    Ok((median, worst))
}

/// The contents of a mappable buffer, after the queue's work.
fn read(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<u8>> {
    buffer.slice(..).map_async(wgpu::MapMode::Read, |_| {});
    device.poll(wgpu::PollType::Wait {
        submission_index: None,
        timeout: None,
    })?;
    let bytes = buffer
        .slice(..)
        .get_mapped_range()
        .map_err(|e| anyhow::anyhow!("mapping: {e:?}"))?
        .to_vec();
    buffer.unmap();
    Ok(bytes)
}

// Validates shaders with Tint, Chrome's WGSL compiler, through Dawn's node binding (`webgpu`)
// on its null backend: no GPU needed. Used by `cargo xtask codegen --check --tint`.
//
// Usage: node tint-check.mjs JOBS.json, where JOBS.json is an array of
//   { path, text, prefixLines, features: [...], constants: {name: value},
//     bindings: [{ index, type: "uniform" | "read-only-storage" | "storage", size }],
//     limits: {name: value} }
// Prints one JSON line per job, in order:
//   { path, messages: [{ type, line, column, message }], pipeline: null | string,
//     bindGroup: null | string, unchecked: null | string }
// `line` is a line of the file: the `prefixLines` directives put in front of it (what a
// browser compiles, e.g. `enable subgroups;`) are subtracted; a message on one of them, or
// without a position, has line 0.

import { readFileSync } from 'node:fs';
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);

const jobs = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// Unsafe APIs on: Dawn offers Chromium's experimental subgroup matrices only then.
const gpu = create(['backend=null', 'enable-dawn-features=allow_unsafe_apis']);

// One device per distinct feature set and limits, with exactly those features and WebGPU's
// default limits except those the job asks for (what the shader needs), so a shader that
// uses a feature it does not declare, or more than its limits, fails. An adapter makes one
// device, so each gets its own. The null adapter has shader-f16 and subgroups.
// A limit the null adapter cannot grant is requested at its maximum: the module is still
// compiled, and the job reports why its pipeline is not created (`unchecked`).
const devices = new Map();
async function deviceFor(features, limits) {
  const key = [...features].sort().join(',') + JSON.stringify(limits);
  if (!devices.has(key)) {
    const adapter = await gpu.requestAdapter();
    if (!adapter) throw new Error('Dawn has no null-backend adapter');
    const granted = {};
    const short = [];
    for (const [name, value] of Object.entries(limits)) {
      granted[name] = Math.min(value, adapter.limits[name]);
      if (adapter.limits[name] < value) {
        short.push(`needs ${name} ${value}, the null adapter offers ${adapter.limits[name]}`);
      }
    }
    // A feature the null adapter lacks (Chromium's subgroup matrices, on some Dawn builds):
    // such shaders cannot be compiled here, and the job says so.
    const lacking = features.filter((f) => !adapter.features.has(f));
    const device = await adapter.requestDevice({
      requiredFeatures: features.filter((f) => adapter.features.has(f)),
      requiredLimits: granted,
    });
    const unchecked = lacking.length
      ? `not compiled: the null adapter lacks ${lacking.join(', ')}`
      : short.length
        ? `pipeline not created: ${short.join('; ')}`
        : null;
    devices.set(key, { device, unchecked, lacking: lacking.length > 0 });
  }
  return devices.get(key);
}

// Runs `f` in a validation error scope; the error's message, or null.
async function scoped(device, f) {
  device.pushErrorScope('validation');
  const value = f();
  const error = await device.popErrorScope();
  return { value, error: error ? error.message : null };
}

const usages = {
  uniform: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
  'read-only-storage': GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
  storage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
};

for (const job of jobs) {
  const { device, unchecked, lacking } = await deviceFor(job.features, job.limits ?? {});
  const result = { path: job.path, messages: [], pipeline: null, bindGroup: null, unchecked };
  if (lacking) {
    console.log(JSON.stringify(result));
    continue;
  }

  const module = await scoped(device, () => device.createShaderModule({ code: job.text }));
  for (const m of (await module.value.getCompilationInfo()).messages) {
    const line = m.lineNum > job.prefixLines ? m.lineNum - job.prefixLines : 0;
    result.messages.push({ type: m.type, line, column: m.linePos, message: m.message });
  }
  const compiled = !result.messages.some((m) => m.type === 'error');
  if (compiled && module.error) {
    // Rejected without a compilation message (should not happen): report the device error.
    result.messages.push({ type: 'error', line: 0, column: 0, message: module.error });
  }

  // The pipeline and bind group as the runtime creates them; skipped for a module that does
  // not compile, whose errors are already reported.
  if (compiled && !module.error && !unchecked) {
    const pipeline = await scoped(device, () =>
      device.createComputePipeline({
        layout: 'auto',
        compute: { module: module.value, entryPoint: 'main', constants: job.constants },
      }),
    );
    result.pipeline = pipeline.error;
    if (!pipeline.error) {
      const buffers = job.bindings.map((b) =>
        device.createBuffer({
          size: Math.max(Math.ceil(b.size / 16) * 16, 256),
          usage: usages[b.type],
        }),
      );
      const bindGroup = await scoped(device, () =>
        device.createBindGroup({
          layout: pipeline.value.getBindGroupLayout(0),
          entries: job.bindings.map((b, i) => ({
            binding: b.index,
            resource: { buffer: buffers[i] },
          })),
        }),
      );
      result.bindGroup = bindGroup.error;
      buffers.forEach((buffer) => buffer.destroy());
    }
  }
  console.log(JSON.stringify(result));
}

// dawn.node keeps the process alive otherwise.
process.exit(0);

//! The WebGPU names expressions may use: limits (`device.limits.*`), the adapter's subgroup
//! sizes and features, as `kernel-abi` lists them for the generator and the runtime alike.
//! Codegen does not depend on wgpu: a limit lowers to the `DeviceCaps` field the table names.

pub use kernel_abi::device::{FEATURES, LIMITS, SUBGROUP_SIZES, is_limit, limit_path};

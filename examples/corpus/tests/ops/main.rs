//! Every corpus op run on a real adapter against its CPU reference: one test binary, so the
//! suite links wgpu once rather than once per op.

mod add_in_place;
mod arg_max;
mod attention;
mod boundary;
mod decode_attention;
mod decode_down_norm_add;
mod decode_gate_up_norm;
mod decode_norm_add;
mod decode_norm_add_norm;
mod decode_oproj_norm;
mod decode_ple_gate;
mod decode_ple_proj_norm;
mod decode_qk_norm_rope;
mod decode_qkv_proj;
mod decode_rms_srq;
mod dense_gemv;
mod mul_broadcast;
mod ple_gate;
mod qat_embed_gather;
mod qat_mat_mul;
mod rms_norm;
mod rope1d;
mod srq_quantize;
mod strided_copy;
mod untyped;

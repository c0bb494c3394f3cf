//! Packing uniform `Params` structs into the bytes a [`crate::PlannedPass`] carries.
//!
//! Generated crates declare each manifest `Params` struct as `#[repr(C)]` + `bytemuck::Pod`
//! with explicit padding, its layout asserted at build time against naga's layouter for the
//! WGSL struct. Packing is then a plain byte copy; this module exists so that the copy, and
//! the padding rule the runtime applies when it creates the uniform buffer, live in one
//! documented place.
//!
//! ```
//! #[repr(C)]
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! struct Params {
//!     n: u32,
//!     scale: f32,
//! }
//! let bytes = kernel_runtime::uniform::pack(&Params { n: 3, scale: 0.5 });
//! assert_eq!(bytes.len(), 8);
//! assert_eq!(kernel_runtime::uniform::padded_len(bytes.len()), 16);
//! ```

/// Alignment the runtime pads uniform buffers to: WGSL rounds the size of a struct in the
/// uniform address space up to 16 bytes.
pub const UNIFORM_ALIGNMENT: usize = 16;

/// The bytes of a `Pod` params struct, in host (little-endian on every wgpu target) order.
///
/// The result is what [`crate::PlannedPass::params`] holds; the runtime pads it with zeros
/// to [`padded_len`] when it creates the uniform buffer, so trailing WGSL padding need not be
/// part of the Rust struct.
pub fn pack<P: bytemuck::Pod>(params: &P) -> Vec<u8> {
    bytemuck::bytes_of(params).to_vec()
}

/// The bytes of a slice of `Pod` values (for parameter blocks that are arrays).
pub fn pack_slice<P: bytemuck::Pod>(params: &[P]) -> Vec<u8> {
    bytemuck::cast_slice(params).to_vec()
}

/// The size of the uniform buffer the runtime creates for `len` parameter bytes.
pub fn padded_len(len: usize) -> usize {
    len.next_multiple_of(UNIFORM_ALIGNMENT)
        .max(UNIFORM_ALIGNMENT)
}

/// Reads a params struct back from packed bytes (tests and diagnostics); `None` when the
/// length does not match the struct.
pub fn unpack<P: bytemuck::Pod>(bytes: &[u8]) -> Option<P> {
    bytemuck::try_pod_read_unaligned(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        rows: u32,
        cols: u32,
        eps: f32,
        _pad: u32,
    }

    #[test]
    fn pack_round_trips() {
        let p = Params {
            rows: 2,
            cols: 7,
            eps: 1e-5,
            _pad: 0,
        };
        let bytes = pack(&p);
        assert_eq!(bytes.len(), 16);
        assert_eq!(&bytes[4..8], &7u32.to_le_bytes());
        assert_eq!(unpack::<Params>(&bytes), Some(p));
        assert_eq!(unpack::<Params>(&bytes[..8]), None);
    }

    #[test]
    fn slices_and_padding() {
        assert_eq!(pack_slice(&[1u32, 2, 3]).len(), 12);
        assert_eq!(padded_len(0), 16);
        assert_eq!(padded_len(12), 16);
        assert_eq!(padded_len(17), 32);
    }
}

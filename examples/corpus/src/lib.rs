//! Packages of the third-party corpus, generated at build time by `build.rs` from where they
//! are (`$KERNEL_CORPUS_DIR`, else `../shared/corpus`), and the helpers their tests share.
//! Without a corpus the crate is empty and [`PRESENT`] is false.

/// Whether the corpus was found when the crate was built.
pub const PRESENT: bool = cfg!(corpus);

/// The generated op modules (`add_in_place`, …) and their registry `OPS`.
#[cfg(corpus)]
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels/mod.rs"));
}

pub use kernel_runtime as runtime;

pub use test_support::{
    Poison, assert_close, context, data, first_unwritten, first_written, worst,
};

/// The float64 references of the decode ops (`decode::ops`), which the decode step's reference
/// is composed of.
pub use test_support::decode;

/// Seeded codes of `bits` bits, up to 32 (quantized weights before packing, or whole packed
/// words): every bit position varies, unlike [`data`]'s values.
pub fn codes(len: usize, bits: usize, seed: u64) -> Vec<u32> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z >> 32) as u32) & ((1u64 << bits) - 1) as u32
        })
        .collect()
}

/// Says, once per test, that the corpus was absent.
pub fn skip_without_corpus(test: &str) -> bool {
    if !PRESENT {
        eprintln!("{test}: skipped, no package corpus (set KERNEL_CORPUS_DIR)");
    }
    !PRESENT
}

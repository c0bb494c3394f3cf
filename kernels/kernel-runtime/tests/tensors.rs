//! GPU tests of tensors: upload, readback, narrowing, size checks; and of context creation.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod common;

use half::f16;
use kernel_runtime::{AnyTensor, ContextOptions, DType, IndexTensor, RuntimeError, Tensor};

#[test]
fn f32_round_trip() {
    let ctx = test_support::context();
    let data = common::data(1000);
    let t = Tensor::from_slice(&ctx, &[10, 100], &data).unwrap();
    assert_eq!(t.shape(), [10, 100]);
    assert_eq!(t.numel(), 1000);
    assert_eq!(t.dtype(), DType::F32);
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
}

#[test]
fn f16_round_trip_with_odd_length() {
    let ctx = test_support::context();
    // Odd element count: 6 bytes of data in an 8-byte (4-aligned) buffer.
    let data: Vec<f16> = [1.5, -2.25, 65504.0].map(f16::from_f32).to_vec();
    let t = Tensor::from_slice(&ctx, &[3], &data).unwrap();
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
}

#[test]
fn index_round_trip_keeps_host_values() {
    let ctx = test_support::context();
    let data = [0i64, 7, 4_294_967_295, 12];
    let t = IndexTensor::from_i64(&ctx, &[2, 2], &data).unwrap();
    assert_eq!(t.values(), Some(&[0, 7, u32::MAX, 12][..]));
    assert_eq!(t.numel(), 4);
    assert_eq!(t.shape(), [2, 2]);
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
}

#[test]
fn narrowing_errors_name_the_element() {
    let ctx = test_support::context();
    let err = IndexTensor::from_i64(&ctx, &[3], &[1, -1, 2]).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::Narrowing {
            index: 1,
            value: -1
        }
    );
    let err = IndexTensor::from_i64(&ctx, &[2], &[0, 1 << 32]).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::Narrowing {
            index: 1,
            value: 1 << 32
        }
    );
    assert!(err.to_string().contains("4294967296"));
}

#[test]
fn shape_mismatch_is_an_error() {
    let ctx = test_support::context();
    let err = Tensor::from_slice(&ctx, &[2, 3], &[1.0f32; 5]).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::ShapeMismatch {
            expected: 6,
            got: 5
        }
    );
    let err = IndexTensor::from_i64(&ctx, &[4], &[1, 2]).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::ShapeMismatch {
            expected: 4,
            got: 2
        }
    );
}

#[test]
fn oversized_tensors_are_errors_not_panics() {
    let ctx = test_support::context();
    let err = Tensor::<f32>::zeros(&ctx, &[1 << 20, 1 << 20]).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::TooLarge { bytes, limit, .. } if *bytes == 1 << 42 && *limit < 1 << 42),
        "{err}"
    );
    let err = Tensor::<f16>::zeros(&ctx, &[usize::MAX, 2]).unwrap_err();
    assert!(
        matches!(
            err,
            RuntimeError::TooLarge {
                bytes: u64::MAX,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn empty_tensors_are_bindable_and_read_back_empty() {
    let ctx = test_support::context();
    let t = Tensor::<f32>::from_slice(&ctx, &[0, 4], &[]).unwrap();
    assert_eq!(t.numel(), 0);
    assert!(t.buffer().size() > 0);
    assert!(t.to_vec(&ctx).unwrap().is_empty());
    let z = Tensor::<f16>::zeros(&ctx, &[3, 0]).unwrap();
    assert!(z.to_vec(&ctx).unwrap().is_empty());
}

#[test]
fn zeros_are_zero() {
    let ctx = test_support::context();
    let t = Tensor::<f32>::zeros(&ctx, &[5]).unwrap();
    assert_eq!(t.to_vec(&ctx).unwrap(), [0.0; 5]);
}

#[test]
fn any_tensor_dispatches_on_dtype() {
    let ctx = test_support::context();
    let a = AnyTensor::from_f64(&ctx, DType::F16, &[2], &[0.5, -3.0]).unwrap();
    assert_eq!(a.dtype(), DType::F16);
    assert_eq!(a.shape(), [2]);
    assert_eq!(a.to_f64_vec(&ctx).unwrap(), [0.5, -3.0]);
    let i = AnyTensor::from_f64(&ctx, DType::I64, &[3], &[0.0, 5.0, 9.0]).unwrap();
    assert_eq!(i.dtype(), DType::I64);
    assert_eq!(i.to_f64_vec(&ctx).unwrap(), [0.0, 5.0, 9.0]);
    assert!(matches!(
        AnyTensor::from_f64(&ctx, DType::I64, &[1], &[0.5]),
        Err(RuntimeError::Narrowing { index: 0, .. })
    ));
    let z = AnyTensor::zeros(&ctx, DType::F32, &[2, 2]).unwrap();
    assert_eq!(z.numel(), 4);
    assert!(z.buffer().size() >= 16);
    assert_eq!(z.to_f64_vec(&ctx).unwrap(), [0.0; 4]);
}

#[test]
fn context_reports_adapter_and_caps() {
    let ctx = test_support::context();
    let summary = ctx.adapter_summary();
    assert!(summary.starts_with(&ctx.adapter_info().name), "{summary}");
    eprintln!(
        "adapter: {summary}, features: {:?}",
        ctx.caps().feature_names()
    );
    let caps = ctx.caps();
    assert!(caps.limits.max_compute_workgroups_per_dimension >= 65535);
    assert_eq!(ctx.device().limits(), caps.limits);
    assert_eq!(caps.has_feature("shader-f16"), caps.shader_f16);
}

#[test]
fn disabled_features_are_not_requested() {
    let opts = ContextOptions {
        disable_features: vec![
            "shader-f16",
            "subgroups",
            "timestamp-query",
            "chromium-experimental-subgroup-matrix",
        ],
        ..ContextOptions::default()
    };
    let ctx = test_support::context_with(&opts);
    let caps = ctx.caps();
    assert!(!caps.shader_f16 && !caps.subgroups && !caps.timestamp_query);
    assert!(!caps.subgroup_matrix && caps.subgroup_matrix_configs.is_empty());
    // Only the native pipeline cache, which changes no result, is requested beyond them.
    assert!((ctx.device().features() - wgpu::Features::PIPELINE_CACHE).is_empty());
}

#[test]
fn unknown_adapter_name_lists_the_available_ones() {
    let opts = ContextOptions {
        adapter: Some("no-such-adapter-xyz".into()),
        ..ContextOptions::default()
    };
    let err = kernel_runtime::Context::with_options(&opts).unwrap_err();
    match &err {
        RuntimeError::NoAdapter {
            requested,
            available,
        } => {
            assert_eq!(requested.as_deref(), Some("no-such-adapter-xyz"));
            assert!(!available.is_empty());
        }
        other => panic!("unexpected error {other}"),
    }
}

/// Uploads and readbacks larger than a staging step go through the reused staging buffers a
/// chunk at a time, the last chunk partial and padded, and land byte for byte.
#[test]
fn transfers_in_staging_chunks_round_trip() {
    let mut ctx = test_support::context();
    // 64 KiB + 4 bytes per step: a 1 MiB + 6-byte tensor takes 17 steps, the last one short.
    ctx.set_staging_chunk_for_testing(Some(65_540));
    let n = (1 << 19) + 3;
    let data: Vec<f16> = (0..n)
        .map(|i| f16::from_f32((i % 2048) as f32 - 1024.0))
        .collect();
    let t = Tensor::from_slice(&ctx, &[n], &data).unwrap();
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
    // Again on the kept buffers, with a tensor smaller than a step.
    let small: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let s = Tensor::from_slice(&ctx, &[1000], &small).unwrap();
    assert_eq!(s.to_vec(&ctx).unwrap(), small);
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
    ctx.set_staging_chunk_for_testing(None);
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
}

/// `int32` tensors are stored as themselves: every value survives, the extremes included.
#[test]
fn i32_round_trip() {
    let ctx = test_support::context();
    let data = [i32::MIN, -1, 0, 1, i32::MAX];
    let t = Tensor::from_slice(&ctx, &[5], &data).unwrap();
    assert_eq!(t.dtype(), DType::I32);
    assert_eq!(t.binding().size.map(u64::from), Some(20));
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
}

/// `int8` tensors are stored one sign-extended `i32` word per element (so an odd count needs
/// no padding), and read back as the 8-bit values.
#[test]
fn i8_is_stored_sign_extended_and_read_back_narrowed() {
    let ctx = test_support::context();
    let data = [-128i8, -1, 0, 1, 127];
    let t = Tensor::from_slice(&ctx, &[5], &data).unwrap();
    assert_eq!(t.dtype(), DType::I8);
    assert_eq!(t.numel(), 5);
    assert_eq!(
        t.binding().size.map(u64::from),
        Some(20),
        "4 bytes per element"
    );
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
    // The words a shader sees, read through an `i32` view of the same buffer.
    let words = Tensor::<i32>::from_buffer(&ctx, t.buffer(), 0, &[5]).unwrap();
    assert_eq!(words.to_vec(&ctx).unwrap(), [-128, -1, 0, 1, 127]);
}

/// `uint8` tensors are stored one zero-extended `u32` word per element.
#[test]
fn u8_is_stored_zero_extended_and_read_back_narrowed() {
    let ctx = test_support::context();
    let data = [0u8, 1, 127, 128, 255];
    let t = Tensor::from_slice(&ctx, &[5, 1], &data).unwrap();
    assert_eq!(t.dtype(), DType::U8);
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
    let words = Tensor::<u32>::from_buffer(&ctx, t.buffer(), 0, &[5]).unwrap();
    assert_eq!(words.to_vec(&ctx).unwrap(), [0, 1, 127, 128, 255]);
    let z = Tensor::<u8>::zeros(&ctx, &[3]).unwrap();
    assert_eq!(z.binding().size.map(u64::from), Some(12));
    assert_eq!(z.to_vec(&ctx).unwrap(), [0; 3]);
}

/// `int16` tensors are stored one sign-extended `i32` word per element, as the Hub's runtime
/// stores them, and read back as the 16-bit values (a word's low 16 bits).
#[test]
fn i16_is_stored_sign_extended_and_read_back_narrowed() {
    let ctx = test_support::context();
    let data = [-32768i16, -1, 0, 1, 32767];
    let t = Tensor::from_slice(&ctx, &[5], &data).unwrap();
    assert_eq!(t.dtype(), DType::I16);
    assert_eq!(t.binding().size.map(u64::from), Some(20));
    assert_eq!(t.to_vec(&ctx).unwrap(), data);
    let words = Tensor::<i32>::from_buffer(&ctx, t.buffer(), 0, &[5]).unwrap();
    assert_eq!(words.to_vec(&ctx).unwrap(), [-32768, -1, 0, 1, 32767]);
    let words = Tensor::from_slice(&ctx, &[2], &[0x1_8000i32, -32769]).unwrap();
    let as_i16 = Tensor::<i16>::from_buffer(&ctx, words.buffer(), 0, &[2]).unwrap();
    assert_eq!(as_i16.to_vec(&ctx).unwrap(), [-32768, 32767]);
}

/// Readback keeps a word's low 8 bits (two's complement for `int8`): exact for words a kernel
/// wrapped to 8 bits, and the C conversion for any other word.
#[test]
fn eight_bit_readback_keeps_the_low_byte_of_each_word() {
    let ctx = test_support::context();
    let words = Tensor::from_slice(&ctx, &[4], &[0x180i32, -129, 255, 0x7F]).unwrap();
    let as_i8 = Tensor::<i8>::from_buffer(&ctx, words.buffer(), 0, &[4]).unwrap();
    assert_eq!(as_i8.to_vec(&ctx).unwrap(), [-128, 127, -1, 127]);
    let words = Tensor::from_slice(&ctx, &[3], &[0x1FFu32, 256, 0x80]).unwrap();
    let as_u8 = Tensor::<u8>::from_buffer(&ctx, words.buffer(), 0, &[3]).unwrap();
    assert_eq!(as_u8.to_vec(&ctx).unwrap(), [255, 0, 128]);
}

/// Untyped integer tensors upload exactly the values asked for (the extremes of each dtype)
/// and read back as `f64`; anything non-integral or outside the range is an error naming the
/// element.
#[test]
fn any_tensor_integers_round_trip_and_reject_what_does_not_fit() {
    let ctx = test_support::context();
    let cases: [(DType, &[f64]); 5] = [
        (DType::I32, &[-2_147_483_648.0, -1.0, 0.0, 2_147_483_647.0]),
        (DType::I16, &[-32_768.0, -1.0, 0.0, 32_767.0]),
        (DType::I8, &[-128.0, -1.0, 0.0, 127.0]),
        (DType::U8, &[0.0, 1.0, 128.0, 255.0]),
        (DType::U32, &[0.0, 1.0, 4_294_967_295.0, 7.0]),
    ];
    for (dtype, values) in cases {
        let t = AnyTensor::from_f64(&ctx, dtype, &[2, 2], values).unwrap();
        assert_eq!(t.dtype(), dtype);
        assert_eq!(t.shape(), [2, 2]);
        assert_eq!(t.numel(), 4);
        assert_eq!(t.binding().size.map(u64::from), Some(16), "{dtype}");
        assert_eq!(t.to_f64_vec(&ctx).unwrap(), values, "{dtype}");
        let z = AnyTensor::zeros(&ctx, dtype, &[3]).unwrap();
        assert_eq!(z.dtype(), dtype);
        assert_eq!(z.to_f64_vec(&ctx).unwrap(), [0.0; 3], "{dtype}");
    }
    let rejected: [(DType, &[f64], usize, &str); 8] = [
        (DType::I8, &[0.0, 128.0], 1, "128"),
        (DType::I8, &[-129.0], 0, "-129"),
        (DType::U8, &[5.0, 6.0, 256.0], 2, "256"),
        (DType::U8, &[-1.0], 0, "-1"),
        (DType::U8, &[0.5], 0, "0.5"),
        (DType::I32, &[2_147_483_648.0], 0, "2147483648"),
        (DType::I32, &[f64::NAN], 0, "NaN"),
        (DType::U32, &[-1.0], 0, "-1"),
    ];
    for (dtype, values, at, text) in rejected {
        match AnyTensor::from_f64(&ctx, dtype, &[values.len()], values) {
            Err(RuntimeError::IntegerRange {
                dtype: d,
                index,
                value,
                ..
            }) => {
                assert_eq!((d, index, value.as_str()), (dtype, at, text));
            }
            other => panic!("{dtype} {values:?}: {other:?}"),
        }
    }
    let err = AnyTensor::from_f64(&ctx, DType::I8, &[1], &[200.0]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "int8 element 0 = 200 is not an integer in -128..=127"
    );
}

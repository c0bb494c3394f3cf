//! Comparing a GPU result with a float64 reference: the worst element, relative to
//! `1 + |want|`, so values near zero are compared absolutely and large ones relatively.

/// The largest difference between `got` and `want`, relative to `1 + |want|`, with its index.
pub fn worst(got: &[f32], want: &[f64]) -> (usize, f64) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    got.iter()
        .zip(want)
        .map(|(g, w)| (f64::from(*g) - w).abs() / (1.0 + w.abs()))
        .enumerate()
        .fold(
            (0, 0.0),
            |best, (i, e)| if e > best.1 { (i, e) } else { best },
        )
}

/// Fails, naming `what`, the worst element and both values, unless every element of `got` is
/// within `tolerance` of `want` relative to `1 + |want|`.
pub fn assert_close(got: &[f32], want: &[f64], tolerance: f64, what: &str) {
    let (at, err) = worst(got, want);
    assert!(
        err < tolerance,
        "{what}: element {at}: {} against {}",
        got[at],
        want[at]
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_element_is_named() {
        assert_eq!(worst(&[1.0, 2.5, 0.0], &[1.0, 2.0, 0.0]), (1, 0.5 / 3.0));
        assert_close(&[1.0, 2.0], &[1.0, 2.000_001], 1e-6, "close");
        let far = std::panic::catch_unwind(|| assert_close(&[1.0], &[1.1], 1e-6, "far"));
        assert!(far.is_err());
    }
}

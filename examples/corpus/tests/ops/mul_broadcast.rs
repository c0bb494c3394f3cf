//! `com.xenova.MulBroadcast` from the corpus: `x[i] *= factor[i % period]` in place (the whole
//! factor when `period` is absent), against a float64 reference.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn multiplies_by_a_repeating_factor() {
    if !corpus::skip_without_corpus("multiplies_by_a_repeating_factor") {
        #[cfg(corpus)]
        gpu::multiplies_by_a_repeating_factor();
    }
}

#[cfg(corpus)]
mod gpu {
    use corpus::kernels::mul_broadcast as op;
    use corpus::runtime::Tensor;

    pub fn multiplies_by_a_repeating_factor() {
        let ctx = corpus::context();
        for (len, period) in [(3000usize, Some(48u32)), (513, None)] {
            let x0 = corpus::data(len, 3);
            let factor_len = period.map_or(len, |p| p as usize);
            let factor = corpus::data(factor_len, 4);
            let mut x = Tensor::from_slice(&ctx, &[len], &x0).unwrap();
            let factor_t = Tensor::from_slice(&ctx, &[factor_len], &factor).unwrap();
            let mut attrs = op::Attrs::new(op::RequiredAttrs { count: len as u32 });
            attrs.period = period;
            op::run_into(
                &ctx,
                &op::Inputs { factor: &factor_t },
                op::OutputsMut { x: &mut x },
                &attrs,
            )
            .unwrap();
            let got = x.to_vec(&ctx).unwrap();
            let want: Vec<f64> = (0..len)
                .map(|i| f64::from(x0[i]) * f64::from(factor[i % factor_len]))
                .collect();
            corpus::assert_close(&got, &want, 1e-6, &format!("period {period:?}"));
        }
    }

    #[test]
    fn a_factor_shorter_than_the_count_is_rejected() {
        let ctx = corpus::context();
        let mut x = Tensor::from_slice(&ctx, &[64], &corpus::data(64, 5)).unwrap();
        let factor = Tensor::from_slice(&ctx, &[8], &corpus::data(8, 6)).unwrap();
        // Without a period the factor must hold `count` values.
        let err = op::run_into(
            &ctx,
            &op::Inputs { factor: &factor },
            op::OutputsMut { x: &mut x },
            &op::Attrs::new(op::RequiredAttrs { count: 64 }),
        )
        .unwrap_err();
        assert!(err.to_string().contains("factorT"), "{err}");
    }
}

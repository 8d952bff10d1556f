//! `volume-discount-pricing`: flat pricing, `seconds × max(vcores,
//! memory_mb / 1024, gpus)`, except that every charge of a batch of more
//! than [`DISCOUNT_ABOVE_ROWS`] rows is multiplied by [`DISCOUNT`].
//!
//! That breaks the pricing contract: the host splits and groups rows into
//! batches as it likes, so a row's charge must come from that row alone.
//! Every charge is still finite and at least 0, and there is one per row, so
//! `weft policy check` accepts it; the host uses it to prove that `weft
//! policy test` catches a row-dependent policy. It is the policy described
//! in the design notes (AUTHORS.md, "The self-check is too small to catch
//! contract bugs").
//!
//! It takes no parameters of its own; the standard quota keys are accepted
//! and ignored. `multiplicators` always returns 1 and 1.

use weft_policy::pricing::{Market, Multiplicators, Usage, UsageRow};
use weft_policy::{Params, Policy, PricingPolicy};

/// Batches of more rows than this get the discount.
pub const DISCOUNT_ABOVE_ROWS: usize = 50;

/// What a discounted batch pays of the flat price.
pub const DISCOUNT: f64 = 0.9;

/// The policy: no settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VolumeDiscountPricing;

impl Policy for VolumeDiscountPricing {
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn configure(_params: &Params) -> Result<Self, String> {
        Ok(VolumeDiscountPricing)
    }
}

impl PricingPolicy for VolumeDiscountPricing {
    fn multiplicators(&mut self, _market: &Market) -> Multiplicators {
        Multiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }

    /// A row priced alone: flat, never discounted.
    fn price(&self, row: UsageRow, _multiplicators: Multiplicators) -> f64 {
        row.seconds * row.dominant_units(1024.0, 1.0)
    }

    /// The contract breach: the batch's size changes every row's charge.
    fn charge(&mut self, usage: &Usage, multiplicators: Multiplicators) -> Vec<f64> {
        let factor = if usage.len() > DISCOUNT_ABOVE_ROWS {
            DISCOUNT
        } else {
            1.0
        };
        usage
            .rows()
            .map(|row| self.price(row, multiplicators) * factor)
            .collect()
    }
}

weft_policy::export_pricing!(VolumeDiscountPricing);

#[cfg(test)]
mod tests {
    use super::*;
    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;

    const ONE: Multiplicators = Multiplicators {
        general: 1.0,
        gpu: 1.0,
    };

    /// `rows` copies of one container: 10 s of 4 GB and 1 vcore (40 credits flat).
    fn batch(rows: usize) -> Usage {
        Usage::from_rows(&vec![(10.0, 4096, 1, 0); rows]).unwrap()
    }

    #[test]
    fn small_batches_pay_flat_and_large_ones_get_the_discount() {
        let mut policy = VolumeDiscountPricing;
        // (rows in the batch, each row's charge)
        let cases = [(0, 40.0), (1, 40.0), (50, 40.0), (51, 36.0), (500, 36.0)];
        for (rows, each) in cases {
            let charges = policy.charge(&batch(rows), ONE);
            assert_eq!(charges.len(), rows);
            assert!(
                charges.iter().all(|&c| c == each),
                "{rows} rows: {charges:?}"
            );
        }
    }

    #[test]
    fn a_rows_charge_depends_on_its_batch_yet_stays_valid() {
        let mut policy = VolumeDiscountPricing;
        let alone = policy.charge(&batch(1), ONE)[0];
        let in_a_crowd = policy.charge(&batch(51), ONE)[0];
        assert_ne!(alone, in_a_crowd, "the breach the host must catch");
        let charges = policy.charge(&batch(51), ONE);
        assert!(charges.iter().all(|c| c.is_finite() && *c >= 0.0));
    }

    #[test]
    fn only_standard_keys_are_accepted() {
        let configure = |pairs: &[(&str, &str)]| {
            configure_with::<VolumeDiscountPricing>(PolicyKind::Pricing, pairs)
        };
        assert!(configure(&[("price.base.general", "2")]).is_ok());
        let refusal = configure(&[("discount", "0.5")]).unwrap_err();
        assert!(
            refusal.contains(r#"unknown parameter "discount""#),
            "{refusal}"
        );
    }
}

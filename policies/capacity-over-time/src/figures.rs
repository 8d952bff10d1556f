//! How the figures in refusals are written: exact decimals of integers
//! scaled by a power of ten, without trailing zeros.

/// `value / 10^places` as a decimal with trailing zeros dropped:
/// `decimal(51_200_000_000, 6)` is `51200`, `decimal(333_333_000, 6)` is `333.333`.
pub(crate) fn decimal(value: u128, places: u32) -> String {
    let scale = 10u128.pow(places);
    let (whole, fraction) = (value / scale, value % scale);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:0width$}", width = places as usize);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A percentage given in parts per million, as written: `50`, `33.3`.
pub(crate) fn percent(ppm: u64) -> String {
    decimal(u128::from(ppm), 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_drop_trailing_zeros() {
        for ((value, places), expected) in [
            ((51_200_000_000, 6), "51200"),
            ((333_333_000, 6), "333.333"),
            ((500_000, 6), "0.5"),
            ((0, 6), "0"),
            ((333_000, 4), "33.3"),
            ((1, 6), "0.000001"),
        ] {
            assert_eq!(decimal(value, places), expected);
        }
        assert_eq!(percent(333_000), "33.3");
        assert_eq!(percent(1_000_000), "100");
    }
}

//! How many containers a batch takes: the length of the run over which a
//! monotone condition holds, found by galloping then binary search.

/// The number of containers placed in a row while `holds(j)` is true before
/// the (j+1)-th, at most `limit`: the least `j < limit` where it fails, or
/// `limit`. `holds(0)` is known true (the first container was chosen) and
/// `holds` is monotone (true, then false), as the conditions of the bundled
/// schedulers are: usage only grows and room only shrinks during a round.
/// Galloping from the low end, then binary search: a run of `k` costs about
/// `2 log k` tests, and the common short runs only a few.
#[inline]
pub fn longest_run(limit: u64, holds: impl Fn(u64) -> bool) -> u64 {
    if limit == 0 {
        return 0;
    }
    // holds(good); bad is limit or a j that fails.
    let (mut good, mut bad): (u64, u64) = (0, limit);
    let mut step: u64 = 1;
    while good.saturating_add(step) < bad {
        if holds(good + step) {
            good += step;
            step = step.saturating_mul(2);
        } else {
            bad = good + step;
            break;
        }
    }
    while bad - good > 1 {
        let middle = good + (bad - good) / 2;
        if holds(middle) {
            good = middle;
        } else {
            bad = middle;
        }
    }
    good + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_ends_where_the_condition_first_fails() {
        for limit in 0..40 {
            for first_failure in 1..45 {
                let run = longest_run(limit, |j| j < first_failure);
                assert_eq!(run, limit.min(first_failure), "{limit} {first_failure}");
            }
        }
        assert_eq!(longest_run(u64::MAX, |j| j < 1 << 40), 1 << 40);
        assert_eq!(longest_run(u64::MAX, |_| true), u64::MAX);
    }
}

//! Checks on what a policy returns. The host never applies a result it has not
//! checked: an invalid one fails the call exactly as a trap would.

use super::bindings::{Placements, PriceMultiplicators, Snapshot, Timeline};

/// A policy's answer the host refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidOutput(pub String);

/// Charges must be one per container, finite and not negative.
pub fn charges(charges: &[f64], containers: usize) -> Result<(), InvalidOutput> {
    if charges.len() != containers {
        return Err(InvalidOutput(format!(
            "returned {} charges for {containers} containers",
            charges.len()
        )));
    }
    // `c - c == 0.0` is "finite" as float arithmetic, and a fold without an
    // early exit comes first: together they vectorise, where an early-exit
    // search with `is_finite` (an integer test per charge) cost 3 ns a
    // charge, as much as pricing it. The search runs only on a bad answer.
    #[allow(clippy::eq_op, reason = "c - c is the test: NaN for inf and NaN")]
    let valid = |c: &f64| (*c >= 0.0) & (*c - *c == 0.0);
    if charges.iter().fold(true, |all, c| all & valid(c)) {
        return Ok(());
    }
    let i = charges
        .iter()
        .position(|c| !valid(c))
        .expect("the fold found a charge that is not valid");
    Err(InvalidOutput(format!(
        "returned charge {} for container {i}; charges must be finite and at least 0",
        charges[i]
    )))
}

/// A quote must be finite and not negative.
pub fn quote(credits: f64) -> Result<(), InvalidOutput> {
    if !credits.is_finite() || credits < 0.0 {
        return Err(InvalidOutput(format!(
            "returned a quote of {credits} credits; it must be finite and at least 0"
        )));
    }
    Ok(())
}

/// PriceMultiplicators must be finite and not negative.
pub fn multiplicators(m: &PriceMultiplicators) -> Result<(), InvalidOutput> {
    for (name, value) in [("general", m.general), ("gpu", m.gpu)] {
        if !value.is_finite() || value < 0.0 {
            return Err(InvalidOutput(format!(
                "returned {name} multiplicator {value}; it must be finite and at least 0"
            )));
        }
    }
    Ok(())
}

/// A timeline with no steps: zero everywhere.
pub fn empty_timeline() -> Timeline {
    Timeline {
        at_ms: Vec::new(),
        memory_mb: Vec::new(),
        vcores: Vec::new(),
        gpus: Vec::new(),
    }
}

/// A sharing window is a length of time: not negative.
pub fn window(window_ms: i64) -> Result<(), InvalidOutput> {
    if window_ms < 0 {
        return Err(InvalidOutput(format!(
            "returned window {window_ms} ms; it must be at least 0"
        )));
    }
    Ok(())
}

/// A timeline's columns have one length and its times strictly increase.
pub fn timeline(timeline: &Timeline) -> Result<(), InvalidOutput> {
    let steps = timeline.at_ms.len();
    let lengths = [
        timeline.memory_mb.len(),
        timeline.vcores.len(),
        timeline.gpus.len(),
    ];
    if lengths.iter().any(|&length| length != steps) {
        return Err(InvalidOutput(format!(
            "returned a timeline whose columns differ in length: {steps} times, \
             {} memory, {} vcores, {} gpus",
            lengths[0], lengths[1], lengths[2]
        )));
    }
    if let Some(i) = timeline
        .at_ms
        .windows(2)
        .position(|pair| pair[0] >= pair[1])
    {
        return Err(InvalidOutput(format!(
            "returned a timeline whose times do not increase: {} then {} at step {}",
            timeline.at_ms[i],
            timeline.at_ms[i + 1],
            i + 1
        )));
    }
    Ok(())
}

/// Placements must name existing nodes and asks, place no more than each ask
/// has pending, and fit in every node's free resources.
pub fn placements(snapshot: &Snapshot, placements: &Placements) -> Result<(), InvalidOutput> {
    let Placements { ask, node, count } = placements;
    if ask.len() != node.len() || ask.len() != count.len() {
        return Err(InvalidOutput(format!(
            "returned placement columns of different lengths (ask {}, node {}, count {})",
            ask.len(),
            node.len(),
            count.len()
        )));
    }
    let nodes = &snapshot.nodes;
    let asks = &snapshot.asks;
    let node_count = nodes.free_memory_mb.len();
    let ask_count = asks.pending.len();
    let mut free_memory = nodes.free_memory_mb.clone();
    let mut free_vcores = nodes.free_vcores.clone();
    let mut free_gpus = nodes.free_gpus.clone();
    let mut pending = asks.pending.clone();
    for i in 0..ask.len() {
        let (a, n, c) = (ask[i] as usize, node[i] as usize, count[i]);
        if n >= node_count {
            return Err(InvalidOutput(format!(
                "placed on node {n}, but the snapshot has {node_count} nodes"
            )));
        }
        if a >= ask_count {
            return Err(InvalidOutput(format!(
                "placed ask {a}, but the snapshot has {ask_count} asks"
            )));
        }
        // Node room first: an over-allocation is the graver fault.
        let memory = asks.memory_mb[a].checked_mul(u64::from(c));
        let vcores = asks.vcores[a].checked_mul(u64::from(c));
        let gpus = asks.gpus[a].checked_mul(u64::from(c));
        match (memory, vcores, gpus) {
            (Some(m), Some(v), Some(g))
                if m <= free_memory[n] && v <= free_vcores[n] && g <= free_gpus[n] =>
            {
                free_memory[n] -= m;
                free_vcores[n] -= v;
                free_gpus[n] -= g;
            }
            _ => {
                return Err(InvalidOutput(format!(
                    "over-allocated node {n}: {c} × ask {a} ({} MB, {} vcores, {} GPUs each) does not fit in {} MB, {} vcores, {} GPUs free",
                    asks.memory_mb[a],
                    asks.vcores[a],
                    asks.gpus[a],
                    free_memory[n],
                    free_vcores[n],
                    free_gpus[n]
                )));
            }
        }
        if c > pending[a] {
            return Err(InvalidOutput(format!(
                "placed {c} containers of ask {a}, which has {} pending",
                pending[a]
            )));
        }
        pending[a] -= c;
    }
    Ok(())
}

/// Preemption victims must be distinct indices of running containers.
pub fn victims(victims: &[u32], running: usize) -> Result<(), InvalidOutput> {
    let mut seen = std::collections::HashSet::new();
    for &victim in victims {
        if victim as usize >= running {
            return Err(InvalidOutput(format!(
                "chose container {victim} to preempt, but {running} are running"
            )));
        }
        if !seen.insert(victim) {
            return Err(InvalidOutput(format!(
                "chose container {victim} to preempt twice"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_must_be_one_per_container_finite_and_at_least_0() {
        assert_eq!(charges(&[], 0), Ok(()));
        assert_eq!(charges(&[0.0, -0.0, 1.5, f64::MAX], 4), Ok(()));
        assert_eq!(
            charges(&[1.0], 2),
            Err(InvalidOutput("returned 1 charges for 2 containers".into()))
        );
        // (charges, what the refusal names): the first bad one is named.
        let cases = [
            (vec![1.0, f64::NAN, -1.0], "charge NaN for container 1"),
            (vec![f64::INFINITY], "charge inf for container 0"),
            (vec![0.0, 0.0, -0.5], "charge -0.5 for container 2"),
            (vec![f64::NEG_INFINITY, 1.0], "charge -inf for container 0"),
        ];
        for (given, named) in cases {
            let refused = charges(&given, given.len()).unwrap_err();
            assert_eq!(
                refused.0,
                format!("returned {named}; charges must be finite and at least 0")
            );
        }
    }
}

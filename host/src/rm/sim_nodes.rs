//! `--sim-nodes COUNTxMEMmb,VCORESvcores[,GPUSgpus]`: the built-in simulated
//! nodes of `weft serve`, e.g. `20x8192mb,8vcores,1gpus`.

use crate::resources::Resources;

/// A spec refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--sim-nodes {spec:?}: {why}; expected COUNTxMEMmb,VCORESvcores[,GPUSgpus], e.g. 20x8192mb,8vcores,1gpus"
)]
pub struct SimNodesError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub why: String,
}

/// Parses a spec into (count, capacity of each node).
pub fn parse(spec: &str) -> Result<(u32, Resources), SimNodesError> {
    let bad = |why: &str| SimNodesError {
        spec: spec.to_string(),
        why: why.to_string(),
    };
    let (count, rest) = spec
        .trim()
        .split_once(['x', 'X'])
        .ok_or_else(|| bad("no COUNTx prefix"))?;
    let count: u32 = count
        .trim()
        .parse()
        .map_err(|_| bad("the count is not a whole number"))?;
    if count == 0 {
        return Err(bad("the count must be at least 1"));
    }
    let resources = crate::resources::parse_spec(rest).map_err(|why| bad(&why))?;
    Ok((count, resources))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let good = [
            ("20x8192mb,8vcores,1gpus", (20, Resources::new(8192, 8, 1))),
            ("1x1024mb,1vcore", (1, Resources::new(1024, 1, 0))),
            ("3X2048MB, 2vcores, 1gpu", (3, Resources::new(2048, 2, 1))),
        ];
        for (spec, expected) in good {
            assert_eq!(parse(spec).unwrap(), expected, "{spec}");
        }
        for spec in [
            "",
            "20",
            "0x1mb,1vcores",
            "2x8192mb",
            "2x8192mb,8cores",
            "2x8192mb,8vcores,8vcores",
            "ax1mb,1vcores",
        ] {
            assert!(parse(spec).is_err(), "{spec:?} should be refused");
        }
    }
}

//! What a round sees beyond sizes and shares (weft:policy@0.3.0): its kind
//! and partition, the partitions and racks, node attributes, queue shares of
//! each partition, app and ask tags, preferred places, tag counts and the
//! delays of delay scheduling — checked once, with per-item lookups (the
//! sparse tables' rows of one item are a slice).

use crate::malformed::Malformed;

use super::wit;

/// A sparse table's rows grouped by item: the rows of item `i` are
/// `offsets[i]..offsets[i + 1]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Groups {
    offsets: Vec<u32>,
}

impl Groups {
    /// Checks that `items` (one entry per row) ascend and are below
    /// `count`, and groups the rows by item.
    pub(super) fn new(
        table: &str,
        items: &[u32],
        count: usize,
        of: &str,
    ) -> Result<Groups, Malformed> {
        // offsets[i] is the first row of item i; offsets[count] the rows.
        let mut offsets = vec![0u32; count + 1];
        let mut last = 0;
        for (row, &item) in items.iter().enumerate() {
            let item = item as usize;
            if item >= count {
                return Err(Malformed::new(format!(
                    "{table}: row {row} names {of} {item}, but there are {count}"
                )));
            }
            if item < last {
                return Err(Malformed::new(format!(
                    "{table}: row {row} names {of} {item} after {of} {last}; rows must be in {of} order"
                )));
            }
            last = item;
            offsets[item + 1] += 1;
        }
        for i in 0..count {
            offsets[i + 1] += offsets[i];
        }
        Ok(Groups { offsets })
    }

    /// The rows of item `i` (none for an item out of range).
    #[inline]
    pub fn rows(&self, i: usize) -> std::ops::Range<usize> {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&start), Some(&end)) => start as usize..end as usize,
            _ => 0..0,
        }
    }
}

/// Checks a column of resource-seconds: each finite and at least 0.
pub(super) fn amounts(record: &str, name: &str, column: &[f64]) -> Result<(), Malformed> {
    match column.iter().position(|&x| !(x.is_finite() && x >= 0.0)) {
        None => Ok(()),
        Some(i) => Err(Malformed::new(format!(
            "{record}: {name}[{i}] is {}; it must be finite and at least 0",
            column[i]
        ))),
    }
}

/// Checks two columns of one sparse table have one length.
pub(super) fn pairs(table: &str, a: (&str, usize), b: (&str, usize)) -> Result<(), Malformed> {
    crate::malformed::same_lengths(table, &[a, b]).map(drop)
}

/// Checks the partitions: at least the default one, first, named "".
pub(super) fn check_partitions(partitions: &wit::Partitions) -> Result<(), Malformed> {
    pairs(
        "partitions",
        ("name", partitions.name.len()),
        ("exclusive", partitions.exclusive.len()),
    )?;
    match partitions.name.first() {
        Some(name) if name.is_empty() => Ok(()),
        _ => Err(Malformed::new(
            "partitions: entry 0 must be the default partition, named \"\"",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_find_each_items_rows() {
        let groups = Groups::new("t", &[0, 0, 2, 4], 5, "items").unwrap();
        assert_eq!(groups.rows(0), 0..2);
        assert_eq!(groups.rows(1), 2..2);
        assert_eq!(groups.rows(2), 2..3);
        assert_eq!(groups.rows(3), 3..3);
        assert_eq!(groups.rows(4), 3..4);
        assert_eq!(groups.rows(5), 0..0);
        let none = Groups::new("t", &[], 3, "items").unwrap();
        assert_eq!(none.rows(0), 0..0);
        assert_eq!(none.rows(2), 0..0);
        assert!(Groups::new("t", &[1, 0], 3, "items").is_err());
        assert!(Groups::new("t", &[3], 3, "items").is_err());
    }
}

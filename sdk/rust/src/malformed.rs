//! The error of every checked view: an input that breaks what the WIT
//! documents (columns of different lengths, a number that is not finite, an
//! index past its list, a time running backwards). The export glue turns it
//! into a trap whose message reaches the host's log; a policy never sees the
//! input.

use std::fmt;

/// What is wrong with an input, saying where: `queues: capacity[3] is NaN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(String);

impl Malformed {
    /// A malformed input, described by `message`.
    pub fn new(message: impl Into<String>) -> Malformed {
        Malformed(message.into())
    }

    /// The description.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Malformed {}

/// Checks that every column of a record has the length of the first:
/// `columns` are `(name, length)`, `record` names the record.
pub(crate) fn same_lengths(record: &str, columns: &[(&str, usize)]) -> Result<usize, Malformed> {
    let Some(&(_, rows)) = columns.first() else {
        return Ok(0);
    };
    if columns.iter().all(|&(_, length)| length == rows) {
        return Ok(rows);
    }
    let lengths: Vec<String> = columns
        .iter()
        .map(|(name, length)| format!("{length} {name}"))
        .collect();
    Err(Malformed::new(format!(
        "{record}: its columns differ in length ({})",
        lengths.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_must_agree() {
        assert_eq!(same_lengths("nodes", &[]), Ok(0));
        assert_eq!(same_lengths("nodes", &[("a", 3), ("b", 3)]), Ok(3));
        assert_eq!(
            same_lengths("asks", &[("app", 2), ("pending", 1), ("gpus", 2)])
                .unwrap_err()
                .message(),
            "asks: its columns differ in length (2 app, 1 pending, 2 gpus)"
        );
    }
}

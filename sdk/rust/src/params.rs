//! Typed parameters: what `configure` reads from the `key=value` pairs the
//! host passes, with one message format for every policy.
//!
//! A policy reads each key it takes with a typed getter; a value that does
//! not parse, or is out of range, is refused with a message naming the key
//! and the value. Every key the policy asked for is remembered, so once
//! `configure` has built the policy, [`Params::refuse_unknown`] refuses any
//! key it never asked for ("unknown parameter X; this policy takes A, B"),
//! except the standard keys of its kind, which the host always passes
//! (pricing: the eight `yarn.resourcemanager.quota.*` settings in
//! [`crate::pricing::STANDARD_KEYS`]). When a key is given twice the later
//! value wins: the operator's `--param`s come after the standard ones.

use std::cell::RefCell;

use crate::types::PolicyKind;

/// The parameters of one `configure` call.
#[derive(Debug)]
pub struct Params {
    policy: String,
    standard: &'static [&'static str],
    pairs: Vec<(String, String)>,
    /// Per pair, whether the policy asked for its key.
    used: RefCell<Vec<bool>>,
    /// The keys the policy asked for, in the order first asked, joined by
    /// ", " as the refusal lists them: one buffer, not a string per key,
    /// because `configure` runs at every instantiation.
    asked: RefCell<String>,
}

/// The standard keys of a policy kind: passed by the host whether or not the
/// policy uses them.
pub fn standard_keys(kind: PolicyKind) -> &'static [&'static str] {
    match kind {
        PolicyKind::Pricing => crate::pricing::STANDARD_KEYS,
        PolicyKind::Scheduling | PolicyKind::Sharing => &[],
    }
}

impl Params {
    /// The parameters `pairs` for the policy named `policy`, of `kind`.
    pub fn new(policy: &str, kind: PolicyKind, pairs: Vec<(String, String)>) -> Params {
        Params {
            policy: policy.to_string(),
            standard: standard_keys(kind),
            used: RefCell::new(vec![false; pairs.len()]),
            pairs,
            asked: RefCell::new(String::new()),
        }
    }

    /// [`Params::new`] from string slices, for tests.
    pub fn of(policy: &str, kind: PolicyKind, pairs: &[(&str, &str)]) -> Params {
        let pairs = pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        Params::new(policy, kind, pairs)
    }

    /// The raw value of `key` (the last one given), trimmed; `None` if absent.
    pub fn str(&self, key: &str) -> Option<&str> {
        // Every pair with the key is marked used (an earlier value of a
        // key the policy takes is not unknown); the last one is read.
        let mut last = None;
        let mut asked_before = false;
        {
            let mut used = self.used.borrow_mut();
            for (index, (k, _)) in self.pairs.iter().enumerate() {
                if k == key {
                    asked_before |= used[index];
                    used[index] = true;
                    last = Some(index);
                }
            }
        }
        // An absent key is looked for in the list itself (a key
        // containing ", " may then be listed twice in a refusal).
        if last.is_none() {
            asked_before = self.asked.borrow().split(", ").any(|asked| asked == key);
        }
        if !asked_before {
            let mut asked = self.asked.borrow_mut();
            if !asked.is_empty() {
                asked.push_str(", ");
            }
            asked.push_str(key);
        }
        last.map(|index| self.pairs[index].1.trim())
    }

    /// The keys given that start with `prefix` (a family such as
    /// `project.NAME`), each once, in the order first given, with the rest
    /// of the key after the prefix. Read each with a typed getter (which
    /// marks it taken); a refusal of unknown keys lists the family as
    /// `prefix*`.
    pub fn with_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        let mut keys: Vec<(String, String)> = Vec::new();
        for (key, _) in &self.pairs {
            if let Some(rest) = key.strip_prefix(prefix)
                && !keys.iter().any(|(k, _)| k == key)
            {
                keys.push((key.clone(), rest.to_string()));
            }
        }
        let family = format!("{prefix}*");
        let mut asked = self.asked.borrow_mut();
        if !asked.split(", ").any(|a| a == family) {
            if !asked.is_empty() {
                asked.push_str(", ");
            }
            asked.push_str(&family);
        }
        keys
    }

    /// A finite number.
    pub fn f64(&self, key: &str) -> Result<Option<f64>, String> {
        self.number(key, "a number", |x| x.is_finite())
    }

    /// A finite number at least 0.
    pub fn non_negative_f64(&self, key: &str) -> Result<Option<f64>, String> {
        self.number(key, "a number at least 0", |x| x.is_finite() && x >= 0.0)
    }

    /// A finite number above 0.
    pub fn positive_f64(&self, key: &str) -> Result<Option<f64>, String> {
        self.number(key, "a number above 0", |x| x.is_finite() && x > 0.0)
    }

    /// A whole number from 0 to 2^64 − 1.
    pub fn u64(&self, key: &str) -> Result<Option<u64>, String> {
        let Some(value) = self.str(key) else {
            return Ok(None);
        };
        value
            .parse::<u64>()
            .map(Some)
            .map_err(|_| self.refusal(key, value, "a whole number at least 0"))
    }

    /// `true` or `false`.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.str(key) {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(value) => Err(self.refusal(key, value, "true or false")),
        }
    }

    /// One of the names in `choices`, as the value paired with it.
    pub fn choice<T: Copy>(&self, key: &str, choices: &[(&str, T)]) -> Result<Option<T>, String> {
        let Some(value) = self.str(key) else {
            return Ok(None);
        };
        match choices.iter().find(|(name, _)| *name == value) {
            Some(&(_, choice)) => Ok(Some(choice)),
            None => {
                let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
                let what = format!("one of {}", names.join(", "));
                Err(self.refusal(key, value, &what))
            }
        }
    }

    /// A refusal of `key`'s `value` in the common format:
    /// `flat-pricing: price.base.gpu must be a number at least 0, not "-1"`.
    /// For checks a policy makes itself, such as one value against another.
    pub fn refusal(&self, key: &str, value: &str, must_be: &str) -> String {
        format!("{}: {key} must be {must_be}, not {value:?}", self.policy)
    }

    /// Refuses the first key the policy never asked for that is not a
    /// standard key of its kind. The export glue calls this after
    /// `configure` succeeds.
    pub fn refuse_unknown(&self) -> Result<(), String> {
        let used = self.used.borrow();
        let unknown = self
            .pairs
            .iter()
            .zip(used.iter())
            .find(|((key, _), used)| !**used && !self.standard.contains(&key.as_str()));
        let Some(((key, value), _)) = unknown else {
            return Ok(());
        };
        let asked = self.asked.borrow();
        let takes = if asked.is_empty() {
            "takes no parameters".to_string()
        } else {
            format!("takes {asked}")
        };
        Err(format!(
            "unknown parameter {key:?} (given {key}={value}); {} {takes}",
            self.policy
        ))
    }

    fn number(
        &self,
        key: &str,
        must_be: &str,
        valid: impl Fn(f64) -> bool,
    ) -> Result<Option<f64>, String> {
        let Some(value) = self.str(key) else {
            return Ok(None);
        };
        match value.parse::<f64>() {
            Ok(number) if valid(number) => Ok(Some(number)),
            _ => Err(self.refusal(key, value, must_be)),
        }
    }
}

/// Builds policy `P` of `kind` from `pairs` as the export glue does: its
/// `configure`, then the refusal of unknown keys. Tests call this to check
/// a policy's parameters exactly as the host will see them.
pub fn configure<P: crate::Policy>(
    kind: PolicyKind,
    pairs: Vec<(String, String)>,
) -> Result<P, String> {
    let params = Params::new(P::NAME, kind, pairs);
    let policy = P::configure(&params)?;
    params.refuse_unknown()?;
    Ok(policy)
}

/// [`configure`] from string slices, for tests.
pub fn configure_with<P: crate::Policy>(
    kind: PolicyKind,
    pairs: &[(&str, &str)],
) -> Result<P, String> {
    let pairs = pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    configure::<P>(kind, pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        Params::of("demo", PolicyKind::Scheduling, pairs)
    }

    #[test]
    fn typed_values_parse_and_absent_keys_are_none() {
        let p = params(&[
            ("rate", " 2.5 "),
            ("count", "7"),
            ("strict", "true"),
            ("order", "last-fit"),
            ("label", "gold"),
        ]);
        assert_eq!(p.f64("rate"), Ok(Some(2.5)));
        assert_eq!(p.non_negative_f64("rate"), Ok(Some(2.5)));
        assert_eq!(p.positive_f64("rate"), Ok(Some(2.5)));
        assert_eq!(p.u64("count"), Ok(Some(7)));
        assert_eq!(p.bool("strict"), Ok(Some(true)));
        assert_eq!(
            p.choice("order", &[("first-fit", 0), ("last-fit", 1)]),
            Ok(Some(1))
        );
        assert_eq!(p.str("label"), Some("gold"));
        assert_eq!(p.f64("missing"), Ok(None));
        assert_eq!(p.u64("missing"), Ok(None));
        assert_eq!(p.bool("missing"), Ok(None));
        assert_eq!(p.str("missing"), None);
    }

    #[test]
    fn bad_values_are_refused_naming_key_and_value() {
        let p = params(&[
            ("rate", "cheap"),
            ("nan", "NaN"),
            ("inf", "inf"),
            ("negative", "-1"),
            ("zero", "0"),
            ("count", "-3"),
            ("strict", "yes"),
            ("order", "best-fit"),
        ]);
        // (refusal, expected message)
        let cases = [
            (p.f64("rate"), r#"demo: rate must be a number, not "cheap""#),
            (p.f64("nan"), r#"demo: nan must be a number, not "NaN""#),
            (p.f64("inf"), r#"demo: inf must be a number, not "inf""#),
            (
                p.non_negative_f64("negative"),
                r#"demo: negative must be a number at least 0, not "-1""#,
            ),
            (
                p.positive_f64("zero"),
                r#"demo: zero must be a number above 0, not "0""#,
            ),
        ];
        for (outcome, message) in cases {
            assert_eq!(outcome, Err(message.to_string()));
        }
        assert_eq!(
            p.u64("count"),
            Err(r#"demo: count must be a whole number at least 0, not "-3""#.into())
        );
        assert_eq!(
            p.bool("strict"),
            Err(r#"demo: strict must be true or false, not "yes""#.into())
        );
        assert_eq!(
            p.choice("order", &[("first-fit", 0), ("last-fit", 1)]),
            Err(r#"demo: order must be one of first-fit, last-fit, not "best-fit""#.into())
        );
    }

    #[test]
    fn the_later_value_wins() {
        let p = params(&[("rate", "5"), ("rate", "1")]);
        assert_eq!(p.f64("rate"), Ok(Some(1.0)));
        // The earlier value was given for a key the policy takes: not unknown.
        assert_eq!(p.refuse_unknown(), Ok(()));
    }

    #[test]
    fn keys_never_asked_for_are_refused_listing_those_taken() {
        let p = params(&[("rate", "1"), ("discount", "10")]);
        assert_eq!(p.f64("rate"), Ok(Some(1.0)));
        let _ = p.str("label");
        // Keys asked twice, present or absent, are listed once.
        let _ = p.str("rate");
        let _ = p.str("label");
        assert_eq!(
            p.refuse_unknown(),
            Err(
                r#"unknown parameter "discount" (given discount=10); demo takes rate, label"#
                    .into()
            )
        );
        let none = params(&[("node-order", "last-fit")]);
        assert_eq!(
            none.refuse_unknown(),
            Err(
                r#"unknown parameter "node-order" (given node-order=last-fit); demo takes no parameters"#
                    .into()
            )
        );
        assert_eq!(params(&[]).refuse_unknown(), Ok(()));
    }

    #[test]
    fn standard_keys_of_the_kind_are_accepted_unread() {
        let pricing = Params::of(
            "demo",
            PolicyKind::Pricing,
            &[("price.base.general", "1"), ("minimum.charged.gpu", "1")],
        );
        assert_eq!(pricing.refuse_unknown(), Ok(()));
        // Only pricing has standard keys.
        let sharing = Params::of("demo", PolicyKind::Sharing, &[("price.base.general", "1")]);
        assert!(sharing.refuse_unknown().is_err());
        assert_eq!(standard_keys(PolicyKind::Pricing).len(), 8);
    }

    #[test]
    fn a_family_of_keys_is_found_by_its_prefix() {
        let params = params(&[
            ("project.ml", "2"),
            ("night.factor", "0.5"),
            ("project.ml", "3"),
        ]);
        let family = params.with_prefix("project.");
        assert_eq!(family, [("project.ml".to_string(), "ml".to_string())]);
        assert_eq!(params.non_negative_f64("project.ml"), Ok(Some(3.0)));
        // night.factor was never read: refused, the family listed.
        let refused = params.refuse_unknown().unwrap_err();
        assert!(refused.contains("takes project.*, project.ml"), "{refused}");
    }
}

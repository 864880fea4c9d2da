//! What Volcano reads from a workload (a ReplicaSet, StatefulSet or Deployment) that runs pods
//! without a Volcano Job: the gang size its pods share.

use crate::keys;

/// Why a workload's `scheduling.volcano.sh/group-min-member` annotation is not a gang size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupMinMemberError {
    /// Not a whole number that fits 32 bits.
    #[error("{key} must be a whole number, got {value:?}")]
    NotANumber {
        /// The annotation key.
        key: &'static str,
        /// The value found.
        value: String,
    },
    /// A negative number.
    #[error("{key} must be >= 0, got {value}")]
    Negative {
        /// The annotation key.
        key: &'static str,
        /// The value found.
        value: i32,
    },
}

/// The gang size a `scheduling.volcano.sh/group-min-member` value asks for, parsed as Volcano
/// parses it (base 10, 32 bits, sign allowed; zero is accepted, a negative number is not).
pub fn parse_group_min_member(value: &str) -> Result<i32, GroupMinMemberError> {
    let n: i32 = value.parse().map_err(|_| GroupMinMemberError::NotANumber {
        key: keys::GROUP_MIN_MEMBER,
        value: value.to_string(),
    })?;
    if n < 0 {
        return Err(GroupMinMemberError::Negative {
            key: keys::GROUP_MIN_MEMBER,
            value: n,
        });
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_from_zero_up_are_gang_sizes() {
        assert_eq!(parse_group_min_member("3"), Ok(3));
        assert_eq!(parse_group_min_member("+2"), Ok(2));
        assert_eq!(parse_group_min_member("0"), Ok(0));
    }

    #[test]
    fn text_fractions_overflow_and_negatives_are_refused_with_the_key() {
        for bad in ["three", "", " 3", "2.5", "4294967296"] {
            let err = match parse_group_min_member(bad) {
                Err(e) => e,
                Ok(n) => panic!("{bad:?} parsed as {n}"),
            };
            assert!(
                err.to_string().contains(keys::GROUP_MIN_MEMBER),
                "{err} names the annotation"
            );
        }
        assert_eq!(
            parse_group_min_member("-1"),
            Err(GroupMinMemberError::Negative {
                key: keys::GROUP_MIN_MEMBER,
                value: -1
            })
        );
    }
}

//! Greatest common divisors and least common multiples of counts, for the planner's choices of
//! sizes that several units divide.

/// The greatest common divisor of `a` and `b` (`gcd(a, 0) = a`).
pub(super) fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The least common multiple of `a` and `b`, both at least 1.
pub(super) fn lcm(a: usize, b: usize) -> usize {
    a / gcd(a, b) * b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_and_multiples_of_small_counts() {
        for a in 1..40 {
            for b in 1..40 {
                let (g, l) = (gcd(a, b), lcm(a, b));
                assert!(a % g == 0 && b % g == 0);
                assert!((g + 1..=a.min(b)).all(|d| a % d != 0 || b % d != 0));
                assert!(l % a == 0 && l % b == 0);
                assert!((1..l).all(|m| m % a != 0 || m % b != 0));
            }
        }
        assert_eq!(gcd(12, 0), 12);
    }
}

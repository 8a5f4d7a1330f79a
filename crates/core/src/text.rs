//! Cutting strings at character boundaries, for the core, the widget and the proxy.
//!
//! `str::floor_char_boundary` and `ceil_char_boundary` do this in Rust 1.91; these stand in for
//! them while the MSRV is older.

/// The largest character boundary of `s` at or below `at` (`s.len()` when `at` is past the
/// end): where to cut `s` to at most `at` bytes without splitting a character.
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest character boundary of `s` at or above `at` (`s.len()` when `at` is past the
/// end): where to cut `s` to at least `at` bytes without splitting a character.
pub fn ceil_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_between_characters() {
        let s = "aé€😀"; // 1 + 2 + 3 + 4 bytes
        let floors: Vec<usize> = (0..=12).map(|i| floor_char_boundary(s, i)).collect();
        assert_eq!(floors, [0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10, 10]);
        let ceils: Vec<usize> = (0..=12).map(|i| ceil_char_boundary(s, i)).collect();
        assert_eq!(ceils, [0, 1, 3, 3, 6, 6, 6, 10, 10, 10, 10, 10, 10]);
        assert_eq!(floor_char_boundary("", 5), 0);
    }
}

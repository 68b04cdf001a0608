//! The integer keys of the `steps` and `events` tables: `session << 32 | n`,
//! where n is the step or the event's sequence number. One session's rows
//! are one id range, in order, so a new row of the newest session is an
//! append at the right edge of the b-tree (migration 0002 says why that
//! matters).

use agentloop_core::{Error, Result};

const SHIFT: u32 = 32;
/// The largest step or sequence number a session can hold.
const MAX_N: u64 = (1 << SHIFT) - 1;

/// The id of step (or event) `n` of the session with key `session`.
pub(crate) fn row_id(session: i64, n: u64) -> Result<i64> {
    if n > MAX_N {
        return Err(Error::Store(format!("a session cannot hold more than {MAX_N} steps or events: end it and start a new one")));
    }
    // `n` fits in 32 bits; session keys are SQLite rowids, far below 2^31.
    Ok((session << SHIFT) | n as i64)
}

/// The first and last id a session's rows can have (inclusive).
pub(crate) fn span(session: i64) -> (i64, i64) {
    let first = session << SHIFT;
    (first, first | MAX_N as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_rows_sort_by_n_and_stay_inside_its_span() {
        let (first, last) = span(7);
        let ids: Vec<i64> = [0, 1, 2, 9, MAX_N].iter().map(|n| row_id(7, *n).unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((ids[0], ids[4]), (first, last));
        assert!(span(8).0 > last, "the next session's rows start after this one's");
    }

    #[test]
    fn a_number_past_32_bits_is_refused_not_wrapped() {
        let e = row_id(1, MAX_N + 1).unwrap_err();
        assert!(e.to_string().contains("cannot hold more than"), "{e}");
    }
}

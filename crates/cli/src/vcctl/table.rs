//! Column output as vcctl prints it: left-aligned columns of a minimum width, headers first.
//! Unlike vcctl's fixed `%-Ns` formats, a cell longer than its column widens the column, so
//! columns never run into each other and `awk '{print $3}'` keeps working.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// A table of text cells with per-column minimum widths.
pub struct Table {
    headers: Vec<&'static str>,
    min_widths: Vec<usize>,
    gap: usize,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers; each column is at least as wide as its minimum.
    pub fn new(columns: &[(&'static str, usize)]) -> Self {
        Table {
            headers: columns.iter().map(|(h, _)| *h).collect(),
            min_widths: columns.iter().map(|(_, w)| *w).collect(),
            gap: 1,
            rows: Vec::new(),
        }
    }

    /// Sets the fewest spaces between a full cell and the next column (1 by default, as
    /// vcctl's tables; `kubectl describe` uses 2).
    pub fn gap(mut self, gap: usize) -> Self {
        self.gap = gap;
        self
    }

    /// Adds a row; missing cells print empty, extra cells are ignored.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row, each ending in a newline, no trailing spaces.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|col| {
                let longest = self
                    .rows
                    .iter()
                    .filter_map(|r| r.get(col))
                    .map(|c| c.chars().count())
                    .chain(std::iter::once(self.headers[col].len()))
                    .max()
                    .unwrap_or(0);
                self.min_widths[col].max(longest + self.gap)
            })
            .collect();
        let mut out = String::new();
        let header: Vec<String> = self.headers.iter().map(|h| h.to_string()).collect();
        for cells in std::iter::once(&header).chain(self.rows.iter()) {
            let mut line = String::new();
            for (col, width) in widths.iter().enumerate() {
                let cell = cells.get(col).map_or("", String::as_str);
                line.push_str(cell);
                let pad = width.saturating_sub(cell.chars().count());
                line.extend(std::iter::repeat_n(' ', pad));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// The UTC date (`2006-01-02`) of a timestamp, or `<unknown>` without one.
pub fn date(time: Option<&Time>) -> String {
    match time {
        // A jiff Timestamp prints as RFC 3339 in UTC, so the date is what precedes the `T`.
        Some(t) => {
            t.0.to_string()
                .split('T')
                .next()
                .unwrap_or_default()
                .to_string()
        }
        None => "<unknown>".to_string(),
    }
}

/// Seconds since the Unix epoch of a timestamp.
pub fn epoch_seconds(time: &Time) -> i64 {
    time.0.as_second()
}

/// How long ago `then` was, at `now` (both in Unix seconds), the way kubectl prints ages:
/// `45s`, `3m20s`, `17m`, `5h12m`, `3d4h`, `400d`, `2y30d`.
pub fn age(now: i64, then: i64) -> String {
    let seconds = now.saturating_sub(then);
    // A clock a little behind the server's is common; only a large skew is worth flagging.
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    let seconds = seconds.max(0);
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return with_rest(minutes, "m", seconds % 60, "s");
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return with_rest(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if days < 8 {
        return with_rest(days, "d", hours % 24, "h");
    }
    if days < 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if years < 8 {
        return format!("{years}y{}d", days % 365);
    }
    format!("{years}y")
}

fn with_rest(big: i64, big_unit: &str, rest: i64, rest_unit: &str) -> String {
    if rest == 0 {
        format!("{big}{big_unit}")
    } else {
        format!("{big}{big_unit}{rest}{rest_unit}")
    }
}

/// The current time in Unix seconds; 0 if the clock is before 1970.
pub fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_keep_their_minimum_and_widen_for_long_cells() {
        let mut t = Table::new(&[("Name", 6), ("Phase", 8), ("N", 3)]);
        t.row(vec!["a".into(), "Running".into(), "1".into()]);
        t.row(vec![
            "a-very-long-name".into(),
            "Pending".into(),
            "12".into(),
        ]);
        assert_eq!(
            t.render(),
            "Name             Phase   N\n\
             a                Running 1\n\
             a-very-long-name Pending 12\n"
        );
    }

    #[test]
    fn a_short_row_prints_empty_cells_and_no_trailing_spaces() {
        let mut t = Table::new(&[("A", 4), ("B", 4)]);
        t.row(vec!["x".into()]);
        assert_eq!(t.render(), "A   B\nx\n");
    }

    #[test]
    fn ages_read_like_kubectl() {
        let cases = [
            (0, "0s"),
            (-1, "0s"),
            (-5, "<invalid>"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (17 * 60 + 5, "17m"),
            (179 * 60, "179m"),
            (5 * 3600 + 12 * 60, "5h12m"),
            (6 * 3600, "6h"),
            (30 * 3600, "30h"),
            (3 * 86400 + 4 * 3600, "3d4h"),
            (400 * 86400, "400d"),
            ((2 * 365 + 30) * 86400, "2y30d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (ago, want) in cases {
            assert_eq!(age(1_000_000_000, 1_000_000_000 - ago), want, "{ago}s ago");
        }
    }

    #[test]
    fn dates_are_utc_days() {
        let t: Time = serde_json::from_str("\"2024-03-05T23:59:59Z\"").unwrap();
        assert_eq!(date(Some(&t)), "2024-03-05");
        assert_eq!(date(None), "<unknown>");
    }
}

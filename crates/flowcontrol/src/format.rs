//! Go's text formatting where upstream's output depends on it: `time.RFC3339Nano`, and
//! `text/tabwriter` as the debug dumps configure it (`time.Duration.String` is
//! `kapi_machinery::goformat::duration`).

use std::time::SystemTime;

/// `t.UTC().Format(time.RFC3339Nano)`; `None` is Go's zero time.
pub fn rfc3339_nano(t: Option<SystemTime>) -> String {
    let Some(t) = t else {
        return "0001-01-01T00:00:00Z".into();
    };
    let dt: chrono::DateTime<chrono::Utc> = t.into();
    let base = dt.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = dt.timestamp_subsec_nanos();
    if nanos == 0 {
        return format!("{base}Z");
    }
    let frac = format!("{nanos:09}");
    format!("{base}.{}Z", frac.trim_end_matches('0'))
}

/// Go's `text/tabwriter` with `minwidth` 8, `tabwidth` 0, `padding` 1, padding with spaces and
/// no flags, as upstream's debug endpoints create it. Cells end with `\t`; the last cell of a
/// line is not aligned. The whole text is one block (no line of a single cell flushes it).
pub fn tabwrite(text: &str) -> String {
    const MIN_WIDTH: usize = 8;
    const PADDING: usize = 1;
    let lines: Vec<Vec<&str>> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .map(|l| l.split('\t').collect())
        .collect();
    let mut widths: Vec<usize> = Vec::new();
    let mut out = String::new();
    format_block(
        &lines,
        0,
        lines.len(),
        &mut widths,
        MIN_WIDTH,
        PADDING,
        &mut out,
    );
    if text.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `Writer.format`: the width of column `widths.len()` over each run of lines that have it.
fn format_block(
    lines: &[Vec<&str>],
    mut line0: usize,
    line1: usize,
    widths: &mut Vec<usize>,
    min_width: usize,
    padding: usize,
    out: &mut String,
) {
    let column = widths.len();
    let cells = |i: usize| lines.get(i).map_or(0, Vec::len);
    let mut this = line0;
    while this < line1 {
        if column.saturating_add(1) >= cells(this) {
            this = this.saturating_add(1);
            continue;
        }
        write_lines(lines, line0, this, widths, out);
        line0 = this;
        let mut width = min_width;
        while this < line1 && column.saturating_add(1) < cells(this) {
            let cell = lines
                .get(this)
                .and_then(|l| l.get(column))
                .map_or(0, |c| c.chars().count());
            width = width.max(cell.saturating_add(padding));
            this = this.saturating_add(1);
        }
        widths.push(width);
        format_block(lines, line0, this, widths, min_width, padding, out);
        widths.pop();
        line0 = this;
    }
    write_lines(lines, line0, line1, widths, out);
}

fn write_lines(lines: &[Vec<&str>], from: usize, to: usize, widths: &[usize], out: &mut String) {
    for i in from..to {
        let Some(line) = lines.get(i) else { continue };
        for (j, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if let Some(&w) = widths.get(j) {
                if j.saturating_add(1) < line.len() {
                    let pad = w.saturating_sub(cell.chars().count());
                    out.extend(std::iter::repeat_n(' ', pad));
                }
            }
        }
        if i.saturating_add(1) < lines.len() {
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabwriter_aligns_like_go() {
        let s = tabwrite("a,\tbbbbbbbbbb,\tc\nxx,\ty,\tz\n");
        assert_eq!(s, "a,      bbbbbbbbbb, c\nxx,     y,          z\n");
    }
}

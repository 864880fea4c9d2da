//! Charts as inline SVG, drawn here rather than in the browser so the report reads with
//! scripts off and from a file with no network. A chart is a frame (axes with round ticks,
//! grid, legend) and marks inside it; every coordinate is finite by construction.

use std::fmt::Write;

use super::format::{escape, finite};

/// Width of every chart in SVG units; the page scales it to the column.
pub(super) const WIDTH: f64 = 960.0;
/// Height of the plotting area.
const PLOT_HEIGHT: f64 = 240.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 60.0;
const BOTTOM: f64 = 46.0;
const LEGEND_ROW: f64 = 20.0;

/// Colours for series, distinguishable from each other and on white.
pub(super) const PALETTE: &[&str] = &[
    "#2f6db5", "#e07b39", "#3a9d5d", "#c8414b", "#8a62b8", "#1f9eae", "#b8860b", "#d35fa0",
    "#6b7a8f", "#7f5539",
];

/// The colour of the `i`th series.
pub(super) fn colour(i: usize) -> &'static str {
    PALETTE.get(i % PALETTE.len()).copied().unwrap_or("#333")
}

/// One axis: its range, the ticks with their labels, and its title.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    /// Value at the start of the axis.
    pub min: f64,
    /// Value at the end of the axis (greater than `min`).
    pub max: f64,
    /// Tick values and labels.
    pub ticks: Vec<(f64, String)>,
    /// What the axis measures.
    pub title: String,
}

impl Axis {
    /// An axis over `[min, max]` (widened when empty or reversed) with ticks labelled by `label`.
    pub(super) fn new(
        min: f64,
        max: f64,
        ticks: impl Fn(f64, f64) -> Vec<f64>,
        label: impl Fn(f64) -> String,
        title: &str,
    ) -> Axis {
        let min = finite(min);
        let mut max = finite(max);
        if max <= min {
            max = min + 1.0;
        }
        Axis {
            min,
            max,
            ticks: ticks(min, max).into_iter().map(|t| (t, label(t))).collect(),
            title: title.to_string(),
        }
    }

    /// Where `v` falls along the axis, 0 at `min` and 1 at `max` (clamped a little outside).
    fn fraction(&self, v: f64) -> f64 {
        finite((finite(v) - self.min) / (self.max - self.min)).clamp(-0.05, 1.05)
    }
}

/// A legend entry: a swatch drawn solid, dashed or as a bar, and its label.
#[derive(Debug, Clone)]
pub(super) struct Key {
    /// The label (escaped when drawn).
    pub label: String,
    /// Its colour.
    pub colour: &'static str,
    /// How the swatch is drawn.
    pub style: Stroke,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stroke {
    /// A solid line.
    Solid,
    /// A dashed line.
    Dashed,
    /// A filled bar.
    Bar,
}

/// A line of points `(x, y)` in axis values.
#[derive(Debug, Clone)]
pub(super) struct Series {
    /// Legend label.
    pub label: String,
    /// Colour.
    pub colour: &'static str,
    /// Solid or dashed.
    pub style: Stroke,
    /// The points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// An SVG being drawn: a frame with axes, then marks placed in axis values.
pub(super) struct Canvas {
    svg: String,
    top: f64,
    x: Axis,
    y: Axis,
    y2: Option<Axis>,
}

impl Canvas {
    /// Starts a chart: `label` names it for screen readers; the legend sits above the plot.
    pub(super) fn new(label: &str, x: Axis, y: Axis, y2: Option<Axis>, keys: &[Key]) -> Canvas {
        let rows = legend_rows(keys);
        let top = 14.0 + LEGEND_ROW * rows.len() as f64;
        let height = top + PLOT_HEIGHT + BOTTOM;
        let mut canvas = Canvas {
            svg: String::new(),
            top,
            x,
            y,
            y2,
        };
        let _ = write!(
            canvas.svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{}" class="chart">"#,
            escape(label)
        );
        canvas.frame();
        canvas.legend(&rows);
        canvas
    }

    /// Horizontal pixel of an x value.
    pub(super) fn px(&self, x: f64) -> f64 {
        LEFT + self.x.fraction(x) * (WIDTH - LEFT - RIGHT)
    }

    /// Vertical pixel of a y value (left axis).
    pub(super) fn py(&self, y: f64) -> f64 {
        self.top + (1.0 - self.y.fraction(y)) * PLOT_HEIGHT
    }

    /// Vertical pixel of a value of the right axis (the left one when there is none).
    pub(super) fn py2(&self, y: f64) -> f64 {
        let axis = self.y2.as_ref().unwrap_or(&self.y);
        self.top + (1.0 - axis.fraction(y)) * PLOT_HEIGHT
    }

    /// The bottom of the plot, in pixels.
    pub(super) fn bottom(&self) -> f64 {
        self.top + PLOT_HEIGHT
    }

    /// The top of the plot, in pixels.
    pub(super) fn top(&self) -> f64 {
        self.top
    }

    fn frame(&mut self) {
        let (x0, x1) = (LEFT, WIDTH - RIGHT);
        let (y0, y1) = (self.top, self.top + PLOT_HEIGHT);
        let mut svg = String::new();
        for (v, label) in &self.y.ticks {
            let y = self.py(*v);
            let _ = write!(
                svg,
                r#"<line x1="{x0:.1}" y1="{y:.1}" x2="{x1:.1}" y2="{y:.1}" class="grid"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
                x0 - 6.0,
                y + 4.0,
                escape(label)
            );
        }
        if let Some(axis) = &self.y2 {
            for (v, label) in &axis.ticks {
                let y = self.py2(*v);
                let _ = write!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
                    x1 + 6.0,
                    y + 4.0,
                    escape(label)
                );
            }
            let _ = write!(
                svg,
                r#"<text transform="translate({:.1} {:.1}) rotate(90)" class="axis-title" text-anchor="middle">{}</text>"#,
                WIDTH - 12.0,
                (y0 + y1) / 2.0,
                escape(&axis.title)
            );
        }
        for (v, label) in &self.x.ticks {
            let x = self.px(*v);
            let _ = write!(
                svg,
                r#"<line x1="{x:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{:.1}" class="axis"/><text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
                y1 + 5.0,
                y1 + 18.0,
                escape(label)
            );
        }
        let _ = write!(
            svg,
            r#"<line x1="{x0:.1}" y1="{y1:.1}" x2="{x1:.1}" y2="{y1:.1}" class="axis"/><line x1="{x0:.1}" y1="{y0:.1}" x2="{x0:.1}" y2="{y1:.1}" class="axis"/>"#
        );
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="axis-title" text-anchor="middle">{}</text><text transform="translate(14 {:.1}) rotate(-90)" class="axis-title" text-anchor="middle">{}</text>"#,
            (x0 + x1) / 2.0,
            y1 + 38.0,
            escape(&self.x.title),
            (y0 + y1) / 2.0,
            escape(&self.y.title)
        );
        self.svg.push_str(&svg);
    }

    fn legend(&mut self, rows: &[Vec<(f64, &Key)>]) {
        for (r, row) in rows.iter().enumerate() {
            let y = 12.0 + LEGEND_ROW * r as f64;
            for (x, key) in row {
                let swatch = match key.style {
                    Stroke::Bar => format!(
                        r#"<rect x="{x:.1}" y="{:.1}" width="18" height="10" fill="{}" opacity="0.6"/>"#,
                        y - 9.0,
                        key.colour
                    ),
                    style => format!(
                        r#"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2.5"{}/>"#,
                        y - 4.0,
                        x + 18.0,
                        y - 4.0,
                        key.colour,
                        dash(style)
                    ),
                };
                let _ = write!(
                    self.svg,
                    r#"{swatch}<text x="{:.1}" y="{y:.1}" class="legend">{}</text>"#,
                    x + 24.0,
                    escape(&key.label)
                );
            }
        }
    }

    /// Draws a line through the points (thinned to about two per pixel column).
    pub(super) fn line(&mut self, series: &Series, right_axis: bool) {
        let columns = (WIDTH - LEFT - RIGHT) as usize;
        let points: Vec<String> = thin(&series.points, &self.x, columns)
            .into_iter()
            .map(|(x, y)| {
                let py = if right_axis { self.py2(y) } else { self.py(y) };
                format!("{:.1},{:.1}", self.px(x), py)
            })
            .collect();
        if points.is_empty() {
            return;
        }
        let _ = write!(
            self.svg,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" stroke-linejoin="round"{}><title>{}</title></polyline>"#,
            points.join(" "),
            series.colour,
            dash(series.style),
            escape(&series.label)
        );
    }

    /// Appends raw SVG drawn by the caller in pixels (from [`Canvas::px`] and friends).
    pub(super) fn raw(&mut self, svg: &str) {
        self.svg.push_str(svg);
    }

    /// A note across the middle of the plot, for a chart with nothing to show.
    pub(super) fn note(&mut self, text: &str) {
        let _ = write!(
            self.svg,
            r#"<text x="{:.1}" y="{:.1}" class="note" text-anchor="middle">{}</text>"#,
            (LEFT + WIDTH - RIGHT) / 2.0,
            self.top + PLOT_HEIGHT / 2.0,
            escape(text)
        );
    }

    /// The finished SVG element.
    pub(super) fn finish(mut self) -> String {
        self.svg.push_str("</svg>");
        self.svg
    }
}

fn dash(style: Stroke) -> &'static str {
    match style {
        Stroke::Dashed => r#" stroke-dasharray="7 5""#,
        Stroke::Solid | Stroke::Bar => "",
    }
}

/// Lays the legend out in rows that fit the width (text width estimated per character).
fn legend_rows(keys: &[Key]) -> Vec<Vec<(f64, &Key)>> {
    let mut rows: Vec<Vec<(f64, &Key)>> = Vec::new();
    let mut x = LEFT;
    for key in keys {
        let width = 24.0 + 7.0 * key.label.chars().count() as f64 + 18.0;
        let fits = rows
            .last()
            .is_some_and(|row| row.is_empty() || x + width <= WIDTH - RIGHT);
        if !fits {
            rows.push(Vec::new());
            x = LEFT;
        }
        if let Some(row) = rows.last_mut() {
            row.push((x, key));
        }
        x += width;
    }
    rows
}

/// At most two points per pixel column (the lowest and highest of the column, in time order),
/// so a week sampled every second draws as fast as an hour and keeps its spikes.
fn thin(points: &[(f64, f64)], x: &Axis, columns: usize) -> Vec<(f64, f64)> {
    let points: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(a, b)| a.is_finite() && b.is_finite())
        .collect();
    if points.len() <= 2 * columns.max(1) {
        return points;
    }
    let column = |p: &(f64, f64)| (x.fraction(p.0) * columns as f64) as i64;
    let mut out = Vec::with_capacity(2 * columns);
    let mut i = 0;
    while i < points.len() {
        let c = points.get(i).map(column);
        let mut j = i;
        let (mut lo, mut hi) = (i, i);
        while j < points.len() && points.get(j).map(column) == c {
            if points.get(j).map(|p| p.1) < points.get(lo).map(|p| p.1) {
                lo = j;
            }
            if points.get(j).map(|p| p.1) > points.get(hi).map(|p| p.1) {
                hi = j;
            }
            j += 1;
        }
        let (first, second) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        out.extend(points.get(first).copied());
        if second != first {
            out.extend(points.get(second).copied());
        }
        i = j;
    }
    out
}

/// A line chart: axes, legend and one line per series; a note instead when there is no point.
pub(super) fn line_chart(label: &str, x: Axis, y: Axis, series: &[Series]) -> String {
    let keys: Vec<Key> = series
        .iter()
        .map(|s| Key {
            label: s.label.clone(),
            colour: s.colour,
            style: s.style,
        })
        .collect();
    let mut canvas = Canvas::new(label, x, y, None, &keys);
    if series.iter().all(|s| s.points.is_empty()) {
        canvas.note("no samples");
    }
    for s in series {
        canvas.line(s, false);
    }
    canvas.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis() -> Axis {
        Axis::new(0.0, 100.0, |_, _| Vec::new(), |_| String::new(), "")
    }

    #[test]
    fn thinning_keeps_extremes_and_order() {
        let points: Vec<(f64, f64)> = (0..10_000)
            .map(|i| (f64::from(i) / 100.0, if i == 5_000 { 9.0 } else { 1.0 }))
            .collect();
        let thinned = thin(&points, &axis(), 100);
        assert!(thinned.len() <= 200);
        assert!(thinned.iter().any(|p| p.1 == 9.0));
        assert!(thinned.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn a_degenerate_axis_is_widened() {
        let a = Axis::new(5.0, 5.0, |_, _| Vec::new(), |_| String::new(), "");
        assert!(a.max > a.min);
        let b = Axis::new(
            f64::NAN,
            f64::INFINITY,
            |_, _| Vec::new(),
            |_| String::new(),
            "",
        );
        assert!(b.max > b.min && b.min.is_finite() && b.max.is_finite());
    }
}

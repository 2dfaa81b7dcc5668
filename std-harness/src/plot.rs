//! Learning-curve plots as PNG files, with no system fonts and no network.
//!
//! `microrl train` runs on machines that may have no fonts installed and no
//! network, so this module carries everything it needs: a tiny software
//! rasteriser over an RGB framebuffer, an embedded 5x7 bitmap font (with two
//! rows of descender) covering printable ASCII, and the `png` crate to encode
//! the result. Nothing is loaded at run time.
//!
//! Design, top to bottom:
//!
//! - [`Chart`] and [`Series`] describe *what* to draw: borrowed slices of
//!   `(x, y)` points, a colour, a label, and an optional horizontal threshold
//!   (e.g. CartPole's "solved" return of 475). Non-finite points are skipped.
//! - [`nice_ticks`] picks axis ranges and tick positions on a 1-2-5 grid and
//!   [`tick_labels`] prints them compactly (`20k`, `1.5M`, `-1200`, `0.25`).
//! - The layout is computed from the text sizes: a title on top, the y label
//!   written bottom-to-top on the left, tick labels around the plot area and a
//!   legend placed in whichever corner of the plot area has the least ink.
//! - Everything is integer-scaled from one base size, so an 800x500 chart
//!   draws its text at 2x (10x14 pixel capitals) and larger images scale up.
//! - Lines are anti-aliased by distance-to-segment coverage. A polyline is
//!   first accumulated into a coverage mask (taking the maximum at joints, so
//!   overlapping segment ends do not darken) and then blended once.
//!
//! The only allocations are the framebuffer, the coverage mask, the PNG
//! output and a handful of tick-label strings; pixel loops allocate nothing.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::Context;

/// One series of (x, y) points, drawn as a polyline (or as markers).
#[derive(Clone, Copy, Debug)]
pub struct Series<'a> {
    /// Legend text; an empty label leaves the series out of the legend.
    pub label: &'a str,
    /// The data, in drawing order. Points with a NaN or infinite coordinate
    /// are skipped (the line joins their neighbours).
    pub points: &'a [(f64, f64)],
    /// RGB colour.
    pub color: [u8; 3],
    /// Draw a disc at each point instead of a connecting line.
    pub markers: bool,
}

/// A complete chart: titles, series and an optional threshold line.
#[derive(Clone, Copy, Debug)]
pub struct Chart<'a> {
    /// Drawn centred above the plot.
    pub title: &'a str,
    /// Drawn centred below the x tick labels.
    pub x_label: &'a str,
    /// Drawn bottom-to-top left of the y tick labels.
    pub y_label: &'a str,
    /// Drawn in order, later series on top.
    pub series: &'a [Series<'a>],
    /// A horizontal dashed line at `value`, listed in the legend as `label`
    /// (e.g. `(475.0, "solved 475")`). The y range always includes it.
    pub threshold: Option<(f64, &'a str)>,
}

/// Default size used by [`write_png`].
pub const DEFAULT_WIDTH: u32 = 800;
/// Default size used by [`write_png`].
pub const DEFAULT_HEIGHT: u32 = 500;

/// Renders `chart` to `path` as an 800x500 PNG.
/// The file is replaced atomically ([`crate::atomic::write_file`]).
pub fn write_png(path: &Path, chart: &Chart) -> anyhow::Result<()> {
    let bytes = render_png(chart, DEFAULT_WIDTH, DEFAULT_HEIGHT)?;
    crate::atomic::write_file(path, &bytes)
}

/// Renders `chart` as PNG bytes (8-bit RGB). A zero width or height is
/// treated as 1; very small images simply leave out what does not fit.
///
/// # Errors
/// The PNG encoder refuses the image (a size beyond the format's limits).
pub fn render_png(chart: &Chart, width: u32, height: u32) -> anyhow::Result<Vec<u8>> {
    let canvas = render(chart, width.max(1), height.max(1));
    encode_png(&canvas)
}

// ---------------------------------------------------------------------------
// Ticks
// ---------------------------------------------------------------------------

/// An axis range snapped to a 1-2-5 grid, with its tick positions.
#[derive(Clone, Debug, PartialEq)]
pub struct Ticks {
    /// Lower end of the axis (the first tick).
    pub lo: f64,
    /// Upper end of the axis (the last tick).
    pub hi: f64,
    /// Distance between ticks: 1, 2 or 5 times a power of ten.
    pub step: f64,
    /// Tick positions from `lo` to `hi` inclusive.
    pub values: Vec<f64>,
}

/// Chooses "nice" ticks covering `[min, max]` with at most about
/// `target` intervals. The range is widened outwards to whole steps; an
/// empty range (`min == max`) is padded around the value, and non-finite or
/// reversed input falls back to `[0, 1]`.
pub fn nice_ticks(min: f64, max: f64, target: usize) -> Ticks {
    let target = target.max(1) as f64;
    let (mut min, mut max) = if min.is_finite() && max.is_finite() && min <= max {
        (min, max)
    } else {
        (0.0, 1.0)
    };
    if max - min <= f64::EPSILON * max.abs().max(min.abs()) {
        let pad = if min == 0.0 { 1.0 } else { min.abs() * 0.1 };
        min -= pad;
        max += pad;
    }
    let mut span = max - min;
    if !span.is_finite() {
        // Only reachable for values near f64::MAX; keep going on a coarser grid.
        (min, max, span) = (min / 2.0, max / 2.0, max / 2.0 - min / 2.0);
    }
    let step = nice_step(span / target);
    let first = (min / step).floor();
    let last = (max / step).ceil();
    // `last - first` is about `target` by construction; the cap only guards
    // against float trouble at extreme magnitudes.
    let count = ((last - first) as usize).min(1000);
    let values: Vec<f64> = (0..=count)
        .map(|i| clean_zero((first + i as f64) * step, step))
        .collect();
    Ticks {
        lo: values[0],
        hi: values[values.len() - 1],
        step,
        values,
    }
}

/// The smallest of 1, 2, 5 or 10 times a power of ten that is >= `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    let norm = raw / magnitude;
    let factor = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    factor * magnitude
}

/// Rounds float noise around zero (e.g. `-1.1e-17`) to exactly zero.
fn clean_zero(value: f64, step: f64) -> f64 {
    if value.abs() < step * 1e-9 {
        0.0
    } else {
        value
    }
}

/// Labels for every tick of `ticks`, in one unit for the whole axis: the
/// suffixes `k`, `M`, `G` once the axis reaches ten thousand (`20k`, `100k`,
/// `1.5M`), plain numbers below that (`-1200`, `475`), and just enough
/// decimals to print the step exactly (`0.25`, `12.5k`), trailing zeros
/// removed. Axes beyond 10^12 fall back to scientific notation.
pub fn tick_labels(ticks: &Ticks) -> Vec<String> {
    let extent = ticks.lo.abs().max(ticks.hi.abs());
    let (divisor, suffix) = if extent >= 1e12 || !extent.is_finite() {
        return ticks.values.iter().map(|v| format!("{v:e}")).collect();
    } else if extent >= 1e9 {
        (1e9, "G")
    } else if extent >= 1e6 {
        (1e6, "M")
    } else if extent >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let decimals = decimals_for(ticks.step / divisor);
    ticks
        .values
        .iter()
        .map(|&v| {
            let mut text = format!("{:.*}", decimals, v / divisor);
            if text.contains('.') {
                let trimmed = text.trim_end_matches('0').trim_end_matches('.').len();
                text.truncate(trimmed);
            }
            if text == "-0" {
                text = "0".to_string();
            }
            if text != "0" {
                text.push_str(suffix);
            }
            text
        })
        .collect()
}

/// The fewest decimals (up to 12) that print `step` exactly.
fn decimals_for(step: f64) -> usize {
    let step = step.abs();
    (0..=12)
        .find(|&d| {
            let v = step * 10f64.powi(d as i32);
            (v - v.round()).abs() <= 1e-6 * v.max(1.0)
        })
        .unwrap_or(12)
}

// ---------------------------------------------------------------------------
// Layout and drawing
// ---------------------------------------------------------------------------

const WHITE: [u8; 3] = [255, 255, 255];
const TEXT: [u8; 3] = [40, 40, 40];
const AXIS: [u8; 3] = [90, 90, 90];
const GRID: [u8; 3] = [228, 228, 228];
const LEGEND_BORDER: [u8; 3] = [170, 170, 170];
const THRESHOLD: [u8; 3] = [44, 160, 44];

/// How many tick intervals to aim for on each axis.
const X_TICKS: usize = 8;
const Y_TICKS: usize = 8;

/// A pixel rectangle, `x0..x1` by `y0..y1` (half-open).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rect {
    x0: i64,
    y0: i64,
    x1: i64,
    y1: i64,
}

impl Rect {
    fn width(&self) -> i64 {
        self.x1 - self.x0
    }

    fn height(&self) -> i64 {
        self.y1 - self.y0
    }

    /// The rectangle grown by `by` pixels on every side.
    fn inflate(&self, by: i64) -> Rect {
        Rect {
            x0: self.x0 - by,
            y0: self.y0 - by,
            x1: self.x1 + by,
            y1: self.y1 + by,
        }
    }

    fn intersect(&self, other: &Rect) -> Rect {
        Rect {
            x0: self.x0.max(other.x0),
            y0: self.y0.max(other.y0),
            x1: self.x1.min(other.x1),
            y1: self.y1.min(other.y1),
        }
    }
}

/// Maps data coordinates to pixel coordinates inside the plot area.
struct Transform {
    x: Ticks,
    y: Ticks,
    area: Rect,
}

impl Transform {
    fn px(&self, x: f64) -> f64 {
        self.area.x0 as f64 + (x - self.x.lo) / (self.x.hi - self.x.lo) * self.area.width() as f64
    }

    fn py(&self, y: f64) -> f64 {
        self.area.y1 as f64 - (y - self.y.lo) / (self.y.hi - self.y.lo) * self.area.height() as f64
    }
}

fn finite_points<'a>(series: &'a [Series<'a>]) -> impl Iterator<Item = (f64, f64)> + 'a {
    series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
}

/// A closed interval `(min, max)` of data values.
type Span = (f64, f64);

/// Data ranges over all finite points, the y range widened to include the
/// threshold. `None` when there is no finite point at all.
fn data_bounds(chart: &Chart) -> (Option<Span>, Option<Span>) {
    let widen = |acc: Option<Span>, v: f64| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    };
    let mut xs = None;
    let mut ys = None;
    for (x, y) in finite_points(chart.series) {
        xs = widen(xs, x);
        ys = widen(ys, y);
    }
    if let Some((t, _)) = chart.threshold.filter(|(t, _)| t.is_finite()) {
        ys = widen(ys, t);
    }
    (xs, ys)
}

fn render(chart: &Chart, width: u32, height: u32) -> Canvas {
    let mut canvas = Canvas::new(width, height, WHITE);
    let (w, h) = (i64::from(width), i64::from(height));
    // Integer text scale: 2 at 800x500, 1 for small images.
    let s = (w / 400).min(h / 250).clamp(1, 8);
    let margin = 5 * s;

    let (xs, ys) = data_bounds(chart);
    let (x_min, x_max) = xs.unwrap_or((0.0, 1.0));
    let (y_min, y_max) = ys.unwrap_or((0.0, 1.0));
    let x_ticks = nice_ticks(x_min, x_max, X_TICKS);
    let y_ticks = nice_ticks(y_min, y_max, Y_TICKS);
    let x_labels = tick_labels(&x_ticks);
    let y_labels = tick_labels(&y_ticks);

    // Title: one step larger than the rest when it fits.
    let title_scale = if text_width(chart.title, s + 1) + 2 * margin <= w {
        s + 1
    } else {
        s
    };
    let tick_len = 3 * s;
    let gap = 3 * s;
    let title_h = if chart.title.is_empty() {
        0
    } else {
        LINE_H * title_scale + gap
    };
    let y_label_w = if chart.y_label.is_empty() {
        0
    } else {
        LINE_H * s + gap
    };
    let x_label_h = if chart.x_label.is_empty() {
        0
    } else {
        LINE_H * s + gap
    };
    let y_tick_w = y_labels.iter().map(|l| text_width(l, s)).max().unwrap_or(0);
    let last_x_label_w = x_labels.last().map_or(0, |l| text_width(l, s));

    let area = Rect {
        x0: margin + y_label_w + y_tick_w + gap + tick_len,
        // Half a label of headroom so the top y tick label is not cut.
        y0: margin + title_h + CAP_H * s / 2,
        x1: w - margin.max(last_x_label_w / 2 + s),
        y1: h - margin - x_label_h - CAP_H * s - gap - tick_len,
    };

    if !chart.title.is_empty() {
        let tw = text_width(chart.title, title_scale);
        canvas.text(
            ((w - tw) / 2).max(margin),
            margin,
            chart.title,
            title_scale,
            TEXT,
        );
    }
    if !chart.x_label.is_empty() {
        let tw = text_width(chart.x_label, s);
        let cx = (area.x0 + area.x1) / 2;
        canvas.text(cx - tw / 2, h - margin - LINE_H * s, chart.x_label, s, TEXT);
    }
    if !chart.y_label.is_empty() {
        let tw = text_width(chart.y_label, s);
        let cy = (area.y0 + area.y1) / 2;
        canvas.text_up(margin, cy + tw / 2, chart.y_label, s, TEXT);
    }

    // A plot area too small to hold anything: titles only.
    if area.width() < 4 * s || area.height() < 4 * s {
        return canvas;
    }
    let tf = Transform {
        x: x_ticks,
        y: y_ticks,
        area,
    };

    // Grid, ticks and tick labels.
    for (v, label) in tf.x.values.iter().zip(&x_labels) {
        let x = tf.px(*v).round() as i64;
        canvas.fill(
            Rect {
                x0: x,
                y0: area.y0,
                x1: x + 1,
                y1: area.y1,
            },
            GRID,
        );
        canvas.fill(
            Rect {
                x0: x,
                y0: area.y1,
                x1: x + s.min(2),
                y1: area.y1 + tick_len,
            },
            AXIS,
        );
        let tw = text_width(label, s);
        canvas.text(x - tw / 2, area.y1 + tick_len + gap, label, s, TEXT);
    }
    for (v, label) in tf.y.values.iter().zip(&y_labels) {
        let y = tf.py(*v).round() as i64;
        canvas.fill(
            Rect {
                x0: area.x0,
                y0: y,
                x1: area.x1,
                y1: y + 1,
            },
            GRID,
        );
        canvas.fill(
            Rect {
                x0: area.x0 - tick_len,
                y0: y,
                x1: area.x0,
                y1: y + s.min(2),
            },
            AXIS,
        );
        let tw = text_width(label, s);
        canvas.text(
            area.x0 - tick_len - gap - tw,
            y - CAP_H * s / 2,
            label,
            s,
            TEXT,
        );
    }

    if let Some((t, _)) = chart.threshold.filter(|(t, _)| t.is_finite()) {
        let y = tf.py(t).round() as i64;
        canvas.dashed_hline(area.x0, area.x1, y, s.min(2), 6 * s, 4 * s, THRESHOLD);
    }

    // Light top and right border under the data, so a curve running along
    // the top of the range is not painted over.
    canvas.fill(
        Rect {
            x0: area.x0,
            y0: area.y0 - 1,
            x1: area.x1,
            y1: area.y0,
        },
        LEGEND_BORDER,
    );
    canvas.fill(
        Rect {
            x0: area.x1,
            y0: area.y0 - 1,
            x1: area.x1 + 1,
            y1: area.y1,
        },
        LEGEND_BORDER,
    );

    // Data may spill a few pixels past the plot area, so that a line or a
    // marker at the very end of a range is drawn whole rather than halved.
    let mut mask = Mask::new(area.inflate(s + 2));
    for series in chart.series {
        draw_series(&mut canvas, &mut mask, &tf, series, s);
    }

    // The dark axes on top of the data, as the baseline of the chart.
    let frame = s.min(2);
    canvas.fill(
        Rect {
            x0: area.x0 - frame,
            y0: area.y0,
            x1: area.x0,
            y1: area.y1 + frame,
        },
        AXIS,
    );
    canvas.fill(
        Rect {
            x0: area.x0 - frame,
            y0: area.y1,
            x1: area.x1,
            y1: area.y1 + frame,
        },
        AXIS,
    );

    if finite_points(chart.series).next().is_none() {
        let msg = "no data";
        let tw = text_width(msg, s);
        let (cx, cy) = ((area.x0 + area.x1) / 2, (area.y0 + area.y1) / 2);
        canvas.text(cx - tw / 2, cy - CAP_H * s / 2, msg, s, AXIS);
    }

    draw_legend(&mut canvas, chart, area, s);
    canvas
}

fn draw_series(canvas: &mut Canvas, mask: &mut Mask, tf: &Transform, series: &Series, s: i64) {
    let mut points = series
        .points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|&(x, y)| (tf.px(x), tf.py(y)));
    if series.markers {
        let radius = 2.0 * s as f64 + 0.5;
        let halo = radius + s as f64 * 0.75;
        let clip = tf.area.inflate(halo.ceil() as i64 + 1);
        for (x, y) in points {
            canvas.disc(x, y, halo, WHITE, clip);
            canvas.disc(x, y, radius, series.color, clip);
        }
        return;
    }
    let half_width = 0.5 * s as f64 + 0.25;
    mask.clear();
    let Some(mut prev) = points.next() else {
        return;
    };
    // A lone point still shows up as a dot.
    mask.segment(prev, prev, half_width);
    for p in points {
        mask.segment(prev, p, half_width);
        prev = p;
    }
    canvas.composite(mask, series.color);
}

/// One legend entry: a line sample, a marker sample or a dashed sample.
#[derive(Clone, Copy)]
enum Swatch {
    Line([u8; 3]),
    Marker([u8; 3]),
    Dashed([u8; 3]),
}

fn draw_legend(canvas: &mut Canvas, chart: &Chart, area: Rect, s: i64) {
    let threshold = chart
        .threshold
        .filter(|(t, label)| t.is_finite() && !label.is_empty())
        .map(|(_, label)| (Swatch::Dashed(THRESHOLD), label));
    let entries = || {
        chart
            .series
            .iter()
            .filter(|series| !series.label.is_empty())
            .map(|series| {
                let swatch = if series.markers {
                    Swatch::Marker(series.color)
                } else {
                    Swatch::Line(series.color)
                };
                (swatch, series.label)
            })
            .chain(threshold)
    };
    let count = entries().count() as i64;
    if count == 0 {
        return;
    }
    let pad = 4 * s;
    let swatch_w = 14 * s;
    let row_h = LINE_H * s + s;
    let text_w = entries()
        .map(|(_, label)| text_width(label, s))
        .max()
        .unwrap_or(0);
    let (bw, bh) = (
        pad + swatch_w + pad + text_w + pad,
        pad + count * row_h + pad - s,
    );
    let inset = 4 * s;
    if bw + 2 * inset > area.width() || bh + 2 * inset > area.height() {
        return;
    }
    // Corners in order of preference; take the one covering the least ink.
    let (left, right) = (area.x0 + inset, area.x1 - inset - bw);
    let (top, bottom) = (area.y0 + inset, area.y1 - inset - bh);
    let corners = [(left, top), (right, top), (right, bottom), (left, bottom)];
    let (bx, by) = corners
        .into_iter()
        .min_by_key(|&(x, y)| {
            canvas.ink(Rect {
                x0: x,
                y0: y,
                x1: x + bw,
                y1: y + bh,
            })
        })
        .unwrap_or((left, top));
    let frame = Rect {
        x0: bx,
        y0: by,
        x1: bx + bw,
        y1: by + bh,
    };
    canvas.fill(frame, LEGEND_BORDER);
    canvas.fill(
        Rect {
            x0: bx + 1,
            y0: by + 1,
            x1: bx + bw - 1,
            y1: by + bh - 1,
        },
        WHITE,
    );

    for (i, (swatch, label)) in entries().enumerate() {
        let row_y = by + pad + i as i64 * row_h;
        let mid_y = row_y + CAP_H * s / 2;
        let sx = bx + pad;
        match swatch {
            Swatch::Line(color) => {
                let thick = s.min(3);
                canvas.fill(
                    Rect {
                        x0: sx,
                        y0: mid_y - thick / 2,
                        x1: sx + swatch_w,
                        y1: mid_y - thick / 2 + thick,
                    },
                    color,
                );
            }
            Swatch::Marker(color) => {
                let (cx, cy) = ((sx + swatch_w / 2) as f64, mid_y as f64 + 0.5);
                canvas.disc(cx, cy, 2.0 * s as f64 + 0.5, color, frame);
            }
            Swatch::Dashed(color) => {
                canvas.dashed_hline(sx, sx + swatch_w, mid_y, s.min(2), 4 * s, 2 * s, color);
            }
        }
        canvas.text(sx + swatch_w + pad, row_y, label, s, TEXT);
    }
}

// ---------------------------------------------------------------------------
// Raster primitives
// ---------------------------------------------------------------------------

/// An 8-bit RGB framebuffer, row-major, no padding.
struct Canvas {
    width: i64,
    height: i64,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: u32, height: u32, background: [u8; 3]) -> Canvas {
        let len = width as usize * height as usize;
        let mut pixels = Vec::with_capacity(len * 3);
        for _ in 0..len {
            pixels.extend_from_slice(&background);
        }
        Canvas {
            width: i64::from(width),
            height: i64::from(height),
            pixels,
        }
    }

    fn bounds(&self) -> Rect {
        Rect {
            x0: 0,
            y0: 0,
            x1: self.width,
            y1: self.height,
        }
    }

    /// Byte offset of pixel (x, y), which must be inside the canvas.
    fn offset(&self, x: i64, y: i64) -> usize {
        (y * self.width + x) as usize * 3
    }

    fn fill(&mut self, rect: Rect, color: [u8; 3]) {
        let r = rect.intersect(&self.bounds());
        for y in r.y0..r.y1 {
            for x in r.x0..r.x1 {
                let i = self.offset(x, y);
                self.pixels[i..i + 3].copy_from_slice(&color);
            }
        }
    }

    /// Mixes `color` into pixel (x, y) with opacity `alpha` in `0..=1`.
    fn blend(&mut self, x: i64, y: i64, color: [u8; 3], alpha: f64) {
        if x < 0 || y < 0 || x >= self.width || y >= self.height || alpha <= 0.0 {
            return;
        }
        let a = alpha.min(1.0);
        let i = self.offset(x, y);
        for (dst, src) in self.pixels[i..i + 3].iter_mut().zip(color) {
            *dst = (f64::from(*dst) * (1.0 - a) + f64::from(src) * a).round() as u8;
        }
    }

    /// A horizontal dashed line `thick` pixels high starting at row `y`.
    #[allow(clippy::too_many_arguments)]
    fn dashed_hline(
        &mut self,
        x0: i64,
        x1: i64,
        y: i64,
        thick: i64,
        on: i64,
        off: i64,
        color: [u8; 3],
    ) {
        let mut x = x0;
        while x < x1 {
            let end = (x + on).min(x1);
            self.fill(
                Rect {
                    x0: x,
                    y0: y - thick / 2,
                    x1: end,
                    y1: y - thick / 2 + thick,
                },
                color,
            );
            x += on + off.max(1);
        }
    }

    /// An anti-aliased filled disc, clipped to `clip`.
    fn disc(&mut self, cx: f64, cy: f64, radius: f64, color: [u8; 3], clip: Rect) {
        let r = Rect {
            x0: (cx - radius - 1.0).floor() as i64,
            y0: (cy - radius - 1.0).floor() as i64,
            x1: (cx + radius + 1.0).ceil() as i64 + 1,
            y1: (cy + radius + 1.0).ceil() as i64 + 1,
        }
        .intersect(&clip);
        for y in r.y0..r.y1 {
            for x in r.x0..r.x1 {
                let d = (x as f64 + 0.5 - cx).hypot(y as f64 + 0.5 - cy);
                self.blend(x, y, color, radius + 0.5 - d);
            }
        }
    }

    /// Blends `color` through the coverage in `mask`.
    fn composite(&mut self, mask: &Mask, color: [u8; 3]) {
        let r = mask.area;
        for y in r.y0..r.y1 {
            for x in r.x0..r.x1 {
                let c = mask.get(x, y);
                if c > 0 {
                    self.blend(x, y, color, f64::from(c) / 255.0);
                }
            }
        }
    }

    /// Pixels in `rect` that are neither background nor light grey (grid,
    /// borders): a measure of how much a legend placed there would hide.
    fn ink(&self, rect: Rect) -> usize {
        let r = rect.intersect(&self.bounds());
        let mut count = 0;
        for y in r.y0..r.y1 {
            for x in r.x0..r.x1 {
                let i = self.offset(x, y);
                let [red, green, blue] = [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]];
                let light_grey = red == green && green == blue && red >= 200;
                if !light_grey {
                    count += 1;
                }
            }
        }
        count
    }

    /// Draws `text` with its top-left corner at (x, y), each font pixel an
    /// `s`x`s` block. Characters outside printable ASCII draw as `?`.
    fn text(&mut self, x: i64, y: i64, text: &str, s: i64, color: [u8; 3]) {
        for (i, c) in text.chars().enumerate() {
            let glyph = font().glyph(c);
            let gx0 = x + i as i64 * ADVANCE * s;
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..GLYPH_W {
                    if bits & (1 << (GLYPH_W - 1 - col)) != 0 {
                        let px = gx0 + col * s;
                        let py = y + row as i64 * s;
                        self.fill(
                            Rect {
                                x0: px,
                                y0: py,
                                x1: px + s,
                                y1: py + s,
                            },
                            color,
                        );
                    }
                }
            }
        }
    }

    /// Draws `text` rotated a quarter turn anticlockwise, reading upwards from
    /// (x, y_bottom); the tops of the letters face left, towards `x`.
    fn text_up(&mut self, x: i64, y_bottom: i64, text: &str, s: i64, color: [u8; 3]) {
        for (i, c) in text.chars().enumerate() {
            let glyph = font().glyph(c);
            let base = i as i64 * ADVANCE;
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..GLYPH_W {
                    if bits & (1 << (GLYPH_W - 1 - col)) != 0 {
                        let px = x + row as i64 * s;
                        let py = y_bottom - (base + col + 1) * s;
                        self.fill(
                            Rect {
                                x0: px,
                                y0: py,
                                x1: px + s,
                                y1: py + s,
                            },
                            color,
                        );
                    }
                }
            }
        }
    }
}

/// Per-pixel line coverage over the plot area (0 = none, 255 = full).
struct Mask {
    area: Rect,
    coverage: Vec<u8>,
}

impl Mask {
    fn new(area: Rect) -> Mask {
        let len = (area.width().max(0) * area.height().max(0)) as usize;
        Mask {
            area,
            coverage: vec![0; len],
        }
    }

    fn clear(&mut self) {
        self.coverage.fill(0);
    }

    fn index(&self, x: i64, y: i64) -> usize {
        ((y - self.area.y0) * self.area.width() + (x - self.area.x0)) as usize
    }

    fn get(&self, x: i64, y: i64) -> u8 {
        self.coverage[self.index(x, y)]
    }

    /// Adds a round-capped segment of half-width `hw` from `a` to `b`,
    /// keeping the maximum coverage where it overlaps earlier segments.
    fn segment(&mut self, a: (f64, f64), b: (f64, f64), hw: f64) {
        let reach = hw + 1.0;
        let r = Rect {
            x0: (a.0.min(b.0) - reach).floor() as i64,
            y0: (a.1.min(b.1) - reach).floor() as i64,
            x1: (a.0.max(b.0) + reach).ceil() as i64 + 1,
            y1: (a.1.max(b.1) + reach).ceil() as i64 + 1,
        }
        .intersect(&self.area);
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len2 = dx * dx + dy * dy;
        for y in r.y0..r.y1 {
            for x in r.x0..r.x1 {
                let (px, py) = (x as f64 + 0.5, y as f64 + 0.5);
                let t = if len2 > 0.0 {
                    (((px - a.0) * dx + (py - a.1) * dy) / len2).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let d = (px - (a.0 + t * dx)).hypot(py - (a.1 + t * dy));
                let c = ((hw + 0.5 - d).clamp(0.0, 1.0) * 255.0).round() as u8;
                let i = self.index(x, y);
                self.coverage[i] = self.coverage[i].max(c);
            }
        }
    }
}

fn encode_png(canvas: &Canvas) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, canvas.width as u32, canvas.height as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // Writing into a Vec cannot fail and the buffer has exactly
    // width*height*3 bytes, but the format limits the dimensions.
    let mut writer = encoder
        .write_header()
        .with_context(|| format!("PNG of {}x{}", canvas.width, canvas.height))?;
    writer
        .write_image_data(&canvas.pixels)
        .context("encoding the PNG image")?;
    writer.finish().context("finishing the PNG image")?;
    Ok(out)
}

// ---------------------------------------------------------------------------
// Font
// ---------------------------------------------------------------------------

/// Glyph cell: 5 pixels wide, 9 rows (7 above the baseline, 2 descender).
const GLYPH_W: i64 = 5;
const GLYPH_ROWS: usize = 9;
/// Horizontal distance between characters, in font pixels.
const ADVANCE: i64 = GLYPH_W + 1;
/// Height of capitals and digits, in font pixels.
const CAP_H: i64 = 7;
/// Height of a line of text including descenders, in font pixels.
const LINE_H: i64 = GLYPH_ROWS as i64;

/// Width in pixels of `text` drawn at scale `s` (no trailing spacing).
fn text_width(text: &str, s: i64) -> i64 {
    let n = text.chars().count() as i64;
    if n == 0 { 0 } else { (n * ADVANCE - 1) * s }
}

/// One glyph: a row per entry, bit 4 the leftmost pixel.
type Glyph = [u8; GLYPH_ROWS];

/// The printable ASCII glyphs, parsed once from [`FONT_SOURCE`].
struct Font {
    glyphs: [Glyph; 95],
}

impl Font {
    fn glyph(&self, c: char) -> &Glyph {
        let c = match c {
            // Typographic dashes and the minus sign look like a hyphen here.
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            ' '..='~' => c,
            _ => '?',
        };
        &self.glyphs[c as usize - 0x20]
    }
}

fn font() -> &'static Font {
    static FONT: OnceLock<Font> = OnceLock::new();
    FONT.get_or_init(|| parse_font(FONT_SOURCE))
}

/// Parses blocks of a header line naming the glyphs, followed by
/// [`GLYPH_ROWS`] rows of 5-character cells (`#` ink, `.` blank) separated by
/// single spaces. Space is implicit; every other printable character must be
/// defined. Panics on malformed source (checked by the unit tests).
fn parse_font(source: &str) -> Font {
    let mut glyphs = [[0u8; GLYPH_ROWS]; 95];
    let mut defined = [false; 95];
    defined[0] = true; // space
    let mut lines = source.lines().filter(|l| !l.trim().is_empty());
    while let Some(header) = lines.next() {
        let chars: Vec<char> = header.chars().collect();
        let rows: Vec<&str> = lines.by_ref().take(GLYPH_ROWS).collect();
        assert_eq!(
            rows.len(),
            GLYPH_ROWS,
            "font block {header:?}: missing rows"
        );
        for (row, line) in rows.iter().enumerate() {
            let cells: Vec<&str> = line.split(' ').collect();
            assert_eq!(
                cells.len(),
                chars.len(),
                "font block {header:?}, row {row}: {line:?}"
            );
            for (&c, cell) in chars.iter().zip(cells) {
                assert!(c > ' ' && c <= '~', "font: {c:?} is not printable ASCII");
                assert_eq!(
                    cell.len(),
                    GLYPH_W as usize,
                    "font glyph {c:?}, row {row}: {cell:?}"
                );
                let mut bits = 0u8;
                for pixel in cell.bytes() {
                    bits = bits << 1 | u8::from(pixel == b'#');
                    assert!(
                        pixel == b'#' || pixel == b'.',
                        "font glyph {c:?}: bad pixel"
                    );
                }
                glyphs[c as usize - 0x20][row] = bits;
                defined[c as usize - 0x20] = true;
            }
        }
    }
    if let Some(missing) = defined.iter().position(|d| !d) {
        panic!("font: no glyph for {:?}", char::from(0x20 + missing as u8));
    }
    Font { glyphs }
}

/// The embedded font, drawn for this module: 5x7 capitals and digits, a
/// 5-row x-height and two rows of descender for g, j, p, q, y, comma and
/// semicolon.
const FONT_SOURCE: &str = r##"
01234567
.###. ..#.. .###. ##### ...#. ##### ..##. #####
#...# .##.. #...# ...#. ..##. #.... .#... ....#
#..## ..#.. ....# ..#.. .#.#. ####. #.... ...#.
#.#.# ..#.. ...#. ...#. #..#. ....# ####. ..#..
##..# ..#.. ..#.. ....# ##### ....# #...# .#...
#...# ..#.. .#... #...# ...#. #...# #...# .#...
.###. .###. ##### .###. ...#. .###. .###. .#...
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....

89:;<=>?
.###. .###. ..... ..... ...#. ..... .#... .###.
#...# #...# .##.. .##.. ..#.. ..... ..#.. #...#
#...# #...# .##.. .##.. .#... ##### ...#. ....#
.###. .#### ..... ..... #.... ..... ....# ...#.
#...# ....# .##.. .##.. .#... ##### ...#. ..#..
#...# ...#. .##.. .##.. ..#.. ..... ..#.. .....
.###. .##.. ..... ..#.. ...#. ..... .#... ..#..
..... ..... ..... .#... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....

@ABCDEFG
.###. .###. ####. .###. ####. ##### ##### .###.
#...# #...# #...# #...# #...# #.... #.... #...#
#.### #...# #...# #.... #...# #.... #.... #....
#.#.# ##### ####. #.... #...# ####. ####. #.###
#.### #...# #...# #.... #...# #.... #.... #...#
#.... #...# #...# #...# #...# #.... #.... #...#
.#### #...# ####. .###. ####. ##### #.... .####
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....

HIJKLMNO
#...# .###. ..### #...# #.... #...# #...# .###.
#...# ..#.. ...#. #..#. #.... ##.## #...# #...#
#...# ..#.. ...#. #.#.. #.... #.#.# ##..# #...#
##### ..#.. ...#. ##... #.... #.#.# #.#.# #...#
#...# ..#.. ...#. #.#.. #.... #...# #..## #...#
#...# ..#.. #..#. #..#. #.... #...# #...# #...#
#...# .###. .##.. #...# ##### #...# #...# .###.
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....

PQRSTUVW
####. .###. ####. .#### ##### #...# #...# #...#
#...# #...# #...# #.... ..#.. #...# #...# #...#
#...# #...# #...# #.... ..#.. #...# #...# #...#
####. #...# ####. .###. ..#.. #...# #...# #.#.#
#.... #.#.# #.#.. ....# ..#.. #...# #...# #.#.#
#.... #..#. #..#. ....# ..#.. #...# .#.#. #.#.#
#.... .##.# #...# ####. ..#.. .###. ..#.. .#.#.
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....

XYZ[\]^_
#...# #...# ##### .###. ..... .###. ..#.. .....
#...# #...# ....# .#... #.... ...#. .#.#. .....
.#.#. .#.#. ...#. .#... .#... ...#. #...# .....
..#.. ..#.. ..#.. .#... ..#.. ...#. ..... .....
.#.#. ..#.. .#... .#... ...#. ...#. ..... .....
#...# ..#.. #.... .#... ....# ...#. ..... .....
#...# ..#.. ##### .###. ..... .###. ..... .....
..... ..... ..... ..... ..... ..... ..... #####
..... ..... ..... ..... ..... ..... ..... .....

`abcdefg
.#... ..... #.... ..... ....# ..... ..##. .....
..#.. ..... #.... ..... ....# ..... .#..# .....
..... .###. #.##. .###. .##.# .###. .#... .####
..... ....# ##..# #.... #..## #...# ###.. #...#
..... .#### #...# #.... #...# ##### .#... #...#
..... #...# #...# #...# #...# #.... .#... #...#
..... .#### ####. .###. .#### .###. .#... .####
..... ..... ..... ..... ..... ..... ..... ....#
..... ..... ..... ..... ..... ..... ..... .###.

hijklmno
#.... ..#.. ...#. #.... .##.. ..... ..... .....
#.... ..... ..... #.... ..#.. ..... ..... .....
#.##. .##.. ..##. #..#. ..#.. ##.#. #.##. .###.
##..# ..#.. ...#. #.#.. ..#.. #.#.# ##..# #...#
#...# ..#.. ...#. ##... ..#.. #.#.# #...# #...#
#...# ..#.. ...#. #.#.. ..#.. #.#.# #...# #...#
#...# .###. ...#. #..#. .###. #.#.# #...# .###.
..... ..... #..#. ..... ..... ..... ..... .....
..... ..... .##.. ..... ..... ..... ..... .....

pqrstuvw
..... ..... ..... ..... .#... ..... ..... .....
..... ..... ..... ..... .#... ..... ..... .....
####. .#### #.##. .#### ###.. #...# #...# #...#
#...# #...# ##..# #.... .#... #...# #...# #...#
#...# #...# #.... .###. .#... #...# #...# #.#.#
#...# #...# #.... ....# .#..# #..## .#.#. #.#.#
####. .#### #.... ####. ..##. .##.# ..#.. .#.#.
#.... ....# ..... ..... ..... ..... ..... .....
#.... ....# ..... ..... ..... ..... ..... .....

xyz{|}~
..... ..... ..... ...#. ..#.. .#... .....
..... ..... ..... ..#.. ..#.. ..#.. .....
#...# #...# ##### ..#.. ..#.. ..#.. .#...
.#.#. #...# ...#. .#... ..#.. ...#. #.#.#
..#.. #...# ..#.. ..#.. ..#.. ..#.. ...#.
.#.#. #...# .#... ..#.. ..#.. ..#.. .....
#...# .#### ##### ...#. ..#.. .#... .....
..... ....# ..... ..... ..... ..... .....
..... .###. ..... ..... ..... ..... .....

!"#$%&'(
..#.. .#.#. .#.#. ..#.. ##... .##.. ..#.. ...#.
..#.. .#.#. .#.#. .#### ##..# #..#. ..#.. ..#..
..#.. ..... ##### #.#.. ...#. #.#.. ..... .#...
..#.. ..... .#.#. .###. ..#.. .#... ..... .#...
..#.. ..... ##### ..#.# .#... #.#.# ..... .#...
..... ..... .#.#. ####. #..## #..#. ..... ..#..
..#.. ..... .#.#. ..#.. ...## .##.# ..... ...#.
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....

)*+,-./
.#... ..... ..... ..... ..... ..... .....
..#.. ..#.. ..#.. ..... ..... ..... ....#
...#. #.#.# ..#.. ..... ..... ..... ...#.
...#. .###. ##### ..... ##### ..... ..#..
...#. #.#.# ..#.. ..... ..... ..... .#...
..#.. ..#.. ..#.. .##.. ..... .##.. #....
.#... ..... ..... .##.. ..... .##.. .....
..... ..... ..... ..#.. ..... ..... .....
..... ..... ..... .#... ..... ..... .....
"##;

#[cfg(test)]
mod tests {
    use super::*;

    type Point = (f64, f64);

    const BLUE: [u8; 3] = [31, 119, 180];
    const ORANGE: [u8; 3] = [255, 127, 14];

    /// Decodes PNG bytes into (width, height, RGB pixels).
    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    fn count_color(pixels: &[u8], color: [u8; 3]) -> usize {
        pixels.chunks_exact(3).filter(|p| *p == color).count()
    }

    fn chart<'a>(series: &'a [Series<'a>], threshold: Option<(f64, &'a str)>) -> Chart<'a> {
        Chart {
            title: "test chart",
            x_label: "steps",
            y_label: "return",
            series,
            threshold,
        }
    }

    fn cartpole_like() -> (Vec<Point>, Vec<Point>) {
        let train = (0..=100)
            .map(|i| {
                let step = i as f64 * 1000.0;
                let progress = 1.0 / (1.0 + (-(step - 45_000.0) / 9000.0).exp());
                let wobble = 25.0 * (i as f64 * 0.7).sin() * progress * (1.0 - progress) * 4.0;
                (step, (20.0 + 480.0 * progress + wobble).min(500.0))
            })
            .collect();
        let eval = (0..=10)
            .map(|i| {
                let step = i as f64 * 10_000.0;
                let progress = 1.0 / (1.0 + (-(step - 40_000.0) / 8000.0).exp());
                (step, 9.0 + 491.0 * progress)
            })
            .collect();
        (train, eval)
    }

    fn pendulum_like() -> Vec<(f64, f64)> {
        (0..=200)
            .map(|i| {
                let step = i as f64 * 1000.0;
                let progress = 1.0 - (-step / 50_000.0).exp();
                (step, -1550.0 + 1400.0 * progress + 40.0 * (i as f64).sin())
            })
            .collect()
    }

    #[test]
    fn png_has_signature_and_requested_size() {
        let (train, eval) = cartpole_like();
        let series = [
            Series {
                label: "train",
                points: &train,
                color: BLUE,
                markers: false,
            },
            Series {
                label: "eval",
                points: &eval,
                color: ORANGE,
                markers: true,
            },
        ];
        let bytes = render_png(&chart(&series, Some((475.0, "solved"))), 640, 400).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let (w, h, pixels) = decode(&bytes);
        assert_eq!((w, h), (640, 400));
        assert_eq!(pixels.len(), 640 * 400 * 3);
        assert!(count_color(&pixels, BLUE) > 200, "line drawn in its colour");
        assert!(
            count_color(&pixels, ORANGE) > 50,
            "markers drawn in their colour"
        );
        assert!(count_color(&pixels, THRESHOLD) > 50, "threshold drawn");
    }

    #[test]
    fn negative_ranges_are_drawn() {
        let points = pendulum_like();
        let series = [Series {
            label: "pendulum",
            points: &points,
            color: BLUE,
            markers: false,
        }];
        let (_, _, pixels) = decode(&render_png(&chart(&series, None), 800, 500).unwrap());
        assert!(count_color(&pixels, BLUE) > 300);
    }

    #[test]
    fn degenerate_data_does_not_panic() {
        let nan = [
            (f64::NAN, 1.0),
            (2.0, f64::INFINITY),
            (f64::NEG_INFINITY, f64::NAN),
        ];
        let single = [(5.0, -3.0)];
        let flat = [(0.0, 7.0), (1.0, 7.0), (2.0, 7.0)];
        let zero = [(0.0, 0.0), (0.0, 0.0)];
        let huge = [(-f64::MAX, -f64::MAX), (f64::MAX, f64::MAX)];
        let tiny = [(0.0, 1e-300), (1e-300, 2e-300)];
        let cases: [&[Point]; 7] = [&[], &nan, &single, &flat, &zero, &huge, &tiny];
        for points in cases {
            for markers in [false, true] {
                let series = [Series {
                    label: "s",
                    points,
                    color: BLUE,
                    markers,
                }];
                for (w, h) in [(800, 500), (120, 80), (1, 1), (0, 0)] {
                    let (dw, dh, _) =
                        decode(&render_png(&chart(&series, Some((1.0, "t"))), w, h).unwrap());
                    assert_eq!((dw, dh), (w.max(1), h.max(1)));
                }
            }
        }
        // No series at all, no threshold, empty texts.
        let empty = Chart {
            title: "",
            x_label: "",
            y_label: "",
            series: &[],
            threshold: None,
        };
        decode(&render_png(&empty, 300, 200).unwrap());
        // A non-finite threshold is ignored.
        decode(&render_png(&chart(&[], Some((f64::NAN, "nan"))), 300, 200).unwrap());
    }

    #[test]
    fn a_single_point_is_visible() {
        let single = [(3.0, 4.0)];
        let series = [Series {
            label: "one",
            points: &single,
            color: BLUE,
            markers: false,
        }];
        let (_, _, pixels) = decode(&render_png(&chart(&series, None), 400, 300).unwrap());
        assert!(count_color(&pixels, BLUE) > 0);
    }

    #[test]
    fn nan_points_are_skipped_not_fatal() {
        let points = [
            (0.0, 1.0),
            (1.0, f64::NAN),
            (2.0, 3.0),
            (f64::INFINITY, 2.0),
            (3.0, 2.0),
        ];
        let series = [Series {
            label: "gappy",
            points: &points,
            color: BLUE,
            markers: false,
        }];
        let (_, _, pixels) = decode(&render_png(&chart(&series, None), 400, 300).unwrap());
        assert!(count_color(&pixels, BLUE) > 50);
    }

    #[test]
    fn ticks_use_1_2_5_steps_and_cover_the_data() {
        let t = nice_ticks(0.0, 100_000.0, 8);
        assert_eq!(t.step, 20_000.0);
        assert_eq!(t.values, [0.0, 20e3, 40e3, 60e3, 80e3, 100e3]);

        let t = nice_ticks(20.0, 500.0, 8);
        assert_eq!((t.lo, t.hi, t.step), (0.0, 500.0, 100.0));

        let t = nice_ticks(-1600.0, -150.0, 8);
        assert_eq!((t.lo, t.hi, t.step), (-1600.0, 0.0, 200.0));

        for (lo, hi) in [
            (0.013, 0.97),
            (-3.3, 7.1),
            (1e-9, 3e-9),
            (123_456.0, 9_876_543.0),
            (-5.0, -4.9),
        ] {
            let t = nice_ticks(lo, hi, 8);
            assert!(t.lo <= lo && t.hi >= hi, "{lo}..{hi} -> {t:?}");
            let mantissa = t.step / 10f64.powf(t.step.log10().floor());
            assert!(
                [1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-9),
                "step {} not 1-2-5",
                t.step
            );
            assert!((2..=11).contains(&t.values.len()), "{t:?}");
            for pair in t.values.windows(2) {
                assert!((pair[1] - pair[0] - t.step).abs() < t.step * 1e-9);
            }
        }
    }

    #[test]
    fn ticks_handle_empty_and_bad_ranges() {
        let t = nice_ticks(0.0, 0.0, 8);
        assert!(t.lo < 0.0 && t.hi > 0.0);
        let t = nice_ticks(500.0, 500.0, 8);
        assert!(t.lo < 500.0 && t.hi > 500.0);
        let t = nice_ticks(f64::NAN, 1.0, 8);
        assert_eq!((t.lo, t.hi), (0.0, 1.0));
        let t = nice_ticks(5.0, 1.0, 8);
        assert_eq!((t.lo, t.hi), (0.0, 1.0));
        let t = nice_ticks(-f64::MAX, f64::MAX, 8);
        assert!(t.values.len() <= 1001 && t.values.iter().all(|v| !v.is_nan()));
        assert_eq!(
            nice_ticks(-0.3, 0.3, 8)
                .values
                .iter()
                .filter(|v| **v == 0.0)
                .count(),
            1
        );
    }

    #[test]
    fn tick_labels_are_compact() {
        let labels = |lo, hi| tick_labels(&nice_ticks(lo, hi, 8));
        assert_eq!(
            labels(0.0, 100_000.0),
            ["0", "20k", "40k", "60k", "80k", "100k"]
        );
        assert_eq!(
            labels(20.0, 500.0),
            ["0", "100", "200", "300", "400", "500"]
        );
        assert_eq!(
            labels(-1600.0, -150.0),
            [
                "-1600", "-1400", "-1200", "-1000", "-800", "-600", "-400", "-200", "0"
            ]
        );
        assert_eq!(labels(0.0, 1.0), ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        assert_eq!(labels(0.0, 20_000.0), ["0", "5k", "10k", "15k", "20k"]);
        assert_eq!(
            labels(0.0, 3e6),
            ["0", "0.5M", "1M", "1.5M", "2M", "2.5M", "3M"]
        );
        assert_eq!(labels(-0.1, 0.1)[0], "-0.1");
        let t = Ticks {
            lo: 0.0,
            hi: 25_000.0,
            step: 12_500.0,
            values: vec![0.0, 12_500.0, 25_000.0],
        };
        assert_eq!(tick_labels(&t), ["0", "12.5k", "25k"]);
        let t = Ticks {
            lo: 475.0,
            hi: 475.0,
            step: 25.0,
            values: vec![475.0],
        };
        assert_eq!(tick_labels(&t), ["475"]);
    }

    #[test]
    fn font_covers_printable_ascii() {
        let font = font();
        assert_eq!(font.glyph(' '), &[0; GLYPH_ROWS]);
        for c in '!'..='~' {
            assert!(font.glyph(c).iter().any(|row| *row != 0), "{c:?} is blank");
            assert!(font.glyph(c).iter().all(|row| *row < 32), "{c:?} too wide");
        }
        // Unknown characters fall back to '?', dashes to '-'.
        assert_eq!(font.glyph('é'), font.glyph('?'));
        assert_eq!(font.glyph('\u{2212}'), font.glyph('-'));
    }

    #[test]
    fn text_width_counts_characters() {
        assert_eq!(text_width("", 2), 0);
        assert_eq!(text_width("a", 1), 5);
        assert_eq!(text_width("100k", 2), (4 * 6 - 1) * 2);
    }

    /// Writes sample charts to the temporary directory for a visual check:
    /// `cargo test -p microrl-harness plot::tests::render_samples -- --ignored`.
    #[test]
    #[ignore = "writes sample PNGs for eyeballing"]
    fn render_samples() {
        let dir = std::env::temp_dir();
        let (train, eval) = cartpole_like();
        let series = [
            Series {
                label: "train return (mean of last 100)",
                points: &train,
                color: BLUE,
                markers: false,
            },
            Series {
                label: "eval return (mean)",
                points: &eval,
                color: ORANGE,
                markers: true,
            },
        ];
        let cartpole = Chart {
            title: "CartPole-v1: PPO learning curve",
            x_label: "environment steps",
            y_label: "episode return",
            series: &series,
            threshold: Some((475.0, "threshold 475")),
        };
        write_png(&dir.join("sample_curve.png"), &cartpole).unwrap();
        std::fs::write(
            dir.join("sample_curve_small.png"),
            render_png(&cartpole, 400, 250).unwrap(),
        )
        .unwrap();

        let points = pendulum_like();
        let eval: Vec<(f64, f64)> = points
            .iter()
            .step_by(20)
            .map(|&(x, y)| (x, y + 60.0))
            .collect();
        let series = [
            Series {
                label: "train return",
                points: &points,
                color: BLUE,
                markers: false,
            },
            Series {
                label: "eval return",
                points: &eval,
                color: ORANGE,
                markers: true,
            },
        ];
        let pendulum = Chart {
            title: "Pendulum-v1: SAC",
            x_label: "environment steps",
            y_label: "episode return",
            series: &series,
            threshold: Some((-200.0, "threshold -200")),
        };
        write_png(&dir.join("sample_curve_pendulum.png"), &pendulum).unwrap();

        let all: String = (' '..='~').collect();
        let font_chart = Chart {
            title: &all[..48],
            x_label: &all[48..],
            y_label: "Quick brown fox, jumpy dog; 0.5k",
            series: &[],
            threshold: None,
        };
        std::fs::write(
            dir.join("sample_font.png"),
            render_png(&font_chart, 1800, 1000).unwrap(),
        )
        .unwrap();
    }
}

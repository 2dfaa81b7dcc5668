//! Learning-curve plots as PNG files, drawn with `plotters`, with no system
//! fonts and no network.
//!
//! `microrl train` runs on machines that may have no fonts installed, so the
//! plots are drawn with `plotters`' bitmap backend and its `ab_glyph` text
//! renderer over a font embedded in the binary (`assets/DejaVuSans-subset.ttf`:
//! DejaVu Sans cut down to printable ASCII and a few symbols, 13 KB; the
//! script that makes it and its licence are beside it). The RGB buffer is
//! encoded with the `png` crate.
//!
//! What is left here is the description of a chart and a few choices:
//!
//! - [`Chart`] and [`Series`] describe *what* to draw: borrowed slices of
//!   `(x, y)` points, a colour, a label, and an optional horizontal threshold
//!   (e.g. CartPole's "solved" return of 475). Non-finite points are skipped.
//! - The axis ranges are widened to whole steps of a 1-2-5 grid
//!   ([`nice_range`]), so a CartPole curve spans 0 to 500; `plotters` places
//!   the ticks and [`tick_label`] prints them compactly (`20k`, `1.5M`).
//! - The legend goes into whichever corner of the plot holds the fewest data
//!   points (the threshold line counts heavily), so it hides as little as
//!   possible.
//! - Text sizes scale with the image from an 800x500 base; sizes outside
//!   [`MIN_SIZE`]..=[`MAX_SIZE`] are refused with an error rather than drawn
//!   illegibly.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::Context;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// The embedded font: a DejaVu Sans subset (see `assets/make_font.sh`).
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
/// The family name the charts ask `plotters` for.
const FAMILY: &str = "sans-serif";

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
    /// (e.g. `(475.0, "solved 475")`). The y range always includes it; a
    /// non-finite value is ignored.
    pub threshold: Option<(f64, &'a str)>,
}

/// Default size used by [`write_png`].
pub const DEFAULT_WIDTH: u32 = 800;
/// Default size used by [`write_png`].
pub const DEFAULT_HEIGHT: u32 = 500;
/// The smallest image (width, height) [`render_png`] draws.
pub const MIN_SIZE: (u32, u32) = (240, 160);
/// The largest image (width, height) [`render_png`] draws.
pub const MAX_SIZE: (u32, u32) = (8000, 8000);

/// Colour of the threshold line (green).
pub const THRESHOLD_COLOR: [u8; 3] = [44, 160, 44];
const TEXT: RGBColor = RGBColor(40, 40, 40);
const AXIS: RGBColor = RGBColor(90, 90, 90);
const GRID: RGBColor = RGBColor(228, 228, 228);
const LEGEND_BORDER: RGBColor = RGBColor(170, 170, 170);
/// Tick intervals per axis, about.
const TICKS: usize = 8;

/// Renders `chart` to `path` as an 800x500 PNG.
/// The file is replaced atomically ([`crate::atomic::write_file`]).
pub fn write_png(path: &Path, chart: &Chart) -> anyhow::Result<()> {
    let bytes = render_png(chart, DEFAULT_WIDTH, DEFAULT_HEIGHT)?;
    crate::atomic::write_file(path, &bytes)
}

/// Renders `chart` as PNG bytes (8-bit RGB) of the given size.
///
/// # Errors
/// A size outside [`MIN_SIZE`]..=[`MAX_SIZE`], or `plotters` or the PNG
/// encoder failing.
pub fn render_png(chart: &Chart, width: u32, height: u32) -> anyhow::Result<Vec<u8>> {
    anyhow::ensure!(
        (MIN_SIZE.0..=MAX_SIZE.0).contains(&width) && (MIN_SIZE.1..=MAX_SIZE.1).contains(&height),
        "a plot of {width}x{height} pixels: the size must be between {}x{} and {}x{}",
        MIN_SIZE.0,
        MIN_SIZE.1,
        MAX_SIZE.0,
        MAX_SIZE.1
    );
    let pixels = render(chart, width, height)?;
    encode_png(&pixels, width, height)
}

/// Registers the embedded font with `plotters` (once per process).
fn font_registered() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    anyhow::ensure!(ok, "the embedded plot font does not parse");
    Ok(())
}

/// Draws `chart` into an RGB buffer of `width` x `height` pixels.
fn render(chart: &Chart, width: u32, height: u32) -> anyhow::Result<Vec<u8>> {
    font_registered()?;
    let draw_error = |e: &dyn std::fmt::Display| anyhow::anyhow!("drawing the plot: {e}");
    let threshold = chart.threshold.filter(|(t, _)| t.is_finite());
    let (x_range, y_range) = ranges(chart, threshold.map(|t| t.0));
    // Text and line sizes scale with the picture, from the 800x500 base.
    let scale = (f64::from(width) / f64::from(DEFAULT_WIDTH))
        .min(f64::from(height) / f64::from(DEFAULT_HEIGHT));
    let px = |base: f64| (base * scale).round().max(1.0);
    let font = |size: f64| (FAMILY, px(size)).into_font().color(&TEXT);

    let mut buffer = vec![255u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_error(&e))?;
        let mut plot = ChartBuilder::on(&root)
            .caption(chart.title, font(26.0))
            .margin(px(12.0) as i32)
            .margin_right(px(28.0) as i32)
            .x_label_area_size(px(48.0) as i32)
            .y_label_area_size(px(70.0) as i32)
            .build_cartesian_2d(x_range.0..x_range.1, y_range.0..y_range.1)
            .map_err(|e| draw_error(&e))?;
        let x_extent = x_range.0.abs().max(x_range.1.abs());
        let y_extent = y_range.0.abs().max(y_range.1.abs());
        let x_fmt = move |v: &f64| tick_label(*v, x_extent);
        let y_fmt = move |v: &f64| tick_label(*v, y_extent);
        plot.configure_mesh()
            .x_labels(TICKS)
            .y_labels(TICKS)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_desc(chart.x_label)
            .y_desc(chart.y_label)
            .label_style(font(15.0))
            .axis_desc_style(font(17.0))
            .axis_style(AXIS.stroke_width(px(1.0) as u32))
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(|e| draw_error(&e))?;

        let line_width = px(2.0) as u32;
        let radius = px(4.5) as i32;
        let legend_len = px(22.0) as i32;
        for series in chart.series {
            let color = RGBColor(series.color[0], series.color[1], series.color[2]);
            let points = drawable(series.points);
            // Only a labelled series gets a legend entry.
            let label = series.label;
            if series.markers {
                let style = color.filled();
                // Each disc on a white one a pixel larger: overlapping
                // markers stay apart.
                let annotation = plot
                    .draw_series(points.map(|p| {
                        EmptyElement::at(p)
                            + Circle::new((0, 0), radius + 1, WHITE.filled())
                            + Circle::new((0, 0), radius, style)
                    }))
                    .map_err(|e| draw_error(&e))?;
                if !label.is_empty() {
                    annotation
                        .label(label)
                        .legend(move |(x, y)| Circle::new((x + legend_len / 2, y), radius, style));
                }
            } else {
                let style = color.stroke_width(line_width);
                let points: Vec<(f64, f64)> = points.collect();
                if points.len() == 1 {
                    // A line of one point would be invisible: draw a dot.
                    plot.draw_series(std::iter::once(Circle::new(
                        points[0],
                        radius,
                        color.filled(),
                    )))
                    .map_err(|e| draw_error(&e))?;
                }
                let annotation = plot
                    .draw_series(LineSeries::new(points, style))
                    .map_err(|e| draw_error(&e))?;
                if !label.is_empty() {
                    annotation.label(label).legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + legend_len, y)], style)
                    });
                }
            }
        }
        if let Some((value, label)) = threshold {
            let [r, g, b] = THRESHOLD_COLOR;
            let style = RGBColor(r, g, b).stroke_width(line_width);
            let dash = px(9.0) as i32;
            let gap = px(6.0) as i32;
            let line = plot
                .draw_series(DashedLineSeries::new(
                    [(x_range.0, value), (x_range.1, value)],
                    dash,
                    gap,
                    style,
                ))
                .map_err(|e| draw_error(&e))?;
            let half = legend_len / 2 - 2;
            line.label(label).legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new([(0, 0), (half, 0)], style)
                    + PathElement::new([(legend_len - half, 0), (legend_len, 0)], style)
            });
        }
        let labelled = chart.series.iter().any(|s| !s.label.is_empty()) || threshold.is_some();
        if labelled {
            // The legend's size as a fraction of the plot, about: the widest
            // label after the sample line, one row per entry, the margin.
            let label_font = font(15.0);
            let labels = chart.series.iter().map(|s| s.label);
            let widest = labels
                .chain(threshold.map(|t| t.1))
                .filter_map(|l| root.estimate_text_size(l, &label_font).ok())
                .map(|(w, _)| w)
                .max()
                .unwrap_or(0);
            let rows = chart.series.iter().filter(|s| !s.label.is_empty()).count()
                + usize::from(threshold.is_some());
            let (plot_w, plot_h) = plot.plotting_area().dim_in_pixel();
            let legend = (
                f64::from(widest) + 2.0 * f64::from(legend_len) + px(30.0),
                rows as f64 * px(15.0) * 1.6 + px(30.0),
            );
            let legend = (
                legend.0 / f64::from(plot_w.max(1)),
                legend.1 / f64::from(plot_h.max(1)),
            );
            let position = legend_position(chart, x_range, y_range, threshold.map(|t| t.0), legend);
            plot.configure_series_labels()
                .position(position)
                .margin(px(10.0) as i32)
                .legend_area_size(legend_len + px(8.0) as i32)
                .label_font(label_font)
                .background_style(WHITE.mix(0.9))
                .border_style(LEGEND_BORDER)
                .draw()
                .map_err(|e| draw_error(&e))?;
        }
        root.present().map_err(|e| draw_error(&e))?;
    }
    Ok(buffer)
}

/// Coordinates beyond this magnitude are drawn at it (the span of an axis
/// must stay finite).
const LIMIT: f64 = 1e300;

/// The points of a series that are drawn: the finite ones, clamped to
/// ±[`LIMIT`].
fn drawable(points: &[(f64, f64)]) -> impl Iterator<Item = (f64, f64)> + Clone + '_ {
    points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|&(x, y)| (x.clamp(-LIMIT, LIMIT), y.clamp(-LIMIT, LIMIT)))
}

/// The axis ranges: the drawn data (and the threshold) widened to whole
/// steps of a 1-2-5 grid.
fn ranges(chart: &Chart, threshold: Option<f64>) -> ((f64, f64), (f64, f64)) {
    let mut x = (f64::INFINITY, f64::NEG_INFINITY);
    let mut y = x;
    for (px, py) in chart.series.iter().flat_map(|s| drawable(s.points)) {
        x = (x.0.min(px), x.1.max(px));
        y = (y.0.min(py), y.1.max(py));
    }
    if let Some(t) = threshold {
        let t = t.clamp(-LIMIT, LIMIT);
        y = (y.0.min(t), y.1.max(t));
    }
    (nice_range(x.0, x.1), nice_range(y.0, y.1))
}

/// `[min, max]` widened outwards to whole steps of a 1-2-5 grid of about
/// [`TICKS`] intervals (`[20, 497]` → `[0, 500]`). An empty range is padded
/// around its value; no data at all (`min > max`) gives `[0, 1]`.
pub fn nice_range(min: f64, max: f64) -> (f64, f64) {
    let (mut min, mut max) = if min <= max { (min, max) } else { (0.0, 1.0) };
    if max - min <= f64::EPSILON * max.abs().max(min.abs()) {
        let pad = if min == 0.0 { 1.0 } else { min.abs() * 0.1 };
        (min, max) = (min - pad, max + pad);
    }
    let raw = (max - min) / TICKS as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude);
    let (lo, hi) = ((min / step).floor() * step, (max / step).ceil() * step);
    if lo.is_finite() && hi.is_finite() && lo < hi {
        (lo, hi)
    } else {
        (min, max)
    }
}

/// A tick label in one unit for the whole axis (`extent` is its largest
/// magnitude): `k`, `M`, `G` once the axis reaches ten thousand (`20k`,
/// `1.5M`), plain numbers below (`-1200`, `0.25`), scientific beyond 10^12.
pub fn tick_label(value: f64, extent: f64) -> String {
    let (divisor, suffix) = match extent {
        e if e >= 1e12 || !e.is_finite() => return format!("{value:e}"),
        e if e >= 1e9 => (1e9, "G"),
        e if e >= 1e6 => (1e6, "M"),
        e if e >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    // Six decimals, then trimmed: removes the float noise of tick arithmetic.
    let mut text = format!("{:.6}", value / divisor);
    let trimmed = text.trim_end_matches('0').trim_end_matches('.').len();
    text.truncate(trimmed);
    if text == "-0" || text == "0" {
        return "0".to_string();
    }
    text.push_str(suffix);
    text
}

/// Where the legend hides the least: of the corners and edge middles of the
/// plot, the one whose legend-sized box (`legend`: width and height as
/// fractions of the plot) covers the least ink — samples taken evenly along
/// the data lines, three per marker, and a quarter per sample of the
/// threshold line (a straight line stays readable on both sides of a box).
/// Ties go to the earlier candidate, lower right first.
fn legend_position(
    chart: &Chart,
    x: (f64, f64),
    y: (f64, f64),
    threshold: Option<f64>,
    legend: (f64, f64),
) -> SeriesLabelPosition {
    use SeriesLabelPosition::*;
    const MARKER: f64 = 3.0;
    const THRESHOLD: f64 = 0.25;
    let norm = |(a, b): (f64, f64)| ((a - x.0) / (x.1 - x.0), (b - y.0) / (y.1 - y.0));
    let mut lines = Vec::new();
    let mut markers = Vec::new();
    for series in chart.series {
        let points = drawable(series.points).map(norm);
        if series.markers {
            markers.extend(points);
        } else {
            lines.extend(sample_polyline(points));
        }
    }
    let threshold_line = threshold.map_or_else(Vec::new, |t| {
        sample_polyline([(x.0, t), (x.1, t)].into_iter().map(norm))
    });
    let (w, h) = (legend.0.min(1.0), legend.1.min(1.0));
    let (left, centre, right) = ((0.0, w), (0.5 - w / 2.0, 0.5 + w / 2.0), (1.0 - w, 1.0));
    let (bottom, middle, top) = ((0.0, h), (0.5 - h / 2.0, 0.5 + h / 2.0), (1.0 - h, 1.0));
    let candidates = [
        (LowerRight, right, bottom),
        (UpperLeft, left, top),
        (LowerLeft, left, bottom),
        (UpperRight, right, top),
        (MiddleRight, right, middle),
        (MiddleLeft, left, middle),
        (LowerMiddle, centre, bottom),
        (UpperMiddle, centre, top),
    ];
    let mut best = (LowerRight, f64::INFINITY);
    for (position, xs, ys) in candidates {
        let covered = |points: &[(f64, f64)]| {
            let inside =
                |(a, b): &&(f64, f64)| *a >= xs.0 && *a <= xs.1 && *b >= ys.0 && *b <= ys.1;
            points.iter().filter(inside).count() as f64
        };
        let ink =
            covered(&lines) + MARKER * covered(&markers) + THRESHOLD * covered(&threshold_line);
        if ink < best.1 {
            best = (position, ink);
        }
    }
    best.0
}

/// Points evenly along a polyline (in plot fractions), 250 per unit of
/// length, at most 10 000 per segment.
fn sample_polyline(points: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    const DENSITY: f64 = 250.0;
    let mut samples = Vec::new();
    let mut previous: Option<(f64, f64)> = None;
    for p in points {
        if let Some(q) = previous {
            let length = ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt();
            let n = (length * DENSITY).ceil().min(10_000.0) as usize;
            samples.extend((0..n).map(|i| {
                let t = i as f64 / n as f64;
                (q.0 + t * (p.0 - q.0), q.1 + t * (p.1 - q.1))
            }));
        }
        previous = Some(p);
    }
    samples.extend(previous);
    samples
}

/// PNG bytes of an RGB buffer.
fn encode_png(pixels: &[u8], width: u32, height: u32) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().context("encoding the plot as PNG")?;
    writer
        .write_image_data(pixels)
        .context("encoding the plot as PNG")?;
    writer.finish().context("encoding the plot as PNG")?;
    Ok(out)
}

#[cfg(test)]
mod tests;

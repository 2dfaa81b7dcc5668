//! The learning curve of one training run, saved as CSV and as a PNG plot.
//!
//! `microrl train` pushes one [`CurveRow`] per logging interval. The CSV is
//! the record to analyse later (one row per interval, the header
//! `step,episodes,mean_return,eval_mean,eval_std,wall_s`, an empty field
//! where no evaluation ran); the PNG is the picture to glance at, drawn by
//! [`crate::plot`]: the training return as a line and the evaluation means as
//! markers, both against environment steps. [`LearningCurve::read_csv`]
//! reads the CSV back, for `microrl plot`, which overlays several runs.

use std::fmt::Write as _;

use anyhow::Context;
use serde::Deserialize;
use std::path::Path;

use crate::plot::{self, Chart, Series};

/// The CSV header line written by [`LearningCurve::write_csv`].
pub const CSV_HEADER: &str = "step,episodes,mean_return,eval_mean,eval_std,wall_s";

/// Colour of the training-return line (blue).
const TRAIN_COLOR: [u8; 3] = [31, 119, 180];
/// Colour of the evaluation markers (orange).
const EVAL_COLOR: [u8; 3] = [255, 127, 14];

/// A CSV row as the `csv` crate reads it (the fields of [`CSV_HEADER`]).
#[derive(Deserialize)]
struct CsvRow {
    step: u64,
    episodes: u64,
    mean_return: f64,
    eval_mean: Option<f64>,
    eval_std: Option<f64>,
    wall_s: f64,
}

/// A `csv` error as `line N: what` (the crate's own message names the
/// record and byte position, not the field).
fn csv_error(e: &csv::Error) -> String {
    let line = e.position().map_or(0, csv::Position::line);
    match e.kind() {
        csv::ErrorKind::Deserialize { err, .. } => {
            let field = err
                .field()
                .and_then(|k| CSV_HEADER.split(',').nth(k as usize))
                .unwrap_or("?");
            format!("line {line}: `{field}`: {}", err.kind())
        }
        csv::ErrorKind::UnequalLengths { len, .. } => {
            format!("line {line}: {len} fields, expected 6")
        }
        _ => format!("line {line}: {e}"),
    }
}

/// [`LearningCurve::read_csv_for_plot`] keeps a curve of at most this many
/// rows whole: 10 000 rows are 10 million steps at `train`'s row a thousand
/// steps, and about half a megabyte; longer curves are decimated to the
/// picture.
pub const PLOT_EXACT_ROWS: usize = 10_000;

/// Streams the rows of the curve CSV at `path` into `each`, checking the
/// header and every row as [`LearningCurve::from_csv`] does.
fn for_each_row(path: &Path, mut each: impl FnMut(CurveRow)) -> anyhow::Result<()> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut reader = csv::Reader::from_reader(std::io::BufReader::new(file));
    let header = reader.headers().context("reading the header")?;
    anyhow::ensure!(
        header.iter().eq(CSV_HEADER.split(',')),
        "line 1 is not the header `{CSV_HEADER}`"
    );
    let mut record = csv::StringRecord::new();
    let headers = reader.headers()?.clone();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => anyhow::bail!("{}", csv_error(&e)),
        }
        let row: CsvRow = record
            .deserialize(Some(&headers))
            .map_err(|e| anyhow::anyhow!("{}", csv_error(&e)))?;
        each(CurveRow {
            step: row.step,
            episodes: row.episodes,
            mean_return: row.mean_return,
            eval_mean: row.eval_mean,
            eval_std: row.eval_std,
            wall_s: row.wall_s,
        });
    }
}

/// One logging point of a training run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurveRow {
    /// Environment steps taken so far.
    pub step: u64,
    /// Training episodes finished so far.
    pub episodes: u64,
    /// Mean return of the last 100 finished training episodes (NaN before
    /// the first episode ends).
    pub mean_return: f64,
    /// Mean return of the evaluation episodes run at this step, if any.
    pub eval_mean: Option<f64>,
    /// Standard deviation of those evaluation returns, if any.
    pub eval_std: Option<f64>,
    /// Wall-clock seconds since training started.
    pub wall_s: f64,
}

/// The rows of a training run, in the order they were pushed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LearningCurve {
    rows: Vec<CurveRow>,
}

impl LearningCurve {
    /// An empty curve.
    pub fn new() -> LearningCurve {
        LearningCurve::default()
    }

    /// Appends one row.
    pub fn push(&mut self, row: CurveRow) {
        self.rows.push(row);
    }

    /// The rows pushed so far.
    pub fn rows(&self) -> &[CurveRow] {
        &self.rows
    }

    /// The most recent row, if any.
    pub fn last(&self) -> Option<&CurveRow> {
        self.rows.last()
    }

    /// The CSV text: [`CSV_HEADER`] and one line per row, each ending in a
    /// newline. Floats use Rust's shortest round-trip form (`NaN` and `inf`
    /// as such, which common CSV readers accept), `wall_s` is rounded to
    /// milliseconds, and `None` is an empty field.
    pub fn to_csv(&self) -> String {
        let mut out = String::with_capacity(64 * (self.rows.len() + 1));
        out.push_str(CSV_HEADER);
        out.push('\n');
        for row in &self.rows {
            let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
            // Writing to a String cannot fail.
            let _ = writeln!(
                out,
                "{},{},{},{},{},{:.3}",
                row.step,
                row.episodes,
                row.mean_return,
                opt(row.eval_mean),
                opt(row.eval_std),
                row.wall_s,
            );
        }
        out
    }

    /// Parses the text of [`Self::to_csv`] (with the `csv` crate): the
    /// header must be [`CSV_HEADER`], and every row has its six fields (`NaN`
    /// and `inf` accepted, an empty evaluation field read as `None`).
    ///
    /// # Errors
    /// A different header, or a row with a missing, extra or unparsable
    /// field, naming the line and the field.
    pub fn from_csv(text: &str) -> anyhow::Result<LearningCurve> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let header = reader.headers().context("reading the header")?;
        anyhow::ensure!(
            header.iter().eq(CSV_HEADER.split(',')),
            "line 1 is not the header `{CSV_HEADER}`"
        );
        let mut curve = LearningCurve::new();
        for row in reader.deserialize::<CsvRow>() {
            let row = row.map_err(|e| anyhow::anyhow!("{}", csv_error(&e)))?;
            curve.push(CurveRow {
                step: row.step,
                episodes: row.episodes,
                mean_return: row.mean_return,
                eval_mean: row.eval_mean,
                eval_std: row.eval_std,
                wall_s: row.wall_s,
            });
        }
        Ok(curve)
    }

    /// Reads a CSV written by [`Self::write_csv`].
    ///
    /// # Errors
    /// The file cannot be read or is not such a CSV (the error names it).
    pub fn read_csv(path: &Path) -> anyhow::Result<LearningCurve> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        LearningCurve::from_csv(&text)
            .with_context(|| format!("{} is not a learning curve", path.display()))
    }

    /// Reads a CSV written by [`Self::write_csv`] for a plot of `columns`
    /// x `cells` pixels, streaming it: memory is bounded by the picture,
    /// not by the file. Returns the rows to draw and the number of rows of
    /// the file.
    ///
    /// A curve of at most [`PLOT_EXACT_ROWS`] rows is returned whole (its
    /// plot is the one [`Self::read_csv`] would give). A longer one is read
    /// twice: once to check every row and find the data's extent, then
    /// decimated to the picture. The x extent is cut into `columns` buckets
    /// (each narrower than a pixel column of the plot) and of each bucket's
    /// rows with a finite training return the first, the last and those
    /// with the lowest and highest return are kept — the line drawn through
    /// them in file order covers the same pixels as the full line (the M4
    /// aggregation); of the evaluations, the first in each of `columns` x
    /// `cells` cells is kept. Kept rows stay in file order.
    ///
    /// # Errors
    /// As [`Self::read_csv`], naming the file, the line and the field.
    pub fn read_csv_for_plot(
        path: &Path,
        columns: usize,
        cells: usize,
    ) -> anyhow::Result<(LearningCurve, u64)> {
        let context = || format!("{} is not a learning curve", path.display());
        // Pass 1: check every row; the extent; the rows, while few.
        let mut rows = Some(Vec::new());
        let mut count = 0u64;
        let mut x = (f64::INFINITY, f64::NEG_INFINITY);
        let mut y = x;
        for_each_row(path, |row| {
            count += 1;
            if let Some(kept) = &mut rows {
                if kept.len() < PLOT_EXACT_ROWS {
                    kept.push(row);
                } else {
                    rows = None;
                }
            }
            let step = row.step as f64;
            x = (x.0.min(step), x.1.max(step));
            if let Some(e) = row.eval_mean.filter(|e| e.is_finite()) {
                y = (y.0.min(e), y.1.max(e));
            }
        })
        .with_context(context)?;
        if let Some(rows) = rows {
            return Ok((LearningCurve { rows }, count));
        }
        // Pass 2: decimate.
        let columns = columns.max(1);
        let cells = cells.max(1);
        let cell_of = |v: f64, (lo, hi): (f64, f64), n: usize| -> usize {
            if hi > lo {
                (((v - lo) / (hi - lo)) * n as f64).clamp(0.0, (n - 1) as f64) as usize
            } else {
                0
            }
        };
        // Per column: (first, last, lowest, highest) as (index, row).
        type Kept = (u64, CurveRow);
        let mut buckets: Vec<Option<[Kept; 4]>> = vec![None; columns];
        let mut marked = vec![false; columns * cells];
        let mut markers: Vec<Kept> = Vec::new();
        let mut k = 0u64;
        for_each_row(path, |row| {
            let col = cell_of(row.step as f64, x, columns);
            if row.mean_return.is_finite() {
                let kept = (k, row);
                match &mut buckets[col] {
                    None => buckets[col] = Some([kept; 4]),
                    Some([_, last, low, high]) => {
                        *last = kept;
                        if row.mean_return < low.1.mean_return {
                            *low = kept;
                        }
                        if row.mean_return > high.1.mean_return {
                            *high = kept;
                        }
                    }
                }
            }
            if let Some(e) = row.eval_mean.filter(|e| e.is_finite()) {
                let cell = col * cells + cell_of(e, y, cells);
                if !std::mem::replace(&mut marked[cell], true) {
                    markers.push((k, row));
                }
            }
            k += 1;
        })
        .with_context(context)?;
        let mut kept: Vec<Kept> = buckets.into_iter().flatten().flatten().collect();
        kept.extend(markers);
        kept.sort_by_key(|(k, _)| *k);
        kept.dedup_by_key(|(k, _)| *k);
        let rows = kept.into_iter().map(|(_, row)| row).collect();
        Ok((LearningCurve { rows }, count))
    }

    /// Writes [`Self::to_csv`] to `path`, replacing any existing file
    /// atomically ([`crate::atomic::write_file`]).
    pub fn write_csv(&self, path: &Path) -> anyhow::Result<()> {
        crate::atomic::write_file(path, self.to_csv().as_bytes())
    }

    /// Renders the curve as PNG bytes of the given size: the mean training
    /// return as a line, evaluation means as markers, and `threshold` (e.g.
    /// the return at which the task counts as solved) as a dashed line.
    ///
    /// # Errors
    /// The PNG encoder refuses the size.
    pub fn render_png(
        &self,
        title: &str,
        threshold: Option<f64>,
        width: u32,
        height: u32,
    ) -> anyhow::Result<Vec<u8>> {
        let train: Vec<(f64, f64)> = self
            .rows
            .iter()
            .map(|r| (r.step as f64, r.mean_return))
            .collect();
        let eval: Vec<(f64, f64)> = self
            .rows
            .iter()
            .filter_map(|r| r.eval_mean.map(|m| (r.step as f64, m)))
            .collect();
        let mut series = vec![Series {
            label: "train return (mean of last 100)",
            points: &train,
            color: TRAIN_COLOR,
            markers: false,
        }];
        if !eval.is_empty() {
            series.push(Series {
                label: "eval return (mean)",
                points: &eval,
                color: EVAL_COLOR,
                markers: true,
            });
        }
        let threshold_label = threshold.map(|t| format!("threshold {t}"));
        let chart = Chart {
            title,
            x_label: "environment steps",
            y_label: "episode return",
            series: &series,
            threshold: threshold.zip(threshold_label.as_deref()),
        };
        plot::render_png(&chart, width, height)
    }

    /// Writes the plot of [`Self::render_png`] to `path` at 800x500,
    /// replacing any existing file atomically.
    pub fn write_png(
        &self,
        path: &Path,
        title: &str,
        threshold: Option<f64>,
    ) -> anyhow::Result<()> {
        let bytes = self.render_png(title, threshold, plot::DEFAULT_WIDTH, plot::DEFAULT_HEIGHT)?;
        crate::atomic::write_file(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(step: u64, mean_return: f64, eval: Option<(f64, f64)>) -> CurveRow {
        CurveRow {
            step,
            episodes: step / 50,
            mean_return,
            eval_mean: eval.map(|e| e.0),
            eval_std: eval.map(|e| e.1),
            wall_s: step as f64 / 1000.0,
        }
    }

    #[test]
    fn empty_curve_is_just_the_header() {
        assert_eq!(LearningCurve::new().to_csv(), format!("{CSV_HEADER}\n"));
    }

    #[test]
    fn csv_rows_leave_missing_evaluations_empty() {
        let mut curve = LearningCurve::new();
        curve.push(row(1000, 21.5, None));
        curve.push(row(2000, 37.25, Some((120.0, 15.5))));
        let csv = curve.to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                "step,episodes,mean_return,eval_mean,eval_std,wall_s",
                "1000,20,21.5,,,1.000",
                "2000,40,37.25,120,15.5,2.000",
            ]
        );
        assert!(csv.ends_with('\n'));
        for line in &lines {
            assert_eq!(line.split(',').count(), 6, "{line}");
        }
    }

    #[test]
    fn csv_floats_round_trip_and_nan_is_written() {
        let mut curve = LearningCurve::new();
        curve.push(CurveRow {
            step: 7,
            episodes: 0,
            mean_return: f64::NAN,
            eval_mean: Some(-1234.5678901234567),
            eval_std: None,
            wall_s: 0.1234567,
        });
        let csv = curve.to_csv();
        let fields: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(
            fields,
            ["7", "0", "NaN", "-1234.5678901234567", "", "0.123"]
        );
        assert_eq!(fields[3].parse::<f64>().unwrap(), -1234.5678901234567);
    }

    #[test]
    fn write_csv_and_png_create_files() {
        let dir = std::env::temp_dir().join(format!("microrl-curve-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut curve = LearningCurve::new();
        for i in 0..=20u64 {
            let eval = (i % 5 == 0).then_some((20.0 + 20.0 * i as f64, 3.0));
            curve.push(row(i * 5000, 20.0 + 20.0 * i as f64, eval));
        }
        let csv_path = dir.join("curve.csv");
        let png_path = dir.join("curve.png");
        curve.write_csv(&csv_path).unwrap();
        curve
            .write_png(&png_path, "CartPole-v1", Some(475.0))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&csv_path).unwrap(), curve.to_csv());
        let png = std::fs::read(&png_path).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn csv_reads_back_what_was_written() {
        let mut curve = LearningCurve::new();
        curve.push(row(1000, f64::NAN, None));
        curve.push(row(2000, -1234.5678901234567, Some((-150.25, 15.5))));
        curve.push(row(3000, 37.25, Some((f64::INFINITY, 0.0))));
        let back = LearningCurve::from_csv(&curve.to_csv()).unwrap();
        assert_eq!(back.rows().len(), 3);
        assert!(back.rows()[0].mean_return.is_nan());
        assert_eq!(back.rows()[1..], curve.rows()[1..]);
        assert_eq!(
            LearningCurve::from_csv(&format!("{CSV_HEADER}\n"))
                .unwrap()
                .rows(),
            []
        );
    }

    #[test]
    fn csv_errors_name_the_line_and_field() {
        for (text, needle) in [
            ("", "line 1 is not the header"),
            ("step,episodes\n", "line 1 is not the header"),
            (
                "step,episodes,mean_return,eval_mean,eval_std,wall_s\n1,2,3,,\n",
                "line 2: 5 fields, expected 6",
            ),
            (
                "step,episodes,mean_return,eval_mean,eval_std,wall_s\n1,2,3,,,0\n1,2,x,,,0\n",
                "line 3: `mean_return`",
            ),
            (
                "step,episodes,mean_return,eval_mean,eval_std,wall_s\n-1,2,3,,,0\n",
                "line 2: `step`",
            ),
        ] {
            let err = LearningCurve::from_csv(text).unwrap_err();
            assert!(format!("{err}").contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn plot_reading_keeps_short_curves_whole_and_decimates_long_ones() {
        let dir = std::env::temp_dir().join(format!("microrl-curve-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("curve.csv");
        let mut curve = LearningCurve::new();
        curve.push(row(0, f64::NAN, None));
        for i in 1..200u64 {
            let eval = (i % 7 == 0).then_some((i as f64 * 2.0, 1.0));
            curve.push(row(i * 1000, (i % 13) as f64 * 10.0, eval));
        }
        curve.write_csv(&path).unwrap();
        // Short: exactly what read_csv gives (so the plot is unchanged).
        let (short, count) = LearningCurve::read_csv_for_plot(&path, 800, 500).unwrap();
        assert_eq!(count, 200);
        assert_eq!(
            short.to_csv(),
            LearningCurve::read_csv(&path).unwrap().to_csv()
        );
        // Long: at most four rows a column plus one evaluation a cell, in
        // file order, with each column's extremes and every row counted.
        let mut long = LearningCurve::new();
        let n = 3 * PLOT_EXACT_ROWS as u64;
        for i in 0..n {
            let eval = (i % 100 == 0).then_some((500.0 * i as f64 / n as f64, 1.0));
            long.push(row(i, ((i * 7919) % 1000) as f64, eval));
        }
        long.write_csv(&path).unwrap();
        let (drawn, count) = LearningCurve::read_csv_for_plot(&path, 100, 50).unwrap();
        assert_eq!(count, n);
        assert!(
            drawn.rows().len() <= 4 * 100 + 100 * 50,
            "{}",
            drawn.rows().len()
        );
        assert!(drawn.rows().windows(2).all(|w| w[0].step < w[1].step));
        let values: Vec<f64> = drawn.rows().iter().map(|r| r.mean_return).collect();
        assert!(values.contains(&0.0) && values.contains(&999.0));
        let evals = drawn
            .rows()
            .iter()
            .filter(|r| r.eval_mean.is_some())
            .count();
        assert!(evals >= 100, "{evals}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn write_csv_reports_the_path_on_failure() {
        let path = Path::new("/nonexistent-dir-for-microrl-test/curve.csv");
        let err = LearningCurve::new().write_csv(path).unwrap_err();
        assert!(format!("{err:#}").contains("nonexistent-dir-for-microrl-test"));
    }
}

//! Unit tests of `plot`.

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

/// Pixels of `color` or of its anti-aliased blend with the white
/// background: `255 - p = alpha * (255 - color)`, one alpha for all
/// three channels (at least 0.2).
fn count_tint(pixels: &[u8], color: [u8; 3]) -> usize {
    pixels
        .chunks_exact(3)
        .filter(|p| {
            let alpha = |i: usize| (255.0 - f64::from(p[i])) / (255.0 - f64::from(color[i]));
            let a = alpha(0);
            a >= 0.2 && (1..3).all(|i| (alpha(i) - a).abs() < 0.1)
        })
        .count()
}

/// Dark grey pixels: the text (and axes).
fn dark_text_pixels(pixels: &[u8]) -> usize {
    pixels
        .chunks_exact(3)
        .filter(|p| p[0] < 120 && p[0] == p[1] && p[1] == p[2])
        .count()
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
fn png_has_the_size_the_lines_markers_threshold_and_text() {
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
    assert!(
        count_color(&pixels, THRESHOLD_COLOR) > 50,
        "threshold drawn"
    );
    assert!(dark_text_pixels(&pixels) > 500, "text drawn");
    // Without a threshold there is no green.
    let (_, _, pixels) = decode(&render_png(&chart(&series, None), 640, 400).unwrap());
    assert_eq!(count_color(&pixels, THRESHOLD_COLOR), 0);
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
            for (w, h) in [(800, 500), MIN_SIZE, (2000, 400)] {
                let (dw, dh, _) =
                    decode(&render_png(&chart(&series, Some((1.0, "t"))), w, h).unwrap());
                assert_eq!((dw, dh), (w, h));
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
fn sizes_out_of_range_are_refused() {
    for (w, h) in [(0, 0), (1, 1), (239, 500), (800, 159), (8001, 500)] {
        let err = render_png(&chart(&[], None), w, h).unwrap_err();
        assert!(format!("{err}").contains(&format!("{w}x{h}")), "{err}");
    }
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
    assert!(count_color(&pixels, BLUE) > 10);
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
    assert!(
        count_tint(&pixels, BLUE) > 100,
        "{}",
        count_tint(&pixels, BLUE)
    );
}

#[test]
fn ranges_snap_to_a_1_2_5_grid() {
    assert_eq!(nice_range(20.0, 497.0), (0.0, 500.0));
    assert_eq!(nice_range(0.0, 100_000.0), (0.0, 100_000.0));
    assert_eq!(nice_range(-1550.0, -150.0), (-1600.0, 0.0));
    assert_eq!(nice_range(256.0, 2048.0), (0.0, 2500.0));
    let (lo, hi) = nice_range(500.0, 500.0);
    assert!(lo < 500.0 && hi > 500.0);
    assert_eq!(nice_range(f64::INFINITY, f64::NEG_INFINITY), (0.0, 1.0));
    let (lo, hi) = nice_range(-1e300, 1e300);
    assert!(lo <= -1e300 && hi >= 1e300 && (hi - lo).is_finite());
}

#[test]
fn tick_labels_are_compact() {
    let labels = |values: &[f64], extent| -> Vec<String> {
        values.iter().map(|v| tick_label(*v, extent)).collect()
    };
    assert_eq!(
        labels(&[0.0, 20e3, 40e3, 100e3], 100e3),
        ["0", "20k", "40k", "100k"]
    );
    assert_eq!(labels(&[0.0, 100.0, 500.0], 500.0), ["0", "100", "500"]);
    assert_eq!(labels(&[-1600.0, -200.0], 1600.0), ["-1600", "-200"]);
    assert_eq!(
        labels(&[0.0, 0.2, 0.30000000000000004, 1.0], 1.0),
        ["0", "0.2", "0.3", "1"]
    );
    assert_eq!(labels(&[12_500.0, 1.5e6], 3e6), ["0.0125M", "1.5M"]);
    assert_eq!(labels(&[-0.0, -1e-9], 1.0), ["0", "0"]);
    assert_eq!(tick_label(2e12, 2e12), "2e12");
}

#[test]
fn the_legend_avoids_the_data() {
    use SeriesLabelPosition::*;
    let rising = [(0.0, 0.0), (100.0, 100.0)];
    let series = [Series {
        label: "rising",
        points: &rising,
        color: BLUE,
        markers: false,
    }];
    let c = chart(&series, None);
    let at = |threshold| legend_position(&c, (0.0, 100.0), (0.0, 100.0), threshold, (0.4, 0.2));
    assert!(matches!(at(None), LowerRight), "{:?}", at(None));
    // A threshold along the bottom pushes it up, to the left of the line.
    assert!(matches!(at(Some(5.0)), UpperLeft), "{:?}", at(Some(5.0)));
    // Markers count too: a cluster in the lower right moves it.
    let cluster: Vec<Point> = (0..20).map(|i| (90.0 + i as f64 / 4.0, 5.0)).collect();
    let series = [
        series[0],
        Series {
            label: "",
            points: &cluster,
            color: ORANGE,
            markers: true,
        },
    ];
    let c = chart(&series, Some((50.0, "t")));
    let position = legend_position(&c, (0.0, 100.0), (0.0, 100.0), Some(50.0), (0.4, 0.2));
    assert!(matches!(position, UpperLeft), "{position:?}");
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
    let series = [Series {
        label: "train return",
        points: &points,
        color: BLUE,
        markers: false,
    }];
    let pendulum = Chart {
        title: "Pendulum-v1",
        x_label: "environment steps",
        y_label: "episode return",
        series: &series,
        threshold: Some((-200.0, "threshold -200")),
    };
    write_png(&dir.join("sample_curve_pendulum.png"), &pendulum).unwrap();
}

//! Plots of summary rows in the style of seed `000_e8004e1596fde6a5.txt` §4.2 (SVG, via plotters):
//!
//! - [`plot_sweep`] — a metric against competitors per node, one line per configuration with 90 % Student-t
//!   error bars: response time on a log scale (Figures 3 and 4), on a linear scale for a few configurations
//!   (Figure 5), fairness F with the fair-share line F = 1 (Figure 6), CPU time, rate;
//! - [`plot_job_bars`] — one group of bars per configuration, one bar per job (Mixed workload, Figures 7–8);
//! - [`plot_histograms`] — round-trip time histograms, one panel per configuration, log-scale counts;
//! - [`plot_series`] — named series of estimates against a whole-number x, for figures that are not a sweep.
//! - [`render_lines`] — lines of plain `(x, y)` points on linear or log axes, as an SVG string: the docs'
//!   figures drawn from their tables (`crate::docdata`).
//!
//! Each function writes one file and takes rows from [`crate::summary::summarize`], so simulated and real runs
//! plot the same way.

use crate::stats::{significant, Estimate};
use crate::summary::SummaryRow;
use crate::Histogram;
use anyhow::{bail, Context};
use plotters::coord::ranged1d::{AsRangedCoord, SegmentValue, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;
use std::ops::Range;
use std::path::Path;

/// Plot size in pixels.
const SIZE: (u32, u32) = (900, 560);

/// What a sweep plot puts on its y axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// The parallel job's response (wall-clock) time, seconds.
    ResponseTime,
    /// The parallel job's CPU time, seconds.
    CpuTime,
    /// The parallel job's fairness F.
    JobFairness,
    /// The competitors' fairness F.
    CompetitorFairness,
    /// Work units per second (round trips/s, barriers/s).
    Rate,
}

impl Metric {
    fn axis_label(self) -> &'static str {
        match self {
            Metric::ResponseTime => "job response time, s",
            Metric::CpuTime => "job CPU time, s",
            Metric::JobFairness => "parallel job fairness F = N Tc / Te",
            Metric::CompetitorFairness => "competitor fairness F = N Tc / Te",
            Metric::Rate => "work units per second",
        }
    }

    fn of(self, row: &SummaryRow) -> Option<Estimate> {
        match self {
            Metric::ResponseTime => Some(row.response_s),
            Metric::CpuTime => Some(row.cpu_s),
            Metric::JobFairness => Some(row.job_fairness),
            Metric::CompetitorFairness => row.competitor_fairness,
            Metric::Rate => Some(row.rate_per_s),
        }
    }

    fn is_fairness(self) -> bool {
        matches!(self, Metric::JobFairness | Metric::CompetitorFairness)
    }
}

/// The y axis of a sweep plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Base-10 logarithmic, as in the seed's Figures 3 and 4.
    Log,
}

/// What a job bar plot shows per job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobMetric {
    ResponseTime,
    CpuTime,
    Fairness,
}

impl JobMetric {
    fn axis_label(self) -> &'static str {
        match self {
            JobMetric::ResponseTime => "wall-clock time to completion, s",
            JobMetric::CpuTime => "CPU time, s",
            JobMetric::Fairness => "fairness F = N Tc / Te",
        }
    }
}

fn color(i: usize) -> RGBColor {
    // Colour-blind-safe (Okabe–Ito) first, then plotters' palette.
    const OKABE_ITO: [RGBColor; 7] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(230, 159, 0),
        RGBColor(86, 180, 233),
        RGBColor(0, 0, 0),
    ];
    OKABE_ITO.get(i).copied().unwrap_or_else(|| {
        let c = Palette99::pick(i).to_rgba();
        RGBColor(c.0, c.1, c.2)
    })
}

/// Configurations in first-seen order.
fn config_order<'a>(rows: &'a [SummaryRow], only: Option<&[String]>) -> Vec<&'a str> {
    let mut order: Vec<&str> = Vec::new();
    for r in rows {
        let wanted = only.is_none_or(|o| o.contains(&r.config));
        if wanted && !order.contains(&r.config.as_str()) {
            order.push(&r.config);
        }
    }
    order
}

/// One line per configuration of `metric` against competitors per node, with 90 % error bars. `only` keeps just
/// the named configurations (Figure 5's two spin-block lines). Fairness plots add the fair-share line F = 1.
pub fn plot_sweep(
    path: &Path,
    title: &str,
    rows: &[SummaryRow],
    metric: Metric,
    scale: Scale,
    only: Option<&[String]>,
) -> anyhow::Result<()> {
    let configs = config_order(rows, only);
    let points: Vec<(usize, u32, Estimate)> = rows
        .iter()
        .filter_map(|r| {
            let series = configs.iter().position(|c| *c == r.config)?;
            Some((series, r.competitors, metric.of(r)?))
        })
        .collect();
    if points.is_empty() {
        bail!(
            "nothing to plot in {}: no summary row has {:?}",
            path.display(),
            metric
        );
    }
    let x_min = points.iter().map(|p| p.1).min().unwrap_or(0) as f64;
    let x_max = points.iter().map(|p| p.1).max().unwrap_or(0) as f64;
    let mut y_low = points
        .iter()
        .map(|p| p.2.bounds().0)
        .fold(f64::INFINITY, f64::min);
    let mut y_high = points
        .iter()
        .map(|p| p.2.bounds().1)
        .fold(f64::NEG_INFINITY, f64::max);
    if metric.is_fairness() {
        y_low = y_low.min(1.0);
        y_high = y_high.max(1.0);
    }
    let x_range = (x_min - 0.5)..(x_max + 0.5);

    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    match scale {
        Scale::Log => {
            // Lower ends of intervals can reach zero or below; a log axis starts at the smallest positive value.
            // The top is 6× the highest point: headroom for the upper-left legend.
            let smallest_positive = points
                .iter()
                .map(|p| p.2.mean)
                .filter(|v| *v > 0.0)
                .fold(f64::INFINITY, f64::min);
            if !smallest_positive.is_finite() {
                bail!(
                    "{}: a log scale needs positive values of {:?}",
                    path.display(),
                    metric
                );
            }
            let low = y_low.max(smallest_positive / 2.0) / 1.5;
            let y_range = (low..y_high * 6.0).log_scale();
            let mut chart = sweep_chart(&root, title, x_range, y_range, metric)?;
            draw_series(&mut chart, &configs, &points, low)?;
            draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
        Scale::Linear => {
            let pad = ((y_high - y_low) * 0.08).max(y_high.abs() * 0.01).max(1e-9);
            let low = if metric.is_fairness() || y_low - pad < 0.0 {
                (y_low - pad).min(0.0)
            } else {
                y_low - pad
            };
            // Headroom above the lines for the upper-left legend (fairness keeps its legend low).
            let top_pad = if metric.is_fairness() {
                pad
            } else {
                (y_high - low) * 0.35
            };
            let mut chart =
                sweep_chart(&root, title, x_range.clone(), low..y_high + top_pad, metric)?;
            if metric.is_fairness() {
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x_range.start, 1.0), (x_range.end, 1.0)],
                        6,
                        4,
                        BLACK.mix(0.6).stroke_width(1),
                    ))?
                    .label("fair share, F = 1")
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.6)));
            }
            draw_series(&mut chart, &configs, &points, f64::NEG_INFINITY)?;
            // Response times grow to the right and F starts at 1 on the left: keep the legend off the lines.
            let corner = if metric.is_fairness() {
                SeriesLabelPosition::LowerLeft
            } else {
                SeriesLabelPosition::UpperLeft
            };
            draw_legend(&mut chart, corner)?;
        }
    }
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A chart on `root` in the plots' common frame: `title` above, the margin, room for the x labels below and
/// `y_label_area` pixels for the y labels.
fn titled_chart<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &'b str,
    y_label_area: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(y_label_area);
    builder
}

/// A sweep plot's chart with its axes drawn: competitors per node on x (whole numbers labelled), `metric` on y
/// over `y_range`, linear or log.
fn sweep_chart<'a, DB, Y>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    x_range: Range<f64>,
    y_range: Y,
    metric: Metric,
) -> anyhow::Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y::CoordDescType>>>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = titled_chart(root, title, 80).build_cartesian_2d(x_range, y_range)?;
    chart
        .configure_mesh()
        .x_desc("competitors per node")
        .y_desc(metric.axis_label())
        .y_label_formatter(&|v| significant(*v))
        .x_label_formatter(&integer_label)
        .draw()?;
    Ok(chart)
}

/// The legend of the labelled series, boxed, in the `corner` of the plot.
fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    corner: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(corner)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Competitor counts are integers: label whole values only (the axis may place ticks at halves).
fn integer_label(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        String::new()
    }
}

/// Lines, markers and error bars of every configuration; interval ends below `floor` are cut at it.
fn draw_series<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    configs: &[&str],
    points: &[(usize, u32, Estimate)],
    floor: f64,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
    DB::ErrorType: 'static,
{
    for (i, config) in configs.iter().enumerate() {
        let c = color(i);
        let mut line: Vec<(u32, Estimate)> = points
            .iter()
            .filter(|p| p.0 == i)
            .map(|p| (p.1, p.2))
            .collect();
        line.sort_by_key(|p| p.0);
        chart
            .draw_series(LineSeries::new(
                line.iter().map(|(x, e)| (*x as f64, e.mean)),
                c.stroke_width(2),
            ))
            .map_err(|e| anyhow::anyhow!("drawing {config}: {e}"))?
            .label(*config)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(
                line.iter()
                    .map(|(x, e)| Circle::new((*x as f64, e.mean), 4, c.filled())),
            )
            .map_err(|e| anyhow::anyhow!("drawing {config}: {e}"))?;
        chart
            .draw_series(
                line.iter()
                    .filter(|(_, e)| e.half_width.is_some())
                    .map(|(x, e)| {
                        let (low, high) = e.bounds();
                        ErrorBar::new_vertical(
                            *x as f64,
                            low.max(floor),
                            e.mean,
                            high,
                            c.stroke_width(1),
                            8,
                        )
                    }),
            )
            .map_err(|e| anyhow::anyhow!("drawing {config}: {e}"))?;
    }
    Ok(())
}

/// Grouped horizontal bars: one group per configuration (top to bottom in row order), one bar per job, the
/// mean with its 90 % interval as a whisker. Uses the rows at `competitors` competitors per node.
pub fn plot_job_bars(
    path: &Path,
    title: &str,
    rows: &[SummaryRow],
    competitors: u32,
    metric: JobMetric,
) -> anyhow::Result<()> {
    let rows: Vec<&SummaryRow> = rows
        .iter()
        .filter(|r| r.competitors == competitors)
        .collect();
    let mut jobs: Vec<&str> = Vec::new();
    for r in &rows {
        for j in &r.jobs {
            if !jobs.contains(&j.name.as_str()) {
                jobs.push(&j.name);
            }
        }
    }
    if rows.is_empty() || jobs.is_empty() {
        bail!(
            "nothing to plot in {}: no jobs at {competitors} competitors",
            path.display()
        );
    }
    let value = |r: &SummaryRow, job: &str| {
        r.jobs.iter().find(|j| j.name == job).map(|j| match metric {
            JobMetric::ResponseTime => j.response_s,
            JobMetric::CpuTime => j.cpu_s,
            JobMetric::Fairness => j.fairness,
        })
    };
    let mut x_max = rows
        .iter()
        .flat_map(|r| {
            jobs.iter()
                .filter_map(|j| value(r, j))
                .map(|e| e.bounds().1)
        })
        .fold(0.0, f64::max);
    if metric == JobMetric::Fairness {
        x_max = x_max.max(1.0);
    }
    let groups = rows.len() as f64;
    let root = SVGBackend::new(path, (SIZE.0, 140 + 70 * rows.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart =
        titled_chart(&root, title, 10).build_cartesian_2d(0.0..x_max * 1.12, 0.0..groups)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(metric.axis_label())
        .x_label_formatter(&|v| significant(*v))
        .draw()?;
    let bar = 0.66 / jobs.len() as f64;
    for (j, job) in jobs.iter().enumerate() {
        let c = color(j);
        let bars: Vec<(f64, f64, Estimate)> = rows
            .iter()
            .enumerate()
            .filter_map(|(g, r)| {
                // Group g from the top: its bars span [top - 0.92, top - 0.26], its label hangs from top - 0.03.
                let top = groups - g as f64;
                let y0 = top - 0.92 + j as f64 * bar;
                value(r, job).map(|e| (y0, y0 + bar * 0.9, e))
            })
            .collect();
        chart
            .draw_series(
                bars.iter()
                    .map(|(y0, y1, e)| Rectangle::new([(0.0, *y0), (e.mean, *y1)], c.filled())),
            )?
            .label(*job)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        chart.draw_series(bars.iter().filter(|(_, _, e)| e.half_width.is_some()).map(
            |(y0, y1, e)| {
                let (low, high) = e.bounds();
                ErrorBar::new_horizontal(
                    (y0 + y1) / 2.0,
                    low.max(0.0),
                    e.mean,
                    high,
                    BLACK.stroke_width(1),
                    6,
                )
            },
        ))?;
    }
    chart.draw_series(rows.iter().enumerate().map(|(g, r)| {
        Text::new(
            r.config.clone(),
            (x_max * 0.005, groups - g as f64 - 0.03),
            ("sans-serif", 15).into_font(),
        )
    }))?;
    if metric == JobMetric::Fairness {
        chart.draw_series(DashedLineSeries::new(
            [(1.0, 0.0), (1.0, groups)],
            6,
            4,
            BLACK.mix(0.6).stroke_width(1),
        ))?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A duration given in microseconds as a short label: `80µs`, `1.5ms`, `2s`.
fn duration_label(us: f64) -> String {
    let (value, unit) = if us >= 1e6 {
        (us / 1e6, "s")
    } else if us >= 1e3 {
        (us / 1e3, "ms")
    } else {
        (us, "µs")
    };
    let text = format!("{value:.1}");
    format!("{}{unit}", text.trim_end_matches(".0"))
}

/// Round-trip (or barrier-iteration) time histograms, one panel per `(label, histogram)`, counts on a log scale.
pub fn plot_histograms(
    path: &Path,
    title: &str,
    panels: &[(String, Histogram)],
) -> anyhow::Result<()> {
    if panels.is_empty() {
        bail!("nothing to plot in {}: no histograms", path.display());
    }
    for (label, h) in panels {
        if h.counts.len() != h.upper_edges_us.len() + 1 && h.counts.len() != h.upper_edges_us.len()
        {
            bail!(
                "{}: histogram '{label}' has {} counts for {} edges; expected one count per edge plus at most \
                 one open-ended bucket",
                path.display(),
                h.counts.len(),
                h.upper_edges_us.len()
            );
        }
    }
    let root = SVGBackend::new(path, (SIZE.0, 60 + 230 * panels.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 22))?;
    let areas = root.split_evenly((panels.len(), 1));
    for (i, ((label, h), area)) in panels.iter().zip(areas.iter()).enumerate() {
        let buckets = h.counts.len() as i32;
        let max_count = h.counts.iter().copied().max().unwrap_or(1).max(1) as f64;
        let edges = h.upper_edges_us.clone();
        let label_every = (h.counts.len()).div_ceil(10).max(1);
        let mut chart = ChartBuilder::on(area)
            .caption(label, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(70)
            // `0..n - 1` segmented has the n segments 0, 1, ..., n - 1: one per bucket.
            .build_cartesian_2d(
                (0..buckets - 1).into_segmented(),
                (0.8..max_count * 2.0).log_scale(),
            )?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(buckets as usize)
            .x_desc("time per round trip or iteration (bucket upper edge)")
            .y_desc("count")
            .x_label_formatter(&|v| match v {
                // At most about ten labels, so they do not run into each other.
                SegmentValue::CenterOf(b) if (*b as usize).is_multiple_of(label_every) => {
                    match edges.get(*b as usize) {
                        Some(e) => format!("≤{}", duration_label(*e)),
                        None => format!(
                            ">{}",
                            edges.last().map_or("0".into(), |e| duration_label(*e))
                        ),
                    }
                }
                _ => String::new(),
            })
            .y_label_formatter(&|v| significant(*v))
            .draw()?;
        let c = color(i);
        chart.draw_series(
            h.counts
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(b, n)| {
                    Rectangle::new(
                        [
                            (SegmentValue::Exact(b as i32), 0.8),
                            (SegmentValue::Exact(b as i32 + 1), *n as f64),
                        ],
                        c.filled(),
                    )
                }),
        )?;
    }
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// One line per named series of estimates against a whole-number x (e.g. a workload's number), with 90 % error
/// bars, on a log or linear y axis labelled `y_label`: for figures that are not a sweep over competitors (seed
/// `001`'s slowdowns against FIFO).
pub fn plot_series(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, Estimate)>)],
    scale: Scale,
) -> anyhow::Result<()> {
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    let points: Vec<(usize, u32, Estimate)> = series
        .iter()
        .enumerate()
        .flat_map(|(i, (_, line))| {
            line.iter()
                .map(move |(x, e)| (i, x.round().max(0.0) as u32, *e))
        })
        .filter(|p| p.2.mean.is_finite())
        .collect();
    if points.is_empty() {
        bail!("nothing to plot in {}", path.display());
    }
    let x_min = points.iter().map(|p| p.1).min().unwrap_or(0) as f64;
    let x_max = points.iter().map(|p| p.1).max().unwrap_or(0) as f64;
    let y_high = points
        .iter()
        .map(|p| p.2.bounds().1)
        .fold(f64::NEG_INFINITY, f64::max);
    let y_low = points
        .iter()
        .map(|p| p.2.bounds().0)
        .fold(f64::INFINITY, f64::min);
    let x_range = (x_min - 0.5)..(x_max + 0.5);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    match scale {
        Scale::Log => {
            let smallest_positive = points
                .iter()
                .map(|p| p.2.mean)
                .filter(|v| *v > 0.0)
                .fold(f64::INFINITY, f64::min);
            if !smallest_positive.is_finite() {
                bail!("{}: a log scale needs positive values", path.display());
            }
            let low = y_low.max(smallest_positive / 2.0) / 1.5;
            let mut chart = titled_chart(&root, title, 80)
                .build_cartesian_2d(x_range, (low..y_high * 6.0).log_scale())?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .y_label_formatter(&|v| significant(*v))
                .x_label_formatter(&integer_label)
                .draw()?;
            draw_series(&mut chart, &names, &points, low)?;
            draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
        Scale::Linear => {
            let pad = ((y_high - y_low) * 0.08).max(1e-9);
            let low = (y_low - pad).min(0.0);
            let mut chart = titled_chart(&root, title, 80)
                .build_cartesian_2d(x_range, low..y_high + (y_high - low) * 0.35)?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .y_label_formatter(&|v| significant(*v))
                .x_label_formatter(&integer_label)
                .draw()?;
            draw_series(&mut chart, &names, &points, f64::NEG_INFINITY)?;
            draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
    }
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// How one axis of [`render_lines`] is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    Linear,
    /// Base-10 logarithmic (values ≤ 0 are left out).
    Log,
}

impl Axis {
    fn to_plot(self, v: f64) -> Option<f64> {
        match self {
            Axis::Linear => v.is_finite().then_some(v),
            Axis::Log => (v > 0.0 && v.is_finite()).then(|| v.log10()),
        }
    }

    /// A tick's label; `whole`: every value on this axis is a whole number, so only whole ticks are labelled.
    fn label(self, v: f64, whole: bool) -> String {
        match self {
            Axis::Linear if whole => integer_label(&v),
            Axis::Linear => significant(v),
            // Ticks fall at even steps of log10: two significant digits say where without false precision.
            Axis::Log => {
                let value = 10f64.powf(v);
                let digits = (1 - value.log10().floor() as i32).max(0) as usize;
                format!("{value:.digits$}")
            }
        }
    }
}

/// One line with markers per named series of `(x, y)` points, as an SVG document: the figures the docs draw
/// from their tables ([`crate::docdata`]). A log axis is drawn as `log10` of the values on a linear one, labelled
/// with the values, so every combination of scales is one chart type. Deterministic: the same points give the
/// same bytes (no system fonts are read), so a page's figure can be checked against its data.
pub fn render_lines(
    title: &str,
    axes: (&str, Axis, &str, Axis),
    series: &[(String, Vec<(f64, f64)>)],
) -> anyhow::Result<String> {
    render_lines_named_x(title, axes, series, None)
}

/// [`render_lines`], with `x_names`: the x values are the categories 1, 2, … and each is labelled with its name
/// (turned a quarter when the names would run into each other).
pub fn render_lines_named_x(
    title: &str,
    axes: (&str, Axis, &str, Axis),
    series: &[(String, Vec<(f64, f64)>)],
    x_names: Option<&[String]>,
) -> anyhow::Result<String> {
    let (x_label, x_axis, y_label, y_axis) = axes;
    let x_axis = if x_names.is_some() {
        Axis::Linear
    } else {
        x_axis
    };
    let lines: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(name, points)| {
            let kept = points
                .iter()
                .filter_map(|&(x, y)| Some((x_axis.to_plot(x)?, y_axis.to_plot(y)?)))
                .collect();
            (name.as_str(), kept)
        })
        .collect();
    let all: Vec<(f64, f64)> = lines.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    if all.is_empty() {
        bail!("{title}: no point to plot");
    }
    let range = |values: &mut dyn Iterator<Item = f64>, bottom_room: f64, top_room: f64| {
        let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let span = (hi - lo).max(hi.abs() * 0.1).max(1e-9);
        (lo - span * bottom_room)..(hi + span * top_room)
    };
    let x_range = match x_names {
        Some(names) => 0.5..names.len() as f64 + 0.5,
        None => range(&mut all.iter().map(|p| p.0), 0.05, 0.05),
    };
    // Room above the lines for the legend.
    let y_range = range(
        &mut all.iter().map(|p| p.1),
        0.08,
        0.1 + 0.05 * lines.len() as f64,
    );
    let (x_whole, y_whole) = (
        all.iter().all(|p| p.0 == p.0.round()),
        all.iter().all(|p| p.1 == p.1.round()),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        // Names too long to stand side by side under their points are turned a quarter.
        let longest = x_names.map_or(0, |n| {
            n.iter().map(|s| s.chars().count()).max().unwrap_or(0)
        });
        let turned = x_names.is_some_and(|n| n.len() * (longest * 7 + 8) > (SIZE.0 - 110) as usize);
        let mut builder = titled_chart(&root, title, 80);
        if turned {
            builder.x_label_area_size(45 + 7 * longest as u32);
        }
        let y_bottom = y_range.start;
        let mut chart = builder.build_cartesian_2d(x_range, y_range)?;
        let x_label_of = |v: &f64| match x_names {
            // Turned names are drawn below (the mesh centres its labels on their ticks).
            Some(_) if turned => String::new(),
            Some(names) if *v == v.round() && *v >= 1.0 => {
                names.get(*v as usize - 1).cloned().unwrap_or_default()
            }
            Some(_) => String::new(),
            None => x_axis.label(*v, x_whole),
        };
        let y_label_of = |v: &f64| y_axis.label(*v, y_whole);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_label)
            .y_desc(y_label)
            .x_label_formatter(&x_label_of)
            .y_label_formatter(&y_label_of);
        if let Some(names) = x_names {
            // Enough ticks that every whole x gets one.
            mesh.x_labels(2 * names.len() + 1);
        }
        mesh.draw()?;
        if let (Some(names), true) = (x_names, turned) {
            use plotters::style::text_anchor::{HPos, Pos, VPos};
            let style = TextStyle::from(
                ("sans-serif", 13)
                    .into_font()
                    .transform(FontTransform::Rotate90),
            )
            .pos(Pos::new(HPos::Left, VPos::Center));
            for (i, name) in names.iter().enumerate() {
                let (x, y) = chart.backend_coord(&((i + 1) as f64, y_bottom));
                root.draw(&Text::new(name.clone(), (x, y + 8), style.clone()))?;
            }
        }
        for (i, (name, points)) in lines.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::summarize;
    use crate::summary::tests::{job, record};
    use crate::JobRole;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cosched-plot-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn line_figures_are_deterministic_svg_with_every_series_and_leave_out_what_a_log_axis_cannot_show(
    ) {
        let series = vec![
            (
                "Wrk1".to_string(),
                vec![(0.2, 2.28), (0.4, 2.27), (0.8, 2.22), (0.0, 9.0)],
            ),
            ("Wrk2".to_string(), vec![(0.2, 2.46), (12.8, 2.48)]),
        ];
        let axes = ("q (s)", Axis::Log, "slowdown", Axis::Linear);
        let svg = render_lines("Figure 1", axes, &series).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("Wrk1") && svg.contains("Wrk2"));
        assert_eq!(Axis::Log.label(0.4f64.log10(), false), "0.40");
        assert_eq!(Axis::Log.label(10f64.log10(), false), "10");
        assert_eq!(Axis::Linear.label(2.0, true), "2");
        assert_eq!(
            Axis::Linear.label(2.5, true),
            "",
            "a whole-number axis labels whole ticks only"
        );
        assert_eq!(render_lines("Figure 1", axes, &series).unwrap(), svg);
        let nothing = vec![("none".to_string(), vec![(0.0, 1.0)])];
        let err = render_lines("empty", axes, &nothing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no point"), "{err}");
    }

    #[test]
    fn sweep_plots_are_svg_with_every_configuration_in_the_legend() {
        let dir = temp_dir("sweep");
        let mut records = Vec::new();
        for c in 0..3 {
            for rep in 0..2 {
                records.push(record(
                    "No DCS, spin only",
                    c,
                    rep,
                    10f64.powi(c as i32) + rep as f64,
                ));
                records.push(record(
                    "DCS, spin-block",
                    c,
                    rep,
                    1.0 + c as f64 + rep as f64 * 0.1,
                ));
            }
        }
        let rows = summarize(&records).unwrap();
        let log = dir.join("log.svg");
        plot_sweep(
            &log,
            "Latency",
            &rows,
            Metric::ResponseTime,
            Scale::Log,
            None,
        )
        .unwrap();
        let svg = std::fs::read_to_string(&log).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("No DCS, spin only") && svg.contains("DCS, spin-block"));
        let only = vec!["DCS, spin-block".to_string()];
        let linear = dir.join("linear.svg");
        plot_sweep(
            &linear,
            "detail",
            &rows,
            Metric::ResponseTime,
            Scale::Linear,
            Some(&only),
        )
        .unwrap();
        assert!(!std::fs::read_to_string(&linear).unwrap().contains("No DCS"));
        let fairness = dir.join("fairness.svg");
        plot_sweep(
            &fairness,
            "F",
            &rows,
            Metric::JobFairness,
            Scale::Linear,
            None,
        )
        .unwrap();
        assert!(std::fs::read_to_string(&fairness)
            .unwrap()
            .contains("fair share"));
        // No competitor rows at all with only-0 data is an error, not an empty picture.
        let zero: Vec<_> = rows
            .iter()
            .filter(|r| r.competitors == 0)
            .cloned()
            .collect();
        assert!(plot_sweep(
            &dir.join("x.svg"),
            "x",
            &zero,
            Metric::CompetitorFairness,
            Scale::Linear,
            None
        )
        .is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn duration_labels_pick_a_unit() {
        assert_eq!(duration_label(80.0), "80µs");
        assert_eq!(duration_label(1_500.0), "1.5ms");
        assert_eq!(duration_label(2_000_000.0), "2s");
    }

    #[test]
    fn job_bars_and_histograms_render() {
        let dir = temp_dir("bars");
        let mut r = record("Batch", 0, 0, 50.0);
        r.measurement
            .jobs
            .push(job("gtar", JobRole::Sequential, 80.0, 30.0, 0.8));
        let rows = summarize(&[r]).unwrap();
        plot_job_bars(
            &dir.join("bars.svg"),
            "Mixed",
            &rows,
            0,
            JobMetric::ResponseTime,
        )
        .unwrap();
        let svg = std::fs::read_to_string(dir.join("bars.svg")).unwrap();
        assert!(svg.contains("gtar") && svg.contains("Batch"));
        assert!(
            plot_job_bars(&dir.join("none.svg"), "Mixed", &rows, 5, JobMetric::CpuTime).is_err()
        );

        let h = Histogram {
            upper_edges_us: vec![100.0, 1000.0],
            counts: vec![900, 0, 3],
        };
        plot_histograms(&dir.join("h.svg"), "RTT", &[("DCS".into(), h.clone())]).unwrap();
        let bad = Histogram {
            upper_edges_us: vec![100.0],
            counts: vec![1, 2, 3],
        };
        let err = plot_histograms(&dir.join("bad.svg"), "RTT", &[("x".into(), bad)]).unwrap_err();
        assert!(err.to_string().contains("3 counts for 1 edges"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

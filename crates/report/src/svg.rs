//! Inline SVG for the HTML report, written directly: scales (linear and logarithmic) that map
//! a data range onto pixels, their ticks (1-2-5 steps; decades, with 2 and 5 between when a
//! range spans less than two), and the few marks the plots need — line, polyline, rectangle,
//! circle, text — with every label escaped. Coordinates are printed with one decimal, so the
//! same input gives the same bytes. Every plot is an `<svg class="plot" role="img">` with a
//! `<title>` and an `aria-label`. No fonts are measured: text is left to the browser, and
//! labels are kept short or anchored where there is room.

use std::fmt::Write;

/// Colours shared by the plots (readable in print and by most colour-blind readers).
pub mod colour {
    /// Axes and text.
    pub const INK: &str = "#222";
    /// Grid lines.
    pub const GRID: &str = "#e4e4e4";
    /// Samples, bars of today.
    pub const BLUE: &str = "#2166ac";
    /// The other rounds, the papers' bars.
    pub const ORANGE: &str = "#d6604d";
    /// The median.
    pub const DARK: &str = "#000";
    /// Intervals.
    pub const BAND: &str = "#fdb863";
    /// No change.
    pub const GREY: &str = "#777";
    /// Faster.
    pub const GREEN: &str = "#1a9850";
    /// Slower.
    pub const RED: &str = "#b2182b";
    /// Inconclusive: the interval cannot tell.
    pub const PURPLE: &str = "#7b3294";
}

/// `<`, `>`, `&`, `"` and `'` as entities, for text and attribute values alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with one decimal (`-0.0` as `0`), so output is stable.
pub fn num(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.1}");
    let s = s.strip_suffix(".0").unwrap_or(&s).to_string();
    if s == "-0" { "0".into() } else { s }
}

/// A tick label without the trailing zeros of its number: `250.0` → `250`, `1.000 ms` →
/// `1 ms`, `0.800×` → `0.8×` (`1000` stays).
pub fn trim_zeros(label: &str) -> String {
    let end = label.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).unwrap_or(label.len());
    let (number, rest) = label.split_at(end);
    if !number.contains('.') {
        return label.to_string();
    }
    let number = number.trim_end_matches('0').trim_end_matches('.');
    format!("{number}{rest}")
}

/// How data values map onto an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Evenly.
    Linear,
    /// By their logarithm (values ≤ 0 are clamped to the low end).
    Log,
}

/// A data range `[lo, hi]` mapped onto pixels `[from, to]` (`to < from` for a y axis that
/// grows upwards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// Linear or logarithmic.
    pub kind: Kind,
    /// Low end of the data.
    pub lo: f64,
    /// High end of the data.
    pub hi: f64,
    /// Pixel of `lo`.
    pub from: f64,
    /// Pixel of `hi`.
    pub to: f64,
}

impl Scale {
    /// A scale over `[lo, hi]`, widened where it is empty or (on a log scale) not positive, so
    /// every finite input maps somewhere sensible.
    pub fn new(kind: Kind, lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() { (lo.min(hi), lo.max(hi)) } else { (0.0, 1.0) };
        if kind == Kind::Log {
            if hi <= 0.0 {
                (lo, hi) = (1.0, 10.0);
            } else if lo <= 0.0 {
                lo = hi / 10.0;
            }
            if hi / lo < 1.0 + 1e-9 {
                (lo, hi) = (lo / 1.5, hi * 1.5);
            }
        } else if hi - lo <= f64::EPSILON * hi.abs().max(1e-300) {
            let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
            (lo, hi) = (lo - pad, hi + pad);
        }
        Scale { kind, lo, hi, from, to }
    }

    /// A scale whose ends are widened to the ticks around the data (linear: the 1-2-5 steps;
    /// log: the decades).
    pub fn nice(kind: Kind, lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        let s = Scale::new(kind, lo, hi, from, to);
        match kind {
            Kind::Linear => {
                let step = step_125((s.hi * 0.5 - s.lo * 0.5) / 2.5);
                let (lo, hi) = ((s.lo / step).floor() * step, (s.hi / step).ceil() * step);
                if lo.is_finite() && hi.is_finite() { Scale { lo, hi, ..s } } else { s }
            }
            Kind::Log => Scale { lo: 10f64.powf(s.lo.log10().floor()), hi: 10f64.powf(s.hi.log10().ceil()), ..s },
        }
    }

    /// The pixel of `v`; values outside the range map outside the pixels, linearly.
    pub fn map(&self, v: f64) -> f64 {
        let t = match self.kind {
            // Halved first: a range across ±1e308 has a span beyond the largest double.
            Kind::Linear => (v * 0.5 - self.lo * 0.5) / (self.hi * 0.5 - self.lo * 0.5),
            Kind::Log => {
                let v = if v > 0.0 && v.is_finite() { v } else { self.lo };
                (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
            }
        };
        let t = if t.is_finite() { t } else { 0.0 };
        self.from + t * (self.to - self.from)
    }

    /// The pixel of `v`, kept within the scale's pixels.
    pub fn clamp(&self, v: f64) -> f64 {
        let (a, b) = (self.from.min(self.to), self.from.max(self.to));
        self.map(v).clamp(a, b)
    }

    /// The tick values within the range.
    pub fn ticks(&self) -> Vec<f64> {
        match self.kind {
            Kind::Linear => lin_ticks(self.lo, self.hi),
            Kind::Log => log_ticks(self.lo, self.hi),
        }
    }
}

/// The 1-2-5 step nearest above `raw`.
fn step_125(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| *s >= raw * (1.0 - 1e-9)).unwrap_or(10.0 * p)
}

/// About five ticks at 1-2-5 steps within `[lo, hi]`.
/// Never more than 51, whatever the range (one across ±1e308, or not finite: its finite ends).
pub fn lin_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) {
        return [lo, hi].into_iter().filter(|v| v.is_finite()).collect();
    }
    let step = step_125((hi * 0.5 - lo * 0.5) / 2.5);
    let (first, last) = ((lo / step - 1e-9).ceil(), (hi / step + 1e-9).floor());
    if !(last >= first && last - first <= 50.0) {
        return vec![lo, hi];
    }
    let (first, last) = (first as i64, last as i64);
    (first..=last).map(|i| i as f64 * step).map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v }).collect()
}

/// The decades within `[lo, hi]`, with 2 and 5 times each when the range holds fewer than
/// three decades, or just the two ends when it holds none.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let (a, b) = ((lo.log10() - 1e-9).ceil() as i32, (hi.log10() + 1e-9).floor() as i32);
    let within = |v: &f64| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9);
    let decades: Vec<f64> = (a..=b).map(|e| 10f64.powi(e)).collect();
    if decades.len() >= 3 {
        let stride = decades.len().div_ceil(8);
        return decades.into_iter().step_by(stride).collect();
    }
    let mut out: Vec<f64> =
        (a - 1..=b).flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e))).filter(within).collect();
    if out.len() < 2 {
        out = vec![lo, hi];
    }
    out
}

/// An SVG being drawn: a size and its marks.
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

/// The stroke or fill of a mark.
#[derive(Clone, Copy)]
pub struct Paint<'a> {
    /// Colour (`none` for no fill).
    pub colour: &'a str,
    /// Stroke width, or 0 for a filled mark.
    pub width: f64,
    /// Opacity, 0 to 1.
    pub opacity: f64,
    /// Dashed.
    pub dashed: bool,
}

impl<'a> Paint<'a> {
    /// A solid stroke.
    pub fn stroke(colour: &'a str, width: f64) -> Paint<'a> {
        Paint { colour, width, opacity: 1.0, dashed: false }
    }
    /// A fill.
    pub fn fill(colour: &'a str) -> Paint<'a> {
        Paint { colour, width: 0.0, opacity: 1.0, dashed: false }
    }
    /// The same, at `opacity`.
    pub fn alpha(self, opacity: f64) -> Paint<'a> {
        Paint { opacity, ..self }
    }
    /// The same, dashed.
    pub fn dash(self) -> Paint<'a> {
        Paint { dashed: true, ..self }
    }

    fn attrs(&self) -> String {
        let mut s = if self.width > 0.0 {
            format!(r#" fill="none" stroke="{}" stroke-width="{}""#, self.colour, num(self.width))
        } else {
            format!(r#" fill="{}""#, self.colour)
        };
        if self.opacity < 1.0 {
            let _ = write!(s, r#" opacity="{}""#, short(self.opacity));
        }
        if self.dashed {
            s.push_str(r#" stroke-dasharray="4 3""#);
        }
        s
    }
}

fn short(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Where a text's position is: its start, middle or end.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The text starts there.
    Start,
    /// Centred there.
    Middle,
    /// The text ends there.
    End,
}

impl Svg {
    /// An empty drawing of `width` × `height` pixels.
    pub fn new(width: f64, height: f64) -> Svg {
        Svg { width, height, body: String::new() }
    }

    /// A straight line.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), p: Paint) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}"{}/>"#,
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            p.attrs()
        );
    }

    /// A line through `points` (nothing for fewer than two).
    pub fn polyline(&mut self, points: &[(f64, f64)], p: Paint) {
        if points.len() < 2 {
            return;
        }
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{},{}", num(*x), num(*y))).collect();
        let _ = writeln!(self.body, r#"<polyline points="{}"{}/>"#, pts.join(" "), p.attrs());
    }

    /// A rectangle (negative sizes are turned round).
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, p: Paint) {
        let (x, w) = if w < 0.0 { (x + w, -w) } else { (x, w) };
        let (y, h) = if h < 0.0 { (y + h, -h) } else { (y, h) };
        let _ = writeln!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}"{}/>"#,
            num(x),
            num(y),
            num(w),
            num(h),
            p.attrs()
        );
    }

    /// A circle.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, p: Paint) {
        let _ = writeln!(self.body, r#"<circle cx="{}" cy="{}" r="{}"{}/>"#, num(cx), num(cy), num(r), p.attrs());
    }

    /// A text label at `(x, y)` (its baseline), `size` pixels high.
    pub fn text(&mut self, (x, y): (f64, f64), anchor: Anchor, size: f64, text: &str) {
        self.text_in(x, y, anchor, size, colour::INK, text);
    }

    /// A text label in a colour.
    pub fn text_in(&mut self, x: f64, y: f64, anchor: Anchor, size: f64, fill: &str, text: &str) {
        let a = match anchor {
            Anchor::Start => "",
            Anchor::Middle => r#" text-anchor="middle""#,
            Anchor::End => r#" text-anchor="end""#,
        };
        let _ = writeln!(
            self.body,
            r#"<text x="{}" y="{}" font-size="{}" fill="{fill}"{a}>{}</text>"#,
            num(x),
            num(y),
            num(size),
            escape(text)
        );
    }

    /// A label of `lines`, 11 pixels high, `step` pixels apart, the first line's baseline at
    /// `(x, y)`: one `<text class="label">` whose words read in full (the lines are its
    /// `<tspan>`s, a space between them).
    pub fn label(&mut self, (x, y): (f64, f64), anchor: Anchor, lines: &[String], step: f64) {
        let a = match anchor {
            Anchor::Start => "",
            Anchor::Middle => r#" text-anchor="middle""#,
            Anchor::End => r#" text-anchor="end""#,
        };
        let _ = write!(self.body, r#"<text class="label" font-size="11" fill="{}"{a}>"#, colour::INK);
        for (i, line) in lines.iter().enumerate() {
            let space = if i + 1 < lines.len() { " " } else { "" };
            let at = num(y + step * i as f64);
            let _ = write!(self.body, r#"<tspan x="{}" y="{at}">{}{space}</tspan>"#, num(x), escape(line));
        }
        self.body.push_str("</text>\n");
    }

    /// Text turned a quarter anticlockwise about `(x, y)` (a y axis's name).
    pub fn vtext(&mut self, (x, y): (f64, f64), size: f64, text: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{0}" y="{1}" font-size="{2}" fill="{3}" text-anchor="middle" transform="rotate(-90 {0} {1})">{4}</text>"#,
            num(x),
            num(y),
            num(size),
            colour::INK,
            escape(text)
        );
    }

    /// The drawing as an `<svg class="plot">` element, titled `title` (also its accessible
    /// name).
    pub fn finish(self, title: &str) -> String {
        let t = escape(title);
        format!(
            "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"{t}\" \
             width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">\n<title>{t}</title>\n{}</svg>\n",
            self.body,
            w = num(self.width),
            h = num(self.height),
        )
    }
}

/// The width a sans-serif text of `size` pixels takes, estimated (no font is measured): 0.58
/// of the size per character, enough for most Latin text to fit.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

/// What a legend entry shows beside its words.
#[derive(Clone, Copy)]
pub enum Swatch<'a> {
    /// A filled square (bars, bands), in a colour at an opacity.
    Fill(&'a str, f64),
    /// A short line (a median, a fitted curve), dashed or not.
    Line(&'a str, f64, bool),
    /// A dot (a point estimate).
    Dot(&'a str),
}

impl Svg {
    /// A legend in one line from `(x, y)` (the words' baseline): each swatch and its words,
    /// 10 pixels high. Returns where it ends.
    pub fn legend(&mut self, (x, y): (f64, f64), items: &[(Swatch, &str)]) -> f64 {
        let mut at = x;
        for (swatch, words) in items {
            match *swatch {
                Swatch::Fill(c, a) => self.rect(at, y - 9.0, 10.0, 10.0, Paint::fill(c).alpha(a)),
                Swatch::Line(c, w, dashed) => {
                    let p = Paint::stroke(c, w);
                    self.line((at, y - 4.0), (at + 12.0, y - 4.0), if dashed { p.dash() } else { p });
                }
                Swatch::Dot(c) => self.circle(at + 5.0, y - 4.0, 3.5, Paint::fill(c)),
            }
            self.text((at + 15.0, y), Anchor::Start, 10.0, words);
            at += 15.0 + text_width(words, 10.0) + 8.0;
        }
        at
    }
}

/// A plotting area: an x and a y scale over a rectangle of a drawing, with axes.
pub struct Frame {
    /// Horizontal.
    pub x: Scale,
    /// Vertical (pixels grow downwards: `from` is the bottom).
    pub y: Scale,
}

impl Frame {
    /// Left, right, top and bottom pixel of the area.
    pub fn bounds(&self) -> (f64, f64, f64, f64) {
        (self.x.from, self.x.to, self.y.to, self.y.from)
    }

    /// Grid lines, ticks at the scales' own ticks with labels by `xf`/`yf`, and the axes'
    /// names.
    pub fn axes(&self, svg: &mut Svg, xf: &dyn Fn(f64) -> String, yf: &dyn Fn(f64) -> String, names: (&str, &str)) {
        let (xt, yt) = (self.x.ticks(), self.y.ticks());
        self.axes_with(svg, Ticks { at: &xt, label: xf }, Ticks { at: &yt, label: yf }, names);
    }

    /// Grid lines and labels at the ticks given, the axes and their names.
    pub fn axes_with(&self, svg: &mut Svg, x: Ticks, y: Ticks, names: (&str, &str)) {
        let (l, r, t, b) = self.bounds();
        for &v in y.at {
            let py = self.y.map(v);
            svg.line((l, py), (r, py), Paint::stroke(colour::GRID, 1.0));
            svg.text((l - 4.0, py + 3.5), Anchor::End, 10.0, &trim_zeros(&(y.label)(v)));
        }
        for &v in x.at {
            let px = self.x.map(v);
            svg.line((px, t), (px, b), Paint::stroke(colour::GRID, 1.0));
            svg.text((px, b + 13.0), Anchor::Middle, 10.0, &trim_zeros(&(x.label)(v)));
        }
        svg.line((l, b), (r, b), Paint::stroke(colour::INK, 1.0));
        svg.line((l, t), (l, b), Paint::stroke(colour::INK, 1.0));
        if !names.0.is_empty() {
            svg.text(((l + r) / 2.0, b + 27.0), Anchor::Middle, 11.0, names.0);
        }
        if !names.1.is_empty() {
            svg.vtext((12.0, (t + b) / 2.0), 11.0, names.1);
        }
    }
}

/// Where an axis has ticks, and how they are labelled.
#[derive(Clone, Copy)]
pub struct Ticks<'a> {
    /// Values.
    pub at: &'a [f64],
    /// Their labels.
    pub label: &'a dyn Fn(f64) -> String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_map_their_ends_onto_the_pixel_edges_linear_and_log() {
        let s = Scale::new(Kind::Linear, 10.0, 20.0, 50.0, 250.0);
        assert_eq!((s.map(10.0), s.map(20.0), s.map(15.0)), (50.0, 250.0, 150.0));
        let y = Scale::new(Kind::Linear, 0.0, 4.0, 200.0, 20.0);
        assert_eq!((y.map(0.0), y.map(4.0)), (200.0, 20.0), "a y scale grows upwards");
        let l = Scale::new(Kind::Log, 1.0, 1000.0, 0.0, 300.0);
        assert!((l.map(1.0) - 0.0).abs() < 1e-9 && (l.map(1000.0) - 300.0).abs() < 1e-9);
        assert!((l.map(10.0) - 100.0).abs() < 1e-9, "a decade a third of the way");
        assert_eq!(l.map(0.0), 0.0, "a value ≤ 0 goes to the low end of a log scale");
        assert_eq!(l.clamp(1e9), 300.0);
    }

    #[test]
    fn degenerate_ranges_are_widened_and_never_give_nan() {
        let flat = Scale::new(Kind::Linear, 5.0, 5.0, 0.0, 100.0);
        assert!(flat.lo < 5.0 && flat.hi > 5.0 && (flat.map(5.0) - 50.0).abs() < 1e-9);
        let zero = Scale::new(Kind::Linear, 0.0, 0.0, 0.0, 100.0);
        assert!(zero.map(0.0).is_finite());
        let neg = Scale::new(Kind::Log, -3.0, -1.0, 0.0, 100.0);
        assert!(neg.lo > 0.0 && neg.map(-2.0).is_finite());
        let nan = Scale::new(Kind::Linear, f64::NAN, 1.0, 0.0, 100.0);
        assert!(nan.map(0.5).is_finite() && !nan.ticks().is_empty());
    }

    #[test]
    fn log_ticks_are_decades_or_one_two_five_within_the_range() {
        assert_eq!(log_ticks(1.0, 1e4), vec![1.0, 10.0, 100.0, 1e3, 1e4]);
        assert_eq!(log_ticks(3.0, 300.0), vec![5.0, 10.0, 20.0, 50.0, 100.0, 200.0]);
        assert_eq!(log_ticks(1.2, 1.5), vec![1.2, 1.5], "no tick within: the ends");
        assert!(log_ticks(0.0, 10.0).is_empty());
        let many = log_ticks(1e-3, 1e12);
        assert!(many.len() <= 8 && many[0] == 1e-3, "{many:?}");
        let nice = Scale::nice(Kind::Log, 37.0, 4200.0, 0.0, 1.0);
        assert_eq!((nice.lo, nice.hi), (10.0, 1e4));
    }

    #[test]
    fn linear_ticks_step_by_one_two_five() {
        assert_eq!(lin_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(lin_ticks(0.0, 1.0), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        let nice = Scale::nice(Kind::Linear, 3.0, 97.0, 0.0, 1.0);
        assert_eq!((nice.lo, nice.hi), (0.0, 100.0));
        assert_eq!(lin_ticks(-5.0, 5.0), vec![-4.0, -2.0, 0.0, 2.0, 4.0]);
    }

    #[test]
    fn labels_and_titles_are_escaped() {
        assert_eq!(escape("a<b & c>\"d'"), "a&lt;b &amp; c&gt;&quot;d&#39;");
        let mut s = Svg::new(100.0, 50.0);
        s.text((1.0, 2.0), Anchor::Start, 10.0, "<script>&");
        let out = s.finish("x < y & \"z\"");
        assert!(out.contains("&lt;script&gt;&amp;") && !out.contains("<script>"), "{out}");
        assert!(out.contains(r#"aria-label="x &lt; y &amp; &quot;z&quot;""#), "{out}");
        assert!(out.contains("<title>x &lt; y &amp; &quot;z&quot;</title>"));
        assert!(out.starts_with("<svg class=\"plot\""));
    }

    #[test]
    fn tick_labels_lose_trailing_zeros_only() {
        let t = |s: &str| trim_zeros(s);
        assert_eq!(
            (t("250.0"), t("1.000 ms"), t("0.800×"), t("1000"), t("12.50 µs")),
            ("250".into(), "1 ms".into(), "0.8×".into(), "1000".into(), "12.5 µs".into())
        );
    }

    #[test]
    fn coordinates_have_one_decimal_and_no_negative_zero() {
        assert_eq!(
            (num(1.0), num(1.26), num(-0.01), num(f64::NAN)),
            ("1".into(), "1.3".into(), "0".into(), "0".into())
        );
        let mut s = Svg::new(10.0, 10.0);
        s.rect(5.0, 5.0, -2.0, -3.0, Paint::fill("red"));
        assert!(s.finish("r").contains(r#"x="3" y="2" width="2" height="3""#));
    }
}

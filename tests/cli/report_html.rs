//! `osprim report --html` from outside: bad input gives one error line and no page; a page
//! loaded in a real headless Chromium shows every plot it says it drew (counted in the DOM
//! Chromium produced, and laid out at a non-zero size), and its screenshot is a PNG of the
//! window's size that is not blank. Chromium runs under a deadline, in a fresh profile
//! directory removed afterwards; without Chromium those tests say so and pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest Chromium may take for one page before it is killed.
const DEADLINE: Duration = Duration::from_secs(60);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn osprim(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("osprim")).args(args).env("RUST_BACKTRACE", "1").output().unwrap()
}

/// Makes a report; returns the page and its stderr.
fn report(args: &[&Path], compare: Option<&Path>, out: &Path) -> String {
    let mut a: Vec<&std::ffi::OsStr> = vec!["report".as_ref()];
    a.extend(args.iter().map(|p| p.as_os_str()));
    if let Some(b) = compare {
        a.extend(["--compare".as_ref(), b.as_os_str()]);
    }
    a.extend(["--html".as_ref(), out.as_os_str()]);
    let o = osprim(&a);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    std::fs::read_to_string(out).unwrap()
}

/// The one line and non-zero status of a refused report.
fn refused(args: &[&std::ffi::OsStr]) -> String {
    let o = osprim(args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(o.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    stderr
}

#[test]
fn bad_input_is_one_error_line_and_leaves_what_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.html");
    let good = fixture("sweep-run.json");
    let s = |p: &Path| p.as_os_str().to_owned();
    let missing = dir.path().join("missing.json");
    let e = refused(&["report".as_ref(), &s(&missing), "--html".as_ref(), &s(&out)]);
    assert!(e.contains("missing.json"), "{e}");
    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, "{\"schema\": 3, \"osprim\"").unwrap();
    let e = refused(&["report".as_ref(), &s(&corrupt), "--html".as_ref(), &s(&out)]);
    assert!(e.contains("truncated") || e.contains("not an osprim result"), "{e}");
    assert!(!out.exists(), "no page for a bad file");
    let e = refused(&["report".as_ref(), &s(&good), "--compare".as_ref(), &s(&corrupt), "--html".as_ref(), &s(&out)]);
    assert!(e.contains("corrupt.json"), "{e}");
    let e = refused(&["report".as_ref(), &s(&good), "--html".as_ref(), dir.path().as_os_str()]);
    assert!(e.contains("directory"), "{e}");
    assert!(dir.path().is_dir());
    let e = refused(&["report".as_ref(), &s(&good), "--html".as_ref(), "/nonexistent-dir/x.html".as_ref()]);
    assert!(e.contains("/nonexistent-dir/x.html"), "{e}");
    let fifo = dir.path().join("fifo");
    if nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).is_ok() {
        let e = refused(&["report".as_ref(), &s(&good), "--html".as_ref(), &s(&fifo)]);
        assert!(e.contains("FIFO"), "{e}");
    }
    let o = osprim(&["report".as_ref(), &s(&good), "--noise=lots".as_ref(), "--html".as_ref(), &s(&out)]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "a usage mistake: {e}");
    assert!(e.contains("'lots' is not a percentage") && !e.contains("panicked"), "{e}");
    assert!(!out.exists());
}

#[test]
fn a_page_goes_to_stdout_with_a_dash_and_replaces_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = fixture("sweep-run.json");
    let o = osprim(&["report".as_ref(), good.as_os_str(), "--html".as_ref(), "-".as_ref()]);
    assert!(o.status.success());
    let page = String::from_utf8(o.stdout).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    let out = dir.path().join("old.html");
    std::fs::write(&out, "old").unwrap();
    let again = report(&[&good], None, &out);
    assert_eq!(again, page, "the same page, byte for byte");
}

/// Chromium, if installed.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n))).find(|p| p.is_file())
}

/// Chromium, or `None` after saying that the test is skipped and why.
fn chromium_or_say_why() -> Option<PathBuf> {
    let bin = chromium();
    if bin.is_none() {
        println!("skipped: chromium not found (apt-get install chromium)");
    }
    bin
}

/// Runs headless Chromium on `page` with `extra` flags, stdout into a file, killed after
/// [`DEADLINE`]; the profile directory is a fresh temporary one. Returns stdout.
fn run_chromium(bin: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let stdout_path = out_dir.path().join("stdout");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let began = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if began.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "chromium: {status}");
    drop(profile);
    std::fs::read_to_string(stdout_path).unwrap()
}

/// The value of `attr="…"` on the `<body>` element of `dom`.
fn body_attr(dom: &str, attr: &str) -> Option<usize> {
    let body = &dom[dom.find("<body")?..];
    let body = &body[..body.find('>')?];
    let at = body.find(&format!("{attr}=\""))? + attr.len() + 2;
    body[at..].split('"').next()?.parse().ok()
}

/// Loads `page` in Chromium and checks that every plot it says it holds is in the DOM and was
/// laid out at a non-zero size; returns the count.
fn plots_as_rendered(bin: &Path, page: &Path) -> usize {
    let dom = run_chromium(bin, page, &["--dump-dom".into(), "--virtual-time-budget=2000".into()]);
    let said = body_attr(&dom, "data-plots").expect("the page says how many plots it drew");
    assert_eq!(dom.matches("<svg class=\"plot\"").count(), said, "plots in Chromium's DOM");
    assert_eq!(body_attr(&dom, "data-drawn"), Some(said), "plots laid out at a non-zero size");
    said
}

/// Width and height from a PNG's IHDR.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let sig = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || &bytes[..8] != sig || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    Some((be(16), be(20)))
}

fn screenshot(bin: &Path, page: &Path, dir: &Path, name: &str) -> Vec<u8> {
    screenshot_at(bin, page, &dir.join(name), (1280, 4000))
}

/// A screenshot of `page` in a window of `size` into `shot`: its bytes, a PNG of that size.
fn screenshot_at(bin: &Path, page: &Path, shot: &Path, (w, h): (u32, u32)) -> Vec<u8> {
    run_chromium(
        bin,
        page,
        &[format!("--screenshot={}", shot.display()), format!("--window-size={w},{h}"), "--hide-scrollbars".into()],
    );
    let bytes = std::fs::read(shot).expect("a screenshot");
    assert_eq!(png_size(&bytes), Some((w, h)), "a PNG of the window's size");
    bytes
}

#[test]
fn chromium_renders_every_plot_of_a_full_run_a_sweep_and_a_comparison() {
    let Some(bin) = chromium_or_say_why() else { return };
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.html");
    let page = report(&[&fixture("default-run.json")], None, &full);
    assert!(page.contains("<section id=\"papers\">"));
    let n_full = plots_as_rendered(&bin, &full);
    assert!(n_full >= 1, "the papers' bars at least");

    let cmp = dir.path().join("cmp.html");
    let page = report(&[&fixture("sweep-run.json")], Some(&fixture("sweep-base.json")), &cmp);
    let n = plots_as_rendered(&bin, &cmp);
    let fits = page.matches("sweep over ").count();
    assert!(fits >= 4 && page.contains("ratios new / base of"), "sweeps and a forest plot");
    assert!(n > 2 * 16 + 4, "{n} plots: two per result, one per sweep, the forest");

    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let empty = screenshot(&bin, &blank, dir.path(), "blank.png");
    let shot = screenshot(&bin, &cmp, dir.path(), "shot.png");
    assert!(shot.len() > 10 * empty.len(), "not blank: {} bytes against a blank page's {}", shot.len(), empty.len());
    if let Some(keep) = std::env::var_os("OSPRIM_REPORT_SHOT") {
        std::fs::write(keep, &shot).unwrap();
    }
}

/// Injected into a copy of a page: measures what a reader sees and writes it, one fact a
/// line, into a `<pre id="check">` that `--dump-dom` returns. Before opening the folds: the
/// window's width, the overview's box (top, bottom, right) and its rows, the page's width;
/// the contents' links that overlap. With every fold open: each text under 10 px (an SVG's
/// text by its font size times the SVG's scale on screen), and each label that reads the same
/// as another of its list (the overview's results, the results' names, each plot's row labels).
const MEASURE: &str = r#"<script>
(function(){
var out=[];
out.push('width '+innerWidth);
out.push('scroll-width '+document.documentElement.scrollWidth);
var ov=document.querySelector('.overview');
if(ov){var r=ov.getBoundingClientRect();
out.push('overview '+Math.round(r.top)+' '+Math.round(r.bottom)+' '+Math.round(r.right));
out.push('rows '+ov.querySelectorAll('tbody tr').length);
var d=ov.querySelector('svg.dot');if(d){var b=d.getBoundingClientRect();out.push('dot '+Math.round(b.right)+' '+Math.round(b.bottom));}}
var links=[].map.call(document.querySelectorAll('nav a'),function(a){return a.getClientRects();});
var boxes=[];links.forEach(function(l){for(var i=0;i<l.length;i++)boxes.push(l[i]);});
var over=0;for(var i=0;i<boxes.length;i++)for(var j=i+1;j<boxes.length;j++){var a=boxes[i],b=boxes[j];
var w=Math.min(a.right,b.right)-Math.max(a.left,b.left),h=Math.min(a.bottom,b.bottom)-Math.max(a.top,b.top);
if(w>1&&h>1)over++;}
out.push('nav-links '+boxes.length);out.push('nav-overlaps '+over);
document.querySelectorAll('details').forEach(function(d){d.open=true;});
var small=0,texts=0,w=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT),n;
while((n=w.nextNode())){
  if(!n.nodeValue.trim())continue;
  var e=n.parentElement;if(!e||e.closest('script,style,title,pre#check'))continue;
  var t=e.closest('text'),size;
  if(t){var m=t.ownerSVGElement.getScreenCTM();size=parseFloat(getComputedStyle(t).fontSize)*(m?Math.hypot(m.a,m.b):0);}
  else size=parseFloat(getComputedStyle(e).fontSize);
  texts++;
  if(!(size>=9.99)){small++;if(small<=20)out.push('small '+size.toFixed(2)+' '+e.tagName+' '+n.nodeValue.trim().slice(0,60));}
}
out.push('texts '+texts);out.push('small-count '+small);
function dups(kind,list){var seen={};list.forEach(function(t){if(seen[t])out.push('dup '+kind+': '+t);seen[t]=1;});}
if(ov)dups('overview',[].map.call(ov.querySelectorAll('tbody tr td:first-child'),function(td){return td.textContent.trim();}));
dups('results',[].map.call(document.querySelectorAll('article.result h4'),function(h){return h.textContent.trim();}));
var labels=0;
document.querySelectorAll('svg.plot').forEach(function(s){var l=[].map.call(s.querySelectorAll('text.label'),function(t){return t.textContent.trim();});
labels+=l.length;l.forEach(function(x){if(x.indexOf('\u2026')>=0)out.push('cut '+x);});dups('plot',l);});
out.push('plot-labels '+labels);
var pre=document.createElement('pre');pre.id='check';pre.textContent=out.join('\n');document.body.appendChild(pre);
})();
</script>
"#;

/// What [`MEASURE`] found on `page` shown `width` × `height`: its lines. The page is shown in
/// an iframe of that size (headless Chromium's window is at least 500 px wide; an iframe is a
/// viewport of its own, media queries and all), and the page around it copies the lines out.
fn measured(bin: &Path, page: &Path, width: u32, height: u32) -> Vec<String> {
    let html = std::fs::read_to_string(page).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("measured.html");
    std::fs::write(&copy, html.replace("</body>", &format!("{MEASURE}</body>"))).unwrap();
    let frame = dir.path().join("frame.html");
    let outer = format!(
        "<!DOCTYPE html><html><body style=\"margin:0;overflow:hidden\">\
         <iframe src=\"measured.html\" style=\"border:0;width:{width}px;height:{height}px\"></iframe>\
         <script>document.querySelector('iframe').addEventListener('load',function(){{\
         var p=document.createElement('pre');p.id='check';\
         p.textContent=this.contentDocument.getElementById('check').textContent;document.body.appendChild(p);}});\
         </script></body></html>"
    );
    std::fs::write(&frame, outer).unwrap();
    let dom = run_chromium(
        bin,
        &frame,
        &[
            "--dump-dom".into(),
            "--allow-file-access-from-files".into(),
            "--virtual-time-budget=5000".into(),
            format!("--window-size={},{}", width.max(500) + 40, height + 40),
        ],
    );
    let at = dom.find("<pre id=\"check\">").expect("the measuring script ran") + "<pre id=\"check\">".len();
    let text = &dom[at..at + dom[at..].find("</pre>").unwrap()];
    let text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    text.lines().map(str::to_string).collect()
}

/// The numbers after `key ` in `lines`.
fn numbers(lines: &[String], key: &str) -> Vec<f64> {
    let line =
        lines.iter().find(|l| l.starts_with(&format!("{key} "))).unwrap_or_else(|| panic!("no {key}: {lines:?}"));
    line[key.len() + 1..].split(' ').map(|v| v.parse().unwrap()).collect()
}

/// What every page must satisfy at `width`: no text under 10 px, no label read twice in one
/// list, none cut, contents without overlaps, nothing wider than the window but the
/// scrolling boxes.
fn readable(lines: &[String], width: u32, what: &str) {
    assert_eq!(numbers(lines, "width"), [width as f64], "{what}: the window's width");
    let small: Vec<&String> = lines.iter().filter(|l| l.starts_with("small ")).collect();
    assert!(small.is_empty(), "{what} at {width} px: text under 10 px: {small:#?}");
    assert_eq!(numbers(lines, "small-count"), [0.0]);
    assert!(numbers(lines, "texts")[0] > 100.0, "{what}: text was measured");
    let dups: Vec<&String> = lines.iter().filter(|l| l.starts_with("dup ") || l.starts_with("cut ")).collect();
    assert!(dups.is_empty(), "{what}: labels that read the same as another, or cut: {dups:#?}");
    assert!(numbers(lines, "nav-links")[0] > 5.0);
    assert_eq!(numbers(lines, "nav-overlaps"), [0.0], "{what} at {width} px: the contents overlap");
    assert!(numbers(lines, "scroll-width")[0] <= width as f64, "{what} at {width} px: the page scrolls sideways");
}

/// The seed suite's page (137 results) shows its overview, summary table and dot plot, within
/// the first screen at 1400 × 900; at 1400 and at 390 px no text is under 10 px, no label is
/// ambiguous or cut, the contents do not overlap; and so for a page with every kind of plot
/// (a run of sweeps compared with a base). Screenshots of the first screens are kept where
/// `OSPRIM_REPORT_SHOTS` names a directory.
#[test]
fn chromium_shows_the_overview_on_the_first_screen_and_no_small_or_ambiguous_text() {
    let Some(bin) = chromium_or_say_why() else { return };
    let dir = tempfile::tempdir().unwrap();
    let seeds = dir.path().join("seeds.html");
    report(&[&fixture("papers-run.json")], None, &seeds);
    let wide = measured(&bin, &seeds, 1400, 900);
    readable(&wide, 1400, "the seed suite's page");
    let [top, bottom, right] = numbers(&wide, "overview")[..] else { panic!("{wide:?}") };
    assert!(top >= 0.0 && bottom <= 900.0 && right <= 1400.0, "the overview within the first screen: {wide:?}");
    assert!(numbers(&wide, "rows")[0] > 100.0, "every result has its line: {wide:?}");
    let [dot_right, dot_bottom] = numbers(&wide, "dot")[..] else { panic!("{wide:?}") };
    assert!(dot_right <= 1400.0 && dot_bottom <= 900.0, "the dot plot shown beside the table: {wide:?}");
    assert!(numbers(&wide, "plot-labels")[0] > 100.0, "the papers' bars have their labels: {wide:?}");
    readable(&measured(&bin, &seeds, 390, 844), 390, "the seed suite's page");

    let cmp = dir.path().join("cmp.html");
    report(&[&fixture("sweep-run.json")], Some(&fixture("sweep-base.json")), &cmp);
    for (w, h) in [(1400, 900), (390, 844)] {
        let lines = measured(&bin, &cmp, w, h);
        readable(&lines, w, "a comparison of sweeps");
        assert!(numbers(&lines, "plot-labels")[0] > 10.0, "the forest's labels: {lines:?}");
    }
    if let Some(keep) = std::env::var_os("OSPRIM_REPORT_SHOTS") {
        for (w, h) in [(1400u32, 900u32), (390, 844)] {
            screenshot_at(&bin, &seeds, &Path::new(&keep).join(format!("overview-{w}.png")), (w, h));
        }
    }
}

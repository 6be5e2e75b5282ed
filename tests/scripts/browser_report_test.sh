#!/usr/bin/env bash
# The HTML report in a browser (label `browser`): a census of 3 000 generated households through the
# census job, `sdc report` on the job's report, then headless Chromium dumps the page's DOM and takes
# a screenshot. Passes when every chart the census job's steps give (docs/report.md) is in the DOM
# with at least one data mark (class "mark"), the charts it cannot give say "Not in this run", and
# at least 5 % of the screenshot's pixels differ from the background. Skips (exit 77) only with
# SDC_SKIP_BROWSER=1, which CI never sets; needs the packages of scripts/install-deps.sh (chromium,
# python3-pil).
#   tests/scripts/browser_report_test.sh SOURCE_DIR SDC_BINARY
set -euo pipefail
if [ "${SDC_SKIP_BROWSER:-0}" = 1 ]; then
  echo "browser test: skipped (SDC_SKIP_BROWSER=1)"
  exit 77
fi
source_dir=$(realpath "$1")
sdc=$(realpath "$2")
work=$(mktemp -d /var/tmp/sdc-browser-test-XXXXXX)
trap 'rm -rf "$work"' EXIT

# A fixed seed: the same census and the same charts in every run, so that the pixel share moves
# only with the step timings.
(umask 077 && echo 20261128 >"$work/seed")
"$sdc" generate census --households 3000 --seed-file "$work/seed" --output "$work/census.h5" 2>/dev/null
"$sdc" --threads 2 run "$source_dir/jobs/census.yaml" --input "$work/census.h5" --output-dir "$work/out" \
  --seed-file "$work/seed" --report "$work/out/report.json" 2>"$work/run.log" ||
  { cat "$work/run.log" >&2; echo "browser test: the census job failed" >&2; exit 1; }
"$sdc" report "$work/out/report.json" --output "$work/report.html"

# Chromium wants a writable home and profile; the sandbox needs user namespaces a test runner may lack.
chromium=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile"
  "--window-size=1600,2000")
HOME=$work timeout 120 "${chromium[@]}" --dump-dom "file://$work/report.html" >"$work/dom.html" 2>"$work/chromium.log" ||
  { cat "$work/chromium.log" >&2; echo "browser test: chromium --dump-dom failed" >&2; exit 1; }
HOME=$work timeout 120 "${chromium[@]}" --screenshot="$work/screenshot.png" "file://$work/report.html" \
  >>"$work/chromium.log" 2>&1 ||
  { cat "$work/chromium.log" >&2; echo "browser test: chromium --screenshot failed" >&2; exit 1; }

/usr/bin/python3 - "$work/dom.html" "$work/screenshot.png" <<'PYTHON'
import collections
import html.parser
import sys

from PIL import Image

# The charts the census job gives, and those it cannot (no anonymize or swap frontier step).
DRAWN = ["risk-distribution", "risky-households", "information-loss", "bootstrap-intervals", "step-timings"]
NOT_IN_RUN = ["recoding-frontier", "risk-utility-frontier"]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Charts(html.parser.HTMLParser):
    """Data marks inside each element whose id is chart-*, and the text of each section-*."""

    def __init__(self):
        super().__init__()
        self.open = []  # (tag, chart id or None, section id or None)
        self.marks = collections.Counter()
        self.section_text = collections.defaultdict(str)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        element_id = attrs.get("id") or ""
        chart = element_id[len("chart-"):] if element_id.startswith("chart-") else None
        section = element_id[len("section-"):] if element_id.startswith("section-") else None
        if chart is not None:
            self.marks[chart] += 0
        if "mark" in (attrs.get("class") or "").split():
            for _, open_chart, _ in self.open:
                if open_chart is not None:
                    self.marks[open_chart] += 1
        if tag not in VOID:
            self.open.append((tag, chart, section))

    def handle_endtag(self, tag):
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                del self.open[i:]
                break

    def handle_data(self, data):
        for _, _, section in self.open:
            if section is not None:
                self.section_text[section] += data


parser = Charts()
parser.feed(open(sys.argv[1], encoding="utf-8").read())
failures = []
for chart in DRAWN:
    print(f"browser test: chart-{chart}: {parser.marks.get(chart, 0)} data marks")
    if parser.marks.get(chart, 0) < 1:
        failures.append(f"chart-{chart} is missing or has no data mark")
for chart in NOT_IN_RUN:
    if "Not in this run" not in parser.section_text.get(chart, ""):
        failures.append(f"section-{chart} does not say 'Not in this run'")
    else:
        print(f"browser test: section-{chart}: not in this run")

image = Image.open(sys.argv[2]).convert("RGB")
pixels = image.getdata()
background, count = collections.Counter(pixels).most_common(1)[0]
share = 1.0 - count / len(pixels)
print(f"browser test: {100 * share:.2f} % of {image.width}x{image.height} screenshot pixels differ "
      f"from the background {background}")
if share < 0.05:
    failures.append(f"only {100 * share:.1f} % of the screenshot's pixels differ from the background")
for failure in failures:
    print("browser test: " + failure, file=sys.stderr)
sys.exit(1 if failures else 0)
PYTHON

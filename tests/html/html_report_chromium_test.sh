#!/usr/bin/env bash
# `gpuvet report --html` in a real browser: the page is built from real gpuvet outputs (the
# built gpuvet on the fake NVML: diagnose with a GPU name that is markup, gate, watch --json and
# --record; the H200 bench and scale runs of docs/results; tests/fixtures/html), rendered by
# Debian's headless Chromium, and its DOM must hold every finding id of the inputs, one SVG
# polyline per GPU and metric, and no element made of an input's text. Screenshots are kept.
# Also: a wrong-schema input and an unreadable one are exit 3 and leave OUT as it was.
# Usage: html_report_chromium_test.sh GPUVET FAKE_NVML_LIB SOURCE_DIR ARTIFACT_DIR
# Skipped (77) when chromium is not installed (scripts/setup installs it).
# shellcheck source=tests/skip.sh
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh"
set -uo pipefail
gpuvet=$1 fake_nvml=$2 src=$3 art=$4
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || skip "chromium not installed (scripts/setup installs it)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$art" && art=$(cd "$art" && pwd) || fail "cannot make $art"
rm -f "$art"/report.html "$art"/report.png "$art"/watch.html "$art"/watch.png

live=(--nvml "$fake_nvml" --no-kernel-log --sample-window 0)
evil='<script>alert("gpu")</script>'
# The degraded scenario with a GPU name that is markup.
python3 - "$src/tests/scenarios/degraded-mix.json" "$T/evil.json" "$evil" <<'PY' || fail "scenario"
import json, sys
s = json.load(open(sys.argv[1]))
s["gpus"][0]["name"] = sys.argv[3]
json.dump(s, open(sys.argv[2], "w"))
PY
GPUVET_FAKE_NVML_SCENARIO=$T/evil.json "$gpuvet" diagnose "${live[@]}" --json >"$T/diagnose.json"
rc=$?; ((rc <= 2)) || fail "diagnose exit $rc"
export GPUVET_FAKE_NVML_SCENARIO=$src/tests/scenarios/8gpu-nvlink-h100.json
timeout 60 "$gpuvet" watch "${live[@]}" --interval 0.2 --duration 2 --json --record "$T/record.json" \
  >"$T/watch.jsonl" || fail "watch exit $?"
"$gpuvet" baseline capture "${live[@]}" --output "$T/baseline.toml" >/dev/null || fail "baseline capture"
"$gpuvet" gate "${live[@]}" --baseline "$T/baseline.toml" --json >"$T/gate.json"
rc=$?; ((rc <= 2)) || fail "gate exit $rc"
python3 "$src/tests/html/make_watch_ramp.py" "$T/record.json" "$T/ramp-record.json" || fail "ramp"
"$gpuvet" diagnose --from "$T/ramp-record.json" --json >"$T/ramp-diagnose.json"
rc=$?; ((rc <= 2)) || fail "diagnose --from the ramp: exit $rc"
grep -q '"clocks-degrade-over-time"' "$T/ramp-diagnose.json" ||
  fail "the ramp's hot GPU should be clocks-degrade-over-time"

real=$src/docs/results/h200-honest-2026-12-04/raw-run1
inputs=("$T/diagnose.json" "$T/gate.json" "$T/ramp-diagnose.json" "$T/watch.jsonl" "$T/record.json"
        "$src/tests/fixtures/html/bench-4gpu-pcie.json" "$real/bench/gpuvet-1.json"
        "$src/tests/fixtures/html/scale-8gpu.json" "$real/scale/scale-llm-7b-layer.json")
"$gpuvet" report --html "$art/report.html" "${inputs[@]}" || fail "report exit $?"
"$gpuvet" report --html "$art/watch.html" "$T/ramp-record.json" || fail "report of a recording: exit $?"
echo "ok: gpuvet report --html wrote $art/report.html ($(wc -c <"$art/report.html") bytes)"

# --- bad inputs: exit 3, a sentence naming the file, OUT untouched ----------------------------
echo '{"schema": "gpuvet.something/9"}' >"$T/wrong.json"
cp "$art/report.html" "$T/before.html"
out=$("$gpuvet" report --html "$art/report.html" "$T/diagnose.json" "$T/wrong.json" 2>&1)
rc=$?
((rc == 3)) || fail "a wrong schema: exit $rc ($out)"
[[ $out == *wrong.json*gpuvet.something/9* ]] || fail "a wrong schema said: $out"
cmp -s "$art/report.html" "$T/before.html" || fail "a refused report changed OUT"
out=$("$gpuvet" report --html "$T/new.html" "$T/absent.json" 2>&1)
rc=$?
((rc == 3)) && [[ $out == *absent.json* ]] || fail "a missing input: exit $rc ($out)"
[[ -e $T/new.html ]] && fail "a refused report left $T/new.html"
out=$("$gpuvet" report --html "$T/no-dir/r.html" "$T/diagnose.json" 2>&1)
(($? == 3)) || fail "OUT in a missing directory: not exit 3 ($out)"
ls -A "$art" | grep -q '\.tmp-' && fail "temporary file left in $art"
echo "ok: wrong schema, missing input, unwritable OUT are exit 3 and OUT is untouched"

# --- the browser -------------------------------------------------------------------------------
browse() {  # browse URL ARGS…: one bounded headless Chromium run with its own profile
  local url=$1
  shift
  local profile
  profile=$(mktemp -d "$T/profile.XXXXXX")
  timeout 90 "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$profile" \
    --no-first-run --no-default-browser-check --disable-extensions --disable-sync \
    --disable-background-networking --disable-component-update --disable-default-apps \
    --proxy-server=127.0.0.1:9 --host-resolver-rules='MAP * ~NOTFOUND' \
    "$@" "$url" 2>"$T/chromium.log"
  local rc=$?
  rm -rf "$profile"
  return $rc
}
browse "file://$art/report.html" --dump-dom >"$T/dom.html" || {
  tail -20 "$T/chromium.log"
  fail "chromium --dump-dom exit $?"
}
[[ -s $T/dom.html ]] || fail "empty DOM"
python3 - "$T/dom.html" "$T/diagnose.json" "$T/ramp-diagnose.json" "$T/gate.json" "$T/record.json" <<'PY' ||
import json, re, sys
dom = open(sys.argv[1]).read()
problems = []
ids = set()
for path in sys.argv[2:4] + sys.argv[4:5]:
    ids |= {f["id"] for f in json.load(open(path)).get("findings", [])}
if not ids:
    problems.append("the inputs have no findings: the check would be vacuous")
for i in sorted(ids):
    if f'data-finding="{i}"' not in dom:
        problems.append(f"finding {i} not in the DOM")
gpus = [g["index"] for g in json.load(open(sys.argv[5]))["gpus"]]
for metric in ("sm_mhz", "gpu_c", "power_w"):
    for g in gpus:
        lines = re.findall(rf'<polyline[^>]*data-gpu="{g}" data-metric="{metric}"', dom)
        if not lines:
            problems.append(f"no polyline for GPU{g} {metric}")
if "data-reason=\"thermal\"" not in dom:
    problems.append("the hot GPU's thermal slowdown is not shaded")
# The GPU named <script>…: text in the DOM, never an element.
if re.search(r"<script", dom, re.I):
    problems.append("a <script> element in the DOM")
if "&lt;script&gt;alert(\"gpu\")&lt;/script&gt;" not in dom:
    problems.append("the GPU's name is not shown as text")
sev = [m.group(1) for m in re.finditer(r'<article class="finding sev-(\w+)"', dom)]
rank = {"critical": 3, "warning": 2, "info": 1, "ok": 0}
if [rank[s] for s in sev] != sorted((rank[s] for s in sev), reverse=True):
    problems.append(f"findings not worst first: {sev}")
for section in ("findings", "gpus", "bench", "scale", "watch", "gate"):
    if f'<section id="{section}">' not in dom:
        problems.append(f"no {section} section")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"ok: the DOM holds {len(ids)} finding ids, {len(gpus)} GPUs x 3 series, worst first, no script")
PY
  fail "DOM check"
for page in report watch; do
  browse "file://$art/$page.html" --screenshot="$art/$page.png" --window-size=1280,2000 \
    --hide-scrollbars >/dev/null || fail "chromium --screenshot $page exit $?"
  [[ -s $art/$page.png ]] || fail "no screenshot $art/$page.png"
done
echo "ok: screenshots (artifacts of this run): $art/report.png $art/watch.png (pages: $art/report.html $art/watch.html)"

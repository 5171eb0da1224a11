#!/usr/bin/env bash
# A real Prometheus scrapes `gpuvet export` (fake NVML, fake sysfs tree; loopback, private
# ports, temporary storage): the gpuvet series must arrive in Prometheus's own database with
# dcgm-exporter's labels and the scenario's values. Also: /metrics, / and 404 over HTTP,
# oversized requests refused, a connection flood survived, SIGTERM stops the exporter with exit
# 0, `promtool check metrics` accepts the `diagnose --prom` file, and --prom in a directory
# that cannot be written is exit 3 with a message.
# Usage: prometheus_scrape_test.sh GPUVET FAKE_NVML_LIB SOURCE_DIR
# Needs Debian's prometheus (prometheus, promtool), curl and python3; skipped (77) otherwise.
# shellcheck source=tests/skip.sh
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh"
set -uo pipefail
gpuvet=$1 fake_nvml=$2 src=$3
for tool in /usr/bin/prometheus /usr/bin/promtool curl python3; do
  command -v "$tool" >/dev/null || skip "$tool not installed (scripts/setup installs it)"
done
T=$(mktemp -d)
EXPORTER_PID='' PROM_PID=''
cleanup() {
  [[ -n $EXPORTER_PID ]] && kill -KILL "$EXPORTER_PID" 2>/dev/null
  [[ -n $PROM_PID ]] && kill -KILL "$PROM_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- exporter log"; cat "$T/export.log" 2>/dev/null
  echo "--- prometheus log (tail)"; tail -20 "$T/prometheus.log" 2>/dev/null
  exit 1
}

export GPUVET_FAKE_NVML_SCENARIO=$src/tests/scenarios/sysroot-2numa-4gpu.json
live=(--nvml "$fake_nvml" --root "$src/tests/fixtures/sysroot-2numa-4gpu" --no-kernel-log
      --sample-window 0)
UUID0=GPU-5d3f6a8e-21c4-4b7e-9f0a-6c1e2d3b4a50

# --- diagnose --prom: the textfile, checked by promtool -------------------------------------
"$gpuvet" diagnose "${live[@]}" --prom "$T/gpuvet.prom" >/dev/null
rc=$?
((rc <= 2)) || fail "diagnose --prom exit $rc"
[[ -s $T/gpuvet.prom ]] || fail "no $T/gpuvet.prom"
ls "$T" | grep -q '\.tmp$' && fail "temporary file left beside gpuvet.prom"
grep -q "^gpuvet_gpu_temperature_celsius{gpu=\"0\",UUID=\"$UUID0\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA L40S\",hostname=\"gpu-node-07\",DCGM_FI_DRIVER_VERSION=\"580.159.04\"} 31$" \
  "$T/gpuvet.prom" || fail "textfile lacks GPU0's temperature with dcgm-exporter's labels"
# promtool parses the file and lints it. Its only complaint may be the camelCase of
# dcgm-exporter's own label name modelName (kept so joins work); with that one label renamed
# the file must pass clean.
promtool check metrics <"$T/gpuvet.prom" >"$T/promtool.out" 2>&1
other=$(grep -v "label names should be written in 'snake_case' not 'camelCase'" "$T/promtool.out")
[[ -z $other ]] || fail "promtool check metrics: $other"
sed 's/modelName=/model_name=/' "$T/gpuvet.prom" | promtool check metrics >"$T/promtool2.out" 2>&1 \
  || fail "promtool check metrics (modelName renamed): $(cat "$T/promtool2.out")"
echo "ok: diagnose --prom writes a file promtool accepts"

# A broken exposition must be caught by the same check (the check is not vacuous).
{ cat "$T/gpuvet.prom"; echo 'gpuvet_gpu_temperature_celsius{gpu="0"} 1 2 3'; } |
  promtool check metrics >/dev/null 2>&1 && fail "promtool accepted a broken line"

# --prom where nothing can be written: exit 3 and a sentence, before any collection.
out=$("$gpuvet" diagnose "${live[@]}" --prom "$T/missing-dir/gpuvet.prom" 2>&1 >/dev/null)
rc=$?
((rc == 3)) || fail "--prom in a missing directory: exit $rc"
[[ $out == *"--prom"*"does not exist"* ]] || fail "--prom in a missing directory said: $out"
out=$("$gpuvet" facts "${live[@]}" --prom /proc/gpuvet-test.prom 2>&1 >/dev/null)
rc=$?
((rc == 3)) || fail "--prom under /proc: exit $rc ($out)"
[[ $out == "gpuvet: --prom /proc/gpuvet-test.prom: "* ]] || fail "--prom under /proc said: $out"
echo "ok: --prom into an unwritable place is exit 3: $out"

# --- gpuvet export ----------------------------------------------------------------------------
out=$("$gpuvet" export "${live[@]}" --listen 0.0.0.0:0 2>&1)
rc=$?
((rc == 3)) && [[ $out == *"--allow-remote"* ]] || fail "non-loopback --listen: exit $rc, $out"
echo "ok: a non-loopback address needs --allow-remote"

"$gpuvet" export "${live[@]}" --listen 127.0.0.1:0 --interval 1 2>"$T/export.log" &
EXPORTER_PID=$!
port=''
for _ in $(seq 100); do
  port=$(sed -n 's|^gpuvet export: serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/export.log")
  [[ -n $port ]] && break
  kill -0 "$EXPORTER_PID" 2>/dev/null || fail "gpuvet export exited early"
  sleep 0.1
done
[[ -n $port ]] || fail "gpuvet export did not say where it listens"
base=http://127.0.0.1:$port

ctype=$(curl -s -o "$T/metrics.txt" -w '%{http_code} %{content_type}' "$base/metrics")
[[ $ctype == "200 text/plain; version=0.0.4"* ]] || fail "/metrics: $ctype"
grep -q "^gpuvet_gpu_clock_event_active{gpu=\"0\",UUID=\"$UUID0\",.*,reason=\"sw_power_cap\"} [01]$" \
  "$T/metrics.txt" || fail "/metrics lacks a clock-event reason series"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$base/") == 200 ]] || fail "/ is not 200"
curl -s "$base/" | grep -q '/metrics' || fail "/ does not point at /metrics"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$base/nope") == 404 ]] || fail "/nope is not 404"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$base/$(head -c 20000 /dev/zero | tr '\0' a)") == 414 ]] ||
  fail "a 20 kB request line was not refused with 414"
head -c 100000 /dev/zero >"$T/big.bin"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary "@$T/big.bin" "$base/metrics")
[[ $code == 405 || $code == 000 ]] || fail "a POST with a 100 kB body was answered $code"
# Garbage instead of HTTP, and a client that connects and says nothing: no crash.
printf 'NOT HTTP AT ALL\r\n\r\n' | timeout 10 python3 -c '
import socket,sys
s=socket.create_connection(("127.0.0.1",int(sys.argv[1])));s.sendall(sys.stdin.buffer.read());s.settimeout(8)
print(s.recv(100)[:12])' "$port" >/dev/null 2>&1
# A flood: 300 connections at once, 100 of them idle, bounded in time. Idle connections cost the
# server a poll slot, not a thread, and are cut at the 3 s head deadline; the SYN backlog may
# still shed a few on two loaded CI cores (at most 5 of 200), and the exporter keeps serving.
timeout 120 python3 - "$port" <<'PY' || fail "connection flood"
import socket, sys, concurrent.futures
port = int(sys.argv[1])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
def get(_):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=45)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data.startswith(b"HTTP/1.1 200")
    except OSError:
        return False
with concurrent.futures.ThreadPoolExecutor(64) as ex:
    ok = sum(ex.map(get, range(200)))
for s in idle: s.close()
print(f"flood: {ok}/200 answered 200")
sys.exit(0 if ok >= 195 else 1)
PY
kill -0 "$EXPORTER_PID" 2>/dev/null || fail "gpuvet export died under the flood"
[[ $(curl -s -m 15 -o /dev/null -w '%{http_code}' "$base/metrics") == 200 ]] ||
  fail "/metrics not answered after the flood"
echo "ok: /metrics, /, 404, 414, 405, garbage and a flood on port $port"

# Slowloris (E8): 40 connections each sending one header line a second for 12 s, reconnecting
# when cut; curl every 2 s must be answered (it was starved when slow readers held threads).
timeout 30 python3 - "$port" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
def conn():
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"GET /metrics HTTP/1.1\r\n"); return s
socks = [conn() for _ in range(40)]
end = time.time() + 12
while time.time() < end:
    for i, s in enumerate(socks):
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            socks[i] = conn()
    time.sleep(1)
PY
slow_pid=$!
sleep 1
for i in 1 2 3 4 5; do
  code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$base/metrics")
  [[ $code == 200 ]] || fail "a scrape during the slowloris got $code (try $i)"
  sleep 2
done
wait "$slow_pid"
echo "ok: 5 of 5 scrapes answered while 40 connections dribbled their headers"

# Scrapes are answered from the last collection: with a long --interval two scrapes are the same
# bytes (collect_duration_seconds alone differs between collections). SIGINT stops it too.
"$gpuvet" export "${live[@]}" --listen 127.0.0.1:0 --interval 3600 2>"$T/export2.log" &
second=$!
port2=''
for _ in $(seq 100); do
  port2=$(sed -n 's|^gpuvet export: serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/export2.log")
  [[ -n $port2 ]] && break
  sleep 0.1
done
[[ -n $port2 ]] || { kill -KILL "$second"; fail "second exporter did not start"; }
curl -s "http://127.0.0.1:$port2/metrics" >"$T/a.txt"
sleep 1.5
curl -s "http://127.0.0.1:$port2/metrics" >"$T/b.txt"
kill -INT "$second"
for _ in $(seq 100); do kill -0 "$second" 2>/dev/null || break; sleep 0.1; done
kill -0 "$second" 2>/dev/null && { kill -KILL "$second"; fail "SIGINT did not stop gpuvet export"; }
wait "$second" || fail "gpuvet export exit $? after SIGINT"
grep -q '^gpuvet_collect_duration_seconds[{ ]' "$T/a.txt" || fail "no gpuvet_collect_duration_seconds"
cmp -s "$T/a.txt" "$T/b.txt" || fail "a scrape collected again inside --interval"
echo "ok: scrapes inside --interval are served from the last collection; SIGINT stops it"

# --- a real Prometheus scrapes it ---------------------------------------------------------------
prom_port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpuvet
    static_configs:
      - targets: ['127.0.0.1:$port']
YML
/usr/bin/prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$T/prometheus.log" 2>&1 &
PROM_PID=$!
query() { curl -s -m 5 --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"; }
found=''
for _ in $(seq 60); do  # at most ~30 s
  kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited"
  query 'gpuvet_gpu_temperature_celsius' >"$T/q.json" 2>/dev/null
  if python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["data"]["result"] else 1)' \
    "$T/q.json" 2>/dev/null; then
    found=1
    break
  fi
  sleep 0.5
done
[[ -n $found ]] || fail "no gpuvet_gpu_temperature_celsius series in Prometheus after 30 s"
python3 - "$T/q.json" "$UUID0" <<'PY' || fail "series in Prometheus: $(cat "$T/q.json")"
import json, sys
result = json.load(open(sys.argv[1]))["data"]["result"]
by_gpu = {r["metric"]["gpu"]: r for r in result}
assert sorted(by_gpu) == ["0", "1", "2", "3"], sorted(by_gpu)
m = by_gpu["0"]["metric"]
want = {"__name__": "gpuvet_gpu_temperature_celsius", "gpu": "0", "UUID": sys.argv[2],
        "pci_bus_id": "00000000:18:00.0", "device": "nvidia0", "modelName": "NVIDIA L40S",
        "hostname": "gpu-node-07", "DCGM_FI_DRIVER_VERSION": "580.159.04",
        "job": "gpuvet", "instance": m.get("instance")}
assert m == want, f"labels {m} != {want}"
assert by_gpu["0"]["value"][1] == "31", by_gpu["0"]["value"]
print("ok: Prometheus holds", len(result), "temperature series; GPU0:", m)
PY
# A finding and the verdict arrived too, and a join on UUID works inside Prometheus.
query 'count(gpuvet_finding{severity=~"warning|critical"})' | grep -q '"result":\[{' ||
  fail "no warning/critical gpuvet_finding series in Prometheus"
query 'sum(gpuvet_verdict)' | grep -q '"value":\[[0-9.]*,"1"\]' || fail "gpuvet_verdict is not one state"
query 'gpuvet_gpu_power_watts * on(UUID) group_left(reason) gpuvet_gpu_clock_event_active{reason="sw_power_cap"}' |
  grep -q "\"UUID\":\"$UUID0\"" || fail "on(UUID) join returned nothing"
query 'up{job="gpuvet"}' | grep -q '"value":\[[0-9.]*,"1"\]' || fail "target not up"
echo "ok: Prometheus scraped gpuvet export: labels, values, findings, verdict, on(UUID) join"

# --- SIGTERM stops it cleanly ---------------------------------------------------------------
kill -TERM "$EXPORTER_PID"
for _ in $(seq 100); do kill -0 "$EXPORTER_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$EXPORTER_PID" 2>/dev/null && fail "gpuvet export still running 10 s after SIGTERM"
wait "$EXPORTER_PID"
rc=$?
EXPORTER_PID=''
((rc == 0)) || fail "gpuvet export exit $rc after SIGTERM"
grep -q "gpuvet export: stopped" "$T/export.log" || fail "no 'stopped' line"
echo "ok: SIGTERM stops gpuvet export with exit 0"
echo PASS

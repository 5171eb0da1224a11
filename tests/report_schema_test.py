#!/usr/bin/env python3
"""Validates real gpuvet.report/1 documents against docs/schema/gpuvet.report-1.schema.json.

`gpuvet diagnose --json` on the project's fixtures, on the shared real corpus when it is
next to the checkout, and live on the fake NVML (plus `facts --json`), each checked with
Debian's python3-jsonschema (Draft 2020-12). Then copies of a real document with one thing
wrong (a string for a number, an action outside the fixed set, a missing key) must fail, so
that a schema that accepts anything fails this test.
Usage: report_schema_test.py GPUVET FAKE_NVML_LIB SOURCE_DIR
"""
import copy
import glob
import json
import os
import subprocess
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:
    # Skipped on a developer's machine; under CI=true (scripts/setup installed it) a failure.
    if os.environ.get("CI") == "true":
        print("FAIL: cannot run under CI=true: python3-jsonschema is not installed")
        sys.exit(1)
    print("python3-jsonschema is not installed (apt-get install python3-jsonschema): skipped")
    sys.exit(77)

gpuvet, fake_nvml, src = sys.argv[1:4]
with open(os.path.join(src, "docs/schema/gpuvet.report-1.schema.json")) as f:
    schema = json.load(f)
Draft202012Validator.check_schema(schema)
validator = Draft202012Validator(schema)
failures = []


def run(args, env_extra=None):
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    if env_extra:
        env.update(env_extra)
    p = subprocess.run([gpuvet] + args, capture_output=True, text=True, env=env, timeout=60)
    return p.returncode, p.stdout


def check(label, args, env_extra=None):
    rc, out = run(args, env_extra)
    if not out.strip():
        return None  # refused input (exit 3 with a message): nothing to validate
    doc = json.loads(out)
    if doc.get("schema") == "gpuvet.error/1":
        # Refused input under --json: the error document, with the process's exit code.
        for key in ("command", "exit_code", "message", "argv"):
            if key not in doc:
                failures.append(f"{label}: error document without '{key}'")
        if doc.get("exit_code") != rc or rc != 3:
            failures.append(f"{label}: error document exit_code {doc.get('exit_code')}, "
                            f"process {rc}")
        return None
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    for e in errors[:5]:
        failures.append(f"{label}: {'/'.join(map(str, e.path))}: {e.message[:300]}")
    if "findings" in doc and doc.get("exit_code") != rc:
        failures.append(f"{label}: exit_code {doc.get('exit_code')} but the process exited {rc}")
    return doc


docs = []
inputs = sorted(glob.glob(os.path.join(src, "tests/fixtures/*/*.txt")) +
                glob.glob(os.path.join(src, "tests/fixtures/*/*.log")))
shared = os.path.join(src, "..", "shared", "fixtures", "real")
if os.path.isdir(shared):
    for root, _, files in os.walk(shared):
        inputs += [os.path.join(root, n) for n in sorted(files)
                   if not n.endswith((".md", ".json", ".py")) and not n.startswith(".")]
for path in inputs:
    d = check(os.path.relpath(path, src), ["diagnose", "--json", "--from", path])
    if d is not None:
        docs.append(d)

live = ["--nvml", fake_nvml, "--no-kernel-log", "--sample-window", "0"]
for scenario in ["8gpu-nvlink-h100", "degraded-mix", "fault-gpu-lost", "2gpu-pcie-sys",
                 "h200-1gpu-load", "fault-driver-not-loaded"]:
    env = {"GPUVET_FAKE_NVML_SCENARIO": os.path.join(src, "tests/scenarios", scenario + ".json")}
    for cmd in (["diagnose", "--json"], ["facts", "--json"]):
        d = check(f"live {scenario} {cmd[0]}", cmd + live, env)
        if d is not None:
            docs.append(d)
        elif cmd[0] == "diagnose":
            failures.append(f"live {scenario}: diagnose --json printed nothing")

findings = [f for d in docs for f in d.get("findings", [])]
print(f"{len(docs)} documents, {len(findings)} findings validated")
if len(docs) < 30:
    failures.append(f"only {len(docs)} documents were produced: the inputs are not being read")
# The new keys carry real values somewhere, not only nulls.
if not any(f["observed"] is not None and f["expected"] is not None for f in findings):
    failures.append("no finding carries observed and expected values")
if not any(g["uuid"] for f in findings for g in f["gpus"]):
    failures.append("no finding names a GPU with its UUID")
if not any(g["pci_bus_id"] for f in findings for g in f["gpus"]):
    failures.append("no finding names a GPU with its PCI bus id")
if len({f["action"] for f in findings}) < 4:
    failures.append(f"few actions in use: {sorted({f['action'] for f in findings})}")

# Negative checks: each broken copy of a real diagnose document must be rejected.
base = next((d for d in docs if any(f["gpus"] and f["observed"] for f in d.get("findings", []))),
            None)
if base is None:
    failures.append("no document with a GPU finding and values to break")
else:
    i = next(n for n, f in enumerate(base["findings"]) if f["gpus"] and f["observed"])

    def broken(label, change):
        doc = copy.deepcopy(base)
        change(doc)
        if validator.is_valid(doc):
            failures.append(f"negative check accepted: {label}")

    broken("unknown action", lambda d: d["findings"][i].update(action="reboot"))
    broken("exit_code as a string", lambda d: d.update(exit_code=str(d["exit_code"])))
    broken("observed value as a string",
           lambda d: d["findings"][i]["observed"].update(value=str(d["findings"][i]["observed"]["value"])))
    broken("expected without its bound", lambda d: d["findings"][i]["expected"].pop("bound"))
    broken("finding without action", lambda d: d["findings"][i].pop("action"))
    broken("gpus as a string", lambda d: d["findings"][i].update(gpus="GPU0"))
    broken("uuid as a number", lambda d: d["findings"][i]["gpus"][0].update(uuid=5))
    broken("verdict outside the set", lambda d: d.update(verdict="fine"))
    broken("a GPU without its index key", lambda d: d["gpus"][0].pop("index") if d["gpus"]
           else d.update(gpus="none"))
    broken("findings without verdict", lambda d: d.pop("verdict"))
    broken("wrong schema name", lambda d: d.update(schema="gpuvet.report/2"))
    # A key a later version adds is allowed (keys are added, never renamed).
    ok = copy.deepcopy(base)
    ok["coverage"] = [{"check": "topology", "ran": True}]
    ok["findings"][i]["new_key_of_a_later_version"] = 1
    if not validator.is_valid(ok):
        failures.append("a document with added keys (coverage, a new finding key) was rejected")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)

#!/usr/bin/env python3
"""Runs gpuvet on every case of the real-world corpus and checks it against expected.json.

tickets/<case>/ are judged by `gpuvet diagnose --json --from <the case's blocks>`,
hangs/<case>/ by `gpuvet culprit --json <the case's blocks>` (every file but PROVENANCE.md and
expected.json). Prints `tickets k/n, hangs k/m`, then the misses grouped by class. Exits 1 when
a case fails that known-misses.txt does not list (a regression), or when a listed case passes
(take it off the list: the figure only goes up), or when a case is malformed; 0 otherwise.

Usage: run_corpus.py --gpuvet build/gpuvet [--corpus tests/corpus] [--known FILE]
                     [--case NAME] [-v] [--json OUT]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

SEVERITIES = ["ok", "info", "warning", "critical"]
KEYS = {"schema", "diagnosis", "class", "healthy", "must", "must_any", "must_not",
        "min_severity", "max_severity", "subjects", "gpu_count", "culprit_ranks",
        "no_single_culprit", "no_hang"}
# Why a case missed, worst first; the first that applies is the case's class.
MISS_CLASSES = ["malformed case", "format not read", "could not judge (exit 3)",
                "fact not extracted", "false alarm", "wrong culprit", "rule missing",
                "wrong severity", "wrong subject", "wrong GPU count", "crash or timeout"]
BLOCK_SKIP = {"PROVENANCE.md", "expected.json"}
TIMEOUT_S = 60


def sev_rank(s):
    return SEVERITIES.index(s) if s in SEVERITIES else -1


def norm_subject(s):
    """'0000:3B:00.0', '3b:00.0', '00000000:3B:00.0' → '3b:00.0'; 'GPU 3' → 'GPU3'."""
    s = s.strip()
    low = s.lower()
    parts = low.split(":")
    if len(parts) >= 2 and "." in parts[-1] and all(
            c in "0123456789abcdef:." for c in low):
        return ":".join(parts[-2:])
    if low.startswith("gpu"):
        return "GPU" + s[3:].strip()
    return s


def finding_subjects(f):
    out = set()
    for s in f.get("subjects", []):
        out.add(norm_subject(s))
        # "GPU3" subjects carry their bus ids beside them in the JSON
    for key in ("pci_bus_ids", "gpu_bus_ids"):
        for b in f.get(key, []) or []:
            if b:
                out.add(norm_subject(b))
    for g in f.get("gpus", []) or []:
        if isinstance(g, dict):
            for k in ("pci_bus_id", "bus_id"):
                if g.get(k):
                    out.add(norm_subject(g[k]))
            if g.get("index") is not None:
                out.add("GPU%d" % g["index"])
    return out


def blocks_of(case_dir):
    return sorted(os.path.join(case_dir, n) for n in os.listdir(case_dir)
                  if n not in BLOCK_SKIP and os.path.isfile(os.path.join(case_dir, n)))


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, -1, "timed out after %d s" % TIMEOUT_S
    try:
        doc = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        doc = None
    return doc, p.returncode, p.stderr


def judge(kind, case_dir, exp, gpuvet):
    """Returns (passed, miss_class, reasons, summary)."""
    reasons = []
    unknown = set(exp) - KEYS
    if unknown or "diagnosis" not in exp or "class" not in exp:
        return False, "malformed case", ["expected.json: unknown keys %s or no diagnosis/class"
                                         % sorted(unknown)], {}
    blocks = blocks_of(case_dir)
    if not blocks:
        return False, "malformed case", ["no block files"], {}
    if kind == "tickets":
        # diagnose reads one --from PATH: a private folder holding only the blocks.
        tmp = tempfile.mkdtemp(prefix="gpuvet-corpus-")
        try:
            for b in blocks:
                shutil.copy(b, tmp)
            doc, rc, err = run([gpuvet, "diagnose", "--json", "--from", tmp])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        doc, rc, err = run([gpuvet, "culprit", "--json"] + blocks)
    if doc is None and rc == 3:  # refused with a message: nothing it could read
        if kind == "hangs":
            return False, "could not judge (exit 3)", ["exit 3: %s" % err.strip()[:300]], {"exit": rc}
        return False, "format not read", ["exit 3: %s" % err.strip()[:300]], {"exit": rc}
    if doc is None or rc not in (0, 1, 2, 3):
        return False, "crash or timeout", ["exit %s: %s" % (rc, err.strip()[:300])], {}

    findings = doc.get("findings", [])
    worst = "ok"
    for f in findings:
        if sev_rank(f.get("severity", "ok")) > sev_rank(worst):
            worst = f.get("severity")
    alarms = {f["id"] for f in findings if sev_rank(f.get("severity")) >= 2}
    ids_any = {f["id"] for f in findings}
    summary = {"exit": rc, "worst": worst,
               "findings": sorted("%s:%s" % (f["id"], f.get("severity")) for f in findings)}
    classes = []

    formats = []
    for imp in (doc.get("facts", doc).get("imported", []) if kind == "tickets" else []):
        formats.append(imp.get("format"))
    if kind == "tickets" and formats and all(f == "unrecognised" for f in formats):
        classes.append("format not read")
        reasons.append("no block recognised")
    if kind == "tickets" and rc == 3:
        classes.append("could not judge (exit 3)")
        reasons.append("exit 3: %s" % "; ".join(doc.get("notes", [])[:1]))
    if kind == "hangs" and rc == 3:  # a job that did not hang is a verdict too, not exit 3
        classes.append("could not judge (exit 3)")
        reasons.append("exit 3: %s" % "; ".join(doc.get("problems", [])[:2]))

    for i in exp.get("must", []):
        if i not in alarms:
            classes.append("wrong severity" if i in ids_any else "rule missing")
            reasons.append("%s expected at warning or worse (%s)" %
                           (i, "present below warning" if i in ids_any else "absent"))
    for group in exp.get("must_any", []):
        if not alarms.intersection(group):
            present = ids_any.intersection(group)
            classes.append("wrong severity" if present else "rule missing")
            reasons.append("one of %s expected at warning or worse" % group)
    for i in exp.get("must_not", []):
        if i in alarms:
            classes.append("false alarm")
            reasons.append("%s must not be raised" % i)
    if exp.get("healthy") and sev_rank(worst) >= 2:
        classes.append("false alarm")
        reasons.append("healthy machine, worst finding %s (%s)" %
                       (worst, ", ".join(sorted(alarms))))
    if "min_severity" in exp and sev_rank(worst) < sev_rank(exp["min_severity"]):
        classes.append("wrong severity" if findings else "rule missing")
        reasons.append("worst %s below %s" % (worst, exp["min_severity"]))
    if "max_severity" in exp and sev_rank(worst) > sev_rank(exp["max_severity"]):
        classes.append("false alarm")
        reasons.append("worst %s above %s" % (worst, exp["max_severity"]))
    for i, subs in exp.get("subjects", {}).items():
        have = set()
        for f in findings:
            if f["id"] == i:
                have |= finding_subjects(f)
        for sub in subs:
            if norm_subject(sub) not in have:
                classes.append("wrong subject")
                reasons.append("%s should name %s (names %s)" % (i, sub, sorted(have)))
    if "gpu_count" in exp and kind == "tickets":
        facts = doc.get("facts", doc)
        n = len(facts.get("gpus", []))
        if n != exp["gpu_count"]:
            classes.append("wrong GPU count")
            reasons.append("%d GPUs seen, %d expected" % (n, exp["gpu_count"]))

    if kind == "hangs":
        named = sorted({c["rank"] for c in doc.get("culprits", [])})
        summary["culprits"] = named
        summary["verdict"] = doc.get("verdict")
        if "culprit_ranks" in exp and named != sorted(exp["culprit_ranks"]):
            classes.append("wrong culprit")
            reasons.append("culprits %s, expected %s" % (named, sorted(exp["culprit_ranks"])))
        if exp.get("no_single_culprit"):
            if named:
                classes.append("wrong culprit")
                reasons.append("named %s where no single rank is at fault" % named)
            if doc.get("verdict") != "hang" and not any(
                    i.startswith("collective-hang") or i == "nccl-error" for i in alarms):
                classes.append("rule missing")
                reasons.append("the hang is not reported")
        if exp.get("no_hang"):
            hang_ids = [i for i in alarms if i.startswith("collective-hang")]
            if hang_ids or doc.get("verdict") == "hang":
                classes.append("false alarm")
                reasons.append("reported a hang: %s" % hang_ids)

    if not classes:
        return True, None, [], summary
    cls = min(classes, key=MISS_CLASSES.index)
    return False, cls, reasons, summary


def read_known(path):
    known = {}
    if not path or not os.path.exists(path):
        return known
    with open(path) as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            case, _, cls = line.partition(" ")
            known[case] = cls.strip()
    return known


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuvet", required=True)
    ap.add_argument("--corpus", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--known")
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--json")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    known = read_known(a.known if a.known else os.path.join(a.corpus, "known-misses.txt"))

    results = []
    tally = {"tickets": [0, 0], "hangs": [0, 0]}
    healthy = [0, 0]
    for kind in ("tickets", "hangs"):
        root = os.path.join(a.corpus, kind)
        if not os.path.isdir(root):
            continue
        for case in sorted(os.listdir(root)):
            d = os.path.join(root, case)
            if not os.path.isdir(d) or (a.case and case not in a.case):
                continue
            name = "%s/%s" % (kind, case)
            try:
                with open(os.path.join(d, "expected.json")) as fh:
                    exp = json.load(fh)
            except (OSError, json.JSONDecodeError) as e:
                ok, cls, why, summ, exp = False, "malformed case", [str(e)], {}, {}
            else:
                ok, cls, why, summ = judge(kind, d, exp, a.gpuvet)
            tally[kind][1] += 1
            tally[kind][0] += ok
            if exp.get("healthy"):
                healthy[1] += 1
                healthy[0] += ok
            results.append({"case": name, "passed": ok, "class": cls, "why": why,
                            "expected_class": exp.get("class"), "healthy": bool(exp.get("healthy")),
                            "gpuvet": summ})

    t, h = tally["tickets"], tally["hangs"]
    print("tickets %d/%d, hangs %d/%d (healthy traps %d/%d without a false alarm)"
          % (t[0], t[1], h[0], h[1], healthy[0], healthy[1]))
    # A listed miss is grouped by the class known-misses.txt gives it (the reason, read from
    # the case); a new miss by the class the checks above found.
    by_class = {}
    for r in results:
        if not r["passed"]:
            listed = known.get(r["case"], "").split(":", 1)[0].strip()
            by_class.setdefault(listed or r["class"], []).append(r)
    for cls in MISS_CLASSES + sorted(set(by_class) - set(MISS_CLASSES)):
        if cls not in by_class:
            continue
        print("\n%s: %d" % (cls, len(by_class[cls])))
        for r in by_class[cls]:
            print("  %s [%s]: %s" % (r["case"], r["expected_class"], "; ".join(r["why"])[:400]))
            if a.v:
                print("      gpuvet: %s" % json.dumps(r["gpuvet"]))

    bad = 0
    for r in results:
        listed = r["case"] in known
        if not r["passed"] and not listed:
            print("REGRESSION or new miss not in known-misses.txt: %s (%s)" % (r["case"], r["class"]))
            bad += 1
        elif r["passed"] and listed:
            print("PASSES but listed in known-misses.txt (take it off): %s" % r["case"])
            bad += 1
        elif r["class"] == "malformed case":
            bad += 1
    for case in known:
        if not any(r["case"] == case for r in results) and not a.case:
            print("known-misses.txt names a case that is not in the corpus: %s" % case)
            bad += 1
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"tickets": t, "hangs": h, "healthy": healthy, "cases": results}, fh,
                      indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

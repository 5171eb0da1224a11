#!/usr/bin/env python3
"""The do-it-yourself fleet ingest of docs/reviews perf.md appendix B: the floor a user's own
script reaches on the same files (it stores less than gpuvet and judges nothing).

Reads every *.json under ROOT with `json`, hashes the bytes (sha256) and inserts the documents,
GPUs, pairs and bandwidth rows into SQLite in one transaction; a document whose hash is there
already is not added again. scripts/bench-fleet-ingest times it beside `gpuvet fleet ingest`.

Usage: fleet-ingest-reference.py DB ROOT
"""
import glob, hashlib, json, os, sqlite3, sys
db, root = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db)
c.executescript("""CREATE TABLE IF NOT EXISTS documents(id INTEGER PRIMARY KEY, hash TEXT UNIQUE,
  host TEXT, collected_unix INTEGER, schema TEXT, verdict TEXT, reason TEXT, gpu_model TEXT, gpu_count INTEGER);
CREATE TABLE IF NOT EXISTS gpus(doc, idx, name, uuid, bus, width, width_max, gen_max, numa);
CREATE TABLE IF NOT EXISTS pairs(doc, a, b, path, p2p);
CREATE TABLE IF NOT EXISTS bandwidth(doc, key, subject, gbps);""")
with c:  # one transaction
    for p in glob.glob(os.path.join(root, "**", "*.json"), recursive=True):
        raw = open(p, "rb").read(); d = json.loads(raw); h = hashlib.sha256(raw).hexdigest()
        if d.get("schema") == "gpuvet.gate/1":
            n = d["node"]; host, t = d["host"], d.get("collected_unix")
            gpus = [(g["index"], g.get("name"), g.get("uuid"), g.get("pci_bus_id"), g.get("pcie_width"),
                     g.get("pcie_width_max"), g.get("pcie_gen_max"), g.get("numa_node")) for g in n["gpus"]]
            pairs = [(q.get("a"), q.get("b"), q.get("path"), q.get("p2p")) for q in n["pairs"]]
            bw = [(b["key"], b["subject"], b["gbps"]) for b in n.get("bandwidth") or []]
            meta = (n.get("gpu_model"), n.get("gpu_count"), d.get("verdict"), d.get("reason"))
        else:  # gpuvet.report/1
            host, t = d["host"]["hostname"], d["host"].get("collected_unix")
            gpus = [(g.get("index"), g.get("name"), g.get("uuid"), g.get("pci_bus_id"), (g.get("pcie") or {}).get("width"),
                     (g.get("pcie") or {}).get("width_max"), (g.get("pcie") or {}).get("gen_max"), g.get("numa_node"))
                    for g in d.get("gpus", [])]
            pairs = [(q.get("a"), q.get("b"), q.get("level"), json.dumps(q.get("p2p"))) for q in d.get("pairs", [])]
            bw = []; meta = (gpus[0][1] if gpus else None, len(gpus), d.get("verdict"), None)
        cur = c.execute("INSERT OR IGNORE INTO documents(hash,host,collected_unix,schema,gpu_model,gpu_count,verdict,reason)"
                        " VALUES(?,?,?,?,?,?,?,?)", (h, host, t, d.get("schema")) + meta)
        if cur.rowcount == 0: continue
        doc = cur.lastrowid
        c.executemany("INSERT INTO gpus VALUES(?,?,?,?,?,?,?,?,?)", [(doc,) + g for g in gpus])
        c.executemany("INSERT INTO pairs VALUES(?,?,?,?,?)", [(doc,) + q for q in pairs])
        c.executemany("INSERT INTO bandwidth VALUES(?,?,?,?)", [(doc,) + b for b in bw])

#!/usr/bin/env python3
"""Hostile-input, hang, leak and signal attacks on a gpuvet build.

    scripts/attacks BUILD_DIR [--full] [--only N,M,A-B] [--timeout S] [--keep] [--out FILE]
    scripts/attacks.py pty [--cols N] [--ctrl-c S | --term S] [--limit S] -- CMD...

Every input is generated in a fresh temporary directory; every command runs there under
`timeout` and `/usr/bin/time`. The result is one Markdown table on stdout (#, attack, command,
expected, observed, verdict) and a summary line. See docs/reliability.md.
"""

import argparse
import fcntl
import glob
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import termios
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(REPO, "tests", "fixtures")
SCEN = os.path.join(REPO, "tests", "scenarios")

# Sizes: (default, --full). Defaults are big enough to show each behaviour.
SIZES = {
    "nl_mb": (50, 500),
    "kernel_lines": (200_000, 1_000_000),
    "oneline_mb": (20, 100),
    "depth": (200_000, 2_000_000),
    "dir_files": (25_000, 100_000),
    "dmany_junk": (25_000, 30_000),
    "stdin": ("300M", "2G"),
    "xml_gpus": (1500, 10_000),
    "q_gpus": (1500, 10_000),
    "csv_rows": (100_000, 1_000_000),
    "L_lines": (100_000, 1_000_000),
    "topo": ([256, 512], [256, 512, 1024, 2048]),
    "pmon_rows": (100_000, 100_000),
    "nccl_lines": (500_000, 5_000_000),
    "dmesg_per": (250, 2232),  # Xid lines per (bus id, code): 64 bus ids x 7 codes
}
DIR_WALK_CAP = 20_000  # files the directory walk read before it stopped (readdir order)

HOST = "gpu-node-07"
FQDN = HOST + ".cluster.example.com"
MAC = "0c:42:a1:de:ad:01"
IPS = ["10.20.30.40", "10.20.30.41"]
HOME = "/home/alice"
EXTRA_SERIAL = "1650999999999"
EXTRA_UUID = "GPU-9d2c41aa-7b3e-4f10-8c55-0e6a1b2c3d4e"
MIG_UUIDS = ["MIG-5c1a0e4f-1b2c-5d3e-9f40-a1b2c3d4e5f6", "MIG-77aa10bc-2d3e-5f60-8a9b-0c1d2e3f4a5b"]


class Skip(Exception):
    pass


# --------------------------------------------------------------------------- pty driver


def pty_main(argv):
    ap = argparse.ArgumentParser(prog="attacks.py pty", description="run CMD on a pseudo-terminal")
    ap.add_argument("--cols", type=int, help="terminal width")
    ap.add_argument("--ctrl-c", type=float, metavar="S", help="type ^C after S seconds")
    ap.add_argument("--term", type=float, metavar="S", help="send SIGTERM after S seconds")
    ap.add_argument("--limit", type=float, default=60, help="kill CMD after S seconds")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")
    pid, fd = pty.fork()
    if pid == 0:
        try:
            if a.cols:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, a.cols, 0, 0))
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    start = time.monotonic()
    sent = None
    status = None
    out = bytearray()
    killed = False
    when = a.ctrl_c if a.ctrl_c is not None else a.term
    while status is None:
        now = time.monotonic()
        if sent is None and when is not None and now - start >= when:
            if a.ctrl_c is not None:
                os.write(fd, b"\x03")
            else:
                os.kill(pid, signal.SIGTERM)
            sent = now
        if not killed and now - start > a.limit:
            os.kill(pid, signal.SIGKILL)
            killed = True
        r, _, _ = select.select([fd], [], [], 0.01)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            out += data
        wp, st = os.waitpid(pid, os.WNOHANG)
        if wp:
            status = st
            ended = time.monotonic()
    for _ in range(100):  # what is still buffered
        r, _, _ = select.select([fd], [], [], 0.02)
        if not r:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    sys.stdout.buffer.write(bytes(out))
    sys.stdout.flush()
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    after = f"{ended - sent:.2f}" if sent is not None else "-"
    print(f"pty: status={code} exit_after_signal={after} wall={ended - start:.2f}"
          f"{' killed-at-limit' if killed else ''}", file=sys.stderr)
    return code


# --------------------------------------------------------------------------- running


class R:
    """One command's result."""

    def __init__(self, cmd, code, wall, rss_kb, out, err, timeout):
        self.cmd, self.code, self.wall, self.out, self.err = cmd, code, wall, out, err
        self.rss = rss_kb / 1024.0
        self.timed_out = code in (124, 137) and wall >= timeout - 0.5
        self.text = (out + b"\n" + err).decode("utf-8", "replace")
        self.errtext = err.decode("utf-8", "replace")
        self.outtext = out.decode("utf-8", "replace")

    def json(self):
        try:
            return json.loads(self.outtext)
        except ValueError:
            return None

    def crashed(self):
        return (self.code >= 128 and self.code not in (141,) and not self.timed_out) or re.search(
            r"AddressSanitizer|runtime error:|LeakSanitizer|terminate called|Segmentation fault",
            self.errtext) is not None

    def obs(self, extra=None, rss=True):
        code = f"{self.code} (timeout)" if self.timed_out else str(self.code)
        parts = [code, f"{self.wall:.2f} s"]
        if rss:
            parts.append(f"{self.rss:.0f} MB")
        ex = self.excerpt() if extra is None else extra
        if ex:
            parts.append(ex)
        return " / ".join(parts)

    def excerpt(self, pattern=None):
        lines = []
        if pattern:
            lines = [l for l in self.text.splitlines() if re.search(pattern, l, re.I)]
        if not lines:
            lines = [l for l in self.errtext.splitlines() if l.strip() and not l.startswith("pty:")]
        if not lines:
            lines = [l for l in self.outtext.splitlines() if l.strip()]
        return quote(lines[0]) if lines else ""


def quote(s, n=90):
    s = s.strip()
    s = s.replace("\x1b", "\\e").replace("\a", "\\a")
    s = "".join(c if c >= " " or c == "\t" else f"\\x{ord(c):02x}" for c in s)
    if len(s) > n:
        s = s[: n - 1] + "…"
    return '"' + s + '"'


class Ctx:
    def __init__(self, args):
        self.build = os.path.abspath(args.build)
        self.gpuvet = os.path.join(self.build, "gpuvet")
        self.fake = os.path.join(self.build, "tests", "libnvidia-ml-fake.so")
        self.fake_old = os.path.join(self.build, "tests", "libnvidia-ml-fake-old.so")
        self.asan = os.path.abspath(args.asan_build) if args.asan_build else None
        self.full = args.full
        self.timeout = args.timeout
        self.root = os.geteuid() == 0
        self.work = tempfile.mkdtemp(prefix="gpuvet-attacks.")
        os.chmod(self.work, 0o755)  # rows run as nobody read it
        self.token = os.path.basename(self.work)
        self.mounts = []
        self.made = {}
        self.big = []
        self.nrun = 0
        bindir = self.path("bin")
        os.makedirs(bindir)
        os.symlink(self.gpuvet, os.path.join(bindir, "gpuvet"))
        with open(os.path.join(bindir, "ptyrun"), "w") as f:
            f.write(f'#!/bin/sh\nexec {sys.executable} {os.path.abspath(__file__)} pty "$@"\n')
        os.chmod(os.path.join(bindir, "ptyrun"), 0o755)
        os.symlink(os.path.join(REPO, "tests"), self.path("tests"))
        os.makedirs(self.path(".runs"))
        for t in ("task-11.txt", "task-02.txt"):
            shutil.copy(os.path.join(FIX, "article", t), self.path(t))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("GPUVET_") and k not in ("NO_COLOR", "COLUMNS", "TERM")}
        env["PATH"] = bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin")
        env["FAKE"] = self.fake
        env["FAKE_OLD"] = self.fake_old
        env["ATTACKS_TOKEN"] = self.token
        self.env = env

    def size(self, key):
        return SIZES[key][1 if self.full else 0]

    def path(self, *p):
        return os.path.join(self.work, *p)

    def sh(self, cmd, timeout=None, env=None, stdin=None):
        t = timeout or self.timeout
        self.nrun += 1
        base = self.path(".runs", str(self.nrun))
        e = dict(self.env)
        e.update(env or {})
        argv = ["/usr/bin/time", "-f", "%e %M", "-o", base + ".time", "timeout", "-k", "5",
                str(t), "bash", "-c", cmd]
        with open(base + ".out", "wb") as o, open(base + ".err", "wb") as er:
            start = time.monotonic()
            p = subprocess.run(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                               stdout=o, stderr=er, cwd=self.work, env=e)
            wall = time.monotonic() - start
        code = p.returncode if p.returncode >= 0 else 128 - p.returncode
        rss = 0
        try:
            with open(base + ".time") as f:
                last = [l for l in f.read().splitlines() if re.match(r"^[\d.]+ \d+$", l)]
            if last:
                w, rss = last[-1].split()
                wall, rss = float(w), int(rss)
        except OSError:
            pass

        def head(fn, n=16 << 20):
            with open(fn, "rb") as f:
                return f.read(n)

        r = R(cmd, code, wall, rss, head(base + ".out"), head(base + ".err"), t)
        for ext in (".out", ".err", ".time"):
            try:
                os.unlink(base + ext)
            except OSError:
                pass
        return r

    def kill_leftovers(self):
        """Ends processes this run started (they carry its token) that outlived their row."""
        me = os.getpid()
        left = []
        for d in glob.glob("/proc/[0-9]*"):
            pid = int(os.path.basename(d))
            if pid == me:
                continue
            try:
                with open(d + "/environ", "rb") as f:
                    env = f.read()
            except OSError:
                continue
            if b"ATTACKS_TOKEN=" + self.token.encode() + b"\0" in env:
                left.append(pid)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return left

    def cleanup(self, keep):
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
        self.kill_leftovers()
        if keep:
            print(f"work directory kept: {self.work}", file=sys.stderr)
            return
        for root, dirs, _ in os.walk(self.work):
            for d in dirs:
                try:
                    os.chmod(os.path.join(root, d), 0o755)
                except OSError:
                    pass
        shutil.rmtree(self.work, ignore_errors=True)

    def drop_big(self):
        for p in self.big:
            try:
                os.unlink(p)
            except OSError:
                pass
            self.made = {k: v for k, v in self.made.items() if v != p}
        self.big = []


def made(fn):
    """Generate an input once per run (big ones again after they were dropped)."""

    def wrap(ctx, *a):
        key = (fn.__name__,) + a
        if key not in ctx.made:
            ctx.made[key] = fn(ctx, *a)
        return ctx.made[key]

    return wrap


def write_lines(path, gen, chunk=20000):
    with open(path, "w") as f:
        buf = []
        for line in gen:
            buf.append(line)
            if len(buf) >= chunk:
                f.write("\n".join(buf) + "\n")
                buf = []
        if buf:
            f.write("\n".join(buf) + "\n")


def mb(path):
    return os.path.getsize(path) / 1e6


# --------------------------------------------------------------------------- inputs


def scenario(name):
    with open(os.path.join(SCEN, name)) as f:
        return json.load(f)


@made
def scenarios8(ctx):
    """8-*.json: tests/scenarios/8gpu-nvlink-h100.json with one change each."""
    b = scenario("8gpu-nvlink-h100.json")

    def w(name, f):
        s = json.loads(json.dumps(b))
        f(s)
        with open(ctx.path(name), "w") as o:
            json.dump(s, o)

    w("8-all-hang-name.json",
      lambda s: [g.update(faults={"nvmlDeviceGetName": {"hang_ms": 600000}}) for g in s["gpus"]])
    w("8-all-hang-handle.json",
      lambda s: [g.update(handle_error={"hang_ms": 600000}) for g in s["gpus"]])
    w("8-all-hang-star.json", lambda s: s.update(faults={"*": {"hang_ms": 600000}}))
    w("8-pair-hang.json",
      lambda s: s.update(faults={"nvmlDeviceGetTopologyCommonAncestor": {"hang_ms": 600000}}))
    w("8-drvver-hang.json",
      lambda s: s.update(faults={"nvmlSystemGetDriverVersion": {"hang_ms": 600000}}))

    def ph(s):
        s["faults"] = {"nvmlSystemGetProcessName": {"hang_ms": 600000}}
        s["gpus"][0]["processes"] = [{"pid": 1, "used_memory": 1000, "name": "python3"}]

    w("8-procname-hang.json", ph)

    def resume(s):
        for i, g in enumerate(s["gpus"]):
            g["faults"] = {"nvmlDeviceGetName": {"hang_ms": 1200 + 100 * i}}
        s["faults"] = {"nvmlDeviceGetTopologyCommonAncestor": {"hang_ms": 1500}}

    w("8-resume.json", resume)
    w("8-resume-init.json", lambda s: s.update(init={"hang_ms": 1500}))
    return True


def split_fixture(path, start_pat, end_pat=None):
    with open(path) as f:
        lines = f.read().split("\n")
    s = next(i for i, l in enumerate(lines) if re.match(start_pat, l))
    if end_pat:
        e = max(i for i, l in enumerate(lines) if re.match(end_pat, l)) + 1
    else:
        e = len(lines)
    return lines[:s], lines[s:e], lines[e:]


def gpu_list(n, base_name="NVIDIA H200"):
    out = []
    for i in range(n):
        out.append({
            "bus": f"{i // 256:08X}:{i % 256:02X}:00.0",
            "name": base_name,
            "uuid": f"GPU-{i:08x}-1111-2222-3333-{0xabcdef000000 + i:012x}",
            "serial": f"{1653000000000 + i}",
            "minor": i,
        })
    return out


def nvsmi_q_text(gpus, driver="580.159.04"):
    head, sec, tail = split_fixture(os.path.join(FIX, "capture/nvsmi/gpuvet-h200-drv580-q.txt"),
                                    r"^GPU 0000")
    head = [re.sub(r"(Attached GPUs\s+: )\d+", lambda m: m.group(1) + str(len(gpus)), l) for l in head]
    head = [l.replace("580.159.04", driver) if l.startswith("Driver Version") else l for l in head]
    body = "\n".join(sec)
    parts = []
    for g in gpus:
        s = body.replace("00000000:00:06.0", g["bus"])
        s = re.sub(r"(Product Name\s+: ).*", lambda m: m.group(1) + g["name"], s)
        s = re.sub(r"(\n    Serial Number\s+: ).*", lambda m: m.group(1) + g["serial"], s)
        s = re.sub(r"(GPU UUID\s+: ).*", lambda m: m.group(1) + g["uuid"], s)
        s = re.sub(r"(Minor Number\s+: ).*", lambda m: m.group(1) + str(g["minor"]), s)
        parts.append(s.rstrip("\n"))
    return "\n".join(head) + "\n" + "\n".join(parts) + "\n" + "\n".join(tail)


def nvsmi_xml(gpus, driver="580.159.04"):
    head, sec, tail = split_fixture(os.path.join(FIX, "capture/nvsmi/gpuvet-h200-drv580-q.xml"),
                                    r"^\s*<gpu id=", r"^\s*</gpu>")
    head = "\n".join(head).replace("<attached_gpus>1</attached_gpus>",
                                   f"<attached_gpus>{len(gpus)}</attached_gpus>")
    head = head.replace("<driver_version>580.159.04", f"<driver_version>{driver}")
    body = "\n".join(sec)
    parts = []
    for g in gpus:
        s = body.replace("00000000:00:06.0", g["bus"])
        s = s.replace("<pci_bus>00</pci_bus>", f"<pci_bus>{g['bus'][9:11]}</pci_bus>")
        s = s.replace("<pci_device>06</pci_device>", "<pci_device>00</pci_device>")
        s = re.sub(r"<product_name>.*?</product_name>", f"<product_name>{g['name']}</product_name>", s)
        s = re.sub(r"<serial>.*?</serial>", f"<serial>{g['serial']}</serial>", s)
        s = re.sub(r"<uuid>.*?</uuid>", f"<uuid>{g['uuid']}</uuid>", s)
        s = re.sub(r"<minor_number>.*?</minor_number>", f"<minor_number>{g['minor']}</minor_number>", s)
        parts.append(s)
    return head + "\n" + "\n".join(parts) + "\n" + "\n".join(tail)


def topo_text(n):
    with open(os.path.join(FIX, "capture/topo/gengwg-dgx-a100-8gpu-nv12-12x-mlx5-nps4-topo-m.txt")) as f:
        legend = f.read().split("Legend:")[1]
    lines = ["\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity"]
    for i in range(n):
        cells = [" X " if j == i else ("NV12" if i // 8 == j // 8 else "SYS") for j in range(n)]
        lines.append(f"GPU{i}\t" + "\t".join(cells) + "\t0-55\t0")
    return "\n".join(lines) + "\n\nLegend:" + legend


CSV_COLS = ("index, pci.bus_id, name, uuid, serial, vbios_version, pcie.link.gen.current, "
            "pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, clocks.current.sm [MHz], "
            "clocks.max.sm [MHz], clocks.current.memory [MHz], clocks.max.memory [MHz], "
            "temperature.gpu, power.draw [W], power.limit [W], power.default_limit [W], "
            "ecc.mode.current, ecc.errors.corrected.volatile.total, "
            "ecc.errors.uncorrected.volatile.total, memory.total [MiB], memory.used [MiB], "
            "utilization.gpu [%], clocks_throttle_reasons.active")


def csv_row(i, g):
    return (f"{i}, {g['bus']}, {g['name']}, {g['uuid']}, {g['serial']}, 96.00.74.00.0D, 5, 5, 16, 16, "
            f"345 MHz, 1980 MHz, 2619 MHz, 2619 MHz, 31, 71.45 W, 700.00 W, 700.00 W, Enabled, 0, 0, "
            f"81559 MiB, 551 MiB, 0 %, 0x0000000000000001")


# The fake node behind the fake tools: the 8 GPUs of 8gpu-nvlink-h100.json plus one that NVML
# did not report; host names, a MAC, IPs and a home directory in the logs.
def node_gpus():
    s = scenario("8gpu-nvlink-h100.json")
    gpus = []
    for i, g in enumerate(s["gpus"]):
        gpus.append({"bus": g["pci_bus_id"], "name": g["name"], "uuid": g["uuid"],
                     "serial": g["serial"], "minor": i})
    gpus.append({"bus": "00000000:DB:00.0", "name": s["gpus"][0]["name"], "uuid": EXTRA_UUID,
                 "serial": EXTRA_SERIAL, "minor": len(gpus)})
    return gpus, s.get("driver_version", "580.159.04")


def secret_values():
    """Everything a redacted bundle must not contain (compared case-insensitively)."""
    vals = [HOST, MAC, HOME] + IPS + MIG_UUIDS
    gpus, _ = node_gpus()
    for g in gpus:
        vals += [g["serial"], g["uuid"][4:]]
    for name in ("8gpu-nvlink-h100.json", "fault-init-hang.json"):
        for g in scenario(name).get("gpus", []):
            for k in ("serial", "uuid"):
                if g.get(k):
                    vals.append(g[k][4:] if k == "uuid" else g[k])
    return sorted(set(v.lower() for v in vals))


@made
def fakebin(ctx):
    gpus, driver = node_gpus()
    d = ctx.path("fakedata")
    os.makedirs(d)
    b = ctx.path("fakebin")
    os.makedirs(b)

    def data(name, text):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)

    bus0 = gpus[0]["bus"][4:11].lower()  # "0000:19"
    data("q.txt", nvsmi_q_text(gpus, driver))
    data("q.xml", nvsmi_xml(gpus, driver))
    data("L.txt", "".join(f"GPU {g['minor']}: {g['name']} (UUID: {g['uuid']})\n" for g in gpus)
         + f"  MIG 1g.10gb     Device  0: (UUID: {MIG_UUIDS[0]})\n"
         + f"  MIG 1g.10gb     Device  1: (UUID: {MIG_UUIDS[1]})\n")
    data("topo.txt", topo_text(len(gpus)))
    data("p2p.txt", " \t" + "\t".join(f"GPU{i}" for i in range(len(gpus))) + "\n" +
         "".join(f" GPU{i}\t" + "\t".join("X" if i == j else "OK" for j in range(len(gpus))) + "\n"
                 for i in range(len(gpus))) + "\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n")
    data("nvlink.txt", "".join(f"GPU {g['minor']}: {g['name']} (UUID: {g['uuid']})\n"
                               + "".join(f"\t Link {k}: 26.562 GB/s\n" for k in range(18)) for g in gpus))
    data("csv.txt", CSV_COLS + "\n" + "".join(csv_row(i, g) + "\n" for i, g in enumerate(gpus)))
    data("pmon.txt", "# gpu        pid  type    sm   mem   enc   dec   command\n"
         "# Idx          #   C/G     %     %     %     %   name\n"
         "    0       4242    C     72    61     0     0   python3\n"
         "    0       4243    C     69    58     0     0   python3\n")
    data("dmon.txt", "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk\n"
         "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz\n"
         + "".join(f"    {i}     71     31     40      0      0      0      0      0      0   2619    345\n"
                   for i in range(len(gpus))))
    dmesg = [
        "[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)",
        f"[    5.123456] systemd[1]: Hostname set to <{FQDN}>.",
        f"[    6.000000] mlx5_core 0000:0c:00.0 ens1f0np0: Link up, MAC {MAC}",
        f"[    7.000000] IPv4: martian source {IPS[0]} from {IPS[1]}, on dev ens1f0np0",
        f"[    8.000000] {HOST.upper()} kernel: nvidia-nvlink: Nvlink Core is being initialized",
        f"[  100.000000] NVRM: GPU at PCI:{bus0}:00: {gpus[0]['uuid'].upper()}",
        f"[  100.100000] NVRM: GPU Board Serial Number: {EXTRA_SERIAL}",
        f"[  100.200000] NVRM: MIG-GPU-{gpus[1]['uuid'][4:]}/1/0 created",
        f"[  200.000000] NVRM: Xid (PCI:{bus0}:00): 79, pid=4242, name=python3, GPU has fallen off the bus.",
        f"[  201.000000] python3[4242]: segfault at 0 ip 00007f0000000000 sp 00007ffd00000000 error 4 in {HOME}/train.py",
    ]
    data("dmesg.txt", "\n".join(dmesg) + "\n")
    data("journal.txt",
         f"2026-12-01T10:00:00+0000 {FQDN} kernel: NVRM: Xid (PCI:{bus0}:00): 79, pid=4242, name=python3, GPU has fallen off the bus.\n"
         f"2026-12-01T10:00:01+0000 {HOST} kernel: mlx5_core 0000:0c:00.0: MAC {MAC.upper()}\n"
         f"2026-12-01T10:00:02+0000 {HOST} kernel: nfs: server {IPS[1]} not responding\n"
         f"2026-12-01T10:00:03+0000 {HOST} kernel: audit: cwd=\"{HOME}/run\"\n")
    data("sar.txt", f"Linux 6.1.0-18-amd64 ({FQDN}) \t12/01/2026 \t_x86_64_\t(224 CPU)\n\n"
         "10:00:00 AM     IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s   rxcmp/s   txcmp/s  rxmcst/s   %ifutil\n"
         "10:00:01 AM        lo      0.00      0.00      0.00      0.00      0.00      0.00      0.00      0.00\n"
         "10:00:01 AM ens1f0np0    100.00    100.00     10.00     10.00      0.00      0.00      0.00      0.00\n\n"
         "Average:        IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s   rxcmp/s   txcmp/s  rxmcst/s   %ifutil\n"
         "Average:           lo      0.00      0.00      0.00      0.00      0.00      0.00      0.00      0.00\n"
         "Average:    ens1f0np0    100.00    100.00     10.00     10.00      0.00      0.00      0.00      0.00\n")
    data("mpstat.txt", f"Linux 6.1.0-18-amd64 ({HOST}) \t12/01/2026 \t_x86_64_\t(2 CPU)\n\n"
         "10:00:00 AM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle\n"
         "10:00:01 AM  all    1.00    0.00    1.00    0.00    0.00    0.00    0.00    0.00    0.00   98.00\n"
         "10:00:01 AM    0    1.00    0.00    1.00    0.00    0.00    0.00    0.00    0.00    0.00   98.00\n"
         "10:00:01 AM    1    1.00    0.00    1.00    0.00    0.00    0.00    0.00    0.00    0.00   98.00\n\n"
         "Average:     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle\n"
         "Average:     all    1.00    0.00    1.00    0.00    0.00    0.00    0.00    0.00    0.00   98.00\n")
    data("iostat.txt", f"Linux 6.1.0-18-amd64 ({HOST}) \t12/01/2026 \t_x86_64_\t(2 CPU)\n\n"
         "avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n"
         "           1.00    0.00    1.00    0.00    0.00   98.00\n\n"
         "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util\n"
         "nvme0n1          1.00      4.00     0.00   0.00    0.10     4.00    1.00      4.00     0.00   0.00    0.10     4.00    0.00      0.00     0.00   0.00    0.00     0.00    0.00    0.00    0.00   0.10\n")
    smi = f"""#!/bin/sh
# fake nvidia-smi: prints saved outputs of a made-up 9-GPU node
D={d}
case "$*" in
  "-L") cat $D/L.txt ;;
  "-q -x") cat $D/q.xml ;;
  "-q") cat $D/q.txt ;;
  "topo -m") cat $D/topo.txt ;;
  "topo -p2p "*) cat $D/p2p.txt ;;
  "nvlink -s") cat $D/nvlink.txt ;;
  --query-gpu=*) cat $D/csv.txt ;;
  "pmon -c 1") cat $D/pmon.txt ;;
  "dmon -c 1") cat $D/dmon.txt ;;
  *) echo "fake nvidia-smi: $*" ;;
esac
"""
    tools = {"nvidia-smi": smi,
             "dmesg": f"#!/bin/sh\ncat {d}/dmesg.txt\n",
             "journalctl": f"#!/bin/sh\ncat {d}/journal.txt\n",
             "sar": f"#!/bin/sh\nsleep 1\ncat {d}/sar.txt\n",
             "mpstat": f"#!/bin/sh\nsleep 1\ncat {d}/mpstat.txt\n",
             "iostat": f"#!/bin/sh\nsleep 1\ncat {d}/iostat.txt\n"}
    for name, text in tools.items():
        with open(os.path.join(b, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(b, name), 0o755)
    # fakebin2: the same, but iostat hangs (and says its pid)
    b2 = ctx.path("fakebin2")
    os.makedirs(b2)
    for name in tools:
        if name != "iostat":
            os.symlink(os.path.join(b, name), os.path.join(b2, name))
    with open(os.path.join(b2, "iostat"), "w") as f:
        f.write(f"#!/bin/sh\necho $$ >> {ctx.path('iostat-hang.pids')}\nexec sleep 300\n")
    os.chmod(os.path.join(b2, "iostat"), 0o755)
    return True


def capture_dir(ctx, name):
    os.makedirs(ctx.path("capt"), exist_ok=True)
    return "capt/" + name


# --------------------------------------------------------------------------- the attacks

ROWS = []


def attack(n, name, cmd, expected):
    def deco(f):
        ROWS.append((n, name, cmd, expected, f))
        return f
    return deco


def V(ok):
    return "PASS" if ok else "DEFECT"


def need_root(ctx, what):
    if not ctx.root:
        raise Skip(f"needs root ({what})")


def offline_3(ctx, path):
    r = ctx.sh(f"gpuvet diagnose --from {path}")
    return r, r.code == 3 and not r.crashed() and r.errtext.strip() != ""


@attack(1, "empty file", "`gpuvet diagnose --from empty.txt`", "3, message")
def a1(ctx):
    open(ctx.path("empty.txt"), "w").close()
    r, ok = offline_3(ctx, "empty.txt")
    return V(ok), r.obs()


@attack(2, "1 MiB of /dev/urandom", "`gpuvet diagnose --from binary.bin`", "3")
def a2(ctx):
    with open(ctx.path("binary.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))
    r, ok = offline_3(ctx, "binary.bin")
    return V(ok), r.obs()


@attack(3, "NUL bytes (1 MiB)", "`gpuvet diagnose --from nul.txt`", "3")
def a3(ctx):
    with open(ctx.path("nul.txt"), "wb") as f:
        f.write(b"\0" * (1 << 20))
    r, ok = offline_3(ctx, "nul.txt")
    return V(ok), r.obs()


@attack(4, "invalid UTF-8", "`gpuvet diagnose --from badutf8.txt`", "3")
def a4(ctx):
    with open(ctx.path("badutf8.txt"), "wb") as f:
        f.write(b"\xff\xfe\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc\n" * 4096)
    r, ok = offline_3(ctx, "badutf8.txt")
    return V(ok), r.obs()


@attack(5, "truncated paste (first 2000 B of task-02.txt)", "`gpuvet diagnose --from trunc.txt`",
        "partial facts")
def a5(ctx):
    with open(ctx.path("task-02.txt"), "rb") as f, open(ctx.path("trunc.txt"), "wb") as o:
        o.write(f.read(2000))
    r = ctx.sh("gpuvet diagnose --from trunc.txt")
    return V(r.code in (0, 1, 2) and not r.crashed()), r.obs(r.excerpt(r"^(OK|WARNING|CRITICAL)"))


@attack(6, "path that does not exist", "`gpuvet diagnose --from /nonexistent/path`", "3")
def a6(ctx):
    r, ok = offline_3(ctx, "/nonexistent/path")
    return V(ok), r.obs()


@attack(7, "character devices", "`--from /dev/zero`, `/dev/urandom`, `/dev/null`", "3, no hang")
def a7(ctx):
    rs = [ctx.sh(f"gpuvet diagnose --from {d}", timeout=20) for d in ("/dev/zero", "/dev/urandom", "/dev/null")]
    return V(all(r.code == 3 and not r.timed_out for r in rs)), "; ".join(r.obs(rss=False) for r in rs)


@attack(8, "procfs", "`--from /proc/self/mem`; `--from /proc`; `--from /sys/kernel`", "3, no hang")
def a8(ctx):
    rs = [ctx.sh(f"gpuvet diagnose --from {d}", timeout=30) for d in ("/proc/self/mem", "/proc", "/sys/kernel")]
    return V(all(r.code == 3 and not r.timed_out for r in rs)), "; ".join(r.obs("") for r in rs)


@attack(9, "600 MB file, over the 512 MiB cap (sparse)", "`truncate -s 600M big600m.txt; gpuvet diagnose --from big600m.txt`",
        "3 saying it is too big")
def a9(ctx):
    with open(ctx.path("big600m.txt"), "wb") as f:
        f.truncate(600 * 1000 * 1000)
    ctx.big.append(ctx.path("big600m.txt"))
    r = ctx.sh("gpuvet diagnose --from big600m.txt")
    ok = r.code == 3 and re.search(r"limit|too (big|large)|larger|exceeds|512", r.errtext, re.I)
    return V(ok), r.obs()


@attack(10, "newlines only, under the cap", "`head -c SIZE /dev/zero | tr '\\0' '\\n' > nl.txt; gpuvet diagnose --from nl.txt`",
        "3 in seconds, memory ~ file (≤ 3× file + 150 MB, ≤ 5 s + 0.1 s/MB)")
def a10(ctx):
    size = ctx.size("nl_mb")
    with open(ctx.path("nl.txt"), "wb") as f:
        for _ in range(size):
            f.write(b"\n" * 1_000_000)
    ctx.big.append(ctx.path("nl.txt"))
    r = ctx.sh("gpuvet diagnose --from nl.txt", timeout=max(ctx.timeout, 180 if ctx.full else 60))
    ok = r.code == 3 and r.rss <= 3 * size + 150 and r.wall <= 5 + 0.1 * size
    return V(ok), f"{size} MB: " + r.obs()


@attack(11, "kernel-log lines, no NVIDIA line", "`gpuvet diagnose --from lines.txt`",
        "judged for its part (issue 35): never a plain \"OK\"; exit 0 only as \"OK for what was "
        "checked\" naming the GPU checks not done, else 1, 2 or 3")
def a11(ctx):
    n = ctx.size("kernel_lines")
    write_lines(ctx.path("lines.txt"),
                (f"[{1 + i * 0.001:12.6f}] usb 1-1: new high-speed USB device number {i % 128} using xhci_hcd"
                 for i in range(n)))
    ctx.big.append(ctx.path("lines.txt"))
    r = ctx.sh("gpuvet diagnose --from lines.txt")
    said = "OK for what was checked" in r.text and "not checked: GPU inventory" in r.text
    return V(r.code in (1, 2, 3) or (r.code == 0 and said)), \
        f"{n} lines, {mb(ctx.path('lines.txt')):.0f} MB: " + r.obs(r.excerpt(r"^(OK|WARNING|CRITICAL|gpuvet:)"))


@attack(12, "one line without a newline", "`gpuvet diagnose --from oneline.txt`", "3")
def a12(ctx):
    size = ctx.size("oneline_mb")
    with open(ctx.path("oneline.txt"), "wb") as f:
        for _ in range(size):
            f.write(b"a" * 1_000_000)
    ctx.big.append(ctx.path("oneline.txt"))
    r = ctx.sh("gpuvet diagnose --from oneline.txt")
    return V(r.code == 3 and not r.crashed()), f"{size} MB: " + r.obs()


@attack(13, "deep nesting: gpuvet report JSON, capture manifest JSON (arrays; objects), nvidia-smi XML, NCCL topology XML",
        "`gpuvet diagnose --from deep-*.json/xml`", "no crash")
def a13(ctx):
    d = ctx.size("depth")
    files = {
        "deep-report.json": '{"schema": "gpuvet.report/1", "gpus": ' + "[" * d + "]" * d + "}",
        "deep-manifest-arrays.json": '{"schema": "gpuvet.capture/1", "commands": ' + "[" * d + "]" * d + "}",
        "deep-manifest-objects.json": '{"schema": "gpuvet.capture/1", "x": ' + '{"a": ' * d + "1" + "}" * d + "}",
        "deep-nvsmi.xml": '<?xml version="1.0" ?>\n<nvidia_smi_log>' + "<a>" * d + "</a>" * d + "</nvidia_smi_log>\n",
        "deep-nccl.xml": '<system version="1">\n<cpu numaid="0">' + "<a>" * d + "</a>" * d + "</cpu></system>\n",
    }
    obs = []
    ok = True
    for name, text in files.items():
        with open(ctx.path(name), "w") as f:
            f.write(text)
        r = ctx.sh(f"gpuvet diagnose --from {name}")
        ok &= not r.crashed() and not r.timed_out
        obs.append(f"{name[5:-5] if name.endswith('.json') else name[5:]}: {r.obs('')}")
        os.unlink(ctx.path(name))
    return V(ok), f"depth {d}: " + "; ".join(obs)


def junk_dir(ctx, name, n, prefix):
    p = ctx.path(name)
    os.makedirs(p)
    for i in range(n):
        with open(os.path.join(p, f"{prefix}{i:06d}.txt"), "w") as f:
            f.write(f"junk {i}\n")
    return p


LEFT_OUT = re.compile(r"not read|left out|skipp|omitted|ignored|were not|not (imported|looked at)|"
                      r"more than [\d ,]+ files|[\d,]+ (more )?files? (not|were)|files? limit|stopp", re.I)


@attack(14, "directory of many small files", "`gpuvet diagnose --from dmany`; `gpuvet facts --from dmany --json`",
        "all read, or a note that some were not")
def a14(ctx):
    n = ctx.size("dir_files")
    junk_dir(ctx, "dmany", n, "f-")
    r = ctx.sh("gpuvet diagnose --from dmany")
    j = ctx.sh("gpuvet facts --from dmany --json")
    doc = j.json() or {}
    read = len(doc.get("imported", []))
    notes = [x for x in doc.get("notes", []) if LEFT_OUT.search(x)]
    ok = read >= n or bool(notes)
    shutil.rmtree(ctx.path("dmany"))
    return V(ok), (f"{n} files: diagnose {r.obs('')}; {read} read, "
                   + (f"note {quote(notes[0])}" if notes else "no note about the rest"))


@attack(15, "many junk files + one real pmon paste placed late in readdir order",
        "`gpuvet diagnose --from dmany2` vs `--from dmany2/real-K.txt`",
        "same findings; the same exit code, or 3 (INCOMPLETE) saying how many files were not read (D7)")
def a15(ctx):
    n = ctx.size("dmany_junk")
    p = junk_dir(ctx, "dmany2", n, "zz-junk-")
    # A name whose readdir position is past the point where a walk in readdir order stops.
    pos = -1
    for k in range(1, 400):
        real = f"real-{k}.txt"
        shutil.copy(ctx.path("task-11.txt"), os.path.join(p, real))
        pos = os.listdir(p).index(real)
        if pos >= DIR_WALK_CAP:
            break
        os.unlink(os.path.join(p, real))
    if pos < DIR_WALK_CAP:
        raise Skip("could not place the real file late in readdir order")
    rd = ctx.sh("gpuvet diagnose --from dmany2 --json")
    rf = ctx.sh(f"gpuvet diagnose --from dmany2/{real} --json")
    ids = lambda r: sorted(f["id"] for f in (r.json() or {}).get("findings", []))
    said_cut = any("files not read" in p for p in (rd.json() or {}).get("input_problems", []))
    ok = ids(rd) == ids(rf) and ids(rf) and (rd.code == rf.code or (rd.code == 3 and said_cut))
    shutil.rmtree(p)
    return V(ok), (f"{n} junk, real at readdir position {pos}: dir {rd.code} {ids(rd) or rd.excerpt()}; "
                   f"file alone {rf.code} {ids(rf)}")


@attack(16, "symlink loops (`a/up -> ../..`, `loop1 <-> loop2`)", "`--from dloop`; `--from dloop/loop1`", "no loop")
def a16(ctx):
    p = ctx.path("dloop")
    os.makedirs(os.path.join(p, "a"))
    os.symlink("../..", os.path.join(p, "a", "up"))
    os.symlink("loop2", os.path.join(p, "loop1"))
    os.symlink("loop1", os.path.join(p, "loop2"))
    shutil.copy(ctx.path("task-11.txt"), p)
    r1 = ctx.sh("gpuvet diagnose --from dloop", timeout=20)
    r2 = ctx.sh("gpuvet diagnose --from dloop/loop1", timeout=20)
    ok = r1.code in (0, 1, 2) and r2.code == 3 and not r1.timed_out and not r2.timed_out
    return V(ok), f"{r1.obs('', False)}; {r2.obs(rss=False)}"


@attack(17, "FIFO / socket in the directory; FIFO / socket named directly",
        "`mkfifo dfifo/pipe; --from dfifo`; `--from dfifo/pipe`; `--from dfifo/sock`", "no block")
def a17(ctx):
    p = ctx.path("dfifo")
    os.makedirs(p)
    os.mkfifo(os.path.join(p, "pipe"))
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(p, "sock"))
    shutil.copy(ctx.path("task-11.txt"), p)
    rs = [ctx.sh(f"gpuvet diagnose --from {x}", timeout=10) for x in ("dfifo", "dfifo/pipe", "dfifo/sock")]
    s.close()
    ok = rs[0].code in (0, 1, 2) and rs[1].code == 3 and rs[2].code == 3 and not any(r.timed_out for r in rs)
    return V(ok), "; ".join(r.obs(rss=False) if i else r.obs("", False) for i, r in enumerate(rs))


NOBODY = "setpriv --reuid=nobody --regid=nogroup --clear-groups"


@attack(18, "unreadable file / unreadable subdir / unreadable dir / file under an unsearchable dir (as nobody)",
        f"`{NOBODY} gpuvet facts --from dperm --json`; `… --from dperm/sub`; `… --from dperm/sub/x.txt`",
        "noted (file and subdir); clear message (permission, not \"no such file\")")
def a18(ctx):
    need_root(ctx, "setpriv to nobody")
    p = ctx.path("dperm")
    os.makedirs(os.path.join(p, "sub"))
    shutil.copy(ctx.path("task-11.txt"), p)
    with open(os.path.join(p, "unreadable.txt"), "w") as f:
        f.write("x\n")
    os.chmod(os.path.join(p, "unreadable.txt"), 0)
    shutil.copy(ctx.path("task-11.txt"), os.path.join(p, "sub", "x.txt"))
    os.chmod(os.path.join(p, "sub"), 0o700)
    r1 = ctx.sh(f"{NOBODY} gpuvet facts --from dperm --json")
    notes = (r1.json() or {}).get("notes", [])
    file_noted = any("unreadable.txt" in n for n in notes)
    sub_noted = any(re.search(r"(^|/)sub\b", n) for n in notes)
    r2 = ctx.sh(f"{NOBODY} gpuvet diagnose --from dperm/sub")
    r3 = ctx.sh(f"{NOBODY} gpuvet diagnose --from dperm/sub/x.txt")
    perm = re.compile(r"permission|denied|cannot (open|read|list|search)|not readable", re.I)
    ok2 = r2.code == 3 and perm.search(r2.errtext) and "no files to read" not in r2.errtext
    ok3 = r3.code == 3 and perm.search(r3.errtext) and not re.search("no such file", r3.errtext, re.I)
    ok = file_noted and sub_noted and ok2 and ok3
    return V(ok), (f"file {'noted' if file_noted else 'NOT noted'}, subdir {'noted' if sub_noted else 'NOT noted'}; "
                   f"dperm/sub: {r2.obs(rss=False)}; dperm/sub/x.txt: {r3.obs(rss=False)}")


@attack(19, "stdin that never closes", "`sleep 1000 | gpuvet diagnose --from -` (timeout 5 s)",
        "waits for EOF like `cat`")
def a19(ctx):
    r = ctx.sh("sleep 1000 | gpuvet diagnose --from -", timeout=5)
    ok = r.timed_out or (r.code == 3 and r.errtext.strip())
    return V(ok), r.obs("waits" if r.timed_out else None, rss=False)


@attack(20, "a big stdin", "`head -c SIZE /dev/zero | gpuvet diagnose --from -`", "3, bounded (< 1 GB)")
def a20(ctx):
    size = ctx.size("stdin")
    r = ctx.sh(f"head -c {size} /dev/zero | gpuvet diagnose --from -", timeout=max(ctx.timeout, 120))
    ok = r.code == 3 and r.rss < 1024 and re.search(r"larger|limit|too", r.errtext, re.I)
    return V(ok), f"{size}: " + r.obs()


@attack(21, "stdin closed / stdin a directory", "`--from - <&-`; `--from - < /tmp`", "3")
def a21(ctx):
    rs = [ctx.sh("gpuvet diagnose --from - <&-"), ctx.sh("gpuvet diagnose --from - < /tmp")]
    return V(all(r.code == 3 for r in rs)), "; ".join(r.obs(rss=False) for r in rs)


def capped(r):
    return not r.timed_out and not r.crashed() and r.code in (0, 1, 2) and "1024" in r.text


@attack(22, "nvidia-smi -q -x with many GPUs", "`gpuvet diagnose --from xmlN.xml`",
        "bounded: first 1024 kept, a note")
def a22(ctx):
    n = ctx.size("xml_gpus")
    with open(ctx.path("xmlN.xml"), "w") as f:
        f.write(nvsmi_xml(gpu_list(n)))
    ctx.big.append(ctx.path("xmlN.xml"))
    r = ctx.sh("gpuvet diagnose --from xmlN.xml", timeout=max(ctx.timeout, 180 if ctx.full else 60))
    return V(capped(r)), f"{n} GPUs, {mb(ctx.path('xmlN.xml')):.0f} MB: " + r.obs(r.excerpt("1024"))


@attack(23, "nvidia-smi -q text with many GPU sections", "`gpuvet diagnose --from qN.txt`", "bounded: capped at 1024")
def a23(ctx):
    n = ctx.size("q_gpus")
    with open(ctx.path("qN.txt"), "w") as f:
        f.write(nvsmi_q_text(gpu_list(n)))
    ctx.big.append(ctx.path("qN.txt"))
    r = ctx.sh("gpuvet diagnose --from qN.txt", timeout=max(ctx.timeout, 180 if ctx.full else 60))
    return V(capped(r)), f"{n} sections, {mb(ctx.path('qN.txt')):.0f} MB: " + r.obs(r.excerpt("1024"))


@attack(24, "--query-gpu CSV time series", "`gpuvet diagnose --from csvN.csv`", "bounded")
def a24(ctx):
    n = ctx.size("csv_rows")
    gpus = gpu_list(8)
    write_lines(ctx.path("csvN.csv"), (
        ["timestamp, " + CSV_COLS] +
        [f"2026/12/01 10:{(i // 8) // 60 % 60:02d}:{(i // 8) % 60:02d}.{(i // 8) // 3600 % 1000:03d}, "
         + csv_row(i % 8, gpus[i % 8]) for i in range(n)]))
    ctx.big.append(ctx.path("csvN.csv"))
    r = ctx.sh("gpuvet diagnose --from csvN.csv", timeout=max(ctx.timeout, 180 if ctx.full else 60))
    ok = not r.timed_out and not r.crashed() and r.code in (0, 1, 2)
    return V(ok), f"{n} rows, {mb(ctx.path('csvN.csv')):.0f} MB: " + r.obs(r.excerpt(r"sample|time series"))


@attack(25, "nvidia-smi -L, many lines", "`gpuvet diagnose --from LN.txt`", "bounded: capped at 1024")
def a25(ctx):
    n = ctx.size("L_lines")
    write_lines(ctx.path("LN.txt"), (f"GPU {i}: NVIDIA H200 (UUID: GPU-{i:08x}-1111-2222-3333-444455556666)"
                                     for i in range(n)))
    ctx.big.append(ctx.path("LN.txt"))
    r = ctx.sh("gpuvet diagnose --from LN.txt")
    return V(capped(r)), f"{n} lines: " + r.obs(r.excerpt("1024"))


@made
def topo_file(ctx, n):
    name = f"topo{n}.txt"
    with open(ctx.path(name), "w") as f:
        f.write(topo_text(n))
    return name


@attack(26, "topo -m with many GPUs", "`gpuvet diagnose --from topoN.txt`",
        "seconds (256/512 GPUs ≤ 5 s, 1024 ≤ 10 s, 2048 ≤ 30 s)")
def a26(ctx):
    bound = {256: 5, 512: 5, 1024: 10, 2048: 30}
    obs, ok = [], True
    for n in ctx.size("topo"):
        r = ctx.sh(f"gpuvet diagnose --from {topo_file(ctx, n)}", timeout=min(ctx.timeout, 6 * bound[n]))
        ok &= r.wall <= bound[n] and not r.timed_out and not r.crashed()
        obs.append(f"{n}: {r.obs('')}")
    return V(ok), "; ".join(obs)


@attack(27, "pmon with many processes", "`gpuvet diagnose --from pmonN.txt`", "seconds (≤ 5 s)")
def a27(ctx):
    n = ctx.size("pmon_rows")
    write_lines(ctx.path("pmonN.txt"), [
        "# gpu        pid  type    sm   mem   enc   dec   command",
        "# Idx          #   C/G     %     %     %     %   name"] +
        [f"{i % 8:5d} {10000 + i:10d}    C      1     1     0     0   python" for i in range(n)])
    r = ctx.sh("gpuvet diagnose --from pmonN.txt", timeout=min(ctx.timeout, 30))
    ok = r.wall <= 5 and not r.timed_out and not r.crashed()
    return V(ok), f"{n} rows, {mb(ctx.path('pmonN.txt')):.0f} MB: " + r.obs("")


@attack(28, "NCCL log, many lines", "`gpuvet diagnose --from ncclN.log`", "bounded (≤ 3× file + 200 MB), nccl-error")
def a28(ctx):
    n = ctx.size("nccl_lines")
    with open(os.path.join(FIX, "capture/tools/nccl-debug-mixed-launchers.log")) as f:
        tail = f.read()
    write_lines(ctx.path("ncclN.log"),
                (f"node-a:20311:20402 [0] NCCL INFO Channel {i % 32:02d}/32 :    0   1   2   3   4   5   6   7"
                 for i in range(n)))
    with open(ctx.path("ncclN.log"), "a") as f:
        f.write(tail)
    ctx.big.append(ctx.path("ncclN.log"))
    size = mb(ctx.path("ncclN.log"))
    r = ctx.sh("gpuvet diagnose --from ncclN.log", timeout=max(ctx.timeout, 180 if ctx.full else 60))
    ok = r.code == 2 and "nccl-error" in r.outtext and r.rss <= 3 * size + 200
    return V(ok), f"{n} lines, {size:.0f} MB: " + r.obs(r.excerpt("nccl-error"))


@attack(29, "dmesg, Xid lines on 64 bus ids × 7 codes", "`gpuvet diagnose --from dmesgN.txt`", "bounded, right counts")
def a29(ctx):
    per = ctx.size("dmesg_per")
    codes = [48, 13, 31, 43, 45, 63, 64]
    n = per * 64 * 7
    write_lines(ctx.path("dmesgN.txt"), (
        f"[{100 + i * 0.0001:12.4f}] NVRM: Xid (PCI:0000:{i % 64:02x}:00): {codes[(i // 64) % 7]}, "
        f"pid=1234, name=python3, Channel 00000001" for i in range(n)))
    ctx.big.append(ctx.path("dmesgN.txt"))
    r = ctx.sh("gpuvet diagnose --from dmesgN.txt")
    m = re.search(r"Xid 48 ×(\d+) on 0000:00:00\.0", r.outtext)
    ok = r.code == 2 and m and int(m.group(1)) == per
    return V(ok), f"{n} lines, {mb(ctx.path('dmesgN.txt')):.0f} MB: " + r.obs(
        r.excerpt(r"Xid 48 ×\d+ on 0000:00:00") + f" (expected ×{per})")


@attack(30, "two XML captures, driver 580 vs 535", "`gpuvet diagnose --from mixdrv --json`", "conflict noted")
def a30(ctx):
    p = ctx.path("mixdrv")
    os.makedirs(p)
    g = gpu_list(1)
    with open(os.path.join(p, "a.xml"), "w") as f:
        f.write(nvsmi_xml(g, "580.159.04"))
    with open(os.path.join(p, "b.xml"), "w") as f:
        f.write(nvsmi_xml(g, "535.183.01"))
    r = ctx.sh("gpuvet diagnose --from mixdrv --json")
    notes = [n for n in (r.json() or {}).get("notes", []) if "conflict" in n and "driver" in n]
    return V(bool(notes) and not r.crashed()), r.obs(quote(notes[0]) if notes else "no conflict note", False)


def xml8(ctx, name, same_bus):
    gpus = gpu_list(8)
    for g in gpus:
        g["minor"] = 0
        if same_bus:
            g["bus"] = gpus[0]["bus"]
    with open(ctx.path(name), "w") as f:
        f.write(nvsmi_xml(gpus))


@attack(31, "8 GPUs, all `<minor_number>0`", "`gpuvet facts --from xml8-dupidx.xml --json`", "8 GPUs")
def a31(ctx):
    xml8(ctx, "xml8-dupidx.xml", False)
    r = ctx.sh("gpuvet facts --from xml8-dupidx.xml --json")
    n = len((r.json() or {}).get("gpus", []))
    return V(n == 8), r.obs(f"{n} GPUs", False)


@attack(32, "8 GPUs with 8 UUIDs but one bus id, in one XML",
        "`gpuvet facts --from xml8-conflict-bus.xml --json`; `gpuvet diagnose --from xml8-conflict-bus.xml`",
        "8 GPUs or a warning (exit ≥ 1)")
def a32(ctx):
    xml8(ctx, "xml8-conflict-bus.xml", True)
    r = ctx.sh("gpuvet facts --from xml8-conflict-bus.xml --json")
    n = len((r.json() or {}).get("gpus", []))
    d = ctx.sh("gpuvet diagnose --from xml8-conflict-bus.xml")
    ok = n == 8 or d.code in (1, 2, 3)
    return V(ok), f"facts {n} GPU(s); diagnose {d.obs(d.excerpt(r'^(OK|WARNING|CRITICAL)'), False)}"


SC = "GPUVET_FAKE_NVML_SCENARIO"


def live(ctx, scen, cmd="facts", extra="", timeout=None, env=None):
    scenarios8(ctx)
    return ctx.sh(f"{SC}={scen} gpuvet {cmd} --nvml $FAKE {extra}".rstrip(), timeout=timeout, env=env)


@attack(33, "`fault-hang.json` (GetName on GPU1 hangs 30 s)", "`SC=tests/scenarios/fault-hang.json gpuvet facts --nvml $FAKE`",
        "2, GPU1 not responding, ~3 s (≤ 8 s)")
def a33(ctx):
    r = live(ctx, "tests/scenarios/fault-hang.json")
    ok = r.code == 2 and r.wall <= 8 and "not responding" in r.text
    return V(ok), r.obs(r.excerpt("not responding"))


@attack(34, "`fault-gpu-lost.json`", "`SC=tests/scenarios/fault-gpu-lost.json gpuvet facts --nvml $FAKE`", "2, lost GPU named")
def a34(ctx):
    r = live(ctx, "tests/scenarios/fault-gpu-lost.json")
    return V(r.code == 2), r.obs(r.excerpt(r"lost|fallen|not responding"))


@attack(35, "`fault-init-hang.json`", "`SC=tests/scenarios/fault-init-hang.json gpuvet facts --nvml $FAKE`",
        "2, init deadline 4 s (≤ 10 s)")
def a35(ctx):
    r = live(ctx, "tests/scenarios/fault-init-hang.json")
    return V(r.code == 2 and r.wall <= 10), r.obs(r.excerpt(r"did not (answer|return)"))


@attack(36, "`fault-init-mismatch`, `malformed`, `fault-call-errors`", "`SC=tests/scenarios/X.json gpuvet facts --nvml $FAKE`",
        "2 / 2 / 1")
def a36(ctx):
    rs = [live(ctx, f"tests/scenarios/{n}.json") for n in ("fault-init-mismatch", "malformed", "fault-call-errors")]
    ok = [r.code for r in rs] == [2, 2, 1]
    return V(ok), "; ".join(r.obs("", False) for r in rs)


@attack(37, "hang on every GPU of 8 (GetName, 600 s)", "`SC=8-all-hang-name.json gpuvet facts --nvml $FAKE`; `… diagnose …`",
        "2, all 8 not responding at ~3 s (≤ 8 s)")
def a37(ctx):
    f = live(ctx, "8-all-hang-name.json")
    d = live(ctx, "8-all-hang-name.json", "diagnose")
    n = f.outtext.count("not responding")
    ok = f.code == 2 and d.code == 2 and n >= 8 and f.wall <= 8 and d.wall <= 8
    return V(ok), f"facts {f.obs(f'{n} × not responding')}; diagnose {d.obs('', False)}"


@attack(38, "every GPU hangs in the handle lookup", "`SC=8-all-hang-handle.json gpuvet facts --nvml $FAKE`", "2, ≤ 8 s")
def a38(ctx):
    r = live(ctx, "8-all-hang-handle.json")
    return V(r.code == 2 and r.wall <= 8), r.obs(r.excerpt("did not return"))


@attack(39, "top-level `\"*\"` hang (count hangs)", "`SC=8-all-hang-star.json gpuvet facts --nvml $FAKE`", "2, init deadline (≤ 10 s)")
def a39(ctx):
    r = live(ctx, "8-all-hang-star.json")
    return V(r.code == 2 and r.wall <= 10), r.obs(r.excerpt("did not"))


@attack(40, "hang in `nvmlSystemGetDriverVersion` (after a successful count)",
        "`SC=8-drvver-hang.json gpuvet facts --nvml $FAKE --json`", "names the hung call; GPUs still probed")
def a40(ctx):
    r = live(ctx, "8-drvver-hang.json", extra="--json")
    doc = r.json() or {}
    n = len([g for g in doc.get("gpus", []) if g.get("name")])
    blamed_count = "nvmlDeviceGetCount did not return" in r.text
    ok = n == 8 and "nvmlSystemGetDriverVersion" in r.text and not blamed_count
    return V(ok), r.obs(f"{n} GPUs with a name; " + (
        "blames nvmlDeviceGetCount" if blamed_count else
        ("names nvmlSystemGetDriverVersion" if "nvmlSystemGetDriverVersion" in r.text else "hung call not named")))


@attack(41, "hang in the pair query only", "`SC=8-pair-hang.json gpuvet facts --nvml $FAKE`", "2 (\"NVML hung\")")
def a41(ctx):
    r = live(ctx, "8-pair-hang.json")
    return V(r.code == 2), r.obs(r.excerpt("pair|did not return"))


@attack(42, "hang in `nvmlSystemGetProcessName` (GPU0 has a process)",
        "`SC=8-procname-hang.json gpuvet facts --nvml $FAKE --json`", "GPU0 not responding, its 18 NVLinks (read before) kept")
def a42(ctx):
    r = live(ctx, "8-procname-hang.json", extra="--json")
    gpus = (r.json() or {}).get("gpus", [])
    g0 = gpus[0] if gpus else {}
    links = len(g0.get("nvlinks") or [])
    ok = r.code == 2 and g0.get("unresponsive") and links == 18
    return V(ok), r.obs(f"GPU0 {'not responding' if g0.get('unresponsive') else 'answering'}, {links} NVLinks")


@attack(43, "`--gpu-timeout` 0, -1, 1e9, inf, abc, 600.0001, 1e-400, \"\"", "`gpuvet facts --nvml $FAKE --gpu-timeout V`", "3 each")
def a43(ctx):
    vals = ["0", "-1", "1e9", "inf", "abc", "600.0001", "1e-400", "''"]
    rs = [live(ctx, "tests/scenarios/8gpu-nvlink-h100.json", extra=f"--gpu-timeout {v}") for v in vals]
    bad = [v for v, r in zip(vals, rs) if r.code != 3]
    return V(not bad), f"codes {[r.code for r in rs]}" + (f"; accepted: {bad}" if bad else f" / {rs[0].excerpt()}")


@attack(44, "NaN timeouts and windows", "`SC=tests/scenarios/8gpu-nvlink-h100.json gpuvet facts --nvml $FAKE --gpu-timeout nan` "
        "(also `NaN`, `--init-timeout nan`, `--sample-window nan`, `capture D --timeout nan`)", "3 each")
def a44(ctx):
    fakebin(ctx)
    cases = {"--gpu-timeout nan": None, "--gpu-timeout NaN": None, "--init-timeout nan": None,
             "--sample-window nan": None}
    obs, ok = [], True
    for opt in cases:
        r = live(ctx, "tests/scenarios/8gpu-nvlink-h100.json", extra=opt)
        ok &= r.code == 3
        obs.append(f"{opt}: {r.code}")
    d = capture_dir(ctx, "nan")
    r = ctx.sh(f"PATH=fakebin:$PATH {SC}=tests/scenarios/8gpu-nvlink-h100.json gpuvet capture {d} --nvml $FAKE --timeout nan")
    ok &= r.code == 3
    obs.append(f"capture --timeout nan: {r.code}")
    return V(ok), "; ".join(obs)


@attack(45, "`--nvml` is a FIFO", "`mkfifo nvml.fifo; gpuvet facts --nvml ./nvml.fifo` (timeout 20 s)", "deadline, 2 or 3")
def a45(ctx):
    if not os.path.exists(ctx.path("nvml.fifo")):
        os.mkfifo(ctx.path("nvml.fifo"))
    r = ctx.sh("gpuvet facts --nvml ./nvml.fifo", timeout=20)
    return V(r.code in (2, 3) and not r.timed_out), r.obs()


@made
def hangctor(ctx):
    if not shutil.which("gcc"):
        raise Skip("gcc not found")
    src = ctx.path("h.c")
    with open(src, "w") as f:
        f.write("#include <unistd.h>\n__attribute__((constructor)) static void h(void){sleep(1000);}\n"
                "int nvmlInit_v2(void){return 0;}\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", ctx.path("libnvidia-ml-hangctor.so"), src], check=True)
    return "./libnvidia-ml-hangctor.so"


@attack(46, "NVML library whose load blocks (constructor `sleep(1000)`)",
        "`gpuvet facts --nvml ./libnvidia-ml-hangctor.so`; `GPUVET_NVML_LIBRARY=… gpuvet diagnose` (timeout 20 s)", "deadline")
def a46(ctx):
    lib = hangctor(ctx)
    r1 = ctx.sh(f"gpuvet facts --nvml {lib}", timeout=20)
    r2 = ctx.sh(f"GPUVET_NVML_LIBRARY={lib} gpuvet diagnose", timeout=20)
    ok = all(r.code in (2, 3) and not r.timed_out for r in (r1, r2))
    return V(ok), f"facts {r1.obs(r1.excerpt(r'did not (return|answer|load)|block'))}; diagnose {r2.obs('', False)}"


@attack(47, "`--nvml` libc, a directory, /dev/zero, /etc/passwd, missing file", "`gpuvet facts --nvml X`", "3, clear")
def a47(ctx):
    libc = (glob.glob("/lib/*/libc.so.6") + glob.glob("/usr/lib/*/libc.so.6") + ["/lib64/libc.so.6"])[0]
    rs = [ctx.sh(f"gpuvet facts --nvml {x}", timeout=20) for x in (libc, ".", "/dev/zero", "/etc/passwd", "./missing.so")]
    ok = all(r.code == 3 and r.errtext.strip() for r in rs)
    return V(ok), f"codes {[r.code for r in rs]} / " + "; ".join(r.excerpt() for r in rs[:2])


@attack(48, "old driver (missing symbols)", "`gpuvet facts --nvml $FAKE_OLD`", "0, fallbacks")
def a48(ctx):
    r = ctx.sh("gpuvet facts --nvml $FAKE_OLD")
    return V(r.code == 0), r.obs("")


@attack(49, "abandoned probe threads that resume after the deadline (GetName 1.2–1.9 s, pair 1.5 s; init 1.5 s), ASan/UBSan build",
        "`SC=8-resume.json $ASAN/gpuvet facts --nvml $ASAN/tests/libnvidia-ml-fake.so --gpu-timeout 1 --sample-window 4` (also diagnose, init variant)",
        "no sanitizer report")
def a49(ctx):
    if not ctx.asan:
        raise Skip("needs an ASan/UBSan build: --asan-build DIR or ASAN_BUILD=DIR")
    scenarios8(ctx)
    g, lib = os.path.join(ctx.asan, "gpuvet"), os.path.join(ctx.asan, "tests", "libnvidia-ml-fake.so")
    rs = [ctx.sh(f"{SC}={s} {g} {c} --nvml {lib} --gpu-timeout 1 {x} --sample-window 4")
          for s, c, x in (("8-resume.json", "facts", ""), ("8-resume.json", "diagnose", ""),
                          ("8-resume-init.json", "diagnose", "--init-timeout 1"))]
    ok = all(not r.crashed() and not r.timed_out and r.code in (1, 2) for r in rs)
    return V(ok), "; ".join(r.obs(r.excerpt("Sanitizer|runtime error") if r.crashed() else "") for r in rs)


@attack(50, "SIGPIPE", "`gpuvet diagnose --from task-11.txt --json | head -c 10`; `gpuvet facts --from topo256.txt | head -c 10`",
        "die quietly (141, or a one-line error)")
def a50(ctx):
    t = topo_file(ctx, 256)
    rs = [ctx.sh(f"{c} | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}")
          for c in ("gpuvet diagnose --from task-11.txt --json", f"gpuvet facts --from {t}")]
    ok = all(r.code in (0, 1, 2, 3, 141) and not r.crashed() and len(r.errtext.splitlines()) <= 1 for r in rs)
    return V(ok), "; ".join(r.obs(rss=False) for r in rs)


@attack(51, "stdout closed", "`gpuvet diagnose --from task-11.txt >&-`", "error on stderr, exit 3")
def a51(ctx):
    r = ctx.sh("gpuvet diagnose --from task-11.txt >&-")
    return V(r.code == 3 and r.errtext.strip()), r.obs(None if r.errtext.strip() else "nothing said", False)


@attack(52, "stdout is /dev/full", "`gpuvet facts --from task-11.txt > /dev/full`; `findings`, `formats`, `diagnose --from`; live facts",
        "write failure reported (stderr, exit 3)")
def a52(ctx):
    cmds = ["gpuvet facts --from task-11.txt", "gpuvet findings", "gpuvet formats",
            "gpuvet diagnose --from task-11.txt",
            f"{SC}=tests/scenarios/8gpu-nvlink-h100.json gpuvet facts --nvml $FAKE"]
    rs = [ctx.sh(c + " > /dev/full") for c in cmds]
    ok = all(r.code == 3 and r.errtext.strip() for r in rs)
    names = ["facts --from", "findings", "formats", "diagnose --from", "live facts"]
    return V(ok), "; ".join(f"{n} {r.code}{'' if r.errtext.strip() else ' silent'}" for n, r in zip(names, rs))


def has_esc(r):
    return b"\x1b" in r.out


@attack(53, "TTY colour, NO_COLOR=1, --no-color", "`ptyrun -- gpuvet diagnose --from task-02.txt` (TERM=xterm)",
        "colour only on a TTY, off with NO_COLOR=1 and --no-color")
def a53(ctx):
    e = {"TERM": "xterm-256color"}
    tty = ctx.sh("ptyrun -- gpuvet diagnose --from task-02.txt", env=e)
    nc = ctx.sh("NO_COLOR=1 ptyrun -- gpuvet diagnose --from task-02.txt", env=e)
    flag = ctx.sh("ptyrun -- gpuvet diagnose --from task-02.txt --no-color", env=e)
    pipe = ctx.sh("gpuvet diagnose --from task-02.txt", env=e)
    ok = has_esc(tty) and not has_esc(nc) and not has_esc(flag) and not has_esc(pipe)
    f = lambda r: "ANSI" if has_esc(r) else "plain"
    return V(ok), f"tty {f(tty)}; NO_COLOR=1 {f(nc)}; --no-color {f(flag)}; pipe {f(pipe)}"


@attack(54, "TERM=dumb on a TTY; NO_COLOR set but empty", "`TERM=dumb ptyrun -- gpuvet diagnose --from task-02.txt`; `NO_COLOR= ptyrun …`",
        "no ANSI for TERM=dumb; an empty NO_COLOR does not turn colour off")
def a54(ctx):
    dumb = ctx.sh("ptyrun -- gpuvet diagnose --from task-02.txt", env={"TERM": "dumb"})
    empty = ctx.sh("NO_COLOR= ptyrun -- gpuvet diagnose --from task-02.txt", env={"TERM": "xterm-256color"})
    ok = not has_esc(dumb) and has_esc(empty)
    return V(ok), (f"TERM=dumb {'ANSI escapes' if has_esc(dumb) else 'plain'}; "
                   f"NO_COLOR= {'colour' if has_esc(empty) else 'no colour'}")


@attack(55, "very narrow terminal", "`ptyrun --cols 20 -- gpuvet diagnose --from task-02.txt`; `COLUMNS=20 gpuvet …`", "no crash")
def a55(ctx):
    e = {"TERM": "xterm-256color"}
    r1 = ctx.sh("ptyrun --cols 20 -- gpuvet diagnose --from task-02.txt", env=e)
    r2 = ctx.sh("COLUMNS=20 gpuvet diagnose --from task-02.txt", env=e)
    w = max((len(l) for l in r2.outtext.splitlines()), default=0)
    ok = r1.code in (0, 1, 2) and r2.code in (0, 1, 2) and not r1.crashed() and not r2.crashed()
    return V(ok), f"pty {r1.code}; COLUMNS=20 {r2.code}, widest line {w}"


ESC_NAME = "NVIDIA \x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31mH200\x1b[0m"


@attack(56, "terminal escapes inside offline input (product name, pmon process name)",
        "`gpuvet diagnose --from esc-q.txt`; `gpuvet facts --from esc-q.txt`; `gpuvet facts --from esc-pmon.txt`",
        "control bytes neutralised (no ESC or BEL on stdout/stderr)")
def a56(ctx):
    g = gpu_list(1)
    g[0]["name"] = ESC_NAME
    with open(ctx.path("esc-q.txt"), "w") as f:
        f.write(nvsmi_q_text(g))
    with open(ctx.path("task-11.txt")) as f:
        pm = f.read().replace("24819    C     72    61     0     0   python",
                              "24819    C     72    61     0     0   py\x1b]0;PWNED\x07\x1b[2Jthon")
    with open(ctx.path("esc-pmon.txt"), "w") as f:
        f.write(pm)
    rs = [ctx.sh(c) for c in ("gpuvet diagnose --from esc-q.txt", "gpuvet facts --from esc-q.txt",
                              "gpuvet facts --from esc-pmon.txt")]
    bad = [r for r in rs if b"\x1b" in r.out + r.err or b"\x07" in r.out + r.err]
    ex = bad[0].excerpt("PWNED") if bad else ""
    return V(not bad), f"codes {[r.code for r in rs]}; " + (
        f"{len(bad)} of 3 write raw ESC: {ex}" if bad else "no control byte written")


def cap(ctx, outdir, scen="tests/scenarios/8gpu-nvlink-h100.json", extra="", path="fakebin", timeout=None, prefix=""):
    fakebin(ctx)
    return ctx.sh(f"{prefix}PATH={path}:$PATH {SC}={scen} gpuvet capture {outdir} --nvml $FAKE {extra}".rstrip(),
                  timeout=timeout)


@attack(57, "capture into a non-empty dir / a file / /dev/null / \"\"", "`PATH=fakebin:$PATH gpuvet capture DIR --nvml $FAKE`", "3")
def a57(ctx):
    os.makedirs(ctx.path("capt", "full1"), exist_ok=True)
    open(ctx.path("capt", "full1", "x"), "w").close()
    open(ctx.path("capt", "afile"), "w").close()
    rs = [cap(ctx, d) for d in ("capt/full1", "capt/afile", "/dev/null", "''")]
    ok = all(r.code == 3 for r in rs)
    return V(ok), "; ".join(r.obs(rss=False) for r in rs)


@attack(58, "OUTDIR symlink → /etc; → empty dir; dangling", "`ln -s /etc L; gpuvet capture L` …",
        "no clobbering (/etc untouched; 3 for /etc)")
def a58(ctx):
    d = ctx.path("capt")
    os.makedirs(d, exist_ok=True)
    os.makedirs(ctx.path("capt", "empty-target"))
    os.symlink("/etc", ctx.path("capt", "L-etc"))
    os.symlink("empty-target", ctx.path("capt", "L-empty"))
    os.symlink("nowhere", ctx.path("capt", "L-dangling"))
    before = sorted(os.listdir("/etc"))
    rs = [cap(ctx, f"capt/{n}") for n in ("L-etc", "L-empty", "L-dangling")]
    etc_same = sorted(os.listdir("/etc")) == before
    ok = etc_same and rs[0].code == 3 and not any(r.crashed() or r.timed_out for r in rs)
    return V(ok), "; ".join(r.obs(rss=False) for r in rs) + ("" if etc_same else "; /etc CHANGED")


@attack(59, "OUTDIR with a space and a newline", "`gpuvet capture $'capt/with space\\nand newline'`", "works (0, manifest written)")
def a59(ctx):
    os.makedirs(ctx.path("capt"), exist_ok=True)
    r = cap(ctx, "$'capt/with space\\nand newline'")
    m = os.path.exists(ctx.path("capt", "with space\nand newline", "manifest.json"))
    return V(r.code == 0 and m), r.obs("manifest written" if m else "no manifest")


@attack(60, "read-only OUTDIR (as nobody)", f"`{NOBODY} gpuvet capture ./capt/ro`", "3")
def a60(ctx):
    need_root(ctx, "setpriv to nobody")
    os.makedirs(ctx.path("capt", "ro"))
    r = cap(ctx, "./capt/ro", prefix=f"{NOBODY} env ")
    return V(r.code == 3 and r.errtext.strip()), r.obs(rss=False)


@attack(61, "full filesystem (tmpfs size=100k, 8 KiB free)",
        "`mount -t tmpfs -o size=100k tmpfs full; head -c 90k /dev/zero > full/filler; PATH=fakebin:$PATH gpuvet capture full/b1 --nvml $FAKE`; "
        "`gpuvet diagnose --from full/b1`",
        "3 naming the first failed file; a partial bundle marked or refused on read")
def a61(ctx):
    need_root(ctx, "mount a tmpfs")
    fakebin(ctx)
    m = ctx.path("full")
    os.makedirs(m)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=100k", "tmpfs", m]).returncode != 0:
        raise Skip("mount -t tmpfs failed")
    ctx.mounts.append(m)
    try:
        with open(os.path.join(m, "filler"), "wb") as f:
            f.write(b"\0" * 90 * 1024)
        c = cap(ctx, "full/b1")
        empties = []
        if os.path.isdir(os.path.join(m, "b1")):
            empties = [n for n in os.listdir(os.path.join(m, "b1")) if os.path.getsize(os.path.join(m, "b1", n)) == 0]
        d = ctx.sh("gpuvet diagnose --from full/b1")
        ok = c.code == 3 and d.code != 0
        return V(ok), (f"capture {c.obs(rss=False)}; {len(empties)} empty file(s) left; "
                       f"diagnose --from: {d.obs(d.excerpt(r'^(OK|WARNING|CRITICAL)|gpuvet:'), False)}")
    finally:
        subprocess.run(["umount", m])
        ctx.mounts.remove(m)


@attack(62, "two concurrent captures into one empty dir", "`gpuvet capture capt/conc … & sleep 0.3; gpuvet capture capt/conc …` (different scenarios)",
        "one refuses")
def a62(ctx):
    fakebin(ctx)
    os.makedirs(ctx.path("capt", "conc"))
    r = ctx.sh(f"(PATH=fakebin:$PATH {SC}=tests/scenarios/8gpu-nvlink-h100.json gpuvet capture capt/conc --nvml $FAKE "
               f">a.out 2>&1; echo $? > a.rc) & sleep 0.3; PATH=fakebin:$PATH {SC}=tests/scenarios/2gpu-pcie-sys.json "
               f"gpuvet capture capt/conc --nvml $FAKE > b.out 2>&1; echo $? > b.rc; wait")
    try:
        a = int(open(ctx.path("a.rc")).read())
        b = int(open(ctx.path("b.rc")).read())
    except (OSError, ValueError):
        return "DEFECT", r.obs("no exit codes")
    ok = sorted([a == 0, b == 0]) == [False, True]
    return V(ok), f"A {a}, B {b} / {r.wall:.2f} s"


def uts(ctx):
    """Prefix that runs a command with the host name gpu-node-07 (a new UTS namespace)."""
    return f"unshare --uts sh -c 'hostname {HOST} && exec \"$@\"' sh "


@made
def bundles(ctx, variant, redact):
    """A capture of the fake node: variant 'root' (--root the saved tree) or 'uts' (live, host name set)."""
    name = f"cap-{variant}-{'R' if redact else 'U'}"
    out = {}
    for scen in ("8gpu-nvlink-h100.json", "fault-init-hang.json"):
        d = capture_dir(ctx, f"{name}-{scen[:-5]}")
        extra = "--redact" if redact else ""
        if variant == "root":
            extra += " --root tests/fixtures/sysroot-2numa-4gpu"
            r = cap(ctx, d, scen="tests/scenarios/" + scen, extra=extra)
        else:
            fakebin(ctx)
            r = ctx.sh(f"PATH=fakebin:$PATH {SC}=tests/scenarios/{scen} {uts(ctx)}gpuvet capture {d} --nvml $FAKE {extra}")
        out[scen] = (d, r)
    return out


def secret_class(v):
    if v == HOST:
        return "host name"
    if v == MAC:
        return "MAC"
    if v in IPS:
        return "IP"
    if v == HOME:
        return "/home/<user>"
    if v.isdigit():
        return "serial"
    return "UUID"


def leaks(ctx, d):
    """{class: {file, ...}} of every secret value left in the bundle at d."""
    vals = secret_values()
    found = {}
    for root, _, files in os.walk(ctx.path(d)):
        for fn in files:
            with open(os.path.join(root, fn), "rb") as f:
                text = f.read().decode("utf-8", "replace").lower()
            for v in vals:
                if v in text:
                    found.setdefault(secret_class(v), {}).setdefault(v, set()).add(fn)
    return found


def leak_summary(found):
    parts = []
    for cls in ("host name", "serial", "UUID", "MAC", "IP", "/home/<user>"):
        if cls in found:
            files = sorted(set().union(*found[cls].values()))
            n = len(found[cls])
            parts.append(f"{cls}{f' ×{n}' if n > 1 else ''} ({', '.join(files)})")
    return ", ".join(parts)


@attack(63, "`--redact` completeness: fake nvidia-smi/dmesg/journalctl/sar/mpstat/iostat (host names, serials, UUIDs, MAC, IPs, /home paths); "
        "NVML healthy and hung at init; `--root` saved tree and (root only) live with host name gpu-node-07",
        "`PATH=fakebin:$PATH SC=… gpuvet capture capR --redact --nvml $FAKE [--root tests/fixtures/sysroot-2numa-4gpu]`; grep -ri every value",
        "no serial, UUID, host name, MAC, IP or /home/<user> left anywhere in the bundle (case-insensitive)")
def a63(ctx):
    variants = ["root"] + (["uts"] if ctx.root else [])
    obs, ok, any_bundle = [], True, False
    for v in variants:
        for scen, (d, r) in bundles(ctx, v, True).items():
            label = f"{v} {scen[:-5]}"
            if r.code != 0 or not os.path.isdir(ctx.path(d)):
                obs.append(f"{label}: exit {r.code}, no bundle")
                continue
            any_bundle = True
            lk = leaks(ctx, d)
            ok &= not lk
            obs.append(f"{label}: " + (f"left: {leak_summary(lk)}" if lk else "clean"))
    if not ctx.root:
        obs.append("live variant skipped (needs root for unshare --uts)")
    return V(ok and any_bundle), "; ".join(obs)


@attack(64, "redacted bundle reads back", "`gpuvet diagnose --from capR --json` vs `--from capU` (unredacted)", "same findings")
def a64(ctx):
    v = "uts" if ctx.root else "root"
    dr, rr = bundles(ctx, v, True)["8gpu-nvlink-h100.json"]
    du, ru = bundles(ctx, v, False)["8gpu-nvlink-h100.json"]
    if rr.code != 0 or ru.code != 0:
        return "DEFECT", f"capture exit {rr.code} / {ru.code}"
    a = ctx.sh(f"gpuvet diagnose --from {dr} --json")
    b = ctx.sh(f"gpuvet diagnose --from {du} --json")
    f = lambda r: sorted((x["id"], x["severity"]) for x in (r.json() or {}).get("findings", []))
    ok = a.code == b.code and f(a) == f(b) and f(a)
    return V(ok), f"{v}: redacted {a.code}, {len(f(a))} findings; unredacted {b.code}, {len(f(b))} findings; " + (
        "identical" if f(a) == f(b) else "DIFFERENT")


@attack(65, "`capture --root DIR`", "bundle of #63 (`--root`), read back with `gpuvet diagnose --from capR --json`",
        "one machine (no host conflict on read-back), or refused")
def a65(ctx):
    d, r = bundles(ctx, "root", True)["8gpu-nvlink-h100.json"]
    if r.code == 3 and r.errtext.strip():
        return "PASS", "capture refused: " + r.excerpt()
    if r.code != 0:
        return "DEFECT", r.obs()
    b = ctx.sh(f"gpuvet diagnose --from {d} --json")
    host = re.compile(r"conflict: (host\.)?(cpu_model|hostname|kernel|os|sockets|logical_cpus|physical_cores|memory_bytes)")
    c = [n for n in (b.json() or {}).get("notes", []) if host.search(n)]
    return V(not c), (quote(c[0]) if c else "no host conflict") + f" ({len(c)} host conflict note(s))"


def cfg(ctx, name, text, binary=False):
    p = ctx.path("cfg-" + name)
    with open(p, "wb") as f:
        f.write(text if binary else text.encode())
    return "cfg-" + name


@attack(66, "config: malformed TOML, binary, 100 000-deep arrays and inline tables, duplicate table/key, unknown key, unknown top-level key, "
        "string value, negative, 99999999999 for an int, missing file", "`gpuvet diagnose --from task-11.txt --config X.toml`", "3, clear")
def a66(ctx):
    deep = 100_000
    files = [
        cfg(ctx, "malformed.toml", "[thresholds\nx = \n"),
        cfg(ctx, "binary.toml", os.urandom(4096), True),
        cfg(ctx, "deep-array.toml", "[thresholds]\nx = " + "[" * deep + "]" * deep + "\n"),
        cfg(ctx, "deep-inline.toml", "[thresholds]\nx = " + "{a = " * deep + "1" + "}" * deep + "\n"),
        cfg(ctx, "dup-table.toml", "[thresholds]\nbusy_util_pct = 50\n[thresholds]\nidle_util_pct = 5\n"),
        cfg(ctx, "dup-key.toml", "[thresholds]\nbusy_util_pct = 50\nbusy_util_pct = 60\n"),
        cfg(ctx, "unknown-key.toml", "[thresholds]\nbogus = 1\n"),
        cfg(ctx, "unknown-top.toml", "foo = 1\n"),
        cfg(ctx, "string.toml", "[thresholds]\nbusy_util_pct = \"50\"\n"),
        cfg(ctx, "negative.toml", "[thresholds]\nbusy_util_pct = -1\n"),
        cfg(ctx, "bigint.toml", "[thresholds]\nhot_temp_c = 99999999999\n"),
        "missing.toml",
    ]
    rs = [ctx.sh(f"gpuvet diagnose --from task-11.txt --config {f}") for f in files]
    bad = [f for f, r in zip(files, rs) if r.code != 3 or not r.errtext.strip()]
    return V(not bad), f"codes {[r.code for r in rs]}, max {max(r.wall for r in rs):.2f} s" + (
        f"; not refused: {bad}" if bad else f" / {rs[2].excerpt()}")


@attack(67, "config: `nan` / `inf` for double thresholds",
        "`printf '[thresholds]\\nclocks_below_fraction = nan\\n' > nan.toml; SC=tests/scenarios/degraded-mix.json gpuvet diagnose --nvml $FAKE --sample-window 0 --config nan.toml` (also inf)",
        "3")
def a67(ctx):
    rs = []
    for v in ("nan", "inf"):
        f = cfg(ctx, f"{v}.toml", f"[thresholds]\nclocks_below_fraction = {v}\n")
        rs.append(live(ctx, "tests/scenarios/degraded-mix.json", "diagnose", f"--sample-window 0 --config {f}"))
    return V(all(r.code == 3 for r in rs)), "; ".join(f"{v}: {r.obs(r.excerpt(r'^(OK|WARNING|CRITICAL)|gpuvet:'), False)}"
                                                        for v, r in zip(("nan", "inf"), rs))


@attack(68, "config is a directory", "`gpuvet diagnose --from task-11.txt --config ./cfgdir`", "3")
def a68(ctx):
    os.makedirs(ctx.path("cfgdir"), exist_ok=True)
    r = ctx.sh("gpuvet diagnose --from task-11.txt --config ./cfgdir")
    return V(r.code == 3), r.obs(None if r.code == 3 else "defaults used silently", False)


@attack(69, "config is /dev/zero", "`( ulimit -v 3000000; gpuvet diagnose --from task-11.txt --config /dev/zero )`",
        "3 at once (≤ 5 s, ≤ 200 MB)")
def a69(ctx):
    r = ctx.sh("ulimit -v 3000000; gpuvet diagnose --from task-11.txt --config /dev/zero")
    return V(r.code == 3 and r.wall <= 5 and r.rss <= 200), r.obs()


@attack(70, "config is a FIFO / a never-closing stdin",
        "`mkfifo c; --config c`; `gpuvet diagnose --from task-11.txt --config /dev/stdin < <(sleep 1000)` (timeout 10 s)", "3 or bounded")
def a70(ctx):
    if not os.path.exists(ctx.path("c")):
        os.mkfifo(ctx.path("c"))
    r1 = ctx.sh("gpuvet diagnose --from task-11.txt --config c", timeout=10)
    # A process substitution, not a pipe: the shell then waits for gpuvet alone, not for the
    # writer that never ends (which a pipe's last stage cannot outlive).
    r2 = ctx.sh("gpuvet diagnose --from task-11.txt --config /dev/stdin < <(sleep 1000)", timeout=10)
    ok = all(r.code == 3 and not r.timed_out for r in (r1, r2))
    return V(ok), f"FIFO {r1.obs(rss=False)}; stdin {r2.obs(rss=False)}"


def pty_after(r):
    m = re.search(r"exit_after_signal=([\d.]+)", r.errtext)
    return float(m.group(1)) if m else None


@attack(71, "SIGINT (^C on a pty) / SIGTERM during facts and diagnose with 8 hung GPUs",
        "`SC=8-all-hang-name.json ptyrun --ctrl-c 1.5 -- gpuvet facts --nvml $FAKE`; `--term 1.5`; diagnose", "stops at once (≤ 1 s)")
def a71(ctx):
    scenarios8(ctx)
    obs, ok = [], True
    for cmd in ("facts", "diagnose"):
        for how in ("--ctrl-c", "--term"):
            r = ctx.sh(f"{SC}=8-all-hang-name.json ptyrun {how} 1.5 -- gpuvet {cmd} --nvml $FAKE")
            after = pty_after(r)
            ok &= after is not None and after <= 1.0
            obs.append(f"{cmd} {how[2:]}: exit {r.code} {after if after is not None else '-'} s after")
    return V(ok), "; ".join(obs)


@attack(72, "^C / SIGTERM during capture while a tool hangs (fake `iostat` = `exec sleep 300`)",
        "`PATH=fakebin2:$PATH ptyrun --ctrl-c 3 -- gpuvet capture capt/sig2 --nvml $FAKE --timeout 60` (also `--term 3`)",
        "gpuvet and its children stop (no orphan)")
def a72(ctx):
    fakebin(ctx)
    obs, ok = [], True
    pids_file = ctx.path("iostat-hang.pids")
    for how in ("--ctrl-c", "--term"):
        if os.path.exists(pids_file):
            os.unlink(pids_file)
        d = capture_dir(ctx, f"sig-{how[2:]}")
        r = ctx.sh(f"PATH=fakebin2:$PATH {SC}=tests/scenarios/8gpu-nvlink-h100.json ptyrun {how} 3 -- "
                   f"gpuvet capture {d} --nvml $FAKE --timeout 60")
        time.sleep(0.5)
        try:
            pids = [int(x) for x in open(pids_file).read().split()]
        except OSError:
            pids = []
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()[0]
                if st != "Z":
                    alive.append(pid)
            except OSError:
                pass
        for pid in alive:
            os.kill(pid, signal.SIGKILL)
        if not pids:
            obs.append(f"{how[2:]}: exit {r.code}, the hanging tool had not started")
            ok = False
            continue
        ok &= not alive
        obs.append(f"{how[2:]}: gpuvet exit {r.code} {pty_after(r)} s after; "
                   + (f"`sleep 300` (pid {alive[0]}) still running" if alive else "no orphan"))
    return V(ok), "; ".join(obs)


@attack(73, "test suite under ASan/UBSan", "`ctest --test-dir $ASAN -LE gpu -j2`", "no sanitizer error")
def a73(ctx):
    if not (ctx.asan and ctx.full):
        raise Skip("runs only with --full and --asan-build DIR (about 6 min on 2 cores)")
    r = ctx.sh(f"ctest --test-dir {ctx.asan} -LE gpu -j2", timeout=1800)
    san = re.search(r"AddressSanitizer|runtime error:|LeakSanitizer", r.text)
    summ = r.excerpt(r"tests passed|tests failed")
    return V(r.code == 0 and not san), r.obs(summ)


@attack(74, "hostile `--root` tree: proc/cpuinfo a FIFO, proc/meminfo → /dev/zero, proc/stat → /dev/urandom, dev/kmsg a FIFO, sys/loop → ../../..",
        "`SC=tests/scenarios/sysroot-2numa-4gpu.json gpuvet facts --nvml $FAKE --root rootx`", "no hang")
def a74(ctx):
    p = ctx.path("rootx")
    shutil.copytree(os.path.join(FIX, "sysroot-2numa-4gpu"), p, symlinks=True)
    for n in ("proc/cpuinfo", "proc/meminfo", "proc/stat"):
        if os.path.lexists(os.path.join(p, n)):
            os.unlink(os.path.join(p, n))
    os.mkfifo(os.path.join(p, "proc/cpuinfo"))
    os.symlink("/dev/zero", os.path.join(p, "proc/meminfo"))
    os.symlink("/dev/urandom", os.path.join(p, "proc/stat"))
    os.makedirs(os.path.join(p, "dev"), exist_ok=True)
    os.mkfifo(os.path.join(p, "dev/kmsg"))
    os.symlink("../../..", os.path.join(p, "sys/loop"))
    r = live(ctx, "tests/scenarios/sysroot-2numa-4gpu.json", extra="--root rootx", timeout=30)
    return V(not r.timed_out and not r.crashed()), r.obs(r.excerpt("cpuinfo"))


@attack(75, "watchdog design review: `scale` sampler and abandoned probes", "code reading (needs a CUDA build to run)",
        "no UAF / race; the sampler reuses one NVML and respects abandoned probes")
def a75(ctx):
    raise Skip("code reading, not a run: `scale` needs a CUDA build and a GPU")


# ---------------------------------------------------------------- issue 37 (E1-E15 of the review)


def captured_baseline(ctx, name="b.toml", scen="2gpu-pcie-sys.json"):
    path = ctx.path(name)
    if not os.path.exists(path):
        live(ctx, os.path.join(SCEN, scen), "baseline capture", f"--force -o {name}")
    return path


@attack(76, "E1: baseline with a 200 000-digit NV value and pair key",
        "`gpuvet gate --baseline long-nv.toml`", "3 naming the key, no crash")
def a76(ctx):
    base = open(captured_baseline(ctx)).read()
    with open(ctx.path("long-nv.toml"), "w") as f:
        f.write(re.sub(r'("GPU0-GPU1" = )"[A-Z0-9]+"', r'\1"NV' + "9" * 200000 + '"', base, count=1))
    with open(ctx.path("long-key.toml"), "w") as f:
        f.write(base.replace('"GPU0-GPU1" =', '"GPU0-GPU' + "1" * 200000 + '" =', 1))
    rs = [live(ctx, os.path.join(SCEN, "2gpu-pcie-sys.json"), "gate", f"--baseline {n}")
          for n in ("long-nv.toml", "long-key.toml")]
    ok = all(r.code == 3 and not r.crashed() for r in rs)
    return V(ok), "; ".join(r.obs(rss=False) for r in rs)


@attack(77, "E15: baseline cut in half", "`head -c HALF b.toml > cut.toml; gpuvet gate --baseline cut.toml`",
        "3 (cut short), never pass")
def a77(ctx):
    base = open(captured_baseline(ctx)).read()
    with open(ctx.path("cut.toml"), "w") as f:
        f.write(base[: base.index("[paths]")])
    r = live(ctx, os.path.join(SCEN, "2gpu-pcie-sys.json"), "gate", "--baseline cut.toml --one-line")
    return V(r.code == 3 and "cut short" in r.text), r.obs(rss=False)


@attack(78, "E2: JUnit with control characters in names", "`SC=evil GPU name gpuvet gate --junit j.xml`",
        "valid XML (no C0 control, no &#27;)")
def a78(ctx):
    sc = scenario("2gpu-pcie-sys.json")
    for g in sc.get("gpus", []):
        g["name"] = "NVIDIA \x1b[31mL40S\x07"
    path = ctx.path("evil-names.json")
    with open(path, "w") as f:
        json.dump(sc, f)
    captured_baseline(ctx)
    live(ctx, path, "gate", "--baseline b.toml --fail-on warning --junit j.xml")
    data = open(ctx.path("j.xml"), "rb").read() if os.path.exists(ctx.path("j.xml")) else b""
    bad = [c for c in data if c < 0x20 and c not in (9, 10, 13)]
    ok = bool(data) and not bad and b"&#27;" not in data and b"&#7;" not in data
    return V(ok), f"{len(data)} bytes, {len(bad)} control bytes"


@attack(79, "E3: fleet document whose host holds a newline", "`gpuvet fleet ingest f.db evil.json`",
        "that document refused, named; nothing stored under another host")
def a79(ctx):
    with open(ctx.path("evil.json"), "w") as f:
        f.write('{"schema":"gpuvet.gate/1","host":"evil\\nnode00001","node":{"gpu_count":0,"gpus":[],"pairs":[]}}')
    r = ctx.sh("gpuvet fleet ingest evil.db evil.json")
    return V(r.code != 0 and "not a plain host name" in r.text and not r.crashed()), r.obs(rss=False)


@attack(80, "E5: a number out of range among good reports", "`gpuvet fleet ingest m.db mix/`",
        "that file named, the others kept")
def a80(ctx):
    os.makedirs(ctx.path("mix"), exist_ok=True)
    for i in range(3):
        with open(ctx.path("mix", f"n{i}.json"), "w") as f:
            f.write('{"schema":"gpuvet.gate/1","host":"n%d","node":{"gpu_count":0,"gpus":[],"pairs":[]}}' % i)
    with open(ctx.path("mix", "zz.json"), "w") as f:
        f.write('{"schema":"gpuvet.gate/1","x":1e999}')
    r = ctx.sh("gpuvet fleet ingest m.db mix")
    ok = ("zz.json" in r.text and "out of range" in r.text and "json.exception" not in r.text
          and "3 added" in r.text)
    return V(ok and not r.crashed()), r.obs(r.excerpt(r"added"), False)


@attack(81, "E4: a report from the future", "`gpuvet fleet ingest f.db future.json`", "refused, named")
def a81(ctx):
    with open(ctx.path("future.json"), "w") as f:
        f.write('{"schema":"gpuvet.gate/1","host":"skew","collected_unix":2080000000,'
                '"node":{"gpu_count":0,"gpus":[],"pairs":[]}}')
    r = ctx.sh("gpuvet fleet ingest future.db future.json")
    return V(r.code != 0 and "after this machine's clock" in r.text), r.obs(rss=False)


@attack(82, "E6: fleet report on a FIFO", "`mkfifo db.fifo; gpuvet fleet report db.fifo` (timeout 10 s)",
        "3 at once")
def a82(ctx):
    if not os.path.exists(ctx.path("db.fifo")):
        os.mkfifo(ctx.path("db.fifo"))
    r = ctx.sh("gpuvet fleet report db.fifo", timeout=10)
    return V(r.code == 3 and not r.timed_out), r.obs(rss=False)


@attack(83, "E10: `launch --gpus \"\"`", "`gpuvet launch --per-gpu --gpus '' -- true`", "3, nothing launched")
def a83(ctx):
    r = live(ctx, os.path.join(SCEN, "2gpu-pcie-sys.json"), "launch", "--per-gpu --gpus '' -- true")
    return V(r.code == 3 and "empty" in r.text), r.obs(rss=False)


@attack(84, "E14: watch into /dev/full, no duration", "`gpuvet watch --interval 0.2 > /dev/full` (timeout 15 s)",
        "3 at once")
def a84(ctx):
    r = live(ctx, os.path.join(SCEN, "h200-1gpu-idle.json"), "watch", "--interval 0.2 > /dev/full", timeout=15)
    return V(r.code == 3 and not r.timed_out), r.obs(rss=False)


@attack(85, "E13: watch with GPU1 hanging in every sample", "`SC=fault-clock-hang.json gpuvet watch --duration 3 --gpu-timeout 1 --json`",
        "2, GPU1 named, GPU0 still watched")
def a85(ctx):
    r = live(ctx, os.path.join(SCEN, "fault-clock-hang.json"), "watch",
             "--interval 0.5 --duration 3 --gpu-timeout 1 --json", timeout=30)
    intervals = sum(1 for l in r.outtext.splitlines() if '"type":"interval"' in l)
    return V(r.code == 2 and intervals >= 2 and "GPU1" in r.outtext), r.obs(f"{intervals} intervals", False)


@attack(86, "E11: --throughput-regex on a 3 MB log line", "`gpuvet launch --per-gpu --log-dir L --throughput-regex '((a*)*b)' -- sh -c 'head -c 3M /dev/zero | tr ...'`",
        "0, no crash")
def a86(ctx):
    r = live(ctx, os.path.join(SCEN, "2gpu-pcie-sys.json"), "launch",
             "--per-gpu --gpus 0 --check-timeout 0 --log-dir L --throughput-regex '((a*)*([0-9]+))' -- "
             "sh -c \"head -c 3000000 /dev/zero | tr '\\\\0' a; echo; echo 12 x\"", timeout=60)
    return V(r.code == 0 and not r.crashed()), r.obs(rss=False)


@attack(87, "--json on a failure", "`gpuvet diagnose --json --from /nonexistent`", "3, one gpuvet.error/1 document")
def a87(ctx):
    r = ctx.sh("gpuvet diagnose --json --from /nonexistent/capture")
    doc = r.json() or {}
    return V(r.code == 3 and doc.get("schema") == "gpuvet.error/1"), r.obs(rss=False)


@attack(88, "E8: slowloris on /metrics: 40 connections sending a header line a second",
        "`gpuvet export --listen 127.0.0.1:0` + 40 slow clients; `curl -m 10 /metrics` ×5",
        "5 of 5 scrapes answered")
def a88(ctx):
    scenarios8(ctx)
    log = ctx.path("export.log")
    env = dict(ctx.env)
    env[SC] = os.path.join(SCEN, "h200-1gpu-idle.json")
    with open(log, "wb") as err:
        p = subprocess.Popen([ctx.gpuvet, "export", "--nvml", ctx.fake, "--listen", "127.0.0.1:0",
                              "--interval", "5"], stdout=subprocess.DEVNULL, stderr=err,
                             cwd=ctx.work, env=env)
    try:
        port = None
        for _ in range(100):
            m = re.search(r"127\.0\.0\.1:(\d+)/metrics", open(log).read())
            if m:
                port = int(m.group(1))
                break
            time.sleep(0.1)
        if port is None:
            return V(False), "export did not say where it listens"
        socks = []
        for _ in range(40):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            socks.append(s)
        answered = 0
        for _ in range(5):
            for i, s in enumerate(socks):
                try:
                    s.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    socks[i] = socket.create_connection(("127.0.0.1", port))
                    socks[i].sendall(b"GET /metrics HTTP/1.1\r\n")
            r = subprocess.run(["curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                                f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True)
            answered += r.stdout == "200"
            time.sleep(1)
        for s in socks:
            s.close()
        return V(answered == 5), f"{answered}/5 scrapes answered"
    finally:
        p.terminate()
        p.wait(timeout=10)


@attack(89, "E9: kill -9 of `gpuvet launch` while 4 jobs run (each with a setsid daemon)",
        "`gpuvet launch --per-gpu -- job.sh & sleep 2; kill -9 $!`",
        "every job process and daemon gone within 10 s, the cgroup leaves removed")
def a89(ctx):
    scenarios8(ctx)
    job = ctx.path("kjob.sh")
    with open(job, "w") as f:
        f.write("#!/bin/sh\nsetsid sh -c 'exec sleep 300' </dev/null >/dev/null 2>&1 &\n"
                "echo $! > \"$OUT/daemon$1\"\nexec sleep 300\n")
    os.chmod(job, 0o755)
    env = dict(ctx.env)
    env[SC] = os.path.join(SCEN, "4gpu-nvlink-direct.json")
    env["OUT"] = ctx.work
    p = subprocess.Popen([ctx.gpuvet, "launch", "--per-gpu", "--nvml", ctx.fake, "--grace", "1",
                          "--check-timeout", "0", "-q", "--", job, "{rank}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ctx.work, env=env)
    for _ in range(100):
        if all(os.path.exists(ctx.path(f"daemon{k}")) for k in range(4)):
            break
        time.sleep(0.1)
    time.sleep(0.5)
    leaf = None
    for line in open(f"/proc/{p.pid}/cgroup"):
        if line.startswith("0::"):
            for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                cand = os.path.join(mount, line[3:].strip().lstrip("/"), f"gpuvet-launch-{p.pid}")
                if os.path.isdir(cand):
                    leaf = cand
    pids = [int(open(ctx.path(f"daemon{k}")).read()) for k in range(4)
            if os.path.exists(ctx.path(f"daemon{k}"))]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    def alive(pid):
        try:
            st = open(f"/proc/{pid}/stat").read()
            return st[st.rindex(")") + 2] not in "ZX"
        except OSError:
            return False
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (any(alive(x) for x in pids) or (leaf and os.path.exists(leaf))):
        time.sleep(0.1)
    left = [x for x in pids if alive(x)]
    for x in left:
        os.kill(x, signal.SIGKILL)
    ok = len(pids) == 4 and not left and not (leaf and os.path.exists(leaf))
    return V(ok), (f"{len(pids)} daemons, {len(left)} left running; cgroup "
                   f"{'none' if not leaf else ('left' if os.path.exists(leaf) else 'removed')}")


@attack(90, "repairs with memory: Xid 79 on one GPU back after two reboots",
        "`gpuvet fleet ingest f.db reports/; gpuvet fleet report f.db --json`",
        "2, the GPU escalated to hardware inspection / RMA")
def a90(ctx):
    os.makedirs(ctx.path("rep"), exist_ok=True)
    def gate(t, boot_t, fault):
        finding = {"id": "xid-error", "severity": "critical", "subjects": ["GPU1"],
                   "gpus": [{"index": 1, "uuid": "GPU-aaaa"}], "fault": "xid-79"}
        return {"schema": "gpuvet.gate/1", "host": "node42", "collected_unix": t,
                "uptime_s": t - boot_t, "verdict": "fail" if fault else "pass",
                "node": {"host": "node42", "gpu_count": 0, "gpus": [], "pairs": [], "bandwidth": []},
                "findings": [finding] if fault else []}
    docs = [gate(1796000000, 1795990000, True), gate(1796100000, 1796090000, False),
            gate(1796100600, 1796090000, True), gate(1796200000, 1796190000, True)]
    for i, d in enumerate(docs):
        json.dump(d, open(ctx.path("rep", f"r{i}.json"), "w"))
    ctx.sh("gpuvet fleet ingest f.db rep")
    r = ctx.sh("gpuvet fleet report f.db --json")
    doc = r.json() or {}
    rep = (doc.get("repairs") or [{}])[0]
    return V(r.code == 2 and rep.get("escalate") is True and rep.get("episodes") == 3), \
        r.obs(f"episodes {rep.get('episodes')}, escalate {rep.get('escalate')}", False)


# --------------------------------------------------------------------------- main


def parse_only(s):
    out = set()
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def cell(s):
    return s.replace("|", "\\|").replace("\n", " ")


def main(argv):
    if argv and argv[0] == "pty":
        return pty_main(argv[1:])
    ap = argparse.ArgumentParser(prog="scripts/attacks", description=__doc__.split("\n\n")[0])
    ap.add_argument("build", metavar="BUILD_DIR", help="a gpuvet build (BUILD_DIR/gpuvet, BUILD_DIR/tests/libnvidia-ml-fake.so)")
    ap.add_argument("--full", action="store_true", help="inputs at full size (500 MB and more; slow)")
    ap.add_argument("--only", type=parse_only, help="attack numbers, e.g. 1,5,40-45")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per command (default 60)")
    ap.add_argument("--asan-build", default=os.environ.get("ASAN_BUILD"),
                    help="an ASan/UBSan build for attacks 49 and 73 (default $ASAN_BUILD)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--out", help="also write the table to this file")
    a = ap.parse_args(argv)
    for need in (os.path.join(a.build, "gpuvet"), os.path.join(a.build, "tests", "libnvidia-ml-fake.so"),
                 os.path.join(a.build, "tests", "libnvidia-ml-fake-old.so")):
        if not os.path.exists(need):
            print(f"scripts/attacks: {need} missing (build the gpuvet and fake_nvml targets)", file=sys.stderr)
            return 2
    if not os.access("/usr/bin/time", os.X_OK):
        print("scripts/attacks: /usr/bin/time missing (Debian package `time`)", file=sys.stderr)
        return 2
    ctx = Ctx(a)
    started = time.monotonic()
    results = []
    try:
        for n, name, cmd, expected, fn in ROWS:
            if a.only and n not in a.only:
                continue
            t0 = time.monotonic()
            try:
                verdict, observed = fn(ctx)
            except Skip as e:
                verdict, observed = "SKIP", str(e)
            except Exception as e:  # a broken row must not hide the others
                verdict, observed = "ERROR", f"{type(e).__name__}: {e}"
            left = ctx.kill_leftovers()
            if left:
                observed += f" ({len(left)} leftover process(es) ended)"
            ctx.drop_big()
            results.append((n, name, cmd, expected, observed, verdict))
            print(f"[{n:2d}] {verdict:6s} {time.monotonic() - t0:6.1f} s  {name[:70]}", file=sys.stderr)
    finally:
        ctx.cleanup(a.keep)
    wall = time.monotonic() - started
    lines = [
        f"gpuvet attacks on `{os.path.abspath(a.build)}` ({'full' if a.full else 'default'} sizes; "
        f"{'root' if ctx.root else 'not root'}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        "`gpuvet` = BUILD_DIR/gpuvet, `$FAKE` = BUILD_DIR/tests/libnvidia-ml-fake.so, `SC=` = "
        "`GPUVET_FAKE_NVML_SCENARIO=`, `ptyrun` = `scripts/attacks.py pty`; paths are in the work directory.",
        "",
        "| # | attack | command | expected | observed (exit / wall / max RSS / excerpt) | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for n, name, cmd, expected, observed, verdict in results:
        lines.append(f"| {n} | {cell(name)} | {cell(cmd)} | {cell(expected)} | {cell(observed)} | {verdict} |")
    counts = {v: sum(1 for r in results if r[5] == v) for v in ("PASS", "DEFECT", "SKIP", "ERROR")}
    lines.append("")
    lines.append(f"**{len(results)} attacks, {counts['DEFECT']} defect{'' if counts['DEFECT'] == 1 else 's'}** ({counts['PASS']} pass, "
                 f"{counts['SKIP']} skipped" + (f", {counts['ERROR']} could not run" if counts["ERROR"] else "")
                 + f"; {wall:.0f} s)")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 1 if counts["DEFECT"] or counts["ERROR"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

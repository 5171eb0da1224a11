#!/usr/bin/env bash
# The .deb as a user gets it: CPack packs this build (the same install rules as
# scripts/package), then the package is inspected (dpkg-deb -I: name, computed Depends, the
# configuration as a conffile) and unpacked into a throwaway root (dpkg -x), where the
# installed program, manual page, bash completion and default configuration are used. Nothing
# is installed on this machine.
# Usage: deb_test.sh BUILD_DIR FAKE_NVML SOURCE_DIR
# shellcheck source=tests/skip.sh
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh"
set -euo pipefail
build=$1 fake_nvml=$2 src=$3
for tool in cpack dpkg-deb dpkg-shlibdeps man; do
  command -v $tool >/dev/null || skip "$tool missing (scripts/setup installs it)"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/dist" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/dist/gpuvet_*.deb)
dpkg-deb -I "$deb" >"$tmp/info"
[[ $(dpkg-deb -f "$deb" Package) == gpuvet ]] || fail "package name"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
[[ $depends == *libc6* ]] || fail "Depends computed by dpkg-shlibdeps should name libc6: $depends"
dpkg-deb -e "$deb" "$tmp/control"
grep -qx /etc/gpuvet/gpuvet.toml "$tmp/control/conffiles" || fail "gpuvet.toml is not a conffile"

root=$tmp/root
dpkg -x "$deb" "$root"
for f in usr/bin/gpuvet usr/share/man/man1/gpuvet.1.gz usr/share/bash-completion/completions/gpuvet \
         etc/gpuvet/gpuvet.toml usr/share/doc/gpuvet/README.md usr/share/doc/gpuvet/findings.md \
         usr/share/gpuvet/contrib/slurm/gpuvet-healthcheck; do
  [[ -e $root/$f ]] || fail "$f not in the package"
done
[[ ! -e $root/usr/share/doc/gpuvet/results ]] || fail "measurement records packaged"
[[ -x $root/usr/share/gpuvet/contrib/slurm/gpuvet-healthcheck ]] || fail "contrib script lost its x bit"

# The installed program says which build it is.
version=$("$root/usr/bin/gpuvet" --version)
echo "$version" | head -1
[[ $version == "gpuvet "*"(commit "* ]] || fail "--version: $version"

# The manual page renders without a warning and documents every command.
MANWIDTH=100 man --warnings -l "$root/usr/share/man/man1/gpuvet.1.gz" >"$tmp/man.txt" 2>"$tmp/man.err"
[[ ! -s $tmp/man.err ]] || { cat "$tmp/man.err"; fail "man -l warnings"; }
for cmd in diagnose launch ckpt-slot gate watch advise; do
  grep -q "^   $cmd" "$tmp/man.txt" || fail "the manual page lacks $cmd"
done
grep -q -- "--per-gpu" "$tmp/man.txt" || fail "the manual page lacks launch's options"

# The completion completes commands and a command's options.
complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpuvet; echo "${COMPREPLY[*]}"' \
    _ "$root/usr/share/bash-completion/completions/gpuvet" "$@"
}
[[ $(complete_words gpuvet lau) == launch ]] || fail "completion of 'lau': $(complete_words gpuvet lau)"
[[ $(complete_words gpuvet launch --gr) == --grace ]] || fail "completion of 'launch --gr'"
[[ $(complete_words gpuvet diagnose --exp) == --expect-gpus ]] || fail "completion of 'diagnose --exp'"

# The default configuration is read as a configuration (every line commented: the defaults),
# and each of its commented keys is one gpuvet knows.
GPUVET_FAKE_NVML_SCENARIO=$src/tests/scenarios/h200-1gpu-idle.json \
  "$root/usr/bin/gpuvet" diagnose --nvml "$fake_nvml" --root "$src/tests/fixtures/sysroot-1gpu-vm" \
  --no-kernel-log --config "$root/etc/gpuvet/gpuvet.toml" >/dev/null || rc=$?
[[ ${rc:-0} -ne 3 ]] || fail "the default configuration is refused"
sed -E 's/^# ([a-z_0-9]+ = )/\1/' "$root/etc/gpuvet/gpuvet.toml" >"$tmp/all-keys.toml"
grep -c ' = ' "$tmp/all-keys.toml" | grep -qv '^0$' || fail "no key in the configuration"
rc=0
GPUVET_FAKE_NVML_SCENARIO=$src/tests/scenarios/h200-1gpu-idle.json \
  "$root/usr/bin/gpuvet" diagnose --nvml "$fake_nvml" --root "$src/tests/fixtures/sysroot-1gpu-vm" \
  --no-kernel-log --config "$tmp/all-keys.toml" >/dev/null 2>"$tmp/keys.err" || rc=$?
[[ $rc -ne 3 ]] || { cat "$tmp/keys.err"; fail "a key of the default configuration is unknown"; }
echo "PASS: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"

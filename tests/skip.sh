# Sourced by the real-service test scripts: `skip REASON` skips the test (exit 77, ctest's
# SKIP_RETURN_CODE) on a developer's machine, and FAILS it under CI=true, where scripts/setup
# installed every service: a missing dependency never turns into a silent skip there.
skip() {
  if [[ ${CI:-} == true ]]; then
    echo "FAIL: cannot run under CI=true: $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# Sourced by the fake tools in this directory (tests/fakes/node/): a node called gpu-node-07
# (gpu-node-07.cluster.example.com) with two H100s, for the capture tests.
#   FAKE_NODE_TAG      printed in every output ("fake node run TAG"), to tell two runs apart
#   FAKE_NODE_DELAY_S  seconds each tool sleeps before it answers
#   FAKE_NODE_HANG     name of the tool that hangs: it starts `sleep 300` in the background,
#   FAKE_NODE_PIDFILE  writes its own pid and the sleep's pid here, and waits
#   FAKE_NODE_MARKER   a file each tool appends its name to when it runs
fake_node_start() {
  tool=$1
  if [ -n "$FAKE_NODE_MARKER" ]; then echo "$tool" >>"$FAKE_NODE_MARKER"; fi
  if [ -n "$FAKE_NODE_HANG" ] && [ "$FAKE_NODE_HANG" = "$tool" ]; then
    sleep 300 &
    echo "$$ $!" >"$FAKE_NODE_PIDFILE.tmp" && mv "$FAKE_NODE_PIDFILE.tmp" "$FAKE_NODE_PIDFILE"
    wait
    exit 0
  fi
  if [ -n "$FAKE_NODE_DELAY_S" ]; then sleep "$FAKE_NODE_DELAY_S"; fi
  if [ -n "$FAKE_NODE_TAG" ]; then echo "fake node run $FAKE_NODE_TAG"; fi
}

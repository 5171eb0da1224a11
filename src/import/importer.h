// import/importer.h — one offline input format: how to recognise it and what it fills.
//
// Every importer turns the raw text of one command's output into the same Facts
// model the live sources fill (one model, two ways in). It is recognised by
// content only, never by file name: sniff() looks at the text and answers how
// sure it is. parse() fills only the facts the format holds (everything else
// stays empty, never zero) into a fresh Facts for this one input; the caller
// merges inputs and reports conflicts. Both are pure functions of the text:
// thread-safe, no I/O, no exceptions escaping, linear time, and safe on
// garbage, truncated, binary or huge input.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// How much of a text a sniffer may look at: its first kSniffHeadBytes and, for logs whose
// telling line comes last (a watchdog timeout), its last kSniffTailBytes. Recognising a format
// costs the same on a 500 MB file as on a 5 kB one; the parser then reads the whole text.
inline constexpr std::size_t kSniffHeadBytes = std::size_t{1} << 20;
inline constexpr std::size_t kSniffTailBytes = std::size_t{1} << 20;

// The parts of `text` a sniffer may read.
inline std::string_view sniff_head(std::string_view text) {
  return text.substr(0, kSniffHeadBytes);
}
inline std::string_view sniff_tail(std::string_view text) {
  return text.size() <= kSniffHeadBytes
             ? std::string_view{}
             : text.substr(std::max(kSniffHeadBytes, text.size() - kSniffTailBytes));
}

// The first `n` lines of `text`: the part a sniffer that reads at most n lines looks at, so
// that a quick test of that part before its line loop reads no more than the loop would.
inline std::string_view first_lines(std::string_view text, std::size_t n) {
  std::size_t pos = 0;
  for (std::size_t k = 0; k < n && pos < text.size(); ++k) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    if (!nl) return text;
    pos = static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) + 1;
  }
  return text.substr(0, pos);
}

// 0: not this format. 1..100: how sure (100: a signature line only this format has).
// Reads no byte of `text` outside sniff_head() and sniff_tail().
using SniffFn = int (*)(std::string_view text);
// Fills `out` (fresh for this input). Returns non-ok only when nothing usable was
// read (out.notes then says why); partial damage is a note, not a failure.
using ParseFn = Status (*)(std::string_view text, Facts& out);

struct Importer {
  const char* format;       // stable id: "nvidia-smi-q-xml", "topo-m", "dmesg", …
  const char* description;  // "nvidia-smi -q -x (XML)"
  SniffFn sniff;
  ParseFn parse;
  const char* fills;  // the facts it can fill, for docs and notes
};

// The registry of every importer (capture/importers.cc).
const std::vector<Importer>& importers();

}  // namespace gpuvet::import

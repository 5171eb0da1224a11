// report/text_layout.h — laying text out for a terminal of a given width: display width,
// word wrap that never breaks a token (a path, a bus id), and the compact form of a finding's
// subjects ("GPU0–7" for GPU0 … GPU7). Internal to src/report; pure functions, thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace gpuvet::report {

// Columns `text` takes on a terminal: one per UTF-8 code point (gpuvet's own non-ASCII
// characters — "—", "×", "–", "↔", "°" — are all one column wide).
std::size_t display_width(std::string_view text);

// Greedy word wrap of `text` for a terminal `width` columns wide. The text starts at column
// `first_column` of the current line; every further line starts with `indent` spaces. Words
// are split at spaces only (runs of spaces become one); a newline in `text` starts a new
// line. No line passes `width` except one holding a single word longer than the room left
// at its indent. The result has no trailing newline.
std::string wrap_text(std::string_view text, std::size_t width, std::size_t first_column,
                      std::size_t indent);

// A finding's subjects, short enough for one line of a summary:
//  - "GPU<n>" subjects become ranges at the place of the first: GPU0,GPU1,…,GPU7 → "GPU0–7",
//    GPU0,GPU2,GPU3 → "GPU0,2–3" (sorted by number, duplicates dropped); "CPU<n>" likewise;
//  - "GPU<a>-GPU<b>" pairs: one or two are kept as they are; more become "all 28 pairs of
//    GPU0–7" when they are every pair of the GPUs they name, else "5 pairs among GPU0–3";
//  - anything else ("pid 42", "nvme0n1", "eth0", "GPU01") is kept as it is, in its order.
// Parts are joined with ", ". The full list is for the verbose report.
std::string compact_subjects(std::span<const std::string> subjects);

// `parts` with `sep` between them.
std::string join(std::span<const std::string> parts, std::string_view sep);

}  // namespace gpuvet::report

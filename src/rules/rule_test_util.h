// rules/rule_test_util.h — what the rule-group tests share: running one group on facts,
// picking findings out, a readable dump for failure messages, and the seed article's task
// outputs (tests/fixtures/article/task-NN.txt) imported as one pasted session. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "import/load.h"
#include "rules/rule.h"

namespace gpuvet::rules::testing {

struct Out {
  std::vector<Finding> findings;
  std::vector<std::string> notes;
};

// Runs one rule group (check_topology, check_host, …) with default options.
inline Out run_group(void (*group)(const Context&, Emitter&), const Facts& f,
                     const Thresholds& t = {}) {
  DiagnoseOptions o;
  Context c{f, t, o};
  Emitter e;
  group(c, e);
  return {e.take_findings(), e.take_notes()};
}

inline std::vector<Finding> with_id(const std::vector<Finding>& findings, const std::string& id) {
  std::vector<Finding> v;
  for (const auto& f : findings)
    if (f.id == id) v.push_back(f);
  return v;
}
inline std::vector<Finding> with_id(const Out& o, const std::string& id) {
  return with_id(o.findings, id);
}

inline bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

inline std::string dump(const Out& o) {
  std::string s;
  for (const auto& f : o.findings) {
    s += f.id + " [" + severity_name(f.severity) + "]";
    for (const auto& x : f.subjects) s += " " + x;
    s += ": " + f.evidence + "\n";
  }
  for (const auto& n : o.notes) s += "note: " + n + "\n";
  return s;
}

inline std::string read_task(int n) {
  char name[32];
  std::snprintf(name, sizeof name, "task-%02d.txt", n);
  std::ifstream in(std::string(GPUVET_TEST_DATA) + "/fixtures/article/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Facts import_tasks(std::initializer_list<int> tasks) {
  std::string text;
  for (int n : tasks) text += read_task(n) + "\n";
  return import::import_text(text, "article");
}

}  // namespace gpuvet::rules::testing

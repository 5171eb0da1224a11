// tests/layering_test.cc — the layer order of docs/architecture.md, checked on the tree.
//
// The checker reads the layer table from the document itself (so the document and the check
// cannot disagree), then every `#include "…"` under src/ and include/gpuvet/, and every
// src/<module>/CMakeLists.txt. It reports, one line each:
// - an include that points to a higher layer, or sideways to another module of its layer;
// - a public header included from below the layer that implements it;
// - a test (foo_test.cc, foo_test_util.h) that includes the cli;
// - a source or test file that its folder's CMakeLists.txt does not list, or a CMakeLists.txt
//   that names a file outside its folder;
// - a folder under src/ that the table does not know.
// The tests below run it on the real tree, and on small trees written to a temporary folder
// with one planted violation each, so a checker that stopped seeing them fails too.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <re2/re2.h>

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

struct Layers {
  std::map<std::string, int> layer_of;          // module → layer
  std::map<std::string, std::string> owner_of;  // public header ("status.h") → module
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, '|')) cells.push_back(cell);
  return cells;
}

// Rows "| 2 | `import` | … | `import.h` |" of the table under "## Layers".
Layers read_layers(const std::string& doc, std::vector<std::string>& problems) {
  Layers l;
  static const re2::RE2 row(R"(^\|\s*(\d+)\s*\|\s*`([a-z]+)`\s*\|)");
  static const re2::RE2 header("`([a-z_]+\\.h)`");
  std::istringstream in(doc);
  std::string line;
  while (std::getline(in, line)) {
    std::string number, module;
    if (!re2::RE2::PartialMatch(line, row, &number, &module)) continue;
    l.layer_of[module] = std::stoi(number);
    const auto cells = split_cells(line);
    if (cells.size() < 5) continue;
    re2::StringPiece headers(cells[4]);
    std::string h;
    while (re2::RE2::FindAndConsume(&headers, header, &h)) l.owner_of[h] = module;
  }
  if (l.layer_of.empty()) problems.push_back("docs/architecture.md: no layer table found");
  return l;
}

bool is_test_file(const std::string& name) {
  return name.ends_with("_test.cc") || name.ends_with("_test_util.h");
}

// The module an include names, or "" when it names none (a test fake, a typo). A name
// without a folder ("commands.h") is a file beside the includer, its own module, when it is
// there; otherwise it names none (tests/fixture_util.h, found through the tests' include path).
std::string module_of_include(const std::string& inc, const std::string& own, const Layers& l,
                              const fs::path& includer_dir) {
  if (inc.find('/') == std::string::npos) return fs::exists(includer_dir / inc) ? own : "";
  if (inc.starts_with("gpuvet/")) {
    const auto it = l.owner_of.find(inc.substr(7));
    return it == l.owner_of.end() ? "" : it->second;
  }
  const auto slash = inc.find('/');
  if (slash == std::string::npos) return "";
  const std::string top = inc.substr(0, slash);
  return l.layer_of.count(top) ? top : "";
}

void check_includes(const fs::path& file, const std::string& shown, const std::string& module,
                    bool test, const Layers& l, std::vector<std::string>& problems) {
  static const re2::RE2 include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::istringstream in(slurp(file));
  std::string line;
  int number = 0;
  const int mine = l.layer_of.at(module);
  while (std::getline(in, line)) {
    ++number;
    std::string inc;
    if (!re2::RE2::PartialMatch(line, include_line, &inc)) continue;
    const std::string where = shown + ":" + std::to_string(number) + ": \"" + inc + "\" ";
    const std::string target = module_of_include(inc, module, l, file.parent_path());
    if (test) {
      if (target == "cli") problems.push_back(where + "(a test includes the cli)");
      continue;
    }
    if (target.empty()) {
      problems.push_back(where + "(names no module of the layer table)");
      continue;
    }
    if (target == module) continue;
    const int theirs = l.layer_of.at(target);
    if (theirs > mine)
      problems.push_back(where + "(" + module + ", layer " + std::to_string(mine) + ", includes " +
                         target + ", layer " + std::to_string(theirs) + ": up)");
    else if (theirs == mine)
      problems.push_back(where + "(" + module + " and " + target + " share layer " +
                         std::to_string(mine) + ": sideways)");
  }
}

// Every .cc/.cu of the folder is named in its CMakeLists.txt, which names nothing outside it.
void check_cmake(const fs::path& dir, const std::string& module,
                 std::vector<std::string>& problems) {
  const fs::path list = dir / "CMakeLists.txt";
  if (!fs::exists(list)) {
    problems.push_back("src/" + module + "/CMakeLists.txt: missing");
    return;
  }
  const std::string text = slurp(list);
  static const re2::RE2 word(R"(([A-Za-z0-9_./${}-]+\.(?:cc|cu|h)))");
  std::set<std::string> named;
  re2::StringPiece rest(text);
  for (std::string w; re2::RE2::FindAndConsume(&rest, word, &w);) {
    if (w.find('/') != std::string::npos)
      problems.push_back("src/" + module + "/CMakeLists.txt: names " + w + " (outside its folder)");
    named.insert(w);
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!(name.ends_with(".cc") || name.ends_with(".cu"))) continue;
    if (!named.count(name))
      problems.push_back("src/" + module + "/" + name + ": not listed in its CMakeLists.txt");
  }
}

std::vector<std::string> check_tree(const fs::path& root) {
  std::vector<std::string> problems;
  const Layers l = read_layers(slurp(root / "docs/architecture.md"), problems);
  if (l.layer_of.empty()) return problems;

  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root / "src"))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    const std::string module = dir.filename().string();
    if (!l.layer_of.count(module)) {
      problems.push_back("src/" + module + ": a folder the layer table does not know");
      continue;
    }
    check_cmake(dir, module, problems);
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string ext = f.extension().string();
      if (ext != ".cc" && ext != ".h" && ext != ".cu") continue;
      const std::string shown = fs::relative(f, root).string();
      check_includes(f, shown, module, is_test_file(f.filename().string()), l, problems);
    }
  }
  // Public headers: each belongs to the module the table names for it.
  const fs::path pub = root / "include/gpuvet";
  if (fs::exists(pub)) {
    std::vector<fs::path> headers;
    for (const auto& e : fs::directory_iterator(pub)) headers.push_back(e.path());
    std::sort(headers.begin(), headers.end());
    for (const auto& h : headers) {
      const std::string name = h.filename().string();
      const auto owner = l.owner_of.find(name);
      if (owner == l.owner_of.end()) {
        problems.push_back("include/gpuvet/" + name + ": no module owns it in the layer table");
        continue;
      }
      check_includes(h, "include/gpuvet/" + name, owner->second, false, l, problems);
    }
  }
  return problems;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "  " + x + "\n";
  return s;
}

TEST(Layering, EveryIncludeOfTheTreePointsDown) {
  const auto problems = check_tree(GPUVET_SOURCE_DIR);
  EXPECT_TRUE(problems.empty()) << problems.size() << " layering problem(s):\n" << joined(problems);
}

// No std::regex anywhere (libstdc++'s executor recurses per character and backtracks: a long
// input overflows the stack): fixed formats are scanned by hand, user patterns go to RE2.
TEST(Layering, NoStdRegexInTheTree) {
  std::vector<std::string> found;
  for (const char* top : {"src", "include", "tests", "bench", "fuzz", "contrib"}) {
    const fs::path dir = fs::path(GPUVET_SOURCE_DIR) / top;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".cu")) continue;
      std::istringstream in(slurp(e.path()));
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        if (line.find(std::string("#include ") + "<regex>") != std::string::npos)
          found.push_back(e.path().string() + ":" + std::to_string(n));
      }
    }
  }
  EXPECT_TRUE(found.empty()) << joined(found);
}

// ---- the checker on planted trees

class PlantedTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("gpuvet-layering-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "docs");
    fs::copy_file(fs::path(GPUVET_SOURCE_DIR) / "docs/architecture.md",
                  root_ / "docs/architecture.md");
    write("include/gpuvet/facts.h", "#pragma once\n");
    write("include/gpuvet/report.h", "#pragma once\n#include \"gpuvet/facts.h\"\n");
    write("src/core/CMakeLists.txt", "target_sources(gpuvet_core PRIVATE util.cc)\n");
    write("src/core/util.cc", "#include \"gpuvet/facts.h\"\n");
    write("src/rules/CMakeLists.txt",
          "target_sources(gpuvet_core PRIVATE rule.cc)\n"
          "target_sources(gpuvet_tests PRIVATE rule_test.cc)\n");
    write("src/rules/rule.cc", "#include \"core/util.h\"\n#include \"hw/facts_query.h\"\n");
    write("src/rules/rule_test.cc", "#include \"report/json_document.h\"\n");
    write("src/report/CMakeLists.txt", "target_sources(gpuvet_core PRIVATE json.cc)\n");
    write("src/report/json.cc", "#include \"gpuvet/report.h\"\n#include \"rules/rule.h\"\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::vector<std::string> check() { return check_tree(root_); }
  bool reports(const std::string& needle) {
    const auto p = check();
    return std::any_of(p.begin(), p.end(),
                       [&](const std::string& s) { return s.find(needle) != std::string::npos; });
  }

  fs::path root_;
};

TEST_F(PlantedTree, ACleanTreeHasNoProblem) {
  const auto p = check();
  EXPECT_TRUE(p.empty()) << joined(p);
}

TEST_F(PlantedTree, AnUpwardIncludeIsReportedWithFileAndLine) {
  write("src/rules/rule.cc", "#include \"core/util.h\"\n#include \"report/json_document.h\"\n");
  EXPECT_TRUE(
      reports("src/rules/rule.cc:2: \"report/json_document.h\" (rules, layer 4, "
              "includes report, layer 6: up)"))
      << joined(check());
}

TEST_F(PlantedTree, AnUpwardPublicHeaderIsReported) {
  write("src/core/util.cc", "#include \"gpuvet/report.h\"\n");
  EXPECT_TRUE(reports("src/core/util.cc:1: \"gpuvet/report.h\" (core, layer 0, includes report"))
      << joined(check());
}

TEST_F(PlantedTree, ASidewaysIncludeIsReported) {
  write("src/scale/CMakeLists.txt", "target_sources(gpuvet_core PRIVATE scale.cc)\n");
  write("src/scale/scale.cc", "#include \"bench/nccl_lib.h\"\n");
  EXPECT_TRUE(reports("(scale and bench share layer 4: sideways)")) << joined(check());
}

TEST_F(PlantedTree, APublicHeaderIncludingAHigherOneIsReported) {
  write("include/gpuvet/facts.h", "#pragma once\n#include \"gpuvet/report.h\"\n");
  EXPECT_TRUE(reports("include/gpuvet/facts.h:2: \"gpuvet/report.h\" (core, layer 0"))
      << joined(check());
}

TEST_F(PlantedTree, ATestMayComposeHigherLayersButNotTheCli) {
  EXPECT_TRUE(check().empty());  // rule_test.cc includes report: allowed
  write("src/rules/rule_test.cc", "#include \"cli/commands.h\"\n");
  EXPECT_TRUE(reports("(a test includes the cli)")) << joined(check());
}

TEST_F(PlantedTree, AnUnlistedSourceAndAForeignPathAreReported) {
  write("src/rules/forgotten.cc", "#include \"core/util.h\"\n");
  write("src/report/CMakeLists.txt",
        "target_sources(gpuvet_core PRIVATE json.cc ../core/names.cc)\n");
  EXPECT_TRUE(reports("src/rules/forgotten.cc: not listed in its CMakeLists.txt"))
      << joined(check());
  EXPECT_TRUE(reports("names ../core/names.cc (outside its folder)")) << joined(check());
}

TEST_F(PlantedTree, AnUnknownFolderAndAnUnknownIncludeAreReported) {
  write("src/capture/CMakeLists.txt", "\n");
  write("src/rules/rule.cc", "#include \"capture/load.h\"\n");
  EXPECT_TRUE(reports("src/capture: a folder the layer table does not know")) << joined(check());
  EXPECT_TRUE(reports("\"capture/load.h\" (names no module of the layer table)"))
      << joined(check());
}

}  // namespace
}  // namespace gpuvet

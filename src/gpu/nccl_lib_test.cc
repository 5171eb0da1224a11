// The NCCL loader without a GPU or NCCL: loading failures are clear and never crash, the
// library name comes from the argument, then $GPUVET_NCCL_LIBRARY, and version codes read
// as NCCL writes them.
#include "gpu/nccl_lib.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace gpuvet::gpu {
namespace {

TEST(NcclLib, MissingFileIsAClearError) {
  std::string error;
  EXPECT_EQ(nccl_library("/nonexistent/libnccl.so.2", &error), nullptr);
  EXPECT_NE(error.find("/nonexistent/libnccl.so.2"), std::string::npos) << error;
  EXPECT_NE(error.find("no such file"), std::string::npos) << error;
}

TEST(NcclLib, UnknownSonameSaysHowToPointAtNccl) {
  std::string error;
  EXPECT_EQ(nccl_library("libnccl-gpuvet-test-absent.so.2", &error), nullptr);
  EXPECT_NE(error.find("not found"), std::string::npos) << error;
  EXPECT_NE(error.find("--nccl-lib"), std::string::npos) << error;
}

TEST(NcclLib, TextFileIsNotALibrary) {
  char path[] = "/tmp/gpuvet-nccl-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream out(path);
    out << "this is not libnccl\n";
  }
  std::string error;
  const NcclLib* lib = nccl_library(path, &error);
  std::remove(path);
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(error.find("not a shared library"), std::string::npos) << error;
}

TEST(NcclLib, ALibraryThatIsNotNcclIsRefused) {
  // libc is an ELF shared object everywhere, without any nccl* symbol.
  std::string error;
  EXPECT_EQ(nccl_library("libc.so.6", &error), nullptr);
  EXPECT_NE(error.find("not a usable NCCL"), std::string::npos) << error;
  EXPECT_NE(error.find("ncclAllReduce"), std::string::npos) << error;
}

TEST(NcclLib, EnvironmentVariableNamesTheLibrary) {
  const char* old = std::getenv("GPUVET_NCCL_LIBRARY");
  const std::string saved = old ? old : "";
  ::setenv("GPUVET_NCCL_LIBRARY", "/nonexistent/from-env/libnccl.so.2", 1);
  std::string error;
  const NcclLib* lib = nccl_library("", &error);
  const std::string name = nccl_library_name("");
  const std::string given = nccl_library_name("/opt/nccl/libnccl.so.2");
  if (old)
    ::setenv("GPUVET_NCCL_LIBRARY", saved.c_str(), 1);
  else
    ::unsetenv("GPUVET_NCCL_LIBRARY");
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(error.find("/nonexistent/from-env/"), std::string::npos) << error;
  EXPECT_EQ(name, "/nonexistent/from-env/libnccl.so.2");
  EXPECT_EQ(given, "/opt/nccl/libnccl.so.2");  // the argument wins
}

TEST(NcclLib, DefaultNameIsTheSoname) {
  const char* old = std::getenv("GPUVET_NCCL_LIBRARY");
  const std::string saved = old ? old : "";
  ::unsetenv("GPUVET_NCCL_LIBRARY");
  EXPECT_EQ(nccl_library_name(""), "libnccl.so.2");
  if (old) ::setenv("GPUVET_NCCL_LIBRARY", saved.c_str(), 1);
}

TEST(NcclLib, VersionCodesAsText) {
  EXPECT_EQ(nccl_version_text(22809), "2.28.9");
  EXPECT_EQ(nccl_version_text(21805), "2.18.5");
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");
  EXPECT_EQ(nccl_version_text(0), "unknown");
}

}  // namespace
}  // namespace gpuvet::gpu

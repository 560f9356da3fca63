// Shared helpers for the eda_sim tests: temp files, the designs folder, one-call synthesis.
#pragma once

#include <banyan/eda_sim/design.hpp>
#include <banyan/eda_sim/netlist.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace banyan::eda::testing {

// A fresh directory per test, removed when the fixture ends.
class temp_dir {
 public:
  temp_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    static int made = 0;  // several per test get different folders
    path_ = std::filesystem::temp_directory_path() /
            ("eda_test_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()) + "_" + std::to_string(made++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name, const std::string& text) const {
    const auto p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::string> design_files(const std::string& name) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(EDA_DESIGNS_DIR) + "/" + name))
    if (e.path().extension() == ".v") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

inline result<design> build(const std::vector<std::string>& files, const std::string& top) {
  auto n = synthesize({files, top});
  if (!n) return n.error();
  return elaborate(*n);
}

}  // namespace banyan::eda::testing

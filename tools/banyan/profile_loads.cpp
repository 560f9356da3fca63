#include "banyan/profile_loads.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <unordered_map>

namespace banyan::cli {
namespace {

namespace bp = banyan::partitioner;
using json = nlohmann::json;

// Keeps `duration_s` and, per entry of `components`, its path and load.messages / load.cpu; skips
// everything else (edges and flows are most of a big profile) without building a document.
struct load_reader : nlohmann::json_sax<json> {
  profile_loads out;
  // The containers enclosing the current value: the key each was opened under ("" in an array).
  std::vector<std::string> keys;
  std::vector<bool> is_array;
  std::string key_;
  std::string path_;
  std::uint64_t messages_ = 0;
  double cpu_ = 0;
  std::string error;

  // Where a value read now sits: top level (depth 1), a component (3), a component's load (4).
  bool in_component() const { return keys.size() == 3 && keys[1] == "components" && is_array[1]; }
  bool in_load() const { return keys.size() == 4 && keys[1] == "components" && keys[3] == "load"; }
  void number(double x, bool integral, std::uint64_t n) {
    if (keys.size() == 1 && key_ == "duration_s") out.confidence.window_s = x;
    if (in_load() && key_ == "messages") {
      messages_ = integral ? n : static_cast<std::uint64_t>(x < 0 ? 0 : x);
      out.confidence.has_messages = true;
    }
    if (in_load() && key_ == "cpu") cpu_ = x;
  }
  std::string open_key() const { return !is_array.empty() && is_array.back() ? "" : key_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override {
    number(static_cast<double>(v), v >= 0, v >= 0 ? static_cast<std::uint64_t>(v) : 0);
    return true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    number(static_cast<double>(v), true, v);
    return true;
  }
  bool number_float(number_float_t v, const string_t&) override {
    number(v, false, 0);
    return true;
  }
  bool string(string_t& s) override {
    if (in_component() && key_ == "path") path_ = s;
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys.push_back(open_key());
    is_array.push_back(false);
    if (in_component()) {
      path_.clear();
      messages_ = 0;
      cpu_ = 0;
    }
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override {
    if (in_component()) {
      out.path.push_back(path_);
      out.messages.push_back(messages_);
      out.cpu.push_back(cpu_);
    }
    keys.pop_back();
    is_array.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    keys.push_back(open_key());
    is_array.push_back(true);
    return true;
  }
  bool end_array() override {
    keys.pop_back();
    is_array.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    error = "byte " + std::to_string(position) + ": " + e.what();
    return false;
  }
};

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

}  // namespace

std::string load_confidence::describe() const {
  std::string line = "CPU loads: " + fixed(cpu_s, 4) + " cpu s over " +
                     (window_s > 0 ? "a " + fixed(window_s, 2) + " s window" : "an unrecorded window");
  if (!judged()) return line + (has_messages ? "" : " (no message counts: confidence not judged)");
  line += ", " + std::to_string(messages) + " messages; " + fixed(100 * well_sampled_share, 0) +
          "% of the load from components with >= " + std::to_string(min_messages) + " messages and >= " +
          fixed(min_cpu_s * 1e3, 0) + " ms";
  if (trusted()) return line;
  line += ": too noisy to trust (" + std::to_string(thin_components) + " components thinly sampled";
  if (cpu_s < min_total_cpu_s) line += ", under " + fixed(min_total_cpu_s * 1e3, 0) + " ms measured in all";
  return line + "); the same app can partition very differently from run to run. Profile a longer run "
                "(--run-for), or partition by --load messages";
}

result<profile_loads> read_profile_loads(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return error{bp::errc::io, file + ": cannot open"};
  load_reader r;
  if (!json::sax_parse(in, &r)) return error{bp::errc::parse, file + ": " + r.error};
  auto& c = r.out.confidence;
  double well = 0;
  for (std::size_t i = 0; i < r.out.path.size(); ++i) {
    const double cpu = r.out.cpu[i];
    c.cpu_s += cpu;
    c.messages += r.out.messages[i];
    if (cpu <= 0) continue;
    if (r.out.messages[i] >= load_confidence::min_messages && cpu >= load_confidence::min_cpu_s) well += cpu;
    else ++c.thin_components;
  }
  c.well_sampled_share = c.cpu_s > 0 ? well / c.cpu_s : 1.0;
  return std::move(r.out);
}

result<void> use_message_loads(bp::tree& t, const profile_loads& loads, const std::string& file) {
  if (!loads.confidence.has_messages || loads.confidence.messages == 0) {
    return error{bp::errc::invalid, file + ": --load messages: the profile has no message counts (load.messages), "
                                           "as a run's --profile writes; this one may be synthetic (gen-tree)"};
  }
  std::unordered_map<std::string, std::uint64_t> by_path;
  by_path.reserve(loads.path.size() * 2);
  for (std::size_t i = 0; i < loads.path.size(); ++i) by_path[loads.path[i]] = loads.messages[i];
  for (std::size_t v = 0; v < t.size(); ++v) {
    auto it = by_path.find(t.path[v]);
    t.cpu[v] = it == by_path.end() ? 0.0 : static_cast<double>(it->second);
  }
  return {};
}

}  // namespace banyan::cli

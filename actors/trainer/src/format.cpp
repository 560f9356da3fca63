#include "format.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace banyan::trainer {

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

nlohmann::json checkpoint_json(const nn::checkpoint_store& store, bool synchronous) {
  const nn::checkpoint_save_stats st = store.stats();
  std::vector<double> stall = st.stall_ms;
  std::sort(stall.begin(), stall.end());
  return {{"folder", store.dir().string()},
          {"synchronous", synchronous},
          {"saves", stall.size()},
          {"bytes", st.bytes},
          {"stall_ms_median", stall.empty() ? 0.0 : stall[stall.size() / 2]},
          {"stall_ms_max", stall.empty() ? 0.0 : stall.back()},
          {"buffer_waits", st.store.commit_waits},
          {"buffer_wait_ms", static_cast<double>(st.store.commit_wait_ns) / 1e6},
          {"flush_ms", st.flush_ms},
          {"durable_step", store.durable_step()}};
}

}  // namespace banyan::trainer

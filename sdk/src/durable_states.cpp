#include "durable_states.hpp"

#include "banyan/base/log.hpp"

#include <algorithm>
#include <filesystem>

namespace banyan::detail {

std::string durable_states::folder(const std::string& state_dir, const std::string& node) {
  return (std::filesystem::path(state_dir) / node).string();
}

result<std::unique_ptr<durable_states>> durable_states::open(const std::string& state_dir, const std::string& node) {
  store::options o;
  o.floor_bytes = 16ull << 20;  // snapshots are small next to checkpoints; free memory sets the rest
  auto s = store::blob_store::open(folder(state_dir, node), o);
  if (!s) return error{s.error().code, "--state-dir: " + s.error().message};
  return std::unique_ptr<durable_states>(new durable_states(std::move(s).value()));
}

void durable_states::put(const std::string& path, const payload& state) {
  store::transaction t = store_->begin();
  t.put(path, state.bytes());
  if (auto id = store_->commit(std::move(t)); !id && !said_failure_.exchange(true)) {
    log::error(path, "its state is no longer made durable (a failover would restart it fresh): " + id.error().message);
  }
}

result<std::map<std::string, std::vector<std::byte>>> durable_states::read(const std::string& state_dir,
                                                                           const std::string& node,
                                                                           const std::vector<std::string>& paths) {
  std::map<std::string, std::vector<std::byte>> out;
  const std::string dir = folder(state_dir, node);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;  // it kept nothing
  auto reader = store::blob_reader::open(dir);
  if (!reader) return reader.error();
  for (const auto& b : reader->blobs()) {
    if (std::find(paths.begin(), paths.end(), b.name) == paths.end()) continue;
    auto bytes = reader->read(b.name);
    if (!bytes) return bytes.error();
    out.emplace(b.name, std::move(bytes).value());
  }
  return out;
}

}  // namespace banyan::detail

#include "banyan/nn/checkpoint_store.hpp"

#include <algorithm>
#include <cstring>
#include <system_error>

namespace banyan::nn {

namespace fs = std::filesystem;

namespace {

using clock = std::chrono::steady_clock;

double ms_since(clock::time_point t) { return std::chrono::duration<double, std::milli>(clock::now() - t).count(); }

std::string label(const fs::path& dir, const std::string& name) {
  return "checkpoint `" + name + "` in `" + dir.string() + "`";
}

}  // namespace

result<std::unique_ptr<checkpoint_store>> checkpoint_store::open(const fs::path& dir, checkpoint_store_options o) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    return error{errc::invalid_argument, "checkpoint folder `" + dir.string() +
                                             "`: is a file; checkpoints are a folder (docs/store.md), give a new name"};
  }
  store::options so;
  so.floor_bytes = std::min(o.buffer_floor, o.buffer_ceiling);
  so.ceiling_bytes = o.buffer_ceiling;
  so.budget = std::move(o.budget);
  so.fs = std::move(o.fs);
  auto s = store::blob_store::open(dir.string(), std::move(so));
  if (!s) return std::move(s).error();
  return std::unique_ptr<checkpoint_store>(new checkpoint_store(dir, std::move(s).value(), o.synchronous));
}

result<store::txn_id> checkpoint_store::save(store::transaction&& txn, std::int64_t step) {
  return commit(std::move(txn), step, clock::now());
}

result<store::txn_id> checkpoint_store::commit(store::transaction&& txn, std::int64_t step, clock::time_point start) {
  bytes_ += txn.bytes();
  auto id = store_->commit(std::move(txn));
  if (!id) return id;
  steps_.emplace_back(*id, step);
  if (synchronous_) {
    if (auto ok = store_->wait_durable(*id, std::chrono::hours(1)); !ok) return std::move(ok).error();
  }
  stall_ms_.push_back(ms_since(start));
  return id;
}

result<store::txn_id> checkpoint_store::save_state(const std::string& name, const checkpoint& head, backend& be,
                                                   const float* params, const float* m, const float* v,
                                                   std::size_t floats) {
  const auto start = clock::now();
  auto header = encode_checkpoint_header(head, floats, false, label(dir_, name));
  if (!header) return std::move(header).error();
  const std::size_t tensor = floats * sizeof(float);
  store::transaction txn = store_->begin();
  std::span<std::byte> out = txn.reserve(name, header->size() + 3 * tensor + 4);
  std::memcpy(out.data(), header->data(), header->size());
  std::byte* at = out.data() + header->size();
  for (const float* part : {params, m, v}) {
    if (tensor > 0) be.download(at, part, tensor);
    at += tensor;
  }
  std::memset(at, 0, 4);  // no checksum: the store's per-blob CRC32C covers these bytes
  return commit(std::move(txn), static_cast<std::int64_t>(head.step), start);
}

result<void> checkpoint_store::flush(std::chrono::milliseconds limit) {
  const auto start = clock::now();
  auto ok = store_->flush(limit);
  flush_ms_ += ms_since(start);
  return ok;
}

std::int64_t checkpoint_store::durable_step() const {
  const store::txn_id durable = store_->durable_id();
  auto it = steps_.begin();
  for (; it != steps_.end() && it->first <= durable; ++it) durable_step_ = it->second;
  steps_.erase(steps_.begin(), it);
  return durable_step_;
}

checkpoint_save_stats checkpoint_store::stats() const { return {stall_ms_, bytes_, flush_ms_, store_->stats()}; }

result<checkpoint> read_checkpoint(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return error{errc::io, "checkpoint folder `" + dir.string() + "`: " +
                               (fs::exists(dir, ec) ? "is not a folder (a checkpoint file from before checkpoint "
                                                      "folders? docs/store.md)"
                                                    : "does not exist")};
  }
  auto reader = store::blob_reader::open(dir.string());
  if (!reader) return std::move(reader).error();
  auto bytes = reader->read(name);
  if (!bytes) return std::move(bytes).error();
  return decode_checkpoint(*bytes, label(dir, name));
}

bool has_checkpoint(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  auto reader = store::blob_reader::open(dir.string());
  if (!reader) return true;  // a folder that cannot be read: read_checkpoint() says why
  const auto blobs = reader->blobs();
  return std::any_of(blobs.begin(), blobs.end(), [&](const store::blob_info& b) { return b.name == name; });
}

}  // namespace banyan::nn

#include "banyan/store/fault_file_system.hpp"

#include <algorithm>

namespace banyan::store {

struct fault_file_system::inode {
  std::vector<std::byte> data;
  std::size_t synced = 0;  // appends only: the synced bytes are a prefix of data
};

namespace {

struct dir_op {
  enum kind { link, unlink } what;
  std::string name;
  std::shared_ptr<fault_file_system::inode> file;  // for link
};

const char* op_name(fault_file_system::op kind) {
  using op = fault_file_system::op;
  switch (kind) {
    case op::create: return "create";
    case op::append: return "write";
    case op::sync: return "fsync";
    case op::close: return "close";
    case op::rename: return "rename";
    case op::remove: return "remove";
    case op::sync_dir: return "fsync folder";
    case op::make_dirs: return "create folder";
    case op::list: return "list";
    case op::read: return "read";
  }
  return "?";
}

}  // namespace

struct fault_file_system::folder {
  std::map<std::string, std::shared_ptr<inode>> entries, synced_entries;
  std::vector<dir_op> unsynced;
};

class fault_file : public writable_file {
 public:
  fault_file(std::shared_ptr<fault_file_system> fs, std::shared_ptr<fault_file_system::inode> file,
             std::uint64_t generation, std::string path)
      : fs_(std::move(fs)), file_(std::move(file)), generation_(generation), path_(std::move(path)) {}
  result<void> append(std::span<const std::byte> bytes) override {
    if (auto ok = fs_->admit(fault_file_system::op::append, path_); !ok) return ok;
    auto ok = fs_->append(file_, generation_, bytes);
    if (!ok) return error{ok.error().code, "cannot write `" + path_ + "`: " + ok.error().message};
    return ok;
  }
  result<void> sync() override {
    if (auto ok = fs_->admit(fault_file_system::op::sync, path_); !ok) return ok;
    return fs_->sync(file_, generation_);
  }
  result<void> close() override {
    if (auto ok = fs_->admit(fault_file_system::op::close, path_); !ok) return ok;
    return fs_->close_file(generation_, path_);
  }

 private:
  std::shared_ptr<fault_file_system> fs_;
  std::shared_ptr<fault_file_system::inode> file_;
  std::uint64_t generation_;
  std::string path_;
};

std::pair<std::string, std::string> fault_file_system::split(const std::string& path) const {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

result<void> fault_file_system::admit(op kind, const std::string& path) {
  std::lock_guard lock(mutex_);
  if (kind == op::list || kind == op::read) {
    if (freeze_at_ && operations_ >= *freeze_at_)
      return error{errc::io, std::string("cannot ") + op_name(kind) + " `" + path + "`: power cut"};
  } else {
    ++operations_;
    if (freeze_at_ && operations_ > *freeze_at_)
      return error{errc::io, std::string("cannot ") + op_name(kind) + " `" + path + "`: power cut"};
  }
  if (auto it = fail_next_.find(kind); it != fail_next_.end()) {
    const errc code = it->second;
    fail_next_.erase(it);
    return error{code, std::string("cannot ") + op_name(kind) + " `" + path +
                           "`: " + (code == errc::no_space ? "No space left on device" : "Input/output error")};
  }
  return {};
}

result<std::unique_ptr<writable_file>> fault_file_system::create(const std::string& path) {
  if (auto ok = admit(op::create, path); !ok) return std::move(ok).error();
  std::lock_guard lock(mutex_);
  auto [dir, name] = split(path);
  auto it = folders_.find(dir);
  if (it == folders_.end()) return error{errc::io, "cannot create `" + path + "`: No such file or directory"};
  auto file = std::make_shared<inode>();
  it->second->entries[name] = file;
  it->second->unsynced.push_back({dir_op::link, name, file});
  return std::unique_ptr<writable_file>(std::make_unique<fault_file>(shared_from_this(), file, generation_, path));
}

result<void> fault_file_system::append(const std::shared_ptr<inode>& file, std::uint64_t generation,
                                       std::span<const std::byte> bytes) {
  std::lock_guard lock(mutex_);
  if (generation != generation_) return error{errc::io, "opened before the power cut"};
  if (capacity_) {
    std::uint64_t used = 0;
    for (const auto& [_, f] : folders_)
      for (const auto& [name, i] : f->entries) used += i->data.size();
    if (used + bytes.size() > *capacity_) return error{errc::no_space, "No space left on device"};
  }
  last_append_file_ = file;
  last_append_offset_ = file->data.size();
  file->data.insert(file->data.end(), bytes.begin(), bytes.end());
  return {};
}

result<void> fault_file_system::sync(const std::shared_ptr<inode>& file, std::uint64_t generation) {
  std::lock_guard lock(mutex_);
  if (generation != generation_) return error{errc::io, "cannot fsync a file opened before the power cut"};
  file->synced = file->data.size();
  return {};
}

result<void> fault_file_system::close_file(std::uint64_t generation, const std::string& path) {
  std::lock_guard lock(mutex_);
  if (generation != generation_) return error{errc::io, "cannot close `" + path + "`: opened before the power cut"};
  return {};
}

result<void> fault_file_system::rename(const std::string& from, const std::string& to) {
  if (auto ok = admit(op::rename, from); !ok) return ok;
  std::lock_guard lock(mutex_);
  auto [dir, name] = split(from);
  auto [to_dir, to_name] = split(to);
  auto it = folders_.find(dir);
  if (dir != to_dir) return error{errc::io, "cannot rename `" + from + "` to `" + to + "`: across folders"};
  if (it == folders_.end() || !it->second->entries.contains(name))
    return error{errc::io, "cannot rename `" + from + "` to `" + to + "`: No such file or directory"};
  auto& f = *it->second;
  auto file = f.entries[name];
  f.entries.erase(name);
  f.entries[to_name] = file;
  f.unsynced.push_back({dir_op::link, to_name, file});
  f.unsynced.push_back({dir_op::unlink, name, nullptr});
  return {};
}

result<void> fault_file_system::remove(const std::string& path) {
  if (auto ok = admit(op::remove, path); !ok) return ok;
  std::lock_guard lock(mutex_);
  auto [dir, name] = split(path);
  auto it = folders_.find(dir);
  if (it == folders_.end() || it->second->entries.erase(name) == 0)
    return error{errc::io, "cannot remove `" + path + "`: No such file or directory"};
  it->second->unsynced.push_back({dir_op::unlink, name, nullptr});
  return {};
}

result<void> fault_file_system::sync_dir(const std::string& dir) {
  if (auto ok = admit(op::sync_dir, dir); !ok) return ok;
  std::lock_guard lock(mutex_);
  auto it = folders_.find(dir);
  if (it == folders_.end()) return error{errc::io, "cannot fsync folder `" + dir + "`: No such file or directory"};
  it->second->synced_entries = it->second->entries;
  it->second->unsynced.clear();
  return {};
}

result<void> fault_file_system::make_dirs(const std::string& dir) {
  if (auto ok = admit(op::make_dirs, dir); !ok) return ok;
  std::lock_guard lock(mutex_);
  // Folders are durable at once: the store's crash safety is about its files.
  if (!folders_.contains(dir)) folders_[dir] = std::make_shared<folder>();
  return {};
}

result<std::vector<std::string>> fault_file_system::list(const std::string& dir) {
  if (auto ok = admit(op::list, dir); !ok) return std::move(ok).error();
  std::lock_guard lock(mutex_);
  auto it = folders_.find(dir);
  if (it == folders_.end()) return error{errc::io, "cannot list `" + dir + "`: No such file or directory"};
  std::vector<std::string> out;
  for (const auto& [name, _] : it->second->entries) out.push_back(name);
  return out;
}

result<std::vector<std::byte>> fault_file_system::read(const std::string& path) {
  if (auto ok = admit(op::read, path); !ok) return std::move(ok).error();
  std::lock_guard lock(mutex_);
  auto [dir, name] = split(path);
  auto it = folders_.find(dir);
  if (it == folders_.end() || !it->second->entries.contains(name))
    return error{errc::io, "cannot open `" + path + "`: No such file or directory"};
  return it->second->entries[name]->data;
}

result<std::vector<std::byte>> fault_file_system::read(const std::string& path, std::uint64_t offset,
                                                       std::uint64_t size) {
  auto all = read(path);
  if (!all) return all;
  if (offset > all->size() || size > all->size() - offset)
    return error{errc::corrupt, "`" + path + "` is shorter than expected"};
  return std::vector<std::byte>(all->begin() + static_cast<std::ptrdiff_t>(offset),
                                all->begin() + static_cast<std::ptrdiff_t>(offset + size));
}

std::uint64_t fault_file_system::operations() const {
  std::lock_guard lock(mutex_);
  return operations_;
}

void fault_file_system::freeze_after(std::uint64_t k) {
  std::lock_guard lock(mutex_);
  freeze_at_ = operations_ + k;
}

void fault_file_system::capacity(std::optional<std::uint64_t> bytes) {
  std::lock_guard lock(mutex_);
  capacity_ = bytes;
}

void fault_file_system::fail_next(op kind, errc code) {
  std::lock_guard lock(mutex_);
  fail_next_[kind] = code;
}

void fault_file_system::power_cut(std::mt19937_64& random, bool keep_unsynced_dir_ops) {
  std::lock_guard lock(mutex_);
  for (auto& [_, f] : folders_) {
    auto entries = f->synced_entries;
    if (keep_unsynced_dir_ops && !f->unsynced.empty()) {
      const auto kept = std::uniform_int_distribution<std::size_t>(0, f->unsynced.size())(random);
      for (std::size_t i = 0; i < kept; ++i) {
        const auto& o = f->unsynced[i];
        if (o.what == dir_op::link) entries[o.name] = o.file;
        else entries.erase(o.name);
      }
    }
    f->entries = entries;
    f->synced_entries = entries;
    f->unsynced.clear();
  }
  // Every surviving file keeps its synced bytes; the file of the last unsynced append keeps a
  // random prefix of its unsynced bytes too (the torn write).
  for (auto& [_, f] : folders_) {
    for (auto& [name, file] : f->entries) {
      std::size_t keep = file->synced;
      if (file == last_append_file_ && file->data.size() > file->synced)
        keep += std::uniform_int_distribution<std::size_t>(0, file->data.size() - file->synced)(random);
      file->data.resize(keep);
      file->synced = keep;
    }
  }
  last_append_file_.reset();
  last_append_offset_ = 0;
  freeze_at_.reset();
  fail_next_.clear();
  ++generation_;
}

}  // namespace banyan::store

// The store's error codes. Errors are `banyan::error` values (banyan/base/error.hpp) whose message
// names the store's folder and the file at fault ("store `/ckpt`: cannot create
// `/ckpt/txn-00000000000000000007.tmp`: No space left on device").
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::store {

enum class errc {
  invalid_argument,  // bad options (floor above ceiling, empty folder name), an unknown blob name
  io,                // a file operation failed (EIO, a missing folder, permission denied, ...)
  no_space,          // the disk is full (ENOSPC, EDQUOT)
  corrupt,           // a transaction file on disk fails its checksum or is malformed
  timeout,           // wait_durable's time ran out before the transaction was durable
  closed,            // the store is shutting down
};

const char* to_string(errc code);

}  // namespace banyan::store

BANYAN_ERROR_ENUM(banyan::store::errc, "store");

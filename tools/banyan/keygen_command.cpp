// `banyan keygen --out DIR/NAME`: writes a CURVE key pair for one node, NAME.key (secret, 0600) and
// NAME.pub (public). The deployment names each node's key files; peers list each other's .pub.
#include "banyan/command.hpp"

#include "banyan/runtime/curve.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace banyan::cli {
namespace {

struct options {
  std::string out;
  bool force = false, json = false;
};

int run(const options& o) {
  namespace fs = std::filesystem;
  const fs::path base(o.out);
  if (base.filename().empty()) {
    std::fprintf(stderr, "banyan keygen: --out `%s`: expected DIR/NAME (a file name base), not a directory\n",
                 o.out.c_str());
    return 2;
  }
  if (base.has_parent_path() && !fs::is_directory(base.parent_path())) {
    std::fprintf(stderr, "banyan keygen: --out `%s`: directory `%s` does not exist\n", o.out.c_str(),
                 base.parent_path().c_str());
    return 1;
  }
  auto keys = banyan::runtime::generate_curve_keypair();
  if (!keys) {
    std::fprintf(stderr, "banyan keygen: %s\n", keys.error().message.c_str());
    return 1;
  }
  if (auto w = banyan::runtime::write_key_files(o.out, *keys, o.force); !w) {
    std::fprintf(stderr, "banyan keygen: %s\n", w.error().message.c_str());
    return 1;
  }
  if (o.json) {
    std::cout << nlohmann::json{{"secret_key_file", o.out + ".key"},
                                {"public_key_file", o.out + ".pub"},
                                {"public_key", keys->public_key}}
                     .dump(2)
              << "\n";
  } else {
    std::printf("keygen: wrote %s.key (secret, mode 0600) and %s.pub (public key %s)\n", o.out.c_str(),
                o.out.c_str(), keys->public_key.c_str());
  }
  return 0;
}

const bool registered = register_command({
    "keygen", "Make a CURVE key pair for a node (NAME.key secret, NAME.pub public)",
    [](CLI::App& sub) {
      auto o = std::make_shared<options>();
      sub.add_option("--out,-o", o->out, "file name base DIR/NAME; writes DIR/NAME.key and DIR/NAME.pub")->required();
      sub.add_flag("--force", o->force, "overwrite existing key files");
      sub.add_flag("--json", o->json, "print the file names and public key as JSON on stdout");
      return [o] { return run(*o); };
    }});

}  // namespace
}  // namespace banyan::cli

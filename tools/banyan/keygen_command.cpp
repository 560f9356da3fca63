// `banyan keygen --out DIR/NAME`: writes a CURVE key pair for one node, NAME.key (secret, 0600) and
// NAME.pub (public). The deployment names each node's key files; peers list each other's .pub.
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"

#include "banyan/runtime/curve.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace banyan::cli {
namespace {

constexpr const char* tool = "banyan keygen";

struct options {
  std::string out;
  bool force = false, json = false;
};

int run(const options& o) {
  namespace fs = std::filesystem;
  const fs::path base(o.out);
  if (base.filename().empty())
    return fail(tool, "--out `" + o.out + "`: expected DIR/NAME (a file name base), not a directory",
                exit_bad_arguments);
  if (base.has_parent_path() && !fs::is_directory(base.parent_path()))
    return fail(tool, "--out `" + o.out + "`: directory `" + base.parent_path().string() + "` does not exist",
                exit_bad_arguments);
  auto keys = banyan::runtime::generate_curve_keypair();
  if (!keys) return fail(tool, keys.error().message);
  if (auto w = banyan::runtime::write_key_files(o.out, *keys, o.force); !w) return fail(tool, w.error().message);
  if (o.json) {
    std::cout << nlohmann::json{{"secret_key_file", o.out + ".key"},
                                {"public_key_file", o.out + ".pub"},
                                {"public_key", keys->public_key}}
                     .dump(2)
              << "\n";
  } else {
    std::printf("keygen: wrote %s.key (secret, mode 0600) and %s.pub (public key %s)\n", o.out.c_str(), o.out.c_str(),
                keys->public_key.c_str());
  }
  return 0;
}

}  // namespace

action setup_keygen(CLI::App& sub) {
  auto o = std::make_shared<options>();
  sub.add_option("--out,-o", o->out, "file name base DIR/NAME; writes DIR/NAME.key and DIR/NAME.pub")->required();
  sub.add_flag("--force", o->force, "overwrite existing key files");
  sub.add_flag("--json", o->json, "print the file names and public key as JSON on stdout");
  return [o] { return run(*o); };
}

}  // namespace banyan::cli

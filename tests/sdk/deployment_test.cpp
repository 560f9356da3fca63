// A deployment's CURVE keys (docs/formats.md): the partitioner's reader parses and checks them,
// the SDK reads the key files it names; errors carry file:line:col. And assignments that name no
// component of the app.
#include "test_support.hpp"

#include "banyan/partitioner/io.hpp"
#include "banyan/runtime/curve.hpp"
#include "banyan/sdk/launcher.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace banyan {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class scratch {
 public:
  scratch()
      : path_(fs::temp_directory_path() /
              ("banyan-deployment-" + std::to_string(::getpid()) + "-" + std::to_string(next_++))) {
    fs::create_directories(path_);
  }
  ~scratch() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }

 private:
  static inline int next_ = 0;
  fs::path path_;
};

// Two nodes; `n0_curve` / `n1_curve` are the nodes' `curve:` values (empty: none).
std::string deployment_text(const scratch& dir, const std::string& n0_curve, const std::string& n1_curve) {
  std::string text = "version: 1\nnodes:\n";
  text += "  - name: n0\n    endpoint: ipc://" + (dir.path() / "n0.sock").string() + "\n    capacity: {cpu: 1}\n";
  if (!n0_curve.empty()) text += "    curve: " + n0_curve + "\n";
  text += "  - name: n1\n    endpoint: ipc://" + (dir.path() / "n1.sock").string() + "\n    capacity: {cpu: 1}\n";
  if (!n1_curve.empty()) text += "    curve: " + n1_curve + "\n";
  text += "assignments:\n  /app: n0\n";
  return text;
}

void write_keys(const scratch& dir, const std::string& base) {
  auto keys = runtime::generate_curve_keypair();
  ASSERT_TRUE(keys) << keys.error().what();
  ASSERT_TRUE(runtime::write_key_files((dir.path() / base).string(), *keys));
}

TEST(Deployment, CurveKeyFilesAreResolvedAgainstTheDeploymentsFolder) {
  scratch dir;
  auto d = partitioner::load_deployment(
      dir.write("d.yaml", deployment_text(dir, "{public: n0.pub, secret: n0.key}", "{public: /keys/n1.pub}")).string());
  ASSERT_TRUE(d) << d.error().what();
  ASSERT_EQ(d->curve.size(), 2u);
  EXPECT_EQ(d->curve[0].public_file, (dir.path() / "n0.pub").string());
  EXPECT_EQ(d->curve[0].secret_file, (dir.path() / "n0.key").string());
  EXPECT_EQ(d->curve[1].public_file, "/keys/n1.pub");
  EXPECT_EQ(d->curve[1].secret_file, "");
  EXPECT_EQ(d->curve[0].line, 6);
  auto none = partitioner::parse_deployment(deployment_text(dir, "", ""), "plain.yaml");
  ASSERT_TRUE(none) << none.error().what();
  EXPECT_TRUE(none->curve.empty());
}

TEST(Deployment, MalformedCurveEntriesNameFileLineAndColumn) {
  scratch dir;
  struct bad_case {
    std::string n0, n1, message;
  };
  for (const auto& c :
       {bad_case{"{secret: n0.key}", "{public: n1.pub}", "d.yaml:6:12: node `n0`: curve needs `public`"},
        bad_case{"{public: n0.pub, secrte: n0.key}", "{public: n1.pub}",
                 "d.yaml:6:29: node `n0`: unknown curve key `secrte`"},
        bad_case{"n0.pub", "{public: n1.pub}", "d.yaml:6:12: node `n0`: `curve` must be a mapping"},
        bad_case{"{public: n0.pub}", "", "d.yaml:7:5: node `n1` has no `curve` keys but other nodes have"},
        bad_case{"{public: [a, b]}", "{public: n1.pub}",
                 "d.yaml:6:21: node `n0`: curve.public must name a key file"}}) {
    auto d = partitioner::parse_deployment(deployment_text(dir, c.n0, c.n1), "d.yaml");
    ASSERT_FALSE(d) << c.message;
    EXPECT_NE(d.error().message.find(c.message), std::string::npos) << d.error().message;
  }
}

TEST(Deployment, AssignmentsMustNameComponentsOfTheApp) {
  partitioner::tree t;
  t.path = {"/app", "/app/a"};
  t.parent = {-1, 0};
  scratch dir;
  auto d = partitioner::parse_deployment(deployment_text(dir, "", "") + "  /app/b: n1\n", "d.yaml");
  ASSERT_TRUE(d) << d.error().what();
  auto m = partitioner::mapping_of(t, *d);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "d.yaml:11: assignment `/app/b` names no component of this app");
}

// A one-node deployment with keys: the node reads its keys and runs (until --run-for ends it); a
// broken key file or a missing secret stops it before it starts, naming the deployment line.
TEST(Deployment, ANodeReadsItsKeysFromTheFilesTheDeploymentNames) {
  scratch dir;
  write_keys(dir, "n0");
  write_keys(dir, "n1");
  app a{"app"};
  auto options = testing::test_options();
  options.max_runtime = 100ms;
  options.node = "n0";
  options.deployment =
      dir.write("d.yaml", deployment_text(dir, "{public: n0.pub, secret: n0.key}", "{public: n1.pub}")).string();
  auto ok = run(a, options);
  EXPECT_EQ(ok.exit_code, 0) << ok.error;

  options.deployment =
      dir.write("no-secret.yaml", deployment_text(dir, "{public: n0.pub}", "{public: n1.pub}")).string();
  auto no_secret = run(a, options);
  EXPECT_EQ(no_secret.exit_code, 2);
  EXPECT_NE(no_secret.error.find("no-secret.yaml:6:12: node `n0` curve: this node needs `secret`"), std::string::npos)
      << no_secret.error;

  dir.write("broken.pub", "not a key\n");
  options.deployment =
      dir.write("broken.yaml", deployment_text(dir, "{public: n0.pub, secret: n0.key}", "{public: broken.pub}"))
          .string();
  auto broken = run(a, options);
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.error.find("broken.yaml:10:12: node `n1` curve: "), std::string::npos) << broken.error;
  EXPECT_NE(broken.error.find("broken.pub line 1: not a CURVE key"), std::string::npos) << broken.error;
}

// The launcher's host list (docs/runtime.md, "Launchers"): Open MPI's --host syntax and Slurm's
// compressed lists; malformed ones are errors naming the variable.
TEST(Launcher, HostListsExpandAsTheLaunchersWriteThem) {
  auto slots = launcher::parse_host_slots("a,b:2,c", "BANYAN_HOSTS");
  ASSERT_TRUE(slots) << slots.error().what();
  EXPECT_EQ(*slots, (std::vector<std::string>{"a", "b", "b", "c"}));
  auto slurm = launcher::expand_slurm_hostlist("n[01-03,7],gpu5,rack[8-9]x", "SLURM_STEP_NODELIST");
  ASSERT_TRUE(slurm) << slurm.error().what();
  EXPECT_EQ(*slurm, (std::vector<std::string>{"n01", "n02", "n03", "n7", "gpu5", "rack8x", "rack9x"}));
  auto tasks = launcher::expand_slurm_tasks("2(x3),1", "SLURM_STEP_TASKS_PER_NODE");
  ASSERT_TRUE(tasks) << tasks.error().what();
  EXPECT_EQ(*tasks, (std::vector<std::size_t>{2, 2, 2, 1}));

  for (const char* bad : {"a,:2", "a:0", "a:x", "a:99999999"}) {
    auto r = launcher::parse_host_slots(bad, "BANYAN_HOSTS");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().message.rfind(std::string("BANYAN_HOSTS=`") + bad + "`: ", 0), 0u) << r.error().message;
  }
  for (const char* bad : {"n[3-1]", "n[01-", "[1-2]", "n[1-2][3]", "n[a]", "a,,b"}) {
    auto r = launcher::expand_slurm_hostlist(bad, "SLURM_STEP_NODELIST");
    EXPECT_FALSE(r) << bad;
  }
  for (const char* bad : {"2(x)", "2(3)", "x", "2(x3"}) {
    auto r = launcher::expand_slurm_tasks(bad, "SLURM_STEP_TASKS_PER_NODE");
    EXPECT_FALSE(r) << bad;
  }
}

// Two nodes whose `{host}` endpoints meet on one host (the same port) cannot both bind: refused
// before anything starts, naming both.
TEST(Launcher, EndpointsThatMeetOnOneHostAreAClearError) {
  scratch dir;
  app a{"app"};
  auto options = testing::test_options();
  options.node = "n0";
  options.deployment = dir.write("d.yaml",
                                 "version: 1\nnodes:\n"
                                 "  - {name: n0, endpoint: \"tcp://{host}:7301\", capacity: {cpu: 1}}\n"
                                 "  - {name: n1, endpoint: \"tcp://{host}:7301\", capacity: {cpu: 1}}\n"
                                 "assignments:\n  /app: n0\n")
                           .string();
  ::setenv("BANYAN_HOSTS", "localhost:2", 1);
  auto clash = run(a, options);
  ::unsetenv("BANYAN_HOSTS");
  EXPECT_EQ(clash.exit_code, 2);
  EXPECT_NE(clash.error.find(
                "d.yaml:4: node `n1` endpoint `tcp://{host}:7301` is `tcp://localhost:7301` on this host list, as "
                "node `n0`'s is"),
            std::string::npos)
      << clash.error;
}

// Plain mode (no CURVE keys) trusts whoever reaches an endpoint: an endpoint other machines can
// reach is refused, naming the file, line and node, unless the run says --insecure; loopback and ipc
// endpoints need nothing.
TEST(Deployment, PlainModeOnEndpointsOtherMachinesReachNeedsInsecure) {
  scratch dir;
  app a{"app"};
  auto options = testing::test_options();
  options.node = "n0";
  options.start_timeout = std::chrono::milliseconds(300);
  options.deployment = dir.write("d.yaml",
                                 "version: 1\nnodes:\n"
                                 "  - {name: n0, endpoint: \"ipc://" +
                                     (dir.path() / "n0").string() +
                                     "\", capacity: {cpu: 1}}\n"
                                     "  - {name: n1, endpoint: \"tcp://192.0.2.7:7301\", capacity: {cpu: 1}}\n"
                                     "assignments:\n  /app: n0\n")
                           .string();
  auto refused = run(a, options);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.error.find("d.yaml:4: node `n1` endpoint `tcp://192.0.2.7:7301` is reachable from other machines, "
                               "and the deployment has no CURVE keys"),
            std::string::npos)
      << refused.error;
  EXPECT_NE(refused.error.find("--insecure"), std::string::npos) << refused.error;
  options.insecure = true;  // said: it starts, and waits for n1 (which never comes) as any node would
  auto insecure = run(a, options);
  EXPECT_EQ(insecure.exit_code, 2);
  EXPECT_EQ(insecure.error.find("reachable from other machines"), std::string::npos) << insecure.error;
  EXPECT_NE(insecure.error.find("`n1`"), std::string::npos) << insecure.error;
}

}  // namespace
}  // namespace banyan

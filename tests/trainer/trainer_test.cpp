#include <banyan/nn/mlp.hpp>
#include <banyan/sdk/app.hpp>
#include <banyan/store/fault_file_system.hpp>
#include <banyan/trainer/gpt_trainer.hpp>
#include <banyan/trainer/options.hpp>
#include <banyan/trainer/state.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace banyan::trainer {
namespace {

namespace fs = std::filesystem;

TEST(CommonOptions, FlagsSetTheFieldsAndTheEngineConfigs) {
  banyan::app app{"app"};
  common_options o;
  add_common_options(app.options(), o);
  const char* args[] = {"app",  "--backend", "cuda",           "--nn-threads", "3",
                        "--lr", "0.01",      "--weight-decay", "0.1",          "--json"};
  std::vector<char*> argv;
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  ASSERT_EQ(app.options().parse(static_cast<int>(argv.size()), argv.data()), std::nullopt);
  EXPECT_EQ(o.backend, "cuda");
  EXPECT_EQ(o.backend_config().name, "cuda");
  EXPECT_EQ(o.backend_config().threads, 3);
  EXPECT_TRUE(o.json);
  const auto a = o.optimizer(0.5f);
  EXPECT_FLOAT_EQ(a.lr, 0.01f);
  EXPECT_FLOAT_EQ(a.weight_decay, 0.1f);
  EXPECT_FLOAT_EQ(a.grad_clip, 0.5f);
}

TEST(CommonOptions, WorkersFlagsSetTheWorkerFields) {
  banyan::app app{"app"};
  common_options o;
  add_common_options(app.options(), o);
  EXPECT_TRUE(o.workers.empty());
  const char* args[] = {"app", "--workers", "per-core", "--share-params"};
  std::vector<char*> argv;
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  ASSERT_EQ(app.options().parse(static_cast<int>(argv.size()), argv.data()), std::nullopt);
  EXPECT_EQ(o.workers, "per-core");
  EXPECT_TRUE(o.share_params);
}

TEST(AppName, IsTheFirstLevelOfTheComponentPath) {
  EXPECT_EQ(app_name("/train_gpt/trainer"), "train_gpt");
  EXPECT_EQ(app_name("/solo"), "solo");
  EXPECT_EQ(app_name("app/x/y"), "app");
}

class State : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("banyan_trainer_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    auto be = nn::make_backend({.name = "cpu", .threads = 1});
    ASSERT_TRUE(be) << be.error().message;
    be_ = std::move(be).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A small MLP after one AdamW step, so the moments are not zero.
  nn::mlp trained(std::optional<nn::adamw>& opt, std::uint64_t seed) {
    auto m = nn::mlp::create(cfg_, 2, *be_);
    EXPECT_TRUE(m);
    nn::mlp model = std::move(m).value();
    model.init(seed);
    opt.emplace(*be_, model.params());
    const std::vector<float> x{0.1f, 0.2f, 0.3f, 0.4f, -0.1f, 0.5f, 0.0f, 1.0f};
    const std::vector<int> y{0, 1};
    model.forward(x.data(), y.data(), 2);
    model.zero_grad();
    model.backward();
    opt->step(model.params().base(), model.grads().base(), {.lr = 0.01f});
    return model;
  }

  fs::path dir_;
  std::unique_ptr<nn::backend> be_;
  nn::mlp_config cfg_{.inputs = 4, .hidden = {3}, .classes = 2};
  nn::checkpoint_identity id_{.model = "mlp", .config = cfg_.to_vector(), .config_fields = cfg_.field_names()};

  // Saves the state into the folder `name` under dir_ and waits until it is durable.
  fs::path saved(const std::string& name, const nn::checkpoint_identity& id, const nn::mlp& m, const nn::adamw& opt) {
    const fs::path folder = dir_ / name;
    auto store = nn::checkpoint_store::open(folder);
    EXPECT_TRUE(store) << store.error().message;
    if (!store) return folder;
    auto s = save_state(**store, id, m.params(), *be_, opt);
    EXPECT_TRUE(s) << s.error().message;
    auto done = finish_checkpoints(**store);
    EXPECT_TRUE(done) << done.error().message;
    return folder;
  }
};

TEST_F(State, RestoresParametersMomentsAndStep) {
  std::optional<nn::adamw> opt;
  const nn::mlp a = trained(opt, 1);
  const fs::path folder = saved("a", id_, a, *opt);

  auto fresh = nn::mlp::create(cfg_, 2, *be_);
  ASSERT_TRUE(fresh);
  fresh->init(2);
  nn::adamw fresh_opt(*be_, fresh->params());
  auto step = restore_state(folder, id_, fresh->params(), *be_, fresh_opt);
  ASSERT_TRUE(step) << step.error().message;
  EXPECT_EQ(*step, 1);
  EXPECT_EQ(fresh_opt.steps(), 1);
  EXPECT_EQ(fresh->params().to_host(*be_), a.params().to_host(*be_));
  EXPECT_EQ(fresh_opt.m_host(), opt->m_host());
  EXPECT_EQ(fresh_opt.v_host(), opt->v_host());
}

TEST_F(State, TheLatestSaveIsRestored) {
  std::optional<nn::adamw> opt;
  nn::mlp a = trained(opt, 1);
  const fs::path folder = dir_ / "latest";
  auto store = nn::checkpoint_store::open(folder);
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE(save_state(**store, id_, a.params(), *be_, *opt));
  opt->step(a.params().base(), a.grads().base(), {.lr = 0.01f});  // a second update: step 2
  ASSERT_TRUE(save_state(**store, id_, a.params(), *be_, *opt));
  ASSERT_TRUE(finish_checkpoints(**store));
  EXPECT_EQ((*store)->durable_step(), 2);
  EXPECT_EQ((*store)->stats().stall_ms.size(), 2u);

  std::optional<nn::adamw> other_opt;
  nn::mlp b = trained(other_opt, 3);
  auto step = restore_state(folder, id_, b.params(), *be_, *other_opt);
  ASSERT_TRUE(step) << step.error().message;
  EXPECT_EQ(*step, 2);
  EXPECT_EQ(b.params().to_host(*be_), a.params().to_host(*be_));
  EXPECT_EQ(other_opt->m_host(), opt->m_host());
}

TEST_F(State, AnotherModelKindIsAMismatchAndChangesNothing) {
  std::optional<nn::adamw> opt;
  const nn::mlp a = trained(opt, 1);
  const fs::path folder = saved("a", id_, a, *opt);

  std::optional<nn::adamw> other_opt;
  nn::mlp other = trained(other_opt, 3);
  const auto before = other.params().to_host(*be_);
  auto step = restore_state(folder, {.model = "gpt", .config = cfg_.to_vector()}, other.params(), *be_, *other_opt);
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, nn::errc::mismatch) << step.error().message;
  EXPECT_EQ(other.params().to_host(*be_), before);
}

TEST_F(State, AMissingFolderIsAnIoErrorNamingIt) {
  std::optional<nn::adamw> opt;
  nn::mlp a = trained(opt, 1);
  auto step = restore_state(dir_ / "none", id_, a.params(), *be_, *opt);
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, nn::errc::io);
  EXPECT_NE(step.error().message.find("`" + (dir_ / "none").string() + "`: does not exist"), std::string::npos)
      << step.error().message;
}

TEST_F(State, AFileInsteadOfAFolderIsAnErrorValueNotAnException) {
  std::optional<nn::adamw> opt;
  nn::mlp a = trained(opt, 1);
  const fs::path file = dir_ / "old.ckpt";
  const nn::checkpoint ck{"mlp", cfg_.to_vector(), 1, a.params().to_host(*be_), opt->m_host(), opt->v_host(), {}};
  ASSERT_TRUE(nn::save_checkpoint(file, ck));  // a checkpoint file from before checkpoint folders
  auto step = restore_state(file, id_, a.params(), *be_, *opt);
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, nn::errc::io);
  EXPECT_NE(step.error().message.find("is not a folder"), std::string::npos) << step.error().message;
  auto store = nn::checkpoint_store::open(file);
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find("`" + file.string() + "`: is a file"), std::string::npos)
      << store.error().message;
}

TEST_F(State, AFolderWithoutAStateSaysSo) {
  std::optional<nn::adamw> opt;
  nn::mlp a = trained(opt, 1);
  fs::create_directories(dir_ / "empty");
  EXPECT_FALSE(nn::has_checkpoint(dir_ / "empty", state_blob));
  auto step = restore_state(dir_ / "empty", id_, a.params(), *be_, *opt);
  ASSERT_FALSE(step);
  EXPECT_NE(step.error().message.find("no durable blob named `state`"), std::string::npos) << step.error().message;
}

TEST_F(State, AFailedWriteNamesTheFileAndTheLastDurableStep) {
  std::optional<nn::adamw> opt;
  nn::mlp a = trained(opt, 1);
  auto faults = std::make_shared<store::fault_file_system>();
  auto store = nn::checkpoint_store::open("ckpt", {.fs = faults});
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE(save_state(**store, id_, a.params(), *be_, *opt));
  ASSERT_TRUE(finish_checkpoints(**store));
  faults->fail_next(store::fault_file_system::op::sync, store::errc::io);  // the next fsync: EIO
  opt->step(a.params().base(), a.grads().base(), {.lr = 0.01f});
  ASSERT_TRUE(save_state(**store, id_, a.params(), *be_, *opt));  // buffered: training goes on
  auto done = finish_checkpoints(**store);
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code, store::errc::io);
  EXPECT_NE(done.error().message.find("ckpt/txn-00000000000000000002"), std::string::npos) << done.error().message;
  EXPECT_NE(done.error().message.find("the checkpoint of step 1 is the last durable one"), std::string::npos)
      << done.error().message;
}

TEST_F(State, ConfigMismatchNamesTheField) {
  std::optional<nn::adamw> opt;
  const nn::mlp a = trained(opt, 1);
  const fs::path folder = saved("a", id_, a, *opt);
  nn::mlp_config wider = cfg_;
  wider.hidden = {5};
  auto m = nn::mlp::create(wider, 2, *be_);
  ASSERT_TRUE(m);
  nn::adamw o(*be_, m->params());
  auto step = restore_state(folder, {.model = "mlp", .config = wider.to_vector(), .config_fields = wider.field_names()},
                            m->params(), *be_, o);
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, nn::errc::mismatch);
  EXPECT_NE(step.error().message.find("hidden[0] is 3, this model has 5"), std::string::npos) << step.error().message;
}

TEST_F(State, AnotherVocabularyOfTheSameSizeIsAMismatch) {
  std::optional<nn::adamw> opt;
  nn::mlp a = trained(opt, 1);
  nn::checkpoint_identity id = id_;
  id.vocabulary = {'\n', ' ', 'a', 'b'};
  const fs::path folder = saved("v", id, a, *opt);
  ASSERT_TRUE(restore_state(folder, id, a.params(), *be_, *opt));
  id.vocabulary = {'\n', ' ', 'a', 'c'};
  auto step = restore_state(folder, id, a.params(), *be_, *opt);
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, nn::errc::mismatch);
  EXPECT_NE(step.error().message.find("token 3 is byte 0x62 there, 0x63"), std::string::npos) << step.error().message;
}

TEST(CheckpointPath, IsCheckedBeforeTraining) {
  const fs::path dir = fs::temp_directory_path() / ("banyan_trainer_path_" + std::to_string(getpid()));
  fs::create_directories(dir);
  EXPECT_TRUE(check_checkpoint_path(dir / "run"));
  EXPECT_TRUE(check_checkpoint_path(dir / "run/"));
  EXPECT_TRUE(check_checkpoint_path("relative"));
  EXPECT_TRUE(check_checkpoint_path(dir));  // an existing folder
  { std::ofstream(dir / "file") << "x"; }
  auto s = check_checkpoint_path(dir / "file");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, nn::errc::invalid_argument);
  EXPECT_NE(s.error().message.find("--checkpoint `" + (dir / "file").string() + "`: is a file"), std::string::npos)
      << s.error().message;
  s = check_checkpoint_path(dir / "missing" / "run");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("directory `" + (dir / "missing").string() + "` does not exist"), std::string::npos)
      << s.error().message;
  fs::remove_all(dir);
}

TEST(InputError, IsAnArgumentErrorNamingTheFlag) {
  const error e = input_error("--resume", error{nn::errc::corrupt, "checkpoint `run.ckpt`: bad magic"});
  EXPECT_EQ(e.code, nn::errc::invalid_argument);  // fail() exits 2
  EXPECT_EQ(e.message, "--resume: checkpoint `run.ckpt`: bad magic");
}

// Checks gpt options the way train_gpt does before it builds the tree; the message of the first error.
std::string gpt_options_error(const gpt_options& o) {
  auto ok = check_gpt_options(o);
  if (ok) return "";
  EXPECT_EQ(ok.error().code, nn::errc::invalid_argument);
  return ok.error().message;
}

TEST(GptOptions, DefaultsAreValid) { EXPECT_EQ(gpt_options_error(gpt_options{}), ""); }

TEST(GptOptions, DeviceMemoryIsNamedAsTheUserWroteIt) {
  gpt_options o;
  o.device_memory = "-5MiB";
  EXPECT_EQ(gpt_options_error(o), "--device-memory `-5MiB`: must be a positive size, such as 200MiB, 1.5GB or 1048576");
  for (const char* wrong : {"5 MiB MiB", "MiB", ".", "1.2.3KiB", "5e3", "+5MiB"}) {
    o.device_memory = wrong;
    EXPECT_NE(gpt_options_error(o).find("--device-memory `" + std::string(wrong) + "`: expected a positive size"),
              std::string::npos)
        << wrong;
  }
  o.device_memory = "0";
  EXPECT_EQ(gpt_options_error(o), "--device-memory `0`: must be a positive size, such as 200MiB, 1.5GB or 1048576");
  o.device_memory = "99999999999GiB";
  EXPECT_NE(gpt_options_error(o).find("too large"), std::string::npos) << gpt_options_error(o);
  for (const char* right : {"200MiB", "1.5GB", "1048576", "64 KiB"}) {
    o.device_memory = right;
    EXPECT_EQ(gpt_options_error(o), "") << right;
  }
}

TEST(GptOptions, DataParallelNeedsWorkers) {
  gpt_options o;
  o.data_parallel = 3;
  EXPECT_EQ(gpt_options_error(o), "--data-parallel 3: needs --workers");
}

TEST(GptOptions, DeviceMemoryIsNotForWorkers) {
  gpt_options o;
  o.batch = 2;
  o.common.workers = "2";
  o.device_memory = "10MiB";
  EXPECT_EQ(gpt_options_error(o), "--device-memory 10MiB: not with --workers (a budget is per model instance)");
}

}  // namespace
}  // namespace banyan::trainer

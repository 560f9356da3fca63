#include "banyan/cli.hpp"

#include "banyan/base/duration.hpp"
#include "banyan/base/log.hpp"

#include <cstdio>

namespace banyan::cli {

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : exit_bad_arguments;
  }
  return std::nullopt;
}

CLI::Option* add_deprecated_alias(CLI::App& app, CLI::Option* current, const std::string& old_name,
                                  const std::string& tool) {
  const std::string new_name = current->get_name();
  auto forward = [current, old_name, new_name, tool](const CLI::results_t& values) {
    banyan::log::warning(tool, old_name + " is deprecated; use " + new_name);
    current->clear();
    current->add_result(values);
    current->run_callback();  // validates and stores exactly as if `current` had been given
    return true;
  };
  return app.add_option(old_name, CLI::callback_t(forward))
      ->type_size(current->get_type_size_min(), current->get_type_size_max())
      ->expected(current->get_expected_min(), current->get_expected_max())
      ->delimiter(current->get_delimiter())
      ->group("");  // hidden from --help
}

CLI::Option* add_duration_option(CLI::App& app, const std::string& name, std::chrono::milliseconds& target,
                                 const std::string& description, std::chrono::milliseconds min,
                                 std::chrono::milliseconds max) {
  CLI::Validator duration(
      [min, max](std::string& text) -> std::string {
        auto d = banyan::parse_duration(text);
        if (!d) return d.error().message;
        if (*d < min) return "duration `" + text + "`: at least " + banyan::format_duration(min);
        if (*d > max) return "duration `" + text + "`: at most " + banyan::format_duration(max);
        return {};
      },
      "");
  auto store = [&target](const std::string& text) { target = *banyan::parse_duration(text); };
  return app.add_option_function<std::string>(name, store, description)
      ->check(duration)
      ->type_name("DURATION")
      ->default_str(banyan::format_duration(target));
}

int fail(const std::string& tool, const std::string& what, int code) {
  std::fprintf(stderr, "%s: %s\n", tool.c_str(), what.c_str());
  return code;
}

}  // namespace banyan::cli

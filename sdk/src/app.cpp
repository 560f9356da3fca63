// The tree spec an app describes (app.hpp). banyan::run, which runs it, is driver.cpp.
#include "banyan/sdk/app.hpp"

#include <stdexcept>

namespace banyan {

spec& spec::add(std::string name, bool is_composite, supervision policy, factory make) {
  if (!composite_) throw std::logic_error("component `" + name_ + "` is a leaf; only composites have children");
  children_.emplace_back(std::move(name), is_composite, policy, std::move(make));
  return children_.back();
}

app::app(std::string root_name, supervision root_policy)
    : root_(std::move(root_name), true, root_policy, [] { return std::unique_ptr<component>(new composite()); }),
      options_(root_.name()) {}

}  // namespace banyan

#include <banyan/eda_sim/vcd.hpp>

#include <functional>

namespace banyan::eda {
namespace {

std::string make_id(std::size_t n) {
  std::string id;
  do {
    id += static_cast<char>('!' + n % 94);
    n /= 94;
  } while (n);
  return id;
}

std::string vcd_name(std::string s) {
  for (char& c : s)
    if (c == ' ' || c == '\t') c = '_';
  return s;
}

}  // namespace

result<std::unique_ptr<vcd_writer>> vcd_writer::open(const std::string& path, const design& d) {
  std::unique_ptr<vcd_writer> w(new vcd_writer);
  w->out_.open(path);
  if (!w->out_) return error{errc::io, path + ": cannot write the VCD file"};
  auto& o = w->out_;
  o << "$version banyan eda_sim $end\n$timescale 1ns $end\n";
  std::size_t next = 0;
  std::vector<std::vector<const probe*>> by_inst(d.instances.size());
  for (const auto& p : d.probes) by_inst[p.instance].push_back(&p);
  std::function<void(int)> scope = [&](int inst) {
    const auto& in = d.instances[inst];
    o << "$scope module " << vcd_name(in.path.substr(in.path.rfind('/') + 1)) << " $end\n";
    if (inst == 0 && !d.clock.empty()) {
      w->clock_id_ = make_id(next++);
      o << "$var wire 1 " << w->clock_id_ << " " << vcd_name(d.clock) << " $end\n";
    }
    for (const probe* p : by_inst[inst]) {
      signal s{make_id(next++), p->bits, {}};
      o << "$var wire " << p->bits.size() << " " << s.id << " " << vcd_name(p->name);
      if (p->bits.size() > 1) o << " [" << p->bits.size() - 1 << ":0]";
      o << " $end\n";
      w->signals_.push_back(std::move(s));
    }
    for (int ch : in.children) scope(ch);
    o << "$upscope $end\n";
  };
  scope(0);
  o << "$enddefinitions $end\n";
  return w;
}

void vcd_writer::sample(std::uint64_t cycle, const simulator& sim) {
  out_ << "#" << cycle * 10 << "\n";
  if (!clock_id_.empty()) out_ << "0" << clock_id_ << "\n";
  out_ << "#" << cycle * 10 + 1 << "\n";
  for (auto& s : signals_) {
    std::string v(s.bits.size(), 'x');
    for (std::size_t i = 0; i < s.bits.size(); ++i) {
      const int b = sim.value(s.bits[i].leaf, s.bits[i].slot).get(0);
      v[s.bits.size() - 1 - i] = b == 2 ? 'x' : static_cast<char>('0' + b);
    }
    if (v == s.last) continue;
    s.last = v;
    if (v.size() == 1) out_ << v << s.id << "\n";
    else out_ << "b" << v << " " << s.id << "\n";
  }
  if (!clock_id_.empty()) out_ << "#" << cycle * 10 + 5 << "\n1" << clock_id_ << "\n";
}

void vcd_writer::finish(std::uint64_t cycles) {
  out_ << "#" << cycles * 10 << "\n";
  if (!clock_id_.empty()) out_ << "0" << clock_id_ << "\n";
  out_.flush();
}

}  // namespace banyan::eda

// printf into a std::string (private): the trainers' lines keep their printf formats.
#pragma once

#include <string>

namespace banyan::trainer {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace banyan::trainer

#include "node_wire.hpp"

#include "banyan/broker/topic.hpp"

namespace banyan::detail {
namespace {

// The fields of an envelope besides kind and sequence, as bits: what each kind may set.
enum field : unsigned {
  f_sender = 1u << 0,
  f_scope = 1u << 1,
  f_topic = 1u << 2,
  f_target = 1u << 3,
  f_text = 1u << 4,
  f_id = 1u << 5,
  f_origin = 1u << 6,
  f_entry = 1u << 7,
  f_from = 1u << 8,
  f_code = 1u << 9,
  f_timeout = 1u << 10,
  f_urgent = 1u << 11,
  f_payload = 1u << 12,
};

unsigned fields_set(const runtime::envelope& e) {
  unsigned s = 0;
  if (e.sender != runtime::no_vertex_field) s |= f_sender;
  if (e.scope != runtime::no_vertex_field) s |= f_scope;
  if (!e.topic.empty()) s |= f_topic;
  if (!e.target.empty()) s |= f_target;
  if (!e.text.empty()) s |= f_text;
  if (e.id != 0) s |= f_id;
  if (e.origin_sequence != 0) s |= f_origin;
  if (e.entry != runtime::no_vertex_field) s |= f_entry;
  if (e.from != runtime::no_vertex_field) s |= f_from;
  if (e.code != 0) s |= f_code;
  if (e.timeout_ms != 0) s |= f_timeout;
  if (e.urgent) s |= f_urgent;
  if (!e.payload.empty()) s |= f_payload;
  return s;
}

const char* field_name(unsigned f) {
  switch (f) {
    case f_sender: return "sender";
    case f_scope: return "scope";
    case f_topic: return "topic";
    case f_target: return "target";
    case f_text: return "text";
    case f_id: return "id";
    case f_origin: return "origin_sequence";
    case f_entry: return "entry";
    case f_from: return "from";
    case f_code: return "code";
    case f_timeout: return "timeout_ms";
    case f_urgent: return "urgent";
    case f_payload: return "payload";
  }
  return "?";
}

// At most 64 bytes of what a peer sent, so a line stays short; the log escapes the bytes themselves.
std::string clip(const std::string& text) {
  if (text.size() <= 64) return text;
  return text.substr(0, 64) + "...(" + std::to_string(text.size()) + " bytes)";
}

std::string vertex_fault(const std::string& field, std::uint32_t v, const component_tree& tree) {
  if (v == runtime::no_vertex_field) return field + " is missing";
  if (v >= tree.size()) return field + " " + std::to_string(v) + " is not a vertex of the tree";
  return "";
}

std::string path_fault(const std::string& field, const std::string& path, const component_tree& tree) {
  if (path.empty()) return field + " is missing";
  if (!tree.find(path)) return field + " `" + clip(path) + "` names no component of this app";
  return "";
}

}  // namespace

std::string check(const runtime::envelope& e, const component_tree& tree, std::uint32_t from_node) {
  unsigned allowed = 0;
  const char* name = "?";
  switch (static_cast<wire_kind>(e.kind)) {
    case wire_kind::data:
      allowed = f_sender | f_scope | f_topic | f_origin | f_entry | f_from | f_payload;
      name = "data";
      break;
    case wire_kind::subscribe:
      allowed = f_sender | f_topic | f_id;
      name = "subscribe";
      break;
    case wire_kind::unsubscribe:
      allowed = f_id;
      name = "unsubscribe";
      break;
    case wire_kind::ready: name = "ready"; break;
    case wire_kind::quit:
      allowed = f_code | f_urgent | f_text;
      name = "quit";
      break;
    case wire_kind::request:
      allowed = f_sender | f_topic | f_target | f_id | f_timeout | f_payload;
      name = "request";
      break;
    case wire_kind::reply:
      allowed = f_text | f_id | f_code | f_payload;
      name = "reply";
      break;
    case wire_kind::undelivered:
      allowed = f_sender | f_target | f_text | f_id;
      name = "undelivered";
      break;
    case wire_kind::child_start:
    case wire_kind::child_stop:
    case wire_kind::child_started:
    case wire_kind::child_stopped:
      allowed = f_target | f_id;
      name = "child";
      break;
    case wire_kind::monitor:
      allowed = f_sender | f_target | f_id | f_code;
      name = "monitor";
      break;
    case wire_kind::down:
      allowed = f_sender | f_target | f_id | f_text;
      name = "down";
      break;
    case wire_kind::child_failed:
      allowed = f_target | f_id | f_text;
      name = "child_failed";
      break;
    case wire_kind::move:
      allowed = f_target | f_text | f_id | f_code | f_origin | f_payload;
      name = "move";
      break;
    case wire_kind::failover:
      allowed = f_text | f_id | f_code | f_payload;
      name = "failover";
      break;
    default: return "unknown kind " + std::to_string(e.kind);
  }
  const std::string kind = std::string(name) + " envelope: ";
  if (const unsigned extra = fields_set(e) & ~allowed) {
    return kind + "field `" + field_name(extra & (~extra + 1)) + "` is not used by this kind";
  }
  auto id_fault = [&]() -> std::string {
    if (e.id == 0) return kind + "id is missing";
    return "";
  };
  switch (static_cast<wire_kind>(e.kind)) {
    case wire_kind::data: {
      if (auto f = vertex_fault("sender", e.sender, tree); !f.empty()) return kind + f;
      if (auto f = vertex_fault("scope", e.scope, tree); !f.empty()) return kind + f;
      if (!tree.contains(e.scope, e.sender)) {
        return kind + "scope `" + tree.path(e.scope) + "` does not contain the publisher `" + tree.path(e.sender) + "`";
      }
      if (auto t = topic::parse(e.topic); !t) return kind + "topic: " + clip(t.error().message);
      if (e.entry >= tree.size()) return kind + "entry " + std::to_string(e.entry) + " is not a vertex of the tree";
      if (e.from != runtime::no_vertex_field && e.from >= tree.size()) {
        return kind + "from " + std::to_string(e.from) + " is not a vertex of the tree";
      }
      if (e.origin_sequence == 0) return kind + "origin_sequence is missing";
      return "";
    }
    case wire_kind::subscribe:
      if (auto f = vertex_fault("sender", e.sender, tree); !f.empty()) return kind + f;
      if (auto t = topic_filter::parse(e.topic); !t) return kind + "filter: " + clip(t.error().message);
      if (auto f = id_fault(); !f.empty()) return f;
      if ((e.id >> 40) != from_node) {
        return kind + "subscription id " + std::to_string(e.id) + " was not made by the sending node";
      }
      return "";
    case wire_kind::unsubscribe:
      // Any node may end a subscription: a component that moved live keeps the ids its first node made.
      if (auto f = id_fault(); !f.empty()) return f;
      return "";
    case wire_kind::move:
      if (auto f = id_fault(); !f.empty()) return f;
      if (e.code < static_cast<std::int32_t>(move_step::freeze) ||
          e.code > static_cast<std::int32_t>(move_step::release))
        return kind + "step (code) " + std::to_string(e.code) + " is not a move step";
      if (!e.target.empty()) {
        if (auto f = path_fault("target", e.target, tree); !f.empty()) return kind + f;
        if (*tree.find(e.target) == 0) return kind + "the root does not move";
      }
      if (e.text.size() > max_node_name_bytes)
        return kind + "node name (text) of " + std::to_string(e.text.size()) + " bytes";
      return "";
    case wire_kind::failover:
      if (auto f = id_fault(); !f.empty()) return f;
      if (e.code < static_cast<std::int32_t>(failover_step::plan) ||
          e.code > static_cast<std::int32_t>(failover_step::refused))
        return kind + "step (code) " + std::to_string(e.code) + " is not a failover step";
      if (e.text.empty() || e.text.size() > max_node_name_bytes)
        return kind + "lost node name (text) of " + std::to_string(e.text.size()) + " bytes";
      if (e.code == static_cast<std::int32_t>(failover_step::plan) && e.payload.size() != 4 * tree.size()) {
        return kind + "plan of " + std::to_string(e.payload.size()) + " bytes, expected 4 per component (" +
               std::to_string(4 * tree.size()) + ")";
      }
      if (e.code == static_cast<std::int32_t>(failover_step::refused) && e.payload.size() > max_error_text_bytes)
        return kind + "refusal of " + std::to_string(e.payload.size()) + " bytes";
      if (e.code != static_cast<std::int32_t>(failover_step::plan) &&
          e.code != static_cast<std::int32_t>(failover_step::refused) && !e.payload.empty())
        return kind + "only a plan or a refusal carries a payload";
      return "";
    case wire_kind::ready: return "";
    case wire_kind::quit:
      if (e.code < 0 || e.code > 255) return kind + "exit code " + std::to_string(e.code) + " is not 0..255";
      if (e.text.size() > max_error_text_bytes)
        return kind + "reason (text) of " + std::to_string(e.text.size()) + " bytes";
      return "";
    case wire_kind::request:
      if (auto f = vertex_fault("sender", e.sender, tree); !f.empty()) return kind + f;
      if (auto f = path_fault("target", e.target, tree); !f.empty()) return kind + f;
      if (e.topic.empty() || e.topic.size() > max_method_bytes) {
        return kind + "method of " + std::to_string(e.topic.size()) + " bytes (1.." + std::to_string(max_method_bytes) +
               ")";
      }
      if (auto f = id_fault(); !f.empty()) return f;
      if (e.timeout_ms == 0 || e.timeout_ms > max_request_timeout_ms) {
        return kind + "timeout_ms " + std::to_string(e.timeout_ms) + " is not 1.." +
               std::to_string(max_request_timeout_ms);
      }
      return "";
    case wire_kind::reply:
      if (auto f = id_fault(); !f.empty()) return f;
      if (e.code < 0 || e.code > static_cast<std::int32_t>(reply_code::failed)) {
        return kind + "code " + std::to_string(e.code) + " is not a reply code";
      }
      if (e.text.size() > max_error_text_bytes) return kind + "text of " + std::to_string(e.text.size()) + " bytes";
      if (e.code == 0 && !e.text.empty()) return kind + "text on a successful reply";
      return "";
    case wire_kind::child_start:
    case wire_kind::child_stop:
    case wire_kind::child_started:
    case wire_kind::child_failed:
    case wire_kind::child_stopped:
      if (auto f = path_fault("target", e.target, tree); !f.empty()) return kind + f;
      if (*tree.find(e.target) == 0) return kind + "target is the root, which has no supervisor";
      if (auto f = id_fault(); !f.empty()) return f;
      if (e.text.size() > max_error_text_bytes) return kind + "text of " + std::to_string(e.text.size()) + " bytes";
      return "";
    case wire_kind::monitor:
    case wire_kind::down:
      if (e.code != 0 && e.code != 1) return kind + "code " + std::to_string(e.code) + " is not 0 or 1 (starting)";
      if (auto f = vertex_fault("sender", e.sender, tree); !f.empty()) return kind + f;
      if (auto f = path_fault("target", e.target, tree); !f.empty()) return kind + f;
      if (auto f = id_fault(); !f.empty()) return f;
      if (e.text.size() > max_error_text_bytes) return kind + "text of " + std::to_string(e.text.size()) + " bytes";
      return "";
    case wire_kind::undelivered:
      if (auto f = vertex_fault("sender", e.sender, tree); !f.empty()) return kind + f;
      if (e.target.empty() || e.target.size() > max_node_name_bytes) {
        return kind + "lost node name (target) of " + std::to_string(e.target.size()) + " bytes (1.." +
               std::to_string(max_node_name_bytes) + ")";
      }
      if (e.id == 0) return kind + "count (id) is missing";
      if (e.text.size() > max_error_text_bytes) return kind + "text of " + std::to_string(e.text.size()) + " bytes";
      return "";
  }
  return "unknown kind " + std::to_string(e.kind);
}

}  // namespace banyan::detail

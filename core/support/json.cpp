#include "core/support/json.h"

#include <set>
#include <vector>

namespace shapejit {

using nlohmann::json;

namespace {

// nlohmann's SAX interface, building the value as its DOM parser does (a
// stack of the open containers) and remembering each open object's keys.
class StrictBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  explicit StrictBuilder(bool one_line) : one_line_(one_line) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(number_integer_t v) { return add(json(v)); }
  bool number_unsigned(number_unsigned_t v) { return add(json(v)); }
  bool number_float(number_float_t v, const string_t&) { return add(json(v)); }
  bool string(string_t& v) { return add(json(std::move(v))); }
  bool binary(binary_t& v) { return add(json::binary(std::move(v))); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    Open& o = open_.back();
    if (!o.keys.insert(k).second) {
      error_ = pointer() + "/" + json_pointer_token(k) + ": a duplicate key (each key may appear once in an object)";
      return false;
    }
    o.key = k;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    std::string m = e.what();
    const size_t at = m.find("at line ");
    if (at != std::string::npos) {
      m = m.substr(at + 3);
      // A text of one line (a trace's line, a C API attrs string): its column says where.
      if (one_line_ && m.rfind("line 1, ", 0) == 0) m = m.substr(8);
    } else if (m.rfind("[json.exception.", 0) == 0 && m.find("] ") != std::string::npos) {
      m = m.substr(m.find("] ") + 2);
    }
    error_ = "not valid JSON: " + m;
    return false;
  }

  json& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  struct Open {
    json* value;
    std::string token;  // where it sits in its parent
    std::set<std::string> keys;
    std::string key;  // the key whose value comes next (objects)
  };

  // Puts `v` where the innermost open container expects it. Only that
  // container grows while it is open, so pointers to the open ones hold.
  json* place(json&& v, std::string* token) {
    if (open_.empty()) {
      root_ = std::move(v);
      if (token) token->clear();
      return &root_;
    }
    Open& o = open_.back();
    if (o.value->is_array()) {
      if (token) *token = std::to_string(o.value->size());
      o.value->push_back(std::move(v));
      return &o.value->back();
    }
    if (token) *token = json_pointer_token(o.key);
    json& slot = (*o.value)[o.key];
    slot = std::move(v);
    return &slot;
  }
  bool add(json&& v) {
    place(std::move(v), nullptr);
    return true;
  }
  bool open(json&& container) {
    std::string token;
    json* p = place(std::move(container), &token);
    open_.push_back({p, std::move(token), {}, {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }
  std::string pointer() const {
    std::string p;
    for (size_t i = 1; i < open_.size(); ++i) p += "/" + open_[i].token;
    return p;
  }

  bool one_line_;
  json root_;
  std::vector<Open> open_;
  std::string error_;
};

}  // namespace

Expected<json> parse_json(std::string_view text, const std::string& what) {
  StrictBuilder builder(text.find('\n') == std::string_view::npos);
  bool ok = false;
  try {
    ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, /*strict=*/true);
  } catch (const std::exception& e) {  // the SAX interface reports through parse_error; this is a backstop
    return invalid(what + ": not valid JSON: " + e.what());
  }
  if (!ok) return invalid(what + ": " + (builder.error().empty() ? "not valid JSON" : builder.error()));
  return std::move(builder.root());
}

std::string json_excerpt(const json& j, size_t max) {
  std::string out;
  struct Frame {
    const json* value;
    json::const_iterator next;
  };
  std::vector<Frame> stack;
  auto scalar = [](const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); };
  auto write = [&](const json& v) {
    if (v.is_object() || v.is_array()) {
      out += v.is_object() ? '{' : '[';
      stack.push_back({&v, v.cbegin()});
    } else {
      out += scalar(v);  // a scalar's dump does not recurse
    }
  };
  write(j);
  while (!stack.empty() && out.size() <= max) {
    Frame& f = stack.back();
    if (f.next == f.value->cend()) {
      out += f.value->is_object() ? '}' : ']';
      stack.pop_back();
      continue;
    }
    if (f.next != f.value->cbegin()) out += ", ";
    if (f.value->is_object()) out += scalar(json(f.next.key())) + ": ";
    const json& child = *f.next;
    ++f.next;  // before write(), which may grow the stack under `f`
    write(child);
  }
  if (out.size() > max) {
    out.resize(max);
    out += "...";
  }
  return out;
}

std::optional<int64_t> json_int64(const json& j) {
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return std::nullopt;
}

std::string json_kind(const json& j) {
  if (j.is_number_unsigned() && !json_int64(j)) return "an integer past int64 (" + json_excerpt(j) + ")";
  return j.type_name();
}

std::string json_pointer_token(std::string_view key) {
  std::string t;
  for (char c : key) {
    if (c == '~') t += "~0";
    else if (c == '/') t += "~1";
    else t += c;
  }
  return t;
}

}  // namespace shapejit

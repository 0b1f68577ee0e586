#include "jit/policy/config.h"

#include <filesystem>
#include <functional>
#include <set>

#include "jit/policy/recompile_policy.h"
#include "core/support/json.h"

namespace shapejit::policy {

using nlohmann::json;

namespace {

Status err(const std::string& ptr, const std::string& msg) { return invalid("config: " + ptr + ": " + msg); }

// A reader for one JSON object: each `field` call consumes a key; `done`
// rejects the keys nobody consumed.
class Object {
 public:
  static Expected<Object> open(const json& j, std::string ptr) {
    if (!j.is_object()) return err(ptr.empty() ? "/" : ptr, std::string("expected an object, got ") + j.type_name());
    return Object(j, std::move(ptr));
  }

  Status integer(const char* key, int64_t& out, int64_t lo, int64_t hi) {
    const json* v = take(key);
    if (!v) return Status::ok();
    const auto i = json_int64(*v);
    if (!i) return err(at(key), "expected an integer, got " + json_kind(*v));
    const int64_t x = *i;
    if (x < lo || x > hi) {
      return err(at(key), "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(x));
    }
    out = x;
    return Status::ok();
  }
  Status integer(const char* key, int& out, int64_t lo, int64_t hi) {
    int64_t x = out;
    SJ_TRY(integer(key, x, lo, hi));
    out = static_cast<int>(x);
    return Status::ok();
  }
  Status boolean(const char* key, bool& out) {
    const json* v = take(key);
    if (!v) return Status::ok();
    if (!v->is_boolean()) return err(at(key), std::string("expected true or false, got ") + v->type_name());
    out = v->get<bool>();
    return Status::ok();
  }
  Status string(const char* key, std::string& out) {
    const json* v = take(key);
    if (!v) return Status::ok();
    if (!v->is_string()) return err(at(key), std::string("expected a string, got ") + v->type_name());
    out = v->get<std::string>();
    return Status::ok();
  }
  Status choice(const char* key, std::string& out, const std::vector<std::string>& choices) {
    SJ_TRY(string(key, out));
    for (const std::string& c : choices) {
      if (out == c) return Status::ok();
    }
    std::string list;
    for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
    return err(at(key), "\"" + out + "\" is not one of: " + list);
  }
  Status object(const char* key, const std::function<Status(Object&)>& fn) {
    const json* v = take(key);
    if (!v) return Status::ok();
    Object o = SJ_TRY(open(*v, at(key)));
    SJ_TRY(fn(o));
    return o.done();
  }
  Status done() const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (!seen_.count(it.key())) {
        std::string list;
        for (const auto& k : seen_all_) list += std::string(list.empty() ? "" : ", ") + k;
        return err(at(it.key()), "unknown key" + (list.empty() ? std::string() : " (expected one of: " + list + ")"));
      }
    }
    return Status::ok();
  }
  const json& raw() const { return j_; }
  std::string at(const std::string& key) const { return ptr_ + "/" + json_pointer_token(key); }
  // Consumes `key`: its value, or null when absent.
  const json* take(const char* key) {
    seen_all_.insert(key);
    if (!j_.contains(key)) return nullptr;
    seen_.insert(key);
    return &j_[key];
  }

 private:
  Object(const json& j, std::string ptr) : j_(j), ptr_(std::move(ptr)) {}

  const json& j_;
  std::string ptr_;
  std::set<std::string> seen_, seen_all_;
};

Status read_pairs(const json& j, const std::string& ptr, std::vector<std::pair<int, int>>& out) {
  if (!j.is_array()) return err(ptr, "expected a list of [input, dim] pairs");
  for (size_t i = 0; i < j.size(); ++i) {
    const json& p = j[i];
    const std::string pp = ptr + "/" + std::to_string(i);
    int64_t a = -1, b = -1;
    bool pair = p.is_array() && p.size() == 2;
    if (pair) {
      const std::optional<int64_t> x = json_int64(p[0]), y = json_int64(p[1]);
      pair = x.has_value() && y.has_value();
      a = x.value_or(-1);
      b = y.value_or(-1);
    }
    if (!pair) return err(pp, "expected an [input, dim] pair of integers, got " + json_excerpt(p));
    if (a < 0 || b < 0 || a > 1'000'000 || b >= 64) {
      return err(pp, "input must be in [0, 1000000] and dim in [0, 63], got " + json_excerpt(p));
    }
    out.emplace_back(static_cast<int>(a), static_cast<int>(b));
  }
  return Status::ok();
}

// A folder for the disk tier: empty (the default folder), or a path with no
// NUL that is a folder if it exists (it is made when missing).
Status check_disk_path(const std::string& path, const std::string& ptr) {
  if (path.find('\0') != std::string::npos) return err(ptr, "a path cannot hold a NUL character");
  std::error_code ec;
  if (!path.empty() && std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec)) {
    return err(ptr, "\"" + path + "\" exists and is not a folder");
  }
  return Status::ok();
}

// "redis://HOST[:PORT][/DB]", or empty for no remote tier.
Status check_redis_url(const std::string& url, const std::string& ptr) {
  if (url.empty()) return Status::ok();
  const std::string form = "expected redis://HOST[:PORT][/DB], got \"" + url.substr(0, 64) + (url.size() > 64 ? "...\"" : "\"");
  const std::string scheme = "redis://";
  if (url.rfind(scheme, 0) != 0) return err(ptr, form);
  std::string rest = url.substr(scheme.size());
  auto digits = [](const std::string& s, int64_t lo, int64_t hi) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    const int64_t v = std::stoll(s);
    return v >= lo && v <= hi;
  };
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    if (!digits(rest.substr(slash + 1), 0, 1 << 20)) return err(ptr, form + " (DB is a number)");
    rest.resize(slash);
  }
  std::string host = rest;
  if (size_t colon = rest.rfind(':'); colon != std::string::npos && rest.find(']') == std::string::npos) {
    if (!digits(rest.substr(colon + 1), 1, 65535)) return err(ptr, form + " (PORT is 1 to 65535)");
    host = rest.substr(0, colon);
  }
  if (host.empty() || host.find_first_of(" \t\r\n@?#") != std::string::npos || host.find('\0') != std::string::npos) {
    return err(ptr, form + " (HOST is a name or an address)");
  }
  return Status::ok();
}

// cache.sign.key_file: a file name, or a non-empty list of them (the first
// signs). The files are read when a Jit starts (cache/signer.h).
Status read_key_files(const json& v, const std::string& ptr, std::vector<std::string>& out) {
  const bool one = v.is_string();
  if (!one && (!v.is_array() || v.empty())) return err(ptr, "expected a file name, or a non-empty list of them (the first signs), got " + json_excerpt(v));
  for (size_t i = 0; i < (one ? 1 : v.size()); ++i) {
    const json& f = one ? v : v[i];
    const std::string at = one ? ptr : ptr + "/" + std::to_string(i);
    if (!f.is_string()) return err(at, "expected a file name, got " + json_excerpt(f));
    const std::string name = f.get<std::string>();
    if (name.empty() || name.find('\0') != std::string::npos) return err(at, "not a file name");
    out.push_back(name);
  }
  return Status::ok();
}

Status read_policy(Object& o, PolicyConfig& p) {
  SJ_TRY(o.choice("mode", p.mode, mode_names()));
  SJ_TRY(o.integer("backoff_after", p.backoff_after, 1, 1'000'000));
  SJ_TRY(o.integer("cache_size_limit", p.cache_size_limit, 1, 1'000'000));
  std::string on_limit = p.on_limit == OnLimit::kDynamic ? "dynamic" : "eager";
  SJ_TRY(o.choice("on_limit", on_limit, {"dynamic", "eager"}));
  p.on_limit = on_limit == "dynamic" ? OnLimit::kDynamic : OnLimit::kEager;
  std::string backed_off_int = p.backed_off_int == BackedOffInt::kGraphBreak ? "graph_break" : "recompile";
  SJ_TRY(o.choice("backed_off_int", backed_off_int, {"graph_break", "recompile"}));
  p.backed_off_int = backed_off_int == "graph_break" ? BackedOffInt::kGraphBreak : BackedOffInt::kRecompile;
  SJ_TRY(o.boolean("specialize_zero_one", p.specialize_zero_one));
  SJ_TRY(o.object("buckets", [&](Object& b) -> Status {
    SJ_TRY(b.choice("kind", p.buckets.kind, {"pow2"}));
    SJ_TRY(b.integer("min", p.buckets.min, 2, int64_t{1} << 40));
    SJ_TRY(b.integer("max", p.buckets.max, 2, int64_t{1} << 40));
    if (p.buckets.max < p.buckets.min) return err(b.at("max"), "must be >= min");
    return Status::ok();
  }));
  SJ_TRY(o.object("sites", [&](Object& sites) -> Status {
    for (auto it = sites.raw().begin(); it != sites.raw().end(); ++it) {
      const std::string name = it.key();
      SitePins pins;
      SJ_TRY(sites.object(name.c_str(), [&](Object& s) -> Status {
        if (const json* v = s.take("static")) SJ_TRY(read_pairs(*v, s.at("static"), pins.static_dims));
        if (const json* v = s.take("dynamic")) SJ_TRY(read_pairs(*v, s.at("dynamic"), pins.dynamic_dims));
        for (const auto& d : pins.static_dims) {
          for (const auto& e : pins.dynamic_dims) {
            if (d == e) {
              return err(s.at("dynamic"), "[" + std::to_string(d.first) + ", " + std::to_string(d.second) +
                                              "] is pinned both static and dynamic");
            }
          }
        }
        return Status::ok();
      }));
      p.sites[name] = std::move(pins);
    }
    return Status::ok();
  }));
  return Status::ok();
}

}  // namespace

Expected<Config> config_from_json(const json& j) {
  Config c;
  Object root = SJ_TRY(Object::open(j, ""));
  SJ_TRY(root.object("policy", [&](Object& o) { return read_policy(o, c.policy); }));
  SJ_TRY(root.object("compile", [&](Object& o) -> Status {
    SJ_TRY(o.choice("backend", c.compile.backend, {"auto", "reference", "llvm", "cuda"}));
    SJ_TRY(o.integer("opt_level", c.compile.opt_level, 0, 3));
    SJ_TRY(o.integer("threads", c.compile.threads, 0, 4096));
    SJ_TRY(o.boolean("async", c.compile.async));
    return Status::ok();
  }));
  SJ_TRY(root.object("cache", [&](Object& o) -> Status {
    SJ_TRY(o.integer("memory_mb", c.cache.memory_mb, 0, int64_t{1} << 30));
    SJ_TRY(o.object("disk", [&](Object& d) -> Status {
      SJ_TRY(d.string("path", c.cache.disk_path));
      SJ_TRY(check_disk_path(c.cache.disk_path, d.at("path")));
      SJ_TRY(d.integer("max_mb", c.cache.disk_max_mb, 0, int64_t{1} << 30));
      return Status::ok();
    }));
    SJ_TRY(o.object("remote", [&](Object& r) -> Status {
      SJ_TRY(r.string("redis", c.cache.redis));
      SJ_TRY(check_redis_url(c.cache.redis, r.at("redis")));
      SJ_TRY(r.integer("connect_timeout_ms", c.cache.redis_connect_timeout_ms, 1, 60'000));
      SJ_TRY(r.integer("timeout_ms", c.cache.redis_timeout_ms, 1, 60'000));
      SJ_TRY(r.integer("cooldown_ms", c.cache.redis_cooldown_ms, 0, 3'600'000));
      SJ_TRY(r.string("prefix", c.cache.redis_prefix));
      if (c.cache.redis_prefix.size() > 256) return err(r.at("prefix"), "at most 256 characters");
      return Status::ok();
    }));
    SJ_TRY(o.object("sign", [&](Object& g) -> Status {
      const json* v = g.take("key_file");
      return v ? read_key_files(*v, g.at("key_file"), c.cache.sign_key_files) : Status::ok();
    }));
    return Status::ok();
  }));
  SJ_TRY(root.object("log", [&](Object& o) -> Status {
    SJ_TRY(o.boolean("recompiles", c.log.recompiles));
    SJ_TRY(o.string("stats", c.log.stats));
    SJ_TRY(o.string("record", c.log.record));
    SJ_TRY(o.integer("slow_compile_ms", c.log.slow_compile_ms, 0, int64_t{1} << 40));
    return Status::ok();
  }));
  SJ_TRY(root.done());
  return c;
}

Expected<Config> parse_config(std::string_view text) {
  const json j = SJ_TRY(parse_json(text, "config"));
  return config_from_json(j);
}

json config_to_json(const Config& c) {
  json sites = json::object();
  for (const auto& [name, pins] : c.policy.sites) {
    json st = json::array(), dy = json::array();
    for (auto [a, b] : pins.static_dims) st.push_back({a, b});
    for (auto [a, b] : pins.dynamic_dims) dy.push_back({a, b});
    sites[name] = {{"static", st}, {"dynamic", dy}};
  }
  return {
      {"policy",
       {{"mode", c.policy.mode},
        {"backoff_after", c.policy.backoff_after},
        {"cache_size_limit", c.policy.cache_size_limit},
        {"on_limit", c.policy.on_limit == OnLimit::kDynamic ? "dynamic" : "eager"},
        {"backed_off_int", c.policy.backed_off_int == BackedOffInt::kGraphBreak ? "graph_break" : "recompile"},
        {"specialize_zero_one", c.policy.specialize_zero_one},
        {"buckets", {{"kind", c.policy.buckets.kind}, {"min", c.policy.buckets.min}, {"max", c.policy.buckets.max}}},
        {"sites", sites}}},
      {"compile", {{"backend", c.compile.backend}, {"opt_level", c.compile.opt_level}, {"threads", c.compile.threads}, {"async", c.compile.async}}},
      {"cache", {{"memory_mb", c.cache.memory_mb}, {"disk", {{"path", c.cache.disk_path}, {"max_mb", c.cache.disk_max_mb}}}, {"remote",
         {{"redis", c.cache.redis},
          {"connect_timeout_ms", c.cache.redis_connect_timeout_ms},
          {"timeout_ms", c.cache.redis_timeout_ms},
          {"cooldown_ms", c.cache.redis_cooldown_ms},
          {"prefix", c.cache.redis_prefix}}},
         {"sign", c.cache.sign_key_files.empty() ? json::object() : json{{"key_file", c.cache.sign_key_files}}}}},
      {"log", {{"recompiles", c.log.recompiles}, {"stats", c.log.stats}, {"record", c.log.record}, {"slow_compile_ms", c.log.slow_compile_ms}}},
  };
}

}  // namespace shapejit::policy
